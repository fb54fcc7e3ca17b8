package claude

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	wheelhouse "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/bridge"

	"github.com/wheelhouse-dev/wheelhouse/bridge/claude/claudehook"
)

// Defaults for the Attached harness.
const (
	DefaultNoteExpiry = 10 * time.Minute
	attachPollEvery   = 50 * time.Millisecond
)

// Attached steers the owner's own interactive Claude Code session in the
// project d.Agent.Dir. The bridge cannot see that session's turns: StartTurn
// and Steer both queue a note in <project>/.wheelhouse/inbox/, which the hook
// (RunHook) hands to the model at the next tool call or at the end of the
// turn. StartTurn returns a synthetic turn id that stays "running" for the
// life of the harness, so later mentions are steers into it (and, if a
// teammate sent one, every approval in the session stays tainted).
//
// A note taken by the hook yields EventInputHandled with the steer id in
// Text; a note nobody took within the expiry (option "expiry", default 10m)
// is removed and yields EventInputHandled with Status "expired".
// Permission prompts of the session arrive over a unix socket and go to the
// approval gate (option permissions = "bridge", the default), or are left
// to Claude Code's own prompt in the terminal (permissions = "terminal").
type Attached struct {
	d      bridge.Deps
	log    *slog.Logger
	sc     claudehook.Dir
	expiry time.Duration
	perm   string // "bridge" or "terminal"
	now    func() time.Time

	mu      sync.Mutex
	started bool
	closed  bool
	turn    string
	seq     uint64
	lastAt  time.Time              // time in the last note's name; names never go backwards
	pending map[string]pendingNote // file name → note
	wake    chan struct{}
	stop    chan struct{}
	done    chan struct{}
	perms   *claudehook.PermServer
	events  *eventQueue
}

type pendingNote struct {
	steerID string
	turnID  string
	expires time.Time
}

// NewAttached returns the harness for d.Agent (Kind "claude-attach").
func NewAttached(d bridge.Deps) (*Attached, error) {
	if d.Agent.Dir == "" {
		return nil, wheelhouse.Errorf(wheelhouse.EInvalid, "agent %q: claude-attach needs dir, the project the owner runs Claude Code in", d.Agent.Name)
	}
	dir, err := filepath.Abs(d.Agent.Dir)
	if err != nil {
		return nil, wheelhouse.Errorf(wheelhouse.EInvalid, "agent %q: bad dir %q: %v", d.Agent.Name, d.Agent.Dir, err)
	}
	expiry := DefaultNoteExpiry
	if d.Agent.Policy.MaxAge > 0 {
		expiry = time.Duration(d.Agent.Policy.MaxAge)
	}
	if v := d.Agent.Options["expiry"]; v != "" {
		e, err := time.ParseDuration(v)
		if err != nil || e <= 0 {
			return nil, wheelhouse.Errorf(wheelhouse.EInvalid, "agent %q: option expiry %q is not a positive duration like 10m", d.Agent.Name, v)
		}
		expiry = e
	}
	perm := d.Agent.Options["permissions"]
	switch perm {
	case "":
		perm = "bridge"
	case "bridge", "terminal":
	default:
		return nil, wheelhouse.Errorf(wheelhouse.EInvalid, "agent %q: option permissions %q must be bridge (the approval gate) or terminal (Claude Code's own prompt)", d.Agent.Name, perm)
	}
	log := d.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	d.Agent.Dir = dir
	return &Attached{
		d: d, log: log.With("agent", d.Agent.Name, "harness", "claude-attach"),
		sc: claudehook.ForProject(dir), expiry: expiry, perm: perm, now: time.Now,
		pending: map[string]pendingNote{},
		wake:    make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
		events: newEventQueue(d.Events),
	}, nil
}

func (a *Attached) Kind() string   { return "claude-attach" }
func (a *Attached) CanSteer() bool { return true }

