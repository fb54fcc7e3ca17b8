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

// heapMinimum is the runtime's least heap goal at GOGC=100; it scales
// with GOGC (runtime/mgcpacer.go), so a GOGC above floor/heapMinimum×100
// would make the goal more than the floor even with nothing live.
const heapMinimum = 4 << 20

var once sync.Once

// Start keeps the heap goal at floor bytes or more from now on, unless the
// operator chose the collector's pace with GOGC (then it does nothing and
// reports false). It is process-wide: a second call changes nothing.
func Start(floor uint64) (started bool) {
	if os.Getenv("GOGC") != "" || floor == 0 { // an empty GOGC is the runtime's default
		return false
	}
	once.Do(func() {
		t := &tuner{floor: floor, percent: debug.SetGCPercent(100), sample: []metrics.Sample{
			{Name: "/gc/heap/live:bytes"}, {Name: "/gc/scan/stack:bytes"}, {Name: "/gc/scan/globals:bytes"}}}
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

// Percent is the GOGC that makes the runtime's heap goal floor bytes for
// a live heap of live bytes and extra bytes of stacks and globals to scan:
// the goal is live + (live+extra)×GOGC/100, and never less than
// heapMinimum×GOGC/100. It is never less than Go's default 100.
func Percent(live, extra, floor uint64) int {
	if live == 0 || 2*live+extra >= floor {
		return 100
	}
	p := (floor - live) * 100 / (live + extra)
	return int(max(100, min(p, floor*100/heapMinimum)))
}

func (t *tuner) tune() {
	metrics.Read(t.sample)
	var v [3]uint64
	for i, s := range t.sample {
		if s.Value.Kind() != metrics.KindUint64 {
			return
		}
		v[i] = s.Value.Uint64()
	}
	p := Percent(v[0], v[1]+v[2], t.floor)
	// A change of less than a tenth is not worth telling the runtime.
	if d := p - t.percent; d*10 > t.percent || -d*10 > t.percent {
		debug.SetGCPercent(p)
		t.percent = p
	}
}
