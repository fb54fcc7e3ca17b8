package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}

// recorder is a bridge.Sink that keeps every event.
type recorder struct {
	mu     sync.Mutex
	events []bridge.Event
}

func (r *recorder) sink(e bridge.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *recorder) all() []bridge.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]bridge.Event(nil), r.events...)
}

// ended returns the EventTurnEnded of turn, if it came.
func (r *recorder) ended(turn string) (bridge.Event, bool) {
	for _, e := range r.all() {
		if e.Kind == bridge.EventTurnEnded && e.TurnID == turn {
			return e, true
		}
	}
	return bridge.Event{}, false
}

// has reports whether an event of kind for turn contains text.
func (r *recorder) has(turn, kind, text string) bool {
	for _, e := range r.all() {
		if e.TurnID == turn && e.Kind == kind && strings.Contains(e.Text, text) {
			return true
		}
	}
	return false
}

func (r *recorder) waitEnded(t *testing.T, turn string) bridge.Event {
	t.Helper()
	var e bridge.Event
	waitFor(t, "end of turn "+turn, func() (ok bool) { e, ok = r.ended(turn); return ok })
	return e
}

// testGate is a bridge.Gate the test decides for: each Ask waits for the
// test to send an answer on decide.
type testGate struct {
	mu     sync.Mutex
	asks   []bridge.ApprovalAsk
	decide chan func(bridge.ApprovalAsk) (bridge.Grant, error)
}

func newTestGate() *testGate {
	return &testGate{decide: make(chan func(bridge.ApprovalAsk) (bridge.Grant, error), 1)}
}

func (g *testGate) Ask(ctx context.Context, ask bridge.ApprovalAsk) (bridge.Grant, error) {
	g.mu.Lock()
	g.asks = append(g.asks, ask)
	g.mu.Unlock()
	select {
	case f := <-g.decide:
		return f(ask)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (g *testGate) asked() []bridge.ApprovalAsk {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]bridge.ApprovalAsk(nil), g.asks...)
}

// testGrant redeems once, and only for the call that was approved (compared
// by JSON, as the real gate compares hashes of canonical JSON).
type testGrant struct {
	mu       sync.Mutex
	approved string
	redeems  int
	used     bool
	fail     error // if set, Redeem reports it (as a hash mismatch would)
}

func (g *testGrant) Redeem(call bridge.ToolCall) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.redeems++
	if g.fail != nil {
		return g.fail
	}
	b, _ := json.Marshal(call)
	if string(b) != g.approved {
		return errors.New("payload hash mismatch")
	}
	if g.used {
		return errors.New("approval already used")
	}
	g.used = true
	return nil
}

func (g *testGrant) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.redeems
}

func approve(grant *testGrant) func(bridge.ApprovalAsk) (bridge.Grant, error) {
	return func(ask bridge.ApprovalAsk) (bridge.Grant, error) {
		b, _ := json.Marshal(ask.Call)
		grant.mu.Lock()
		grant.approved = string(b)
		grant.mu.Unlock()
		return grant, nil
	}
}

// newAgent starts a demo agent with the given pacing.
func newAgent(t *testing.T, step string, steps int, gate bridge.Gate) (*Agent, *recorder) {
	t.Helper()
	rec := &recorder{}
	a, err := New(bridge.Deps{
		Agent:  bridge.AgentConfig{Name: "demo", Harness: Kind, Options: map[string]string{"step": step, "steps": fmt.Sprint(steps)}},
		Gate:   gate,
		Events: rec.sink,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	if err := a.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	return a, rec
}

// envelope is a stand-in for the text the bridge hands the model.
func envelope(sender, text string) string {
	return "Wheelhouse message\nFrom: " + sender + " (collaborator, not the owner)\nRoom: #dev\n\n" + text + "\n"
}

func hasFile(a *Agent, name string) bool {
	for _, f := range a.Files() {
		if f == name {
			return true
		}
	}
	return false
}
