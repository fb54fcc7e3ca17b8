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

	"github.com/wheelhouse-dev/wheelhouse/bridge/claude/claudehook"
)

// hookBin is the test hook binary (testdata/hookmain), built once by
// TestMain. Its name makes Doctor recognise it as a Wheelhouse hook.
var hookBin string

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		os.Exit(attachedHelper())
	}
	if p := os.Getenv(squatterEnv); p != "" {
		os.Exit(squatter(p))
	}
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
	destructive.Lock()
	fmt.Printf("destructive calls by the obedient model: %d, run without an owner decision: %d\n", destructive.attempts, destructive.unapproved)
	if destructive.unapproved > 0 && code == 0 {
		code = 1
	}
	destructive.Unlock()
	os.Exit(code)
}

// destructive tallies, over the package's tests, the destructive calls an
// obedient model made and how many ran without an owner decision. That
// second number must be zero.
var destructive struct {
	sync.Mutex
	attempts, unapproved int
}

// countDestructive records one destructive call: whether it ran, and
// whether the owner approved it.
func countDestructive(t testing.TB, what string, ran, ownerApproved bool) {
	t.Helper()
	destructive.Lock()
	defer destructive.Unlock()
	destructive.attempts++
	if ran && !ownerApproved {
		destructive.unapproved++
		t.Errorf("%s: ran without an owner decision", what)
	}
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
	return claudeEnvHome(t.TempDir(), stub)
}

func claudeEnvHome(home string, stub *stubmodel.MessagesServer) map[string]string {
	return map[string]string{
		"HOME":               home,
		"ANTHROPIC_BASE_URL": stub.URL(),
		"ANTHROPIC_API_KEY":  "sk-ant-test-dummy",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
		"DISABLE_AUTOUPDATER":                      "1",
		"DISABLE_TELEMETRY":                        "1",
		"DISABLE_ERROR_REPORTING":                  "1",
	}
}

// machine is a scratch owner's machine with one project: the project
// folder, Claude Code's HOME, and the Wheelhouse state root the bridge and
// the hook share (WHEELHOUSE_STATE_DIR in Claude Code's environment,
// option state_dir for the harness).
type machine struct {
	dir, home, state string
}

func newMachine(t testing.TB) machine {
	t.Helper()
	m := machine{dir: t.TempDir(), home: t.TempDir()}
	m.state = filepath.Join(m.home, ".local", "state", "wheelhouse")
	return m
}

// opts adds state_dir to agent options.
func (m machine) opts(o map[string]string) map[string]string {
	out := map[string]string{"state_dir": m.state}
	for k, v := range o {
		out[k] = v
	}
	return out
}

// env is Claude Code's environment on this machine, against stub.
func (m machine) env(stub *stubmodel.MessagesServer) map[string]string {
	e := claudeEnvHome(m.home, stub)
	e["WHEELHOUSE_STATE_DIR"] = m.state
	return e
}

// hookEnv is what the hook sees when Claude Code runs it in the project.
func (m machine) hookEnv() []string {
	return []string{"PATH=/usr/bin:/bin", "HOME=" + m.home, claudehook.EnvProjectDir + "=" + m.dir, claudehook.EnvStateDir + "=" + m.state}
}

// trust marks the project trusted in Claude Code's HOME (so the project's
// settings.json allow rules apply, as on an owner's machine) and writes
// those allow rules.
func (m machine) trustWithAllowRules(t testing.TB, rules ...string) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"projects": map[string]any{m.dir: map[string]any{"hasTrustDialogAccepted": true}}})
	if err := os.WriteFile(filepath.Join(m.home, ".claude.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(m.dir, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	b, _ = json.Marshal(map[string]any{"permissions": map[string]any{"allow": rules}})
	if err := os.WriteFile(filepath.Join(m.dir, ".claude", "settings.json"), b, 0o644); err != nil {
		t.Fatal(err)
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
	decide    func(bridge.ApprovalAsk) error                  // nil error = approve
	decideCtx func(context.Context, bridge.ApprovalAsk) error // used instead of decide when set

	mu       sync.Mutex
	asks     []bridge.ApprovalAsk
	redeemed []bridge.ToolCall
}

func (g *testGate) Ask(ctx context.Context, ask bridge.ApprovalAsk) (bridge.Grant, error) {
	g.mu.Lock()
	g.asks = append(g.asks, ask)
	g.mu.Unlock()
	decide := func(_ context.Context, a bridge.ApprovalAsk) error { return g.decide(a) }
	if g.decideCtx != nil {
		decide = g.decideCtx
	}
	if err := decide(ctx, ask); err != nil {
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
