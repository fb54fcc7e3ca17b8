package main

import (
	"fmt"
	"io"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
)

// A hub process keeps a floor under the collector's heap goal (its small
// heap gets a GOGC above 100, shown on /metrics), unless the operator set
// GOGC, which then decides.
func TestHubKeepsAHeapFloor(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  []string
		ok   func(percent int) bool
		want string
	}{
		{"RaisedForASmallHeap", nil, func(p int) bool { return p > 100 }, "above 100"},
		{"OperatorsGOGCDecides", []string{"GOGC=150"}, func(p int) bool { return p == 150 }, "150"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			metrics := freePort(t)
			startProc(t, tc.env, "hub", "--data", t.TempDir(), "--http", freePort(t), "--nats", freePort(t), "--metrics", metrics).
				expect(t, `^Wheelhouse hub at `)
			testhub.CheckFor(t, 20*time.Second, "go_gc_gogc_percent "+tc.want, func() error {
				p, err := gogcPercent("http://" + metrics + "/metrics")
				if err != nil {
					return err
				}
				if !tc.ok(p) {
					return fmt.Errorf("go_gc_gogc_percent %d", p)
				}
				return nil
			})
		})
	}
}

var gogcRE = regexp.MustCompile(`(?m)^go_gc_gogc_percent (\d+)$`)

func gogcPercent(url string) (int, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	m := gogcRE.FindSubmatch(b)
	if m == nil {
		return 0, fmt.Errorf("no go_gc_gogc_percent in /metrics")
	}
	var p int
	fmt.Sscan(string(m[1]), &p)
	return p, nil
}
