package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/wheelhouse-dev/wheelhouse/bench"
	"github.com/wheelhouse-dev/wheelhouse/hub"
)

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if bench.ChildMain() { // the suite runs servers it measures as children of itself
		return nil
	}
	fs := newFlags("bench", "bench [--only posts,fanout,…] [--posts N] [--concurrency N] [--members N] [--mentions N] [--idle-sockets N] [--search-messages N] [--uploads N] [--history N] [--hook CMD] [--json] [--compare LAST.json]", stdout)
	var o bench.Options
	fs.IntVar(&o.Posts, "posts", 5000, "messages for the durable post throughput run")
	fs.IntVar(&o.Concurrency, "concurrency", 32, "concurrent HTTP posters")
	syncs := fs.String("sync", hub.SyncInterval+","+hub.SyncAlways, "sync settings to measure durable posts with, comma-separated")
	fs.IntVar(&o.Room.Members, "members", 1000, "people in the fan-out room, one socket each")
	fs.IntVar(&o.Room.Messages, "room-messages", 50, "messages posted to the fan-out room")
	fs.IntVar(&o.Room.BusyRooms, "busy-rooms", 10, "rooms of some of the members posting during the fan-out run")
	fs.Float64Var(&o.Room.BusyRate, "busy-rate", 5, "messages per second in each busy room")
	fs.IntVar(&o.OneMessages, "one-messages", 200, "messages for the one-socket fan-out run")
	fs.IntVar(&o.Mentions, "mentions", 1000, "mentions for the steer latency run (by members: at most 200)")
	fs.IntVar(&o.IdleSockets, "idle-sockets", 10000, "idle authenticated WebSockets to hold open")
	fs.IntVar(&o.ClusterPosts, "cluster-posts", 2000, "messages for the cluster run")
	fs.IntVar(&o.ModelCalls, "model-calls", 2000, "model calls for the openai harness's overhead run")
	fs.IntVar(&o.SearchMessages, "search-messages", 100_000, "messages in the room the search run queries")
	fs.IntVar(&o.SearchQueries, "search-queries", 400, "search queries timed")
	fs.IntVar(&o.Uploads, "uploads", 40, "files for the upload run")
	fs.IntVar(&o.UploadBytes, "upload-bytes", 4<<20, "bytes in each uploaded file")
	fs.IntVar(&o.HistoryMessages, "history", 100_000, "messages the history section grows a hub to (it measures a tenth of it too; 1000000 takes minutes)")
	fs.IntVar(&o.HistoryQueries, "history-queries", 200, "requests of each kind the history section times at each size")
	fs.IntVar(&o.HistoryViews, "history-views", 5, "room opens (and twice as many switches) in each browser profile of the history section; 0: no browser")
	hook := fs.String("hook", "", `also time this Claude Code hook command, e.g. "wheelhouse-hook claude"`)
	fs.IntVar(&o.HookRuns, "hook-runs", 200, "runs of each hook case")
	only := fs.String("only", "", "run only these sections, comma-separated: "+strings.Join(bench.Sections, ", "))
	asJSON := fs.Bool("json", false, "print the results as JSON on stdout (the report goes to stderr), to compare runs")
	compare := fs.String("compare", "", "after the run, print each section's headline figures beside those of this earlier run (its --json output; with --json, write the new run to another file)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("bench takes no arguments, only flags (got %q)", fs.Arg(0))}
	}
	for _, c := range []struct {
		name string
		v    int
	}{{"posts", o.Posts}, {"concurrency", o.Concurrency}, {"members", o.Room.Members}, {"room-messages", o.Room.Messages},
		{"one-messages", o.OneMessages}, {"mentions", o.Mentions}, {"idle-sockets", o.IdleSockets}, {"cluster-posts", o.ClusterPosts},
		{"model-calls", o.ModelCalls}, {"hook-runs", o.HookRuns}, {"search-messages", o.SearchMessages}, {"search-queries", o.SearchQueries},
		{"uploads", o.Uploads}, {"upload-bytes", o.UploadBytes},
		{"history", o.HistoryMessages}, {"history-queries", o.HistoryQueries}} {
		if c.v < 1 {
			return usageError{fmt.Sprintf("--%s must be 1 or more, not %d", c.name, c.v)}
		}
	}
	if o.Room.BusyRooms < 0 {
		return usageError{fmt.Sprintf("--busy-rooms must be 0 or more, not %d", o.Room.BusyRooms)}
	}
	if o.Room.BusyRate <= 0 {
		return usageError{"--busy-rate must be more than 0, not " + strconv.FormatFloat(o.Room.BusyRate, 'g', -1, 64)}
	}
	if o.HistoryViews < 0 {
		return usageError{fmt.Sprintf("--history-views must be 0 or more, not %d", o.HistoryViews)}
	}
	if o.HistoryViews == 0 {
		o.HistoryViews = -1 // no browser (0 would take the default)
	}
	o.Sync = splitList(*syncs)
	o.Only = splitList(*only)
	o.HookCmd = strings.Fields(*hook)
	if err := o.Validate(); err != nil {
		return usageError{err.Error()}
	}
	var prev *bench.Previous
	if *compare != "" {
		var err error
		if prev, err = bench.LoadPrevious(*compare); err != nil {
			return usageError{"--compare: " + err.Error()}
		}
	}
	report := stdout
	if *asJSON {
		report = stderr
	}
	res, err := bench.Run(ctx, o, report)
	if err != nil {
		return err
	}
	if prev != nil {
		changes, err := res.Compare(prev)
		if err != nil {
			return err
		}
		bench.WriteComparison(report, prev, changes)
	}
	if *asJSON {
		return res.WriteJSON(stdout)
	}
	return nil
}
