package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/bridge/claude"
	"github.com/wheelhouse-dev/wheelhouse/bridge/openai"
	"github.com/wheelhouse-dev/wheelhouse/hub"
)

// Sections of the suite, in the order they run.
var Sections = []string{"posts", "fanout", "mentions", "idle", "cluster", "start", "model", "search", "uploads", "hook", "history"}

// Options scale the suite. Zero values take the defaults.
type Options struct {
	Posts       int         // messages for throughput (default 5000)
	Concurrency int         // concurrent posters (default 32)
	Sync        []string    // sync settings to post with (default interval, always)
	Room        RoomOptions // default 1000 members, 50 messages, 10 busy rooms at 5/s
	OneMessages int         // messages for the one-socket fan-out run (default 200)
	Mentions    int         // mentions for steer latency (default 1000; 200 by room members)
	IdleSockets int         // idle authenticated WebSockets (default 10000)
	// ClusterPosts is how many messages the cluster run posts (default 2000).
	ClusterPosts int
	// Binary is the wheelhouse binary: the idle-socket run starts the hub
	// from it, the start-up run times it. Default: this program when it is
	// wheelhouse.
	Binary string
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
	// HistoryMessages is the size the history section grows a hub to
	// (default 100000; it measures n/10 too); HistoryQueries requests of
	// each kind are timed at each size (default 200), HistoryViews room
	// opens and twice as many switches in each browser profile (default 5;
	// -1: no browser).
	HistoryMessages, HistoryQueries, HistoryViews int
	// Only runs these sections (default: all; "hook" needs HookCmd).
	Only []string
}

func (o *Options) defaults() {
	def := func(p *int, v int) {
		if *p == 0 {
			*p = v
		}
	}
	def(&o.Posts, 5000)
	def(&o.Concurrency, 32)
	if o.Room == (RoomOptions{}) {
		o.Room.BusyRooms = 10 // set Members to choose none
	}
	def(&o.Room.Members, 1000)
	def(&o.Room.Messages, 50)
	if o.Room.BusyRate == 0 {
		o.Room.BusyRate = 5
	}
	def(&o.OneMessages, 200)
	def(&o.Mentions, 1000)
	def(&o.IdleSockets, 10000)
	def(&o.ClusterPosts, 2000)
	def(&o.HookRuns, 200)
	def(&o.ModelCalls, 2000)
	def(&o.SearchMessages, 100_000)
	def(&o.SearchQueries, 400)
	def(&o.Uploads, 40)
	def(&o.UploadBytes, 4<<20)
	def(&o.HistoryMessages, 100_000)
	def(&o.HistoryQueries, 200)
	def(&o.HistoryViews, 5)
	if len(o.Sync) == 0 {
		o.Sync = []string{hub.SyncInterval, hub.SyncAlways}
	}
}

