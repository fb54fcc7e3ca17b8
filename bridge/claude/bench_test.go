package claude

import (
	"context"
	"testing"
)

// TestBenchHookRuns checks BenchHook end to end on a few runs; the figures
// for the docs come from BenchmarkHookProcess (n=200).
func TestBenchHookRuns(t *testing.T) {
	res, err := BenchHook(context.Background(), []string{hookBin}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if res.NoNote.N != 10 || res.OneNote.N != 10 || res.Shell.N != 10 || res.NoNote.Median <= 0 {
		t.Fatalf("bench %+v", res)
	}
	t.Logf("\n%s", res)
}

// BenchmarkHookProcess reports whole-process hook cost per Claude Code tool
// call: go test -run '^$' -bench HookProcess -benchtime 1x ./bridge/claude/
func BenchmarkHookProcess(b *testing.B) {
	for b.Loop() {
		res, err := BenchHook(context.Background(), []string{hookBin}, 200)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(res.NoNote.Median.Microseconds()), "µs-median-no-note")
		b.ReportMetric(float64(res.NoNote.P99.Microseconds()), "µs-p99-no-note")
		b.ReportMetric(float64(res.OneNote.Median.Microseconds()), "µs-median-one-note")
		b.ReportMetric(float64(res.OneNote.P99.Microseconds()), "µs-p99-one-note")
		b.ReportMetric(float64(res.Shell.Median.Microseconds()), "µs-median-sh")
		b.Logf("\n%s", res)
	}
}
