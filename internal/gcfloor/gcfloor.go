package gcfloor

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// DefaultFloor is the heap goal a small process keeps.
const DefaultFloor = 64 << 20

// maxPercent bounds the GOGC the floor sets (a nearly empty heap).
const maxPercent = 10_000

var once sync.Once

// Start keeps the heap goal at floor bytes or more from now on, unless the
// operator chose the collector's pace with GOGC (then it does nothing and
// reports false). It is process-wide: a second call changes nothing.
func Start(floor uint64) (started bool) {
	if _, set := os.LookupEnv("GOGC"); set || floor == 0 {
		return false
	}
	once.Do(func() {
		t := &tuner{floor: floor, percent: debug.SetGCPercent(100), sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
		t.tune()
		t.arm()
		started = true
	})
	return started
}

type tuner struct {
	floor   uint64
	percent int
	sample  []metrics.Sample
}

// sentinel is an object the collector frees on every cycle; its cleanup
// tunes the next one. It is larger than the tiny allocator's blocks, whose
// objects may never be cleaned up.
type sentinel struct{ _ [64]byte }

func (t *tuner) arm() {
	runtime.AddCleanup(new(sentinel), func(t *tuner) {
		t.tune()
		t.arm()
	}, t)
}

// Percent is the GOGC that makes the heap goal floor for a live heap of
// live bytes, and never less than Go's default 100.
func Percent(live, floor uint64) int {
	if live == 0 || live*2 >= floor {
		return 100
	}
	p := floor*100/live - 100
	return int(min(p, maxPercent))
}

func (t *tuner) tune() {
	metrics.Read(t.sample)
	if t.sample[0].Value.Kind() != metrics.KindUint64 {
		return
	}
	p := Percent(t.sample[0].Value.Uint64(), t.floor)
	// A change of less than a tenth is not worth telling the runtime.
	if d := p - t.percent; d*10 > t.percent || -d*10 > t.percent {
		debug.SetGCPercent(p)
		t.percent = p
	}
}
