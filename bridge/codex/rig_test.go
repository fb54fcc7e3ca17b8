package codex

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/bridge"
	"github.com/wheelhouse-dev/wheelhouse/internal/stubmodel"
)

// waitTimeout bounds every wait in these tests.
const waitTimeout = 10 * time.Second

// codexBinary is the real codex CLI the tests drive.
func codexBinary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("WHEELHOUSE_TEST_CODEX"); p != "" {
		return p
	}
	p, err := exec.LookPath("codex")
	if err != nil {
		t.Fatal("codex CLI not found: set WHEELHOUSE_TEST_CODEX or run scripts/test.sh, which installs it")
	}
	return p
}

// testLogger writes to the test log at debug level.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// events records what a harness emits.
type events struct {
	mu      sync.Mutex
	list    []bridge.Event
	changed chan struct{}
}

func newEvents() *events { return &events{changed: make(chan struct{})} }

func (e *events) sink(ev bridge.Event) {
	e.mu.Lock()
	e.list = append(e.list, ev)
	close(e.changed)
	e.changed = make(chan struct{})
	e.mu.Unlock()
}

func (e *events) all() []bridge.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]bridge.Event(nil), e.list...)
}

// wait returns the first event matching ok, waiting up to waitTimeout.
func (e *events) wait(t testing.TB, what string, ok func(bridge.Event) bool) bridge.Event {
	t.Helper()
	deadline := time.NewTimer(waitTimeout)
	defer deadline.Stop()
	for {
		e.mu.Lock()
		for _, ev := range e.list {
			if ok(ev) {
				e.mu.Unlock()
				return ev
			}
		}
		changed := e.changed
		e.mu.Unlock()
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("no %s event within %v; got %+v", what, waitTimeout, e.all())
		}
	}
}

func kindIs(kind string) func(bridge.Event) bool {
	return func(ev bridge.Event) bool { return ev.Kind == kind }
}

func turnEnded(turn string) func(bridge.Event) bool {
	return func(ev bridge.Event) bool { return ev.Kind == bridge.EventTurnEnded && ev.TurnID == turn }
}

// testGate is a minimal bridge.Gate: each Ask is handed to decide, which
// returns the decision (nil error = approve). Grants are single-use and
// bound to the JSON of the approved call.
type testGate struct {
	mu     sync.Mutex
	asks   []bridge.ApprovalAsk
	decide func(ctx context.Context, ask bridge.ApprovalAsk) error
	tamper bool // grants are bound to a different call than the one asked
	grants []*testGrant
}

func (g *testGate) Ask(ctx context.Context, ask bridge.ApprovalAsk) (bridge.Grant, error) {
	g.mu.Lock()
	g.asks = append(g.asks, ask)
	decide := g.decide
	g.mu.Unlock()
	if decide == nil {
		return nil, errors.New("denied: no decision configured")
	}
	if err := decide(ctx, ask); err != nil {
		return nil, err
	}
	b, err := json.Marshal(ask.Call)
	if err != nil {
		return nil, err
	}
	gr := &testGrant{payload: string(b)}
	g.mu.Lock()
	if g.tamper {
		gr.payload = `{"tool":"exec_command","args":{"command":"something else"}}`
	}
	g.grants = append(g.grants, gr)
	g.mu.Unlock()
	return gr, nil
}

func (g *testGate) asked() []bridge.ApprovalAsk {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]bridge.ApprovalAsk(nil), g.asks...)
}

type testGrant struct {
	mu       sync.Mutex
	payload  string // JSON of the approved call
	redeemed int
}

func (g *testGrant) Redeem(call bridge.ToolCall) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	b, err := json.Marshal(call)
	if err != nil {
		return err
	}
	if string(b) != g.payload {
		return errors.New("call differs from the approved payload")
	}
	if g.redeemed > 0 {
		return errors.New("grant already used")
	}
	g.redeemed++
	return nil
}

// rig is one real codex app-server against a stub model.
type rig struct {
	t      testing.TB
	stub   *stubmodel.Responses
	h      *Harness
	gate   *testGate
	events *events
	dir    string // the agent's project directory
}

// newRig starts codex with the given options on top of the defaults
// (codex_home pointing at the stub, strict config).
func newRig(t testing.TB, options map[string]string, script ...stubmodel.ResponsesReply) *rig {
	t.Helper()
	return newRigWith(t, options, nil, script...)
}

// newRigWith is newRig with a hook that adjusts the harness before Start.
func newRigWith(t testing.TB, options map[string]string, setup func(*Harness), script ...stubmodel.ResponsesReply) *rig {
	t.Helper()
	r := &rig{t: t, stub: stubmodel.NewResponses(t, script...), gate: &testGate{}, events: newEvents()}
	root := t.TempDir()
	r.dir = filepath.Join(root, "proj")
	home := filepath.Join(root, "home")
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := r.stub.WriteCodexHome(home); err != nil {
		t.Fatal(err)
	}
	opts := map[string]string{OptCodexHome: home, OptStrictConfig: "true"}
	for k, v := range options {
		opts[k] = v
	}
	h, err := New(bridge.Deps{
		Agent: bridge.AgentConfig{Name: "codex-test", Harness: "codex", Dir: r.dir, Binary: codexBinary(t), Options: opts},
		Gate:  r.gate, Events: r.events.sink, Log: testLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	r.h = h
	if setup != nil {
		setup(h)
	}
	t.Cleanup(func() {
		if err := h.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := h.Start(ctx); err != nil {
		t.Fatalf("start: %v", err)
	}
	return r
}

func (r *rig) startTurn(text string) string {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	id, err := r.h.StartTurn(ctx, bridge.Input{Text: text})
	if err != nil {
		r.t.Fatalf("start turn: %v", err)
	}
	return id
}

func (r *rig) steer(turn, text string) error {
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	return r.h.Steer(ctx, turn, bridge.Input{Text: text})
}

// waitFor polls cond until it holds or waitTimeout passes.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
