package bench

import (
	"context"
	"os"
	"testing"
)

// The figures come from `go test -run '^$' -bench . ./bench/` or
// `wheelhouse bench`; the test below only checks that a tiny suite runs.
func TestSuiteRuns(t *testing.T) {
	if err := Run(context.Background(), Options{Posts: 50, Concurrency: 4, Subscribers: []int{1, 3}, Mentions: 20, ModelCalls: 20,
		SearchMessages: 300, SearchQueries: 20, Uploads: 3, UploadBytes: 64 << 10}, testWriter{t}); err != nil {
		t.Fatal(err)
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }

func BenchmarkPostThroughput(b *testing.B) {
	for b.Loop() {
		got, err := PostThroughput(context.Background(), 2000, 32)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(got.PerSecond(), "posts/s")
	}
}

func BenchmarkRawPublishThroughput(b *testing.B) {
	for b.Loop() {
		got, err := RawPublishThroughput(context.Background(), 2000, 32)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(got.PerSecond(), "publishes/s")
	}
}

func BenchmarkMentionLatency(b *testing.B) {
	for b.Loop() {
		d, err := MentionLatency(context.Background(), 300)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(d.P50.Microseconds()), "p50-µs")
		b.ReportMetric(float64(d.P99.Microseconds()), "p99-µs")
	}
}

func BenchmarkSuite(b *testing.B) {
	for b.Loop() {
		if err := Run(context.Background(), Options{}, os.Stdout); err != nil {
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
