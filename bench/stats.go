package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Dist summarizes latencies.
type Dist struct {
	N             int
	P50, P99, Max time.Duration
}

// MarshalJSON writes microseconds, for comparing runs.
func (d Dist) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		N   int     `json:"n"`
		P50 float64 `json:"p50Micros"`
		P99 float64 `json:"p99Micros"`
		Max float64 `json:"maxMicros"`
	}{d.N, micros(d.P50), micros(d.P99), micros(d.Max)})
}

func micros(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

func dist(ds []time.Duration) Dist {
	if len(ds) == 0 {
		return Dist{}
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	q := func(p float64) time.Duration { return s[min(len(s)-1, int(p*float64(len(s))))] }
	return Dist{N: len(s), P50: q(0.50), P99: q(0.99), Max: s[len(s)-1]}
}

func (d Dist) String() string {
	return fmt.Sprintf("p50 %s  p99 %s  (n=%d)", round(d.P50), round(d.P99), d.N)
}

func round(d time.Duration) time.Duration {
	switch {
	case d > time.Second:
		return d.Round(time.Millisecond)
	case d > time.Millisecond:
		return d.Round(10 * time.Microsecond)
	default:
		return d.Round(time.Microsecond)
	}
}

// ratio is a/b, 0 when b is.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func durRatio(a, b time.Duration) float64 { return ratio(float64(a), float64(b)) }

// cpuTime is the process's CPU time, user and system: on a shared machine
// it moves much less than the wall clock.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loadAvg is the machine's 1-minute load average (0 where unknown).
func loadAvg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f, _ := strconv.ParseFloat(strings.Fields(string(b))[0], 64)
	return f
}

// settle lets the previous run finish leaving (its sockets closing, its
// goroutines ending) and collects its garbage, so the next run does not
// pay for it: back to back, a run's tail latency grew with each one.
func settle(goroutines int) {
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > goroutines+20 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	runtime.GC()
	time.Sleep(500 * time.Millisecond) // the kernel's side of the closed sockets
}

// drain reads and closes a response so its connection is reused (an
// unread body makes the client dial anew for the next request).
func drain(resp *http.Response) {
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}
