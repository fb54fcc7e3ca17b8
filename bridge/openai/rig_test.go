package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/authz"
	"github.com/wheelhouse-dev/wheelhouse/bridge"
	"github.com/wheelhouse-dev/wheelhouse/internal/stubmodel"
)

const waitTimeout = 10 * time.Second

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// recorder is a bridge.Sink that keeps every event.
type recorder struct {
	mu     sync.Mutex
	events []bridge.Event
}

func (r *recorder) sink(e bridge.Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

func (r *recorder) all() []bridge.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]bridge.Event(nil), r.events...)
}

func (r *recorder) ended(turn string) (bridge.Event, bool) {
	for _, e := range r.all() {
		if e.Kind == bridge.EventTurnEnded && e.TurnID == turn {
			return e, true
		}
	}
	return bridge.Event{}, false
}

func (r *recorder) waitEnded(t testing.TB, turn string) bridge.Event {
	t.Helper()
	var end bridge.Event
	waitFor(t, "the end of turn "+turn, func() bool {
		var ok bool
		end, ok = r.ended(turn)
		return ok
	})
	return end
}

// of returns the events of turn of one kind.
func (r *recorder) of(turn, kind string) []bridge.Event {
	var out []bridge.Event
	for _, e := range r.all() {
		if e.TurnID == turn && e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// testGate records asks and answers them as the test says.
type testGate struct {
	mu       sync.Mutex
	asks     []bridge.ApprovalAsk
	redeemed []bridge.ToolCall
	auto     *bool // approve (true) or deny (false) at once; nil: wait on decide
	decide   chan bool
}

func newTestGate() *testGate { return &testGate{decide: make(chan bool, 8)} }

func (g *testGate) Ask(ctx context.Context, ask bridge.ApprovalAsk) (bridge.Grant, error) {
	g.mu.Lock()
	g.asks = append(g.asks, ask)
	auto := g.auto
	g.mu.Unlock()
	var ok bool
	if auto != nil {
		ok = *auto
	} else {
		select {
		case ok = <-g.decide:
		case <-ctx.Done():
			return nil, fmt.Errorf("withdrawn: %w", ctx.Err())
		}
	}
	if !ok {
		return nil, errors.New("denied by the owner")
	}
	h, _, err := authz.PayloadHash(ask.Call.Tool, ask.Call.Args)
	if err != nil {
		return nil, err
	}
	return &testGrant{g: g, hash: h}, nil
}

func (g *testGate) asked() []bridge.ApprovalAsk {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]bridge.ApprovalAsk(nil), g.asks...)
}

type testGrant struct {
	g    *testGate
	hash string
	used bool
}

func (gr *testGrant) Redeem(call bridge.ToolCall) error {
	h, _, err := authz.PayloadHash(call.Tool, call.Args)
	if err != nil {
		return err
	}
	gr.g.mu.Lock()
	defer gr.g.mu.Unlock()
	if gr.used || h != gr.hash {
		return errors.New("the call differs from what the owner approved")
	}
	gr.used = true
	gr.g.redeemed = append(gr.g.redeemed, call)
	return nil
}

func boolp(b bool) *bool { return &b }

// rig is a started harness against a stub endpoint, in a scratch project
// (dir) beside a file it must never reach (outside).
type rig struct {
	t       *testing.T
	stub    *stubmodel.ChatServer
	h       *Harness
	rec     *recorder
	gate    *testGate
	dir     string
	outside string
	state   string
	opts    map[string]string
}

func newRig(t *testing.T, opts map[string]string) *rig {
	t.Helper()
	stub := stubmodel.NewChat(t)
	root := t.TempDir()
	dir := filepath.Join(root, "proj")
	must(t, os.MkdirAll(dir, 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "README.md"), []byte("# Demo\nA small project.\n"), 0o644))
	outside := filepath.Join(root, "outside.txt")
	must(t, os.WriteFile(outside, []byte("secret\n"), 0o644))
	r := &rig{t: t, stub: stub, dir: dir, outside: outside, state: filepath.Join(root, "state"), opts: opts}
	r.start()
	return r
}

// start makes and starts a harness over the rig's directory and state (a
// second call is a restarted bridge).
func (r *rig) start() {
	r.t.Helper()
	o := map[string]string{"base_url": r.stub.URL(), "model": "stub-model", "state_dir": r.state, "command_timeout": "10s"}
	for k, v := range r.opts {
		o[k] = v
	}
	cfg, err := ParseConfig(bridge.AgentConfig{Name: "local", Harness: Kind, Dir: r.dir, Options: o}, envOf(map[string]string{"STUB_KEY": "sk-test"}))
	if err != nil {
		r.t.Fatal(err)
	}
	r.rec, r.gate = &recorder{}, newTestGate()
	r.h = newHarness(cfg, bridge.Deps{Agent: bridge.AgentConfig{Name: "local"}, Gate: r.gate, Events: r.rec.sink})
	r.h.partialEvery = 0
	if err := r.h.Start(context.Background()); err != nil {
		r.t.Fatal(err)
	}
	h := r.h
	r.t.Cleanup(func() { h.Close() })
}

func (r *rig) startTurn(text string) string {
	r.t.Helper()
	id, err := r.h.StartTurn(context.Background(), bridge.Input{Text: text, Sender: "alice", SenderIsOwner: true})
	if err != nil {
		r.t.Fatal(err)
	}
	return id
}

// run starts a turn and waits for its end.
func (r *rig) run(text string) (string, bridge.Event) {
	r.t.Helper()
	id := r.startTurn(text)
	return id, r.rec.waitEnded(r.t, id)
}

// call is a scripted tool call with JSON arguments.
func call(name string, args any) stubmodel.ChatToolCall {
	b, err := jsonMarshal(args)
	if err != nil {
		panic(err)
	}
	return stubmodel.ChatToolCall{Name: name, Arguments: b}
}

func tools(calls ...stubmodel.ChatToolCall) stubmodel.ChatReply {
	return stubmodel.ChatReply{ToolCalls: calls}
}

func text(s string) stubmodel.ChatReply { return stubmodel.ChatReply{Text: s} }

// result is the tool message of req answering the ith call of the
// assistant message before it.
func result(t testing.TB, req *stubmodel.ChatRequest, id string) string {
	t.Helper()
	s, ok := req.ToolResult(id)
	if !ok {
		t.Fatalf("request %d has no result for %s: %+v", req.N, id, req.Messages)
	}
	return s
}

func contains(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

func jsonMarshal(v any) (string, error) {
	if s, ok := v.(string); ok {
		return s, nil
	}
	b, err := json.Marshal(v)
	return string(b), err
}

type httpServer struct{ body string }

func (s *httpServer) serve(ln net.Listener) {
	_ = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, s.body)
	}))
}
