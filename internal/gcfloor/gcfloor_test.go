package gcfloor

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name               string
		live, extra, floor uint64
		want               int
	}{
		{"NothingLiveYet", 0, 0, 64 * mib, 100},
		{"SmallHeapRaisesIt", 5 * mib, 0, 64 * mib, 1180},          // 5 + 5×11.8 = 64
		{"StacksAndGlobalsCount", 5 * mib, 1 * mib, 64 * mib, 983}, // 5 + 6×9.83 = 64
		{"HalfTheFloorIsGosOwn", 32 * mib, 0, 64 * mib, 100},
		{"LargeHeapIsGosOwn", 1 << 30, 0, 64 * mib, 100},
		// The runtime's least goal is 4 MiB×GOGC/100: above 1600 it alone
		// would pass 64 MiB.
		{"TinyHeapStopsAtTheRuntimesMinimum", 1, 0, 64 * mib, 1600},
		{"NeverBelowGosDefault", 30 * mib, 5 * mib, 64 * mib, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Percent(tc.live, tc.extra, tc.floor); got != tc.want {
				t.Fatalf("Percent(%d, %d, %d) = %d, want %d", tc.live, tc.extra, tc.floor, got, tc.want)
			}
		})
	}
}

func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

func TestStart(t *testing.T) {
	t.Run("GOGCSetLeavesItAlone", func(t *testing.T) {
		t.Setenv("GOGC", "100")
		if Start(DefaultFloor) {
			t.Fatal("started although GOGC is set")
		}
		if p := gcPercent(); p != 100 {
			t.Fatalf("GOGC is %d", p)
		}
	})
	t.Run("SmallHeapCollectsLessOften", func(t *testing.T) {
		if v, ok := os.LookupEnv("GOGC"); ok {
			os.Unsetenv("GOGC")
			t.Cleanup(func() { os.Setenv("GOGC", v) })
		}
		if !Start(DefaultFloor) {
			t.Fatal("did not start")
		}
		t.Cleanup(func() { debug.SetGCPercent(100) })
		// Each cycle tunes the next; the test's heap is a few MiB.
		deadline := time.Now().Add(10 * time.Second)
		for gcPercent() <= 100 {
			if time.Now().After(deadline) {
				t.Fatalf("GOGC still %d after collections", gcPercent())
			}
			runtime.GC()
			time.Sleep(time.Millisecond) // the cleanup runs on its own goroutine
		}
		if Start(DefaultFloor) {
			t.Fatal("a second Start started again")
		}
		// The goal the runtime works to is about the floor, not past it.
		s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}}
		runtime.GC()
		metrics.Read(s)
		if goal := s[0].Value.Uint64(); goal > DefaultFloor*5/4 {
			t.Fatalf("the heap goal is %d MiB, past the %d MiB floor", goal>>20, DefaultFloor>>20)
		}
	})
}
