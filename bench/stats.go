package bench

import (
	"fmt"
	"io"
	"net/http"
	"sort"
	"time"
)

// Dist summarizes latencies.
type Dist struct {
	N             int
	P50, P99, Max time.Duration
}

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

func ratio(a, b time.Duration) string {
	if b == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f×", float64(a)/float64(b))
}

// drain reads and closes a response so its connection is reused (an
// unread body makes the client dial anew for the next request).
func drain(resp *http.Response) {
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}