// Validate fills the defaults and refuses what cannot run: a negative
// count, an unknown section or sync setting.
func (o *Options) Validate() error {
	for _, c := range []struct {
		name string
		v    int
	}{{"posts", o.Posts}, {"concurrency", o.Concurrency}, {"members", o.Room.Members}, {"room-messages", o.Room.Messages},
		{"busy-rooms", o.Room.BusyRooms}, {"one-messages", o.OneMessages}, {"mentions", o.Mentions}, {"idle-sockets", o.IdleSockets},
		{"cluster-posts", o.ClusterPosts}, {"hook-runs", o.HookRuns}, {"model-calls", o.ModelCalls},
		{"search-messages", o.SearchMessages}, {"search-queries", o.SearchQueries}, {"uploads", o.Uploads}, {"upload-bytes", o.UploadBytes},
		{"history", o.HistoryMessages}, {"history-queries", o.HistoryQueries}} {
		if c.v < 0 {
			return fmt.Errorf("--%s must be 1 or more, not %d", c.name, c.v)
		}
	}
	if o.Room.BusyRate < 0 {
		return fmt.Errorf("--busy-rate must be more than 0, not %g", o.Room.BusyRate)
	}
	o.defaults()
	if o.HistoryMessages < historyRooms*2 {
		return fmt.Errorf("--history must be %d or more (two messages for each of its %d rooms), not %d", historyRooms*2, historyRooms, o.HistoryMessages)
	}
	if o.Room.BusyRooms > o.Room.Members {
		return fmt.Errorf("--busy-rooms (%d) cannot exceed --members (%d): each busy room has some of the members", o.Room.BusyRooms, o.Room.Members)
	}
	for _, s := range o.Sync {
		if s != hub.SyncInterval && s != hub.SyncAlways {
			return fmt.Errorf("--sync takes %s and %s, not %q", hub.SyncInterval, hub.SyncAlways, s)
		}
	}
	for _, s := range o.Only {
		if !slices.Contains(Sections, s) {
			return fmt.Errorf("--only takes sections among %s, not %q", strings.Join(Sections, ", "), s)
		}
		if s == "hook" && len(o.HookCmd) == 0 {
			return fmt.Errorf("--only hook needs --hook CMD, the hook command to time")
		}
	}
	return nil
}

func (o *Options) runs(section string) bool {
	if section == "hook" && len(o.HookCmd) == 0 {
		return false
	}
	return len(o.Only) == 0 || slices.Contains(o.Only, section)
}

// Results is one run of the suite, for --json and for comparing runs.
type Results struct {
	Go        string            `json:"go"`
	CPUs      int               `json:"cpus"`
	Started   time.Time         `json:"started"`
	Seconds   float64           `json:"seconds"`
	LoadStart float64           `json:"loadStart"` // the machine's 1-minute load average
	LoadEnd   float64           `json:"loadEnd"`
	Options   Options           `json:"options"`
	Posts     []PostResult      `json:"posts,omitempty"`
	Fanout    []RoomResult      `json:"fanout,omitempty"`
	Mentions  []MentionResult   `json:"mentions,omitempty"`
	Idle      *IdleResult       `json:"idle,omitempty"`
	Cluster   *ClusterResult    `json:"cluster,omitempty"`
	Start     *StartResult      `json:"start,omitempty"`
	Model     *ModelResult      `json:"model,omitempty"`
	Search    *SearchResult     `json:"search,omitempty"`
	Uploads   *UploadResult     `json:"uploads,omitempty"`
	Hook      *claude.HookBench `json:"hook,omitempty"`
	History   *HistoryResult    `json:"history,omitempty"`
	// Skipped names sections that could not run here, and why.
	Skipped map[string]string `json:"skipped,omitempty"`
}

// PostResult is durable post throughput with one sync setting, posted one
// way (OverHTTP or OverSocket).
type PostResult struct {
	Sync        string  `json:"sync"`
	Over        string  `json:"over"`
	Concurrency int     `json:"concurrency"`
	Hub         Rate    `json:"hub"`
	Raw         Rate    `json:"raw"`
	Ratio       float64 `json:"ratio"`
}

// MentionResult is mention → harness latency for one kind of sender.
type MentionResult struct {
	Sender   string  `json:"sender"` // "owner" or "member"
	Over     string  `json:"over"`   // OverHTTP or OverSocket
	Limiter  bool    `json:"rateLimiter"`
	Hub      Dist    `json:"hub"`
	Raw      Dist    `json:"raw"`
	RatioP50 float64 `json:"ratioP50"`
	RatioP99 float64 `json:"ratioP99"`
}

// UploadResult is upload throughput beside raw object store puts.
type UploadResult struct {
	Files int     `json:"files"`
	Bytes int     `json:"bytesEach"`
	Hub   Bytes   `json:"hub"`
	Raw   Bytes   `json:"raw"`
	Ratio float64 `json:"ratio"`
}

// ModelResult is the openai harness's overhead per model call.
type ModelResult struct {
	Harness  Dist    `json:"harness"`
	Raw      Dist    `json:"raw"`
	RatioP50 float64 `json:"ratioP50"`
	RatioP99 float64 `json:"ratioP99"`
}

