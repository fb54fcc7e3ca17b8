// Package gcfloor puts a floor under the Go collector's heap goal, so a
// process whose live heap is small does not collect every few
// milliseconds. It owns one process-wide setting (debug.SetGCPercent) and
// imports nothing of ours.
//
// With the default GOGC=100 the collector starts a cycle when the heap
// has doubled since the last one; a hub with 5 MiB live collects about
// every 70 ms under load, and a mention that meets a cycle waits for it
// (docs/benchmarks.md measures what the floor changes). While more than
// half the floor is live the goal is Go's own, so a large hub uses no more
// memory than before.
package gcfloor
