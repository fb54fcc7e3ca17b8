package claude

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/bridge"
	"github.com/wheelhouse-dev/wheelhouse/internal/stubmodel"
)

// hookBin is the test hook binary (testdata/hookmain), built once by
// TestMain. Its name makes Doctor recognise it as a Wheelhouse hook.
var hookBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "wheelhouse-claude-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	hookBin = filepath.Join(dir, "wheelhouse-hook")
	gobin, err := exec.LookPath("go")
	if err != nil {
		fmt.Fprintln(os.Stderr, "the go command is needed to build the test hook:", err)
		os.Exit(1)
	}
	build := exec.Command(gobin, "build", "-o", hookBin, "./testdata/hookmain")
	build.Env = append(os.Environ(), "CGO_ENABLED=0") // static, as the hook should ship
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the test hook:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// claudeBin is the genuine Claude Code CLI.
func claudeBin(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("WHEELHOUSE_TEST_CLAUDE"); p != "" {
		return p
	}
	if p, err := exec.LookPath("claude"); err == nil {
		return p
	}
	t.Fatal("the claude CLI is missing: set WHEELHOUSE_TEST_CLAUDE or run scripts/test.sh, which installs it")
	return ""
}

// claudeEnv points Claude Code at the stub, offline, with its own HOME.
func claudeEnv(t testing.TB, stub *stubmodel.MessagesServer) map[string]string {
	return map[string]string{
		"HOME":               t.TempDir(),
		"ANTHROPIC_BASE_URL": stub.URL(),
		"ANTHROPIC_API_KEY":  "sk-ant-test-dummy",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
		"DISABLE_AUTOUPDATER":                      "1",
		"DISABLE_TELEMETRY":                        "1",
		"DISABLE_ERROR_REPORTING":                  "1",
	}
}

func envList(m map[string]string) []string {
	out := []string{"PATH=" + os.Getenv("PATH")}
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	return out
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func ctxFor(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// eventLog records a harness's events.
type eventLog struct {
	mu  sync.Mutex
	evs []bridge.Event
}

func (l *eventLog) sink(ev bridge.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.evs = append(l.evs, ev)
}

func (l *eventLog) all() []bridge.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]bridge.Event(nil), l.evs...)
}

func (l *eventLog) find(match func(bridge.Event) bool) (bridge.Event, bool) {
	for _, ev := range l.all() {
		if match(ev) {
			return ev, true
		}
	}
	return bridge.Event{}, false
}

// wait returns the first event that matches, polling until d passes.
func (l *eventLog) wait(t testing.TB, d time.Duration, what string, match func(bridge.Event) bool) bridge.Event {
	t.Helper()
	var ev bridge.Event
	waitFor(t, d, what, func() bool {
		var ok bool
		ev, ok = l.find(match)
		return ok
	})
	return ev
}

func kindTurn(kind, turn string) func(bridge.Event) bool {
	return func(ev bridge.Event) bool { return ev.Kind == kind && ev.TurnID == turn }
}

// testGate is an approval gate the test decides for. It stands in for the
// bridge's gate with the same contract: a grant is good for the exact call
// it was asked about, once.
type testGate struct {
	decide func(bridge.ApprovalAsk) error // nil error = approve

	mu       sync.Mutex
	asks     []bridge.ApprovalAsk
	redeemed []bridge.ToolCall
}

func (g *testGate) Ask(ctx context.Context, ask bridge.ApprovalAsk) (bridge.Grant, error) {
	g.mu.Lock()
	g.asks = append(g.asks, ask)
	g.mu.Unlock()
	if err := g.decide(ask); err != nil {
		return nil, err
	}
	want, _ := json.Marshal(ask.Call)
	return &testGrant{gate: g, want: string(want)}, nil
}

func (g *testGate) Asks() []bridge.ApprovalAsk {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]bridge.ApprovalAsk(nil), g.asks...)
}

func (g *testGate) Redeemed() []bridge.ToolCall {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]bridge.ToolCall(nil), g.redeemed...)
}

type testGrant struct {
	gate *testGate
	want string
	used bool
}

func (gr *testGrant) Redeem(call bridge.ToolCall) error {
	got, _ := json.Marshal(call)
	gr.gate.mu.Lock()
	defer gr.gate.mu.Unlock()
	if gr.used {
		return errors.New("grant already used")
	}
	if string(got) != gr.want {
		return fmt.Errorf("call differs from the approved one")
	}
	gr.used = true
	gr.gate.redeemed = append(gr.gate.redeemed, call)
	return nil
}

// requestWith is the index of the first request containing s, -1 if none.
func requestWith(reqs []stubmodel.MessagesRequest, s string) int {
	for i, r := range reqs {
		if r.Contains(s) {
			return i
		}
	}
	return -1
}
