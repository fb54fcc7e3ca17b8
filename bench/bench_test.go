package bench

import (
	"context"
	"os"
	"strings"
	"testing"
)

func TestMain(m *testing.M) {
	if ChildMain() { // the idle-socket run starts this binary as its server
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// The figures come from `wheelhouse bench` or `go test -run '^$' -bench .
// ./bench/`; the test below only checks that a tiny suite runs end to end
// (the start-up section needs the built binary, and the cluster section
// has a test of its own below).
func TestSuiteRuns(t *testing.T) {
	o := Options{Posts: 50, Concurrency: 4, OneMessages: 5, Room: RoomOptions{Members: 6, Messages: 3, BusyRooms: 2, BusyRate: 20},
		Mentions: 20, IdleSockets: 20, ModelCalls: 20, SearchMessages: 300, SearchQueries: 20, Uploads: 3, UploadBytes: 64 << 10,
		Only: []string{"posts", "fanout", "mentions", "idle", "model", "search", "uploads"}}
	res, err := Run(context.Background(), o, testWriter{t})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Posts) != 4 || len(res.Fanout) != 2 || len(res.Mentions) != 4 || res.Idle == nil || res.Model == nil || res.Search == nil || res.Uploads == nil {
		t.Fatalf("sections missing from the results: %+v", res)
	}
}

// The cluster section runs end to end on real nats-server processes (the
// binary scripts/test-tools.sh provides): posts through both hub nodes,
// post → socket across them, and mentions routed to a bridge paired with
// the second node.
func TestClusterRuns(t *testing.T) {
	r, err := Cluster(context.Background(), 40, 4)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(r.String())
	for name, d := range map[string]Dist{"across": r.Across, "same": r.Same, "mentions": r.Mentions} {
		if d.N == 0 || d.P50 <= 0 {
			t.Errorf("%s: no figure: %+v", name, d)
		}
	}
	if r.Posts.PerSecond <= 0 || r.RawPosts.PerSecond <= 0 {
		t.Errorf("throughput missing: %+v %+v", r.Posts, r.RawPosts)
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"NegativePosts", Options{Posts: -1}, "--posts must be 1 or more"},
		{"TinyHistory", Options{HistoryMessages: 5}, "--history must be 20 or more"},
		{"NegativeBusyRate", Options{Room: RoomOptions{BusyRate: -2}}, "--busy-rate must be more than 0"},
		{"UnknownSync", Options{Sync: []string{"sometimes"}}, `--sync takes interval and always, not "sometimes"`},
		{"UnknownSection", Options{Only: []string{"posts", "speed"}}, `--only takes sections among posts,`},
		{"HookWithoutCommand", Options{Only: []string{"hook"}}, "--only hook needs --hook CMD"},
		{"BusyRoomsOverMembers", Options{Room: RoomOptions{Members: 3, BusyRooms: 4}}, "--busy-rooms (4) cannot exceed --members (3)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.o.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%v, want %q", err, tc.want)
			}
		})
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }

func BenchmarkPostThroughput(b *testing.B) {
	for _, over := range []string{OverHTTP, OverSocket} {
		b.Run(over, func(b *testing.B) {
			for b.Loop() {
				got, err := PostThroughput(context.Background(), 2000, 32, "", over)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(got.PerSecond, "posts/s")
				b.ReportMetric(got.CPUMicros, "cpu-µs/post")
			}
		})
	}
}

func BenchmarkRawPublishThroughput(b *testing.B) {
	for b.Loop() {
		got, err := RawPublishThroughput(context.Background(), 2000, 32, "")
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(got.PerSecond, "publishes/s")
		b.ReportMetric(got.CPUMicros, "cpu-µs/publish")
	}
}

func BenchmarkMentionLatency(b *testing.B) {
	for _, over := range []string{OverHTTP, OverSocket} {
		b.Run(over, func(b *testing.B) {
			for b.Loop() {
				d, err := MentionLatency(context.Background(), 300, false, over)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(d.P50.Microseconds()), "p50-µs")
				b.ReportMetric(float64(d.P99.Microseconds()), "p99-µs")
			}
		})
	}
}

func BenchmarkSuite(b *testing.B) {
	for b.Loop() {
		if _, err := Run(context.Background(), Options{}, os.Stdout); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSearch(b *testing.B) {
	for b.Loop() {
		r, err := SearchLatency(context.Background(), 20000, 200)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(r.Hub.P50.Microseconds()), "hub-p50-µs")
		b.ReportMetric(float64(r.Raw.P50.Microseconds()), "raw-p50-µs")
	}
}

// The history section runs end to end at a tiny size: the load, the disk
// figures, a rebuild from the log alone, the requests over the hub's own
// HTTPS, and (where Chromium is) the room opened and switched in both
// browser profiles. No figure is judged here.
func TestHistoryRuns(t *testing.T) {
	r, err := History(context.Background(), 200, 5, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + r.String())
	if len(r.Sizes) != 2 || r.Sizes[0].Messages != 20 || r.Sizes[1].Messages != 200 {
		t.Fatalf("sizes: %+v", r.Sizes)
	}
	for _, s := range r.Sizes {
		if s.LogBytesPerMsg <= 0 || s.DBBytesPerMsg <= 0 || s.Rebuild.N < s.Messages || s.RSSBytes == 0 {
			t.Errorf("at %d: a figure is missing: %+v", s.Messages, s)
		}
		for name, d := range map[string]Dist{"word": s.SearchWord, "prefix": s.SearchPrefix, "latest": s.LatestPage, "far back": s.FarBackPage, "rooms": s.RoomList} {
			if d.N != 5 {
				t.Errorf("at %d: %s: %+v", s.Messages, name, d)
			}
		}
		if s.BrowserSkipped == "" && len(s.Browser) != 2 {
			t.Errorf("at %d: browser profiles: %+v", s.Messages, s.Browser)
		}
		for _, b := range s.Browser {
			if b.Open.N != 1 || b.Switch.N != 2 || b.Resources == 0 {
				t.Errorf("at %d: %s: %+v", s.Messages, b.Profile, b)
			}
		}
	}
}