// Start creates the side channel, listens for permission requests and
// starts watching the notes. Notes left by an earlier run are adopted.
func (a *Attached) Start(ctx context.Context) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return bridge.ErrNotRunning
	}
	if a.started {
		return nil
	}
	if err := a.sc.Create(); err != nil {
		return wheelhouse.Wrap(err, "cannot create the side channel in %s", a.sc.Root)
	}
	perms, err := claudehook.Listen(a.sc.Socket(), a.decide)
	if err != nil {
		return wheelhouse.Errorf(wheelhouse.EUnavailable, "agent %q: %v", a.d.Agent.Name, err)
	}
	a.perms = perms
	a.adopt()
	if rep := Doctor(a.d.Agent.Dir); !rep.Wired {
		a.log.Warn("the Claude Code hook is not wired in this project; notes will expire undelivered", "fix", "wheelhouse doctor")
	}
	a.started = true
	go a.watch()
	return nil
}

// adopt tracks notes an earlier run left in the inbox, and reports notes a
// hook took while no bridge watched (the bridge may still hold their steers).
func (a *Attached) adopt() {
	entries, _ := os.ReadDir(a.sc.Inbox())
	for _, e := range entries {
		if !claudehook.IsNoteName(e.Name()) {
			continue
		}
		var n claudehook.Note
		b, err := os.ReadFile(filepath.Join(a.sc.Inbox(), e.Name()))
		if err != nil || json.Unmarshal(b, &n) != nil {
			continue
		}
		if n.Expires.IsZero() {
			n.Expires = a.now().Add(a.expiry)
		}
		a.pending[e.Name()] = pendingNote{steerID: n.SteerID, turnID: n.TurnID, expires: n.Expires}
	}
	old, _ := os.ReadDir(a.sc.Claimed())
	for _, e := range old {
		path := filepath.Join(a.sc.Claimed(), e.Name())
		var n claudehook.Note
		if b, err := os.ReadFile(path); err == nil && json.Unmarshal(b, &n) == nil && n.SteerID != "" {
			a.events.push(bridge.Event{Kind: bridge.EventInputHandled, TurnID: n.TurnID, Text: n.SteerID})
		}
		os.Remove(path)
	}
}

// StartTurn queues in as a note and returns the synthetic turn id.
func (a *Attached) StartTurn(ctx context.Context, in bridge.Input) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.started || a.closed {
		return "", bridge.ErrNotRunning
	}
	if a.turn != "" {
		return "", bridge.ErrBusy
	}
	turn := newTurnID("a", a.seq+1)
	if err := a.queueLocked(turn, in); err != nil {
		return "", err
	}
	a.turn = turn
	a.events.push(bridge.Event{Kind: bridge.EventTurnStarted, TurnID: turn})
	return turn, nil
}

// Steer queues in as a note if expectedTurnID is the synthetic turn.
func (a *Attached) Steer(ctx context.Context, expectedTurnID string, in bridge.Input) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case !a.started || a.closed:
		return bridge.ErrNotRunning
	case a.turn == "":
		return bridge.ErrNoActiveTurn
	case expectedTurnID != a.turn:
		return bridge.ErrStaleTurn
	}
	return a.queueLocked(a.turn, in)
}

func (a *Attached) queueLocked(turn string, in bridge.Input) error {
	a.seq++
	now := a.now()
	n := claudehook.Note{SteerID: in.SteerID, TurnID: turn, Sender: in.Sender, SenderIsOwner: in.SenderIsOwner,
		Text: in.Text, QueuedAt: now, Expires: now.Add(a.expiry)}
	at := now
	if !at.After(a.lastAt) {
		at = a.lastAt.Add(time.Nanosecond) // the clock stepped back: keep arrival order
	}
	a.lastAt = at
	name := claudehook.NoteName(at, a.seq, in.SteerID)
	if err := a.sc.WriteNote(name, n); err != nil {
		return wheelhouse.Wrap(err, "cannot queue the note for Claude Code")
	}
	a.pending[name] = pendingNote{steerID: in.SteerID, turnID: turn, expires: n.Expires}
	select {
	case a.wake <- struct{}{}:
	default:
	}
	return nil
}

// Interrupt cannot stop the owner's own session: the bridge has no handle on
// it. It fails with a message saying so; nothing is queued.
func (a *Attached) Interrupt(ctx context.Context, turnID string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case a.turn == "":
		return bridge.ErrNoActiveTurn
	case turnID != a.turn:
		return bridge.ErrStaleTurn
	}
	return wheelhouse.Errorf(wheelhouse.EInvalid, "a claude-attach agent runs in its owner's terminal; the owner stops it there (Esc)")
}