// Run runs the suite, printing each section to w as it ends, and returns
// the results.
func Run(ctx context.Context, o Options, w io.Writer) (*Results, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	res := &Results{Go: runtime.Version(), CPUs: runtime.NumCPU(), Started: time.Now().UTC(), LoadStart: loadAvg(), Options: o}
	fmt.Fprintf(w, "wheelhouse bench — %s, %d CPUs, %s, load average %.2f\n", res.Go, res.CPUs, res.Started.Format(time.RFC3339), res.LoadStart)
	fmt.Fprintln(w, "CPU figures are the whole process's (the load generators run in it, on the same cores).")
	skip := func(section string, err error) {
		if res.Skipped == nil {
			res.Skipped = map[string]string{}
		}
		res.Skipped[section] = err.Error()
		fmt.Fprintf(w, "\n%s: not measured: %v\n", section, err)
	}
	steps := []struct {
		name string
		run  func() error
	}{
		{"posts", func() error { return runPosts(ctx, &o, res, w) }},
		{"fanout", func() error { return runFanout(ctx, &o, res, w) }},
		{"mentions", func() error { return runMentions(ctx, &o, res, w) }},
		{"idle", func() error {
			r, err := IdleSockets(ctx, o.IdleSockets, o.Binary)
			if err == nil {
				res.Idle = r
				fmt.Fprint(w, "\n"+r.String())
			}
			return err
		}},
		{"cluster", func() error {
			r, err := Cluster(ctx, o.ClusterPosts, o.Concurrency)
			if err == nil {
				res.Cluster = r
				fmt.Fprint(w, "\n"+r.String())
			}
			return err
		}},
		{"start", func() error {
			r, err := StartTime(ctx, o.Binary)
			if err == nil {
				res.Start = r
				fmt.Fprint(w, "\n"+r.String())
			}
			return err
		}},
		{"model", func() error { return runModel(ctx, &o, res, w) }},
		{"search", func() error {
			fmt.Fprintf(w, "\nSearch (%d messages in one room, %d queries: common and rare words, prefixes, phrases; 20 newest results with snippets)\n", o.SearchMessages, o.SearchQueries)
			sr, err := SearchLatency(ctx, o.SearchMessages, o.SearchQueries)
			if err != nil {
				return check(err, "search")
			}
			res.Search = &sr
			fmt.Fprintf(w, "  filled at %s (posts through the hub, indexed)\n  hub (HTTP GET /search)  %s\n  baseline: the same FTS5 query on the same database %s\n  ratio p50 %.2f×  p99 %.2f×  (%.1f results a query)\n",
				sr.Fill, sr.Hub, sr.Raw, sr.RatioP50, sr.RatioP99, sr.HitsPerTerm)
			return nil
		}},
		{"uploads", func() error {
			fmt.Fprintf(w, "\nUploads (%d files of %d KiB, one after another)\n", o.Uploads, o.UploadBytes>>10)
			rawPut, err := RawObjectPut(ctx, o.Uploads, o.UploadBytes)
			if err != nil {
				return check(err, "raw object store put")
			}
			up, err := UploadThroughput(ctx, o.Uploads, o.UploadBytes)
			if err != nil {
				return check(err, "uploads")
			}
			res.Uploads = &UploadResult{Files: o.Uploads, Bytes: o.UploadBytes, Hub: up, Raw: rawPut, Ratio: ratio(up.MBPerSecond(), rawPut.MBPerSecond())}
			fmt.Fprintf(w, "  hub (HTTP POST /files → object store → log)  %s\n  baseline: raw object store put               %s\n  ratio hub/baseline                            %.2f\n",
				up, rawPut, res.Uploads.Ratio)
			return nil
		}},
		{"history", func() error {
			views := o.HistoryViews
			if views < 0 {
				views = 0
			}
			r, err := History(ctx, o.HistoryMessages, o.HistoryQueries, views)
			if err == nil {
				res.History = r
				fmt.Fprint(w, "\n"+r.String())
			}
			return err
		}},
		{"hook", func() error {
			fmt.Fprintf(w, "\nClaude Code hook, whole process (%d runs each)\n", o.HookRuns)
			hb, err := claude.BenchHook(ctx, o.HookCmd, o.HookRuns)
			if err == nil {
				res.Hook = &hb
				fmt.Fprint(w, indent(hb.String()))
			}
			return err
		}},
	}
	for _, s := range steps {
		if !o.runs(s.name) {
			continue
		}
		if err := s.run(); err != nil {
			var ns notHere
			if errors.As(err, &ns) {
				skip(s.name, err)
				continue
			}
			return res, fmt.Errorf("%s: %w", s.name, err)
		}
	}
	res.LoadEnd = loadAvg()
	res.Seconds = time.Since(res.Started).Seconds()
	fmt.Fprintf(w, "\nload average at the end %.2f; %.0f s in all\n", res.LoadEnd, res.Seconds)
	return res, nil
}

