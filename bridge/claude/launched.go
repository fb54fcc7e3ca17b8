package claude

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	wheelhouse "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/bridge"
)

// Timeouts of the Launched harness.
const (
	readyTimeout     = 60 * time.Second // launch → initialize answered
	interruptTimeout = 5 * time.Second  // interrupt acknowledged, else kill and restart
	closeGrace       = 3 * time.Second  // stdin closed → process gone, else killed
	maxRestartDelay  = 30 * time.Second
)

// Launched runs one persistent `claude -p --input-format stream-json
// --output-format stream-json` process for an agent, in d.Agent.Dir.
//
// A turn is one user message written to stdin while idle; it ends with the
// CLI's result line. A steer is a user message written while the turn runs:
// Claude Code folds it into the next model request of the same turn. One
// written too late for that (the CLI already answering its final request)
// makes the CLI run another round; the harness keeps the turn open until
// every message it wrote has been taken up (--replay-user-messages echoes
// them), so the steer still belongs to the turn it was accepted for.
//
// Permission prompts come as can_use_tool control requests
// (--permission-prompt-tool stdio) and go to the approval gate; only a
// redeemed grant is answered "allow". Once words from anyone but the owner
// have reached the session (it is tainted, for the rest of its life), a
// PreToolUse hook the harness registers in-process (a hook_callback over
// stdio) answers "ask" for every tool that does more than read, so Claude
// Code puts the call to the gate even where an allow rule (--allowedTools,
// the user's settings) would have let it run. Settings files inside the
// project, which a commit or the agent itself can change, are not loaded
// (--setting-sources user, unless option setting_sources says otherwise). Interrupt sends the interrupt control
// request with cancel_queued, so steers not yet taken up end with the turn;
// if the CLI does not acknowledge it within 5 s the process is killed and
// restarted on the same session (--resume).
type Launched struct {
	d         bridge.Deps
	log       *slog.Logger
	bin       string
	args      []string
	env       []string
	sessionID string
	events    *eventQueue

	mu         sync.Mutex
	proc       *lproc
	started    bool
	closed     bool
	hadTurn    bool // the session has something to resume
	turn       string
	seq        uint64
	unreplayed []string // user messages written, not yet taken up by the CLI
	interrupt  bool     // the running turn is being interrupted
	ctlSeq     int
	ctlWait    map[string]chan ctlResponse
	asks       map[string]context.CancelFunc
	tainted    bool // non-owner words reached this session
	restarts   int
	restartWG  sync.WaitGroup
	stopCh     chan struct{}
}

// NewLaunched returns the harness for d.Agent (Kind "claude"). Options:
// model, permission_mode (default, manual, plan or dontAsk: modes that
// approve on their own would bypass the owner's gate), allowed_tools and
// disallowed_tools (comma-separated Claude Code rules), append_system_prompt,
// setting_sources (which Claude Code settings files to load: user, project,
// local, comma-separated; default user).
func NewLaunched(d bridge.Deps) (*Launched, error) {
	args, err := launchArgs(d.Agent)
	if err != nil {
		return nil, err
	}
	bin := d.Agent.Binary
	if bin == "" {
		bin = "claude"
	}
	log := d.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Launched{
		d: d, log: log.With("harness", "claude"),
		bin: bin, args: args, env: harnessEnv(d.Agent.Env),
		sessionID: newUUID(), events: newEventQueue(d.Events),
		ctlWait: map[string]chan ctlResponse{}, asks: map[string]context.CancelFunc{},
		stopCh: make(chan struct{}),
	}, nil
}

func launchArgs(a bridge.AgentConfig) ([]string, error) {
	args := []string{"-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose",
		"--permission-prompt-tool", "stdio", "--replay-user-messages"}
	opt := func(k string) string { return strings.TrimSpace(a.Options[k]) }
	if v := opt("model"); v != "" {
		args = append(args, "--model", v)
	}
	switch v := opt("permission_mode"); v {
	case "", "default":
	case "manual", "plan", "dontAsk":
		args = append(args, "--permission-mode", v)
	default:
		return nil, wheelhouse.Errorf(wheelhouse.EInvalid,
			"agent %q: permission_mode %q would let Claude Code approve tool calls without the owner; use default, manual, plan or dontAsk, and the policy's autoApprove list", a.Name, v)
	}
	for _, o := range []struct{ key, flag string }{{"allowed_tools", "--allowedTools"}, {"disallowed_tools", "--disallowedTools"}} {
		if v := opt(o.key); v != "" {
			args = append(args, o.flag, v)
		}
	}
	if v := opt("append_system_prompt"); v != "" {
		args = append(args, "--append-system-prompt", v)
	}
	sources := opt("setting_sources")
	if sources == "" {
		sources = DefaultSettingSources
	}
	for _, s := range strings.Split(sources, ",") {
		switch strings.TrimSpace(s) {
		case "user", "project", "local":
		default:
			return nil, wheelhouse.Errorf(wheelhouse.EInvalid, "agent %q: setting_sources %q: each source must be user, project or local", a.Name, sources)
		}
	}
	args = append(args, "--setting-sources", strings.ReplaceAll(sources, " ", ""))
	return args, nil
}

