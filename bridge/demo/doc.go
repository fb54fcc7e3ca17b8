// Package demo is the built-in scripted agent: a bridge.Harness that needs no
// model, works on a small in-memory workspace, honours steers, and asks the
// owner before deleting a file. It exists for newcomers and tests. It imports
// only bridge (and wheelhouse for errors); never hub, web or another harness.
package demo