// notHere is a section this machine cannot run (a missing binary, too few
// file descriptors), said in words; the others still run.
type notHere struct{ msg string }

func (e notHere) Error() string { return e.msg }

func runPosts(ctx context.Context, o *Options, res *Results, w io.Writer) error {
	fmt.Fprintf(w, "\nDurable post throughput (%d posts, %d concurrent clients, over HTTP and over their events WebSockets; the JetStream baseline publishes an event of the same size)\n", o.Posts, o.Concurrency)
	for _, sync := range o.Sync {
		raw, err := RawPublishThroughput(ctx, o.Posts, o.Concurrency, sync)
		if err != nil {
			return check(err, "raw JetStream baseline, sync "+sync)
		}
		fmt.Fprintf(w, "  sync %-8s baseline: raw JetStream publish           %s\n", sync, raw)
		for _, over := range []string{OverHTTP, OverSocket} {
			got, err := PostThroughput(ctx, o.Posts, o.Concurrency, sync, over)
			if err != nil {
				return check(err, "post throughput over "+over+", sync "+sync)
			}
			r := PostResult{Sync: sync, Over: over, Concurrency: o.Concurrency, Hub: got, Raw: raw, Ratio: ratio(got.PerSecond, raw.PerSecond)}
			res.Posts = append(res.Posts, r)
			fmt.Fprintf(w, "                hub, %-6s → JetStream → SQLite → answer %s  ratio %.2f\n", over, got, r.Ratio)
		}
	}
	return nil
}

func runFanout(ctx context.Context, o *Options, res *Results, w io.Writer) error {
	fmt.Fprintln(w, "\nPost → WebSocket receive latency (hub: from the POST's start; baseline: a bare coder/websocket server sending the same frames on the same schedule; each side twice, pooled)")
	base := runtime.NumGoroutine()
	for _, ro := range []RoomOptions{{Members: 1, Messages: o.OneMessages}, o.Room} {
		var raw, hub fanSamples
		for _, side := range []string{"raw", "hub", "hub", "raw"} {
			run, pool := RawRoomFanout, &raw
			if side == "hub" {
				run, pool = RoomFanout, &hub
			}
			settle(base)
			f, err := run(ctx, ro)
			if err != nil {
				return check(err, fmt.Sprintf("%s fan-out to %d", side, ro.Members))
			}
			pool.add(f)
		}
		hubMain, rawMain := dist(hub.main), dist(raw.main)
		hubBusy, rawBusy := dist(hub.busy), dist(raw.busy)
		hubCPU, rawCPU := hub.cpuPerFrame(), raw.cpuPerFrame()
		r := RoomResult{RoomOptions: ro, BusyMembers: ro.busyMembers(), Hub: hubMain, Raw: rawMain, HubBusy: hubBusy, RawBusy: rawBusy,
			HubCPUMicros: hubCPU, RawCPUMicros: rawCPU, RatioP50: durRatio(hubMain.P50, rawMain.P50), RatioP99: durRatio(hubMain.P99, rawMain.P99)}
		res.Fanout = append(res.Fanout, r)
		if ro.Members == 1 {
			fmt.Fprint(w, "  one person, one socket")
		} else {
			fmt.Fprintf(w, "  room of %d people, one socket each", ro.Members)
		}
		if ro.BusyRooms > 0 {
			fmt.Fprintf(w, "; %d busy rooms of %d of them posting %.0f/s each meanwhile", ro.BusyRooms, r.BusyMembers, ro.BusyRate)
		}
		fmt.Fprintf(w, "\n    hub       %s   %.1f µs CPU per frame received\n    baseline  %s   %.1f µs\n    ratio p50 %.2f×  p99 %.2f×\n",
			hubMain, hubCPU, rawMain, rawCPU, r.RatioP50, r.RatioP99)
		if ro.BusyRooms > 0 {
			fmt.Fprintf(w, "    busy rooms: hub %s, baseline %s\n", hubBusy, rawBusy)
		}
	}
	return nil
}

