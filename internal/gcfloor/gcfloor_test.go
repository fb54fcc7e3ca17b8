package gcfloor

import (
	"os"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	for _, tc := range []struct {
		name        string
		live, floor uint64
		want        int
	}{
		{"NothingLiveYet", 0, 64 << 20, 100},
		{"SmallHeapRaisesIt", 5 << 20, 64 << 20, 1180},
		{"HalfTheFloorIsGosOwn", 32 << 20, 64 << 20, 100},
		{"LargeHeapIsGosOwn", 1 << 30, 64 << 20, 100},
		{"TinyHeapIsBounded", 1, 64 << 20, maxPercent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Percent(tc.live, tc.floor); got != tc.want {
				t.Fatalf("Percent(%d, %d) = %d, want %d", tc.live, tc.floor, got, tc.want)
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
	})
}