// Close stops watching and listening. Pending notes stay in the inbox: the
// hook still delivers them if the session makes a tool call before they
// expire, and the next Start adopts them.
func (a *Attached) Close() error {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return nil
	}
	a.closed = true
	started := a.started
	perms := a.perms
	a.mu.Unlock()
	if started {
		close(a.stop)
		<-a.done
	}
	if perms != nil {
		perms.Close()
	}
	a.events.close()
	return nil
}

// watch reports notes the hook took and expires notes nobody took. It polls
// only while notes are pending.
func (a *Attached) watch() {
	defer close(a.done)
	t := time.NewTicker(attachPollEvery)
	defer t.Stop()
	for {
		a.mu.Lock()
		idle := len(a.pending) == 0
		a.mu.Unlock()
		if idle {
			select {
			case <-a.wake:
			case <-a.stop:
				return
			}
		}
		select {
		case <-t.C:
		case <-a.wake:
		case <-a.stop:
			return
		}
		a.sweep()
	}
}

func (a *Attached) sweep() {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	for name, p := range a.pending {
		claimed := filepath.Join(a.sc.Claimed(), name)
		if _, err := os.Stat(claimed); err == nil {
			delete(a.pending, name)
			os.Remove(claimed)
			a.events.push(bridge.Event{Kind: bridge.EventInputHandled, TurnID: p.turnID, Text: p.steerID})
			continue
		}
		if now.Before(p.expires) {
			continue
		}
		// Remove and rename are atomic against each other: either the hook
		// took the note first (Remove fails, it shows up in claimed/ on the
		// next sweep) or the note is gone before any hook could take it.
		err := os.Remove(filepath.Join(a.sc.Inbox(), name))
		switch {
		case err == nil:
			delete(a.pending, name)
			a.events.push(bridge.Event{Kind: bridge.EventInputHandled, TurnID: p.turnID, Status: "expired", Text: p.steerID})
		case errors.Is(err, fs.ErrNotExist):
			if _, serr := os.Stat(claimed); errors.Is(serr, fs.ErrNotExist) {
				// Neither in the inbox nor claimed: someone removed it.
				delete(a.pending, name)
				a.events.push(bridge.Event{Kind: bridge.EventInputHandled, TurnID: p.turnID, Status: "expired", Text: p.steerID})
			}
		default:
			a.log.Warn("cannot expire note", "note", name, "err", err)
		}
	}
}

// decide answers a permission request of the owner's session through the
// approval gate. Only a redeemed grant allows.
func (a *Attached) decide(ctx context.Context, req claudehook.PermRequest) claudehook.PermAnswer {
	if a.perm == "terminal" {
		return claudehook.PermAnswer{Behavior: "terminal"}
	}
	var args map[string]any
	if err := json.Unmarshal(req.Input, &args); err != nil {
		return claudehook.PermAnswer{Behavior: "deny", Message: "Wheelhouse could not read the tool input; denied."}
	}
	a.mu.Lock()
	turn := a.turn
	a.mu.Unlock()
	call := bridge.ToolCall{Tool: req.Tool, Args: args}
	if err := askAndRedeem(ctx, a.d.Gate, bridge.ApprovalAsk{TurnID: turn, Call: call, Summary: summarizeCall(call)}); err != nil {
		a.log.Info("permission denied", "tool", req.Tool, "reason", err)
		return claudehook.PermAnswer{Behavior: "deny", Message: "Denied through Wheelhouse: " + err.Error()}
	}
	return claudehook.PermAnswer{Behavior: "allow"}
}

// askAndRedeem is the one path to "allow": the gate approves and the grant
// is redeemed against the very call that will run.
func askAndRedeem(ctx context.Context, gate bridge.Gate, ask bridge.ApprovalAsk) error {
	if gate == nil {
		return errors.New("no approval gate is configured")
	}
	grant, err := gate.Ask(ctx, ask)
	if err != nil {
		return err
	}
	if grant == nil {
		return errors.New("the gate returned no grant")
	}
	return grant.Redeem(ask.Call)
}

// newTurnID mints "<prefix>-<n>-<random>".
func newTurnID(prefix string, n uint64) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", prefix, n, hex.EncodeToString(b[:]))
}
