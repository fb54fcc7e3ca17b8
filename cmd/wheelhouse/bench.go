package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/wheelhouse-dev/wheelhouse/bench"
)

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench", "bench [--posts N] [--concurrency N] [--subscribers 1,100,1000] [--mentions N] [--search-messages N] [--uploads N] [--hook CMD]", stdout)
	var o bench.Options
	fs.IntVar(&o.Posts, "posts", 5000, "messages for the throughput run")
	fs.IntVar(&o.Concurrency, "concurrency", 32, "concurrent HTTP posters")
	subs := fs.String("subscribers", "1,100,1000", "WebSocket fan-out sizes")
	fs.IntVar(&o.Mentions, "mentions", 1000, "mentions for the steer latency run")
	hook := fs.String("hook", "", `also time this Claude Code hook command, e.g. "wheelhouse-hook claude"`)
	fs.IntVar(&o.ModelCalls, "model-calls", 2000, "model calls for the openai harness's overhead run")
	fs.IntVar(&o.SearchMessages, "search-messages", 100_000, "messages in the room the search run queries")
	fs.IntVar(&o.Uploads, "uploads", 40, "files for the upload run (4 MiB each)")
	if err := parse(fs, args); err != nil {
		return err
	}
	for _, n := range []struct {
		name string
		v    int
	}{{"posts", o.Posts}, {"concurrency", o.Concurrency}, {"mentions", o.Mentions}} {
		if n.v < 1 {
			return usageError{fmt.Sprintf("--%s must be 1 or more", n.name)}
		}
	}
	for _, s := range strings.Split(*subs, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return usageError{"--subscribers takes numbers like 1,100,1000"}
		}
		o.Subscribers = append(o.Subscribers, n)
	}
	o.HookCmd = strings.Fields(*hook)
	return bench.Run(ctx, o, stdout)
}
