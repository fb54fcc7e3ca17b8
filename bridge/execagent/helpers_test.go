//go:build unix

package execagent

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/bridge"
)

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}

// recorder is a bridge.Sink that keeps every event; onEvent, if set, runs
// inside the sink call (as a bridge reacting synchronously would).
type recorder struct {
	mu      sync.Mutex
	events  []bridge.Event
	onEvent func(bridge.Event)
}

func (r *recorder) sink(e bridge.Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	f := r.onEvent
	r.mu.Unlock()
	if f != nil {
		f(e)
	}
}

func (r *recorder) all() []bridge.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]bridge.Event(nil), r.events...)
}

func (r *recorder) waitEnded(t *testing.T, turn string) bridge.Event {
	t.Helper()
	var end bridge.Event
	waitFor(t, "end of turn "+turn, func() bool {
		for _, e := range r.all() {
			if e.Kind == bridge.EventTurnEnded && e.TurnID == turn {
				end = e
				return true
			}
		}
		return false
	})
	return end
}

// message returns the text of turn's EventMessage ("" if none).
func (r *recorder) message(turn string) string {
	var out []string
	for _, e := range r.all() {
		if e.Kind == bridge.EventMessage && e.TurnID == turn {
			out = append(out, e.Text)
		}
	}
	return strings.Join(out, "\n")
}

// newAgent starts an exec agent running argv.
func newAgent(t *testing.T, cfg bridge.AgentConfig) (*Agent, *recorder) {
	t.Helper()
	rec := &recorder{}
	cfg.Harness = Kind
	if cfg.Name == "" {
		cfg.Name = "exec"
	}
	a, err := New(bridge.Deps{Agent: cfg, Events: rec.sink})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	if err := a.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	return a, rec
}

func sh(script string, args ...string) []string {
	return append([]string{"/bin/sh", "-c", script, "sh"}, args...)
}