// DefaultSettingSources are the Claude Code settings files a launched
// agent loads: the owner's own. The project's .claude/settings.json and
// settings.local.json are left out: a teammate's commit, or the agent
// itself, could add allow rules or hooks to them.
const DefaultSettingSources = "user"

func (l *Launched) Kind() string   { return "claude" }
func (l *Launched) CanSteer() bool { return true }

// Start launches the CLI and returns once it answered the initialize
// request.
func (l *Launched) Start(ctx context.Context) error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return bridge.ErrNotRunning
	}
	if l.started {
		l.mu.Unlock()
		return nil
	}
	l.started = true
	l.mu.Unlock()
	if err := l.launch(ctx, false); err != nil {
		l.mu.Lock()
		l.started = false
		l.mu.Unlock()
		return wheelhouse.Errorf(wheelhouse.EUnavailable, "agent %q: claude did not start: %v", l.d.Agent.Name, err)
	}
	return nil
}

// StartTurn writes in as a new user message when the agent is idle.
func (l *Launched) StartTurn(ctx context.Context, in bridge.Input) (string, error) {
	l.mu.Lock()
	p := l.proc
	switch {
	case l.closed || p == nil:
		l.mu.Unlock()
		return "", bridge.ErrNotRunning
	case l.turn != "":
		l.mu.Unlock()
		return "", bridge.ErrBusy
	}
	l.seq++
	turn := newTurnID("t", l.seq)
	l.turn, l.interrupt, l.hadTurn = turn, false, true
	if taints(in) {
		l.tainted = true // before the words reach the model
	}
	l.unreplayed = append(l.unreplayed, in.Text)
	l.events.push(bridge.Event{Kind: bridge.EventTurnStarted, TurnID: turn})
	l.mu.Unlock()
	if err := p.write(userLine(in.Text)); err != nil {
		// The process is gone; its exit ends the turn as failed.
		return "", bridge.ErrNotRunning
	}
	return turn, nil
}

// runningTurnLocked returns the process if turnID is the running turn, or
// the error Steer and Interrupt answer with. l.mu must be held.
func (l *Launched) runningTurnLocked(turnID string) (*lproc, error) {
	switch {
	case l.closed || l.proc == nil:
		return nil, bridge.ErrNotRunning
	case l.turn == "":
		return nil, bridge.ErrNoActiveTurn
	case turnID != l.turn:
		return nil, bridge.ErrStaleTurn
	}
	return l.proc, nil
}

// Steer writes in as a user message into the running turn expectedTurnID.
func (l *Launched) Steer(ctx context.Context, expectedTurnID string, in bridge.Input) error {
	l.mu.Lock()
	p, err := l.runningTurnLocked(expectedTurnID)
	if err != nil {
		l.mu.Unlock()
		return err
	}
	l.unreplayed = append(l.unreplayed, in.Text)
	if taints(in) {
		l.tainted = true // before the words reach the model
	}
	l.mu.Unlock()
	if err := p.write(userLine(in.Text)); err != nil {
		return bridge.ErrNotRunning
	}
	return nil
}

// Tainted reports whether words from anyone but the owner reached the
// session.
func (l *Launched) Tainted() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.tainted
}

// Interrupt ends turnID: the interrupt control request, or, unanswered,
// kill and restart. The turn ends with status "interrupted".
func (l *Launched) Interrupt(ctx context.Context, turnID string) error {
	l.mu.Lock()
	p, err := l.runningTurnLocked(turnID)
	if err != nil {
		l.mu.Unlock()
		return err
	}
	l.interrupt = true
	l.mu.Unlock()
	cctx, cancel := context.WithTimeout(ctx, interruptTimeout)
	defer cancel()
	// cancel_queued: steers the CLI has not taken up yet die with the turn
	// instead of starting a round of their own after it.
	if _, err := l.control(cctx, p, "interrupt", map[string]any{"cancel_queued": true}); err == nil {
		return nil
	} else if ctx.Err() != nil {
		return ctx.Err()
	} else {
		l.log.Warn("claude did not acknowledge the interrupt; restarting it", "err", err)
	}
	l.mu.Lock()
	if l.proc == p && l.turn == turnID {
		l.endTurnLocked(bridge.EventTurnEnded, "interrupted", "interrupted by restarting claude")
	}
	p.killed = true
	l.mu.Unlock()
	p.kill() // the exit watcher restarts it on the same session
	return nil
}

// Close stops the process (stdin closed, then killed after a grace period).
func (l *Launched) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	close(l.stopCh)
	p := l.proc
	for _, cancel := range l.asks {
		cancel()
	}
	if l.turn != "" {
		l.endTurnLocked(bridge.EventTurnEnded, "interrupted", "the agent was stopped")
	}
	l.mu.Unlock()
	if p != nil {
		p.stop(closeGrace)
	}
	l.restartWG.Wait()
	l.events.close()
	return nil
}

// endTurnLocked ends the running turn with status.
func (l *Launched) endTurnLocked(kind, status, text string) {
	l.events.push(bridge.Event{Kind: kind, TurnID: l.turn, Status: status, Text: text})
	l.turn, l.interrupt, l.unreplayed = "", false, nil
}

// newUUID is a random RFC 4122 version 4 UUID (Claude Code's --session-id).
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
