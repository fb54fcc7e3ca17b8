package bench

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"strings"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/bridge/claude"
	"github.com/wheelhouse-dev/wheelhouse/bridge/openai"
)

// Options scale the suite.
type Options struct {
	Posts       int   // messages for throughput (default 5000)
	Concurrency int   // concurrent posters (default 32)
	Subscribers []int // fan-out sizes (default 1, 100, 1000)
	Mentions    int   // mentions for steer latency (default 1000)
	// HookCmd, if set, also times the Claude Code hook process (e.g.
	// ["wheelhouse-hook", "claude"]) beside `sh -c :`.
	HookCmd  []string
	HookRuns int // default 200
	// ModelCalls is the number of model calls for the openai harness's
	// overhead (default 2000).
	ModelCalls int
	// SearchMessages fill the room searched (default 100000); SearchQueries
	// are timed (default 400).
	SearchMessages, SearchQueries int
	// Uploads of UploadBytes each (defaults 40 of 4 MiB).
	Uploads, UploadBytes int
}

func (o *Options) defaults() {
	if o.Posts == 0 {
		o.Posts = 5000
	}
	if o.Concurrency == 0 {
		o.Concurrency = 32
	}
	if len(o.Subscribers) == 0 {
		o.Subscribers = []int{1, 100, 1000}
	}
	if o.Mentions == 0 {
		o.Mentions = 1000
	}
	if o.ModelCalls == 0 {
		o.ModelCalls = 2000
	}
	if o.SearchMessages == 0 {
		o.SearchMessages = 100_000
	}
	if o.SearchQueries == 0 {
		o.SearchQueries = 400
	}
	if o.Uploads == 0 {
		o.Uploads = 40
	}
	if o.UploadBytes == 0 {
		o.UploadBytes = 4 << 20
	}
}

// Run runs the suite and writes a report with ratios against baselines
// measured in the same run.
func Run(ctx context.Context, o Options, w io.Writer) error {
	o.defaults()
	fmt.Fprintf(w, "wheelhouse bench — %s, %d CPUs, %s\n\n", runtime.Version(), runtime.NumCPU(), time.Now().UTC().Format(time.RFC3339))

	fmt.Fprintf(w, "Durable post throughput (%d posts, %d concurrent HTTP clients)\n", o.Posts, o.Concurrency)
	raw, err := RawPublishThroughput(ctx, o.Posts, o.Concurrency)
	if err != nil {
		return check(err, "raw JetStream baseline")
	}
	got, err := PostThroughput(ctx, o.Posts, o.Concurrency)
	if err != nil {
		return check(err, "post throughput")
	}
	fmt.Fprintf(w, "  hub (HTTP → JetStream → SQLite → answer)  %s\n  baseline: raw JetStream publish           %s\n  ratio hub/baseline                        %.2f\n\n",
		got, raw, got.PerSecond()/raw.PerSecond())

	fmt.Fprintln(w, "Post → WebSocket receive latency")
	for _, n := range o.Subscribers {
		m := 200
		if n >= 1000 {
			m = 40
		} else if n >= 100 {
			m = 100
		}
		rawD, err := RawFanoutLatency(ctx, n, m)
		if err != nil {
			return check(err, fmt.Sprintf("raw fan-out to %d", n))
		}
		d, err := FanoutLatency(ctx, n, m)
		if err != nil {
			return check(err, fmt.Sprintf("fan-out to %d", n))
		}
		fmt.Fprintf(w, "  %4d subscribers  hub %s\n                    raw coder/websocket fan-out %s\n                    ratio p50 %s  p99 %s\n",
			n, d, rawD, ratio(d.P50, rawD.P50), ratio(d.P99, rawD.P99))
	}
	fmt.Fprintln(w)

	fmt.Fprintf(w, "Mention → harness latency (%d mentions: POST to the bridge handing the steer to the harness)\n", o.Mentions)
	rr, err := RawRequestReply(ctx, o.Mentions)
	if err != nil {
		return check(err, "raw NATS request/reply")
	}
	ml, err := MentionLatency(ctx, o.Mentions)
	if err != nil {
		return check(err, "mention latency")
	}
	fmt.Fprintf(w, "  hub + bridge  %s\n  baseline: raw NATS request/reply %s\n  ratio p50 %s  p99 %s\n", ml, rr, ratio(ml.P50, rr.P50), ratio(ml.P99, rr.P99))

	fmt.Fprintf(w, "\nOpenAI-compatible harness, one model call (%d calls: request built from a 16-message conversation, sent, a 126-chunk stream parsed)\n", o.ModelCalls)
	rawCalls, harnessCalls, err := openai.BenchModelCalls(ctx, o.ModelCalls)
	if err != nil {
		return check(err, "model calls")
	}
	rc, hc := dist(rawCalls), dist(harnessCalls)
	fmt.Fprintf(w, "  harness  %s\n  baseline: raw HTTP round trip, same stub and answer %s\n  ratio p50 %s  p99 %s  (overhead p50 %s per call)\n",
		hc, rc, ratio(hc.P50, rc.P50), ratio(hc.P99, rc.P99), round(hc.P50-rc.P50))

	fmt.Fprintf(w, "\nSearch (%d messages in one room, %d queries: common and rare words, prefixes, phrases; 20 newest results with snippets)\n", o.SearchMessages, o.SearchQueries)
	sr, err := SearchLatency(ctx, o.SearchMessages, o.SearchQueries)
	if err != nil {
		return check(err, "search")
	}
	fmt.Fprintf(w, "  filled at %s (posts through the hub, indexed)\n  hub (HTTP GET /search)  %s\n  baseline: the same FTS5 query on the same database %s\n  ratio p50 %s  p99 %s  (%.1f results a query)\n",
		sr.Fill, sr.Hub, sr.Raw, ratio(sr.Hub.P50, sr.Raw.P50), ratio(sr.Hub.P99, sr.Raw.P99), sr.HitsPerTerm)

	fmt.Fprintf(w, "\nUploads (%d files of %d KiB, one after another)\n", o.Uploads, o.UploadBytes>>10)
	rawPut, err := RawObjectPut(ctx, o.Uploads, o.UploadBytes)
	if err != nil {
		return check(err, "raw object store put")
	}
	up, err := UploadThroughput(ctx, o.Uploads, o.UploadBytes)
	if err != nil {
		return check(err, "uploads")
	}
	fmt.Fprintf(w, "  hub (HTTP POST /files → object store → log)  %s\n  baseline: raw object store put               %s\n  ratio hub/baseline                            %.2f\n",
		up, rawPut, (float64(up.N)/up.Elapsed.Seconds())/(float64(rawPut.N)/rawPut.Elapsed.Seconds()))
	if len(o.HookCmd) > 0 {
		if o.HookRuns == 0 {
			o.HookRuns = 200
		}
		fmt.Fprintf(w, "\nClaude Code hook, whole process (%d runs each)\n", o.HookRuns)
		hb, err := claude.BenchHook(ctx, o.HookCmd, o.HookRuns)
		if err != nil {
			return check(err, "hook")
		}
		fmt.Fprint(w, indent(hb.String()))
	}
	return nil
}

func indent(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		b.WriteString("  " + l + "\n")
	}
	return b.String()
}
