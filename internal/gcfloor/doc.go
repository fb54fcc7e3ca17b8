// Package gcfloor puts a floor under the Go collector's heap goal, so a
// process whose live heap is small does not collect every few
// milliseconds. It owns one process-wide setting (debug.SetGCPercent) and
// imports nothing of ours.
//
// With the default GOGC=100 the collector starts a cycle when the heap
// has doubled since the last one; a hub with 5 MiB live collects about
// every 70 ms under load, and a mention that meets a cycle waits for it
// (the floor took 0.1–0.3 ms off the mention p99, docs/benchmarks.md). Above the floor the
// goal is Go's own (twice the live heap), so a large hub uses no more
// memory than before.
package gcfloor