func runMentions(ctx context.Context, o *Options, res *Results, w io.Writer) error {
	fmt.Fprintf(w, "\nMention → harness latency (the post, over HTTP or the sender's events WebSocket, to the bridge handing the steer to a probe harness, one after another)\n")
	rr, err := RawRequestReply(ctx, o.Mentions)
	if err != nil {
		return check(err, "raw NATS request/reply")
	}
	fmt.Fprintf(w, "  baseline: raw NATS request/reply over loopback TCP  %s\n", rr)
	for _, member := range []bool{false, true} {
		n, who := o.Mentions, "the agent's owner, rate limiter lifted"
		if member {
			n, who = min(o.Mentions, 200), "room members who are not the owner (10 each), default rate limit on"
		}
		fmt.Fprintf(w, "  by %s\n", who)
		for _, over := range []string{OverHTTP, OverSocket} {
			d, err := MentionLatency(ctx, n, member, over)
			if err != nil {
				return check(err, "mention latency over "+over+", "+who)
			}
			r := MentionResult{Sender: "owner", Over: over, Hub: d, Raw: rr, RatioP50: durRatio(d.P50, rr.P50), RatioP99: durRatio(d.P99, rr.P99)}
			if member {
				r.Sender, r.Limiter = "member", true
			}
			res.Mentions = append(res.Mentions, r)
			fmt.Fprintf(w, "    over %-6s hub + bridge %s   ratio p50 %.1f×  p99 %.1f×\n", over, d, r.RatioP50, r.RatioP99)
		}
	}
	return nil
}

func runModel(ctx context.Context, o *Options, res *Results, w io.Writer) error {
	fmt.Fprintf(w, "\nOpenAI-compatible harness, one model call (%d calls: request built from a 16-message conversation, sent, a 126-chunk stream parsed)\n", o.ModelCalls)
	rawCalls, harnessCalls, err := openai.BenchModelCalls(ctx, o.ModelCalls)
	if err != nil {
		return check(err, "model calls")
	}
	rc, hc := dist(rawCalls), dist(harnessCalls)
	res.Model = &ModelResult{Harness: hc, Raw: rc, RatioP50: durRatio(hc.P50, rc.P50), RatioP99: durRatio(hc.P99, rc.P99)}
	fmt.Fprintf(w, "  harness  %s\n  baseline: raw HTTP round trip, same stub and answer %s\n  ratio p50 %.2f×  p99 %.2f×  (overhead p50 %s per call)\n",
		hc, rc, res.Model.RatioP50, res.Model.RatioP99, round(hc.P50-rc.P50))
	return nil
}

// WriteJSON writes the results for comparing with another run.
func (r *Results) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

func indent(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		b.WriteString("  " + l + "\n")
	}
	return b.String()
}
