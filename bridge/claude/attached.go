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
	"strings"
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
	// liveSession is how recently a session must have run a hook to be
	// picked as the one notes go to.
	liveSession = 24 * time.Hour
	boundName   = "bound-session"
)

// Attached steers the owner's own interactive Claude Code session in the
// project d.Agent.Dir. The bridge cannot see that session's turns: StartTurn
// and Steer both queue a note, signed with the bridge's key, in the
// project's folder under the user's state directory (never in the project
// itself); the hook (RunHook) verifies it and hands it to the model at the
// next tool call or at the end of the turn. StartTurn returns a synthetic
// turn id that stays "running" for the life of the harness, so later
// mentions are steers into it.
//
// Every note is addressed to one Claude Code session (option session: a
// session id; "all" for every session in the project; by default the
// session the attachment is bound to — the one that took the first note,
// or the most recently active one the hook registered). A session whose
// hook sees a note for another session leaves it alone, so two sessions
// never split one conversation.
//
// A note taken by the hook yields EventInputHandled with the steer id in
// Text; a note nobody took within the expiry (option "expiry", default 10m)
// is removed and yields EventInputHandled with Status "expired".
// Permission prompts of the session, and every tool call with side effects
// in a session a non-owner's note reached, arrive over a unix socket and go
// to the approval gate (option permissions = "bridge", the default), or
// are left to Claude Code's own prompt in the terminal (permissions =
// "terminal").
type Attached struct {
	d       bridge.Deps
	log     *slog.Logger
	proj    claudehook.Project
	expiry  time.Duration
	perm    string // "bridge" or "terminal"
	session string // option session: "", "all" or a session id
	now     func() time.Time

	mu      sync.Mutex
	key     []byte
	started bool
	closed  bool
	turn    string
	seq     uint64
	bound   string                 // the session notes go to ("" = none yet)
	lastAt  time.Time              // time in the last note's name; names never go backwards
	pending map[string]pendingNote // file name → note
	wake    chan struct{}
	stop    chan struct{}
	done    chan struct{}
	perms   *claudehook.PermServer
	events  *eventQueue
}

type pendingNote struct {
	steerID   string
	turnID    string
	session   string
	expires   time.Time
	delivered bool   // a note for every session: some session took it
	endedFor  string // the session it was for, which ended before taking it
	sender    string // with endedFor: the note's sender and text, shown to the owner if it expires
	text      string
}

// NewAttached returns the harness for d.Agent (Kind "claude-attach").
// Options: expiry, permissions, session, and state_dir (the shared state
// root; default WHEELHOUSE_STATE_DIR, $XDG_STATE_HOME/wheelhouse or
// ~/.local/state/wheelhouse, as the hook finds it in the owner's shell).
func NewAttached(d bridge.Deps) (*Attached, error) {
	if d.Agent.Dir == "" {
		return nil, wheelhouse.Errorf(wheelhouse.EInvalid, "agent %q: claude-attach needs dir, the project the owner runs Claude Code in", d.Agent.Name)
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
	session := strings.TrimSpace(d.Agent.Options["session"])
	if session != "" && session != "all" && !validSession(session) {
		return nil, wheelhouse.Errorf(wheelhouse.EInvalid, "agent %q: option session %q must be all, or a Claude Code session id (letters, digits and dashes)", d.Agent.Name, session)
	}
	root := strings.TrimSpace(d.Agent.Options["state_dir"])
	if root == "" {
		root = claudehook.StateRoot(os.Environ())
	}
	if root == "" {
		return nil, wheelhouse.Errorf(wheelhouse.EInvalid, "agent %q: no state directory for the notes: set HOME, WHEELHOUSE_STATE_DIR or option state_dir", d.Agent.Name)
	}
	log := d.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	proj := claudehook.ForProject(root, d.Agent.Dir)
	d.Agent.Dir = proj.Dir
	return &Attached{
		d: d, log: log.With("harness", "claude-attach"),
		proj: proj, expiry: expiry, perm: perm, session: session, now: time.Now,
		pending: map[string]pendingNote{},
		wake:    make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
		events: newEventQueue(d.Events),
	}, nil
}

func validSession(s string) bool {
	if len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return s != ""
}

func (a *Attached) Kind() string   { return "claude-attach" }
func (a *Attached) CanSteer() bool { return true }

// Project is the state of the attached project (for tests and doctor).
func (a *Attached) Project() claudehook.Project { return a.proj }

// Start creates the project's state folder and the note key, listens for
// permission requests and starts watching the notes. Notes left by an
// earlier run are adopted.
func (a *Attached) Start(ctx context.Context) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return bridge.ErrNotRunning
	}
	if a.started {
		return nil
	}
	if fi, err := os.Stat(a.proj.Dir); err != nil || !fi.IsDir() {
		return wheelhouse.Errorf(wheelhouse.EInvalid, "agent %q: dir %q is not a folder", a.d.Agent.Name, a.proj.Dir)
	}
	if err := a.proj.Create(); err != nil {
		return wheelhouse.Wrap(err, "cannot create the notes folder %s", a.proj.Root)
	}
	key, err := a.proj.LoadOrCreateKey()
	if err != nil {
		return wheelhouse.Wrap(err, "cannot create the note key %s", a.proj.KeyFile())
	}
	a.key = key
	sock, err := a.proj.PrepareSocket()
	if err != nil {
		return wheelhouse.Errorf(wheelhouse.EUnavailable, "agent %q: the permission socket: %v", a.d.Agent.Name, err)
	}
	perms, err := claudehook.Listen(sock, a.decide)
	if err != nil {
		return wheelhouse.Errorf(wheelhouse.EUnavailable, "agent %q: %v", a.d.Agent.Name, err)
	}
	a.perms = perms
	if b, err := os.ReadFile(filepath.Join(a.proj.Root, boundName)); err == nil && validSession(strings.TrimSpace(string(b))) {
		a.bound = strings.TrimSpace(string(b))
	}
	a.adopt()
	rep := DoctorWith(DoctorOptions{Project: a.proj.Dir, StateDir: a.proj.StateRoot})
	if !rep.Wired {
		a.log.Warn("the Claude Code hook is not wired in this project; notes will expire undelivered", "fix", "wheelhouse doctor")
	}
	if rep.LegacyInbox {
		a.log.Warn("an old note inbox is inside the project; nothing reads it any more, remove it", "path", a.proj.LegacyInbox())
	}
	a.started = true
	go a.watch()
	return nil
}

// adopt tracks notes an earlier run left in the inbox, and reports notes a
// hook took while no bridge watched (the bridge may still hold their steers).
func (a *Attached) adopt() {
	entries, _ := os.ReadDir(a.proj.Inbox())
	for _, e := range entries {
		if !claudehook.IsNoteName(e.Name()) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(a.proj.Inbox(), e.Name()))
		if err != nil {
			continue
		}
		n, err := a.proj.OpenNote(a.key, e.Name(), b)
		if err != nil {
			continue // not ours: the hook refuses it and doctor reports it
		}
		a.pending[e.Name()] = pendingNote{steerID: n.SteerID, turnID: n.TurnID, session: n.Session, expires: n.Expires}
	}
	old, _ := os.ReadDir(a.proj.Claimed())
	for _, e := range old {
		name, _, ok := claudehook.ParseClaimedName(e.Name())
		path := filepath.Join(a.proj.Claimed(), e.Name())
		if !ok {
			os.Remove(path)
			continue
		}
		if p, ok := a.pending[name]; ok { // a note for every session, still pending
			if !p.delivered {
				p.delivered = true
				a.pending[name] = p
				a.events.push(bridge.Event{Kind: bridge.EventInputHandled, TurnID: p.turnID, Text: p.steerID})
			}
			continue
		}
		if b, err := os.ReadFile(path); err == nil {
			if n, err := a.proj.OpenNote(a.key, name, b); err == nil && n.SteerID != "" {
				a.events.push(bridge.Event{Kind: bridge.EventInputHandled, TurnID: n.TurnID, Text: n.SteerID})
			}
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
	// The hook records a session as tainted the moment it hands it a note
	// that is not the owner's, before the model can read it.
	session := a.addressLocked()
	a.seq++
	now := a.now()
	n := claudehook.Note{Session: session, SteerID: in.SteerID, TurnID: turn, Sender: in.Sender, SenderIsOwner: in.SenderIsOwner,
		Taints: taints(in), Text: in.Text, QueuedAt: now, Expires: now.Add(a.expiry)}
	at := now
	if !at.After(a.lastAt) {
		at = a.lastAt.Add(time.Nanosecond) // the clock stepped back: keep arrival order
	}
	a.lastAt = at
	name := claudehook.NoteName(at, a.seq, in.SteerID)
	if err := a.proj.WriteNote(a.key, name, n); err != nil {
		return wheelhouse.Wrap(err, "cannot queue the note for Claude Code")
	}
	a.pending[name] = pendingNote{steerID: in.SteerID, turnID: turn, session: session, expires: n.Expires}
	select {
	case a.wake <- struct{}{}:
	default:
	}
	return nil
}

// addressLocked picks the session the next note goes to: the option, else
// the bound session while it lives, else the most recently active session
// the hook registered (which becomes the bound one), else none yet (the
// first session to take the note becomes the bound one).
func (a *Attached) addressLocked() string {
	switch a.session {
	case "all":
		return claudehook.SessionAll
	case "":
	default:
		return a.session
	}
	if a.bound != "" && a.proj.HasSession(a.bound) {
		return a.bound
	}
	ss, _ := a.proj.ListSessions()
	var live []claudehook.Session
	for _, s := range ss {
		if a.now().Sub(s.LastSeen) < liveSession {
			live = append(live, s)
		}
	}
	if len(live) == 0 {
		if a.bound != "" {
			a.log.Info("the attached Claude Code session ended; the next session to take a note gets them", "session", a.bound)
			a.bindLocked("")
		}
		return ""
	}
	if len(live) > 1 {
		ids := make([]string, len(live))
		for i, s := range live {
			ids[i] = s.ID
		}
		a.log.Warn("several Claude Code sessions run in this project; notes go to the most recently active one (option session = \"all\" or a session id chooses)",
			"to", live[0].ID, "sessions", strings.Join(ids, ", "))
	}
	if a.bound != "" {
		a.log.Info("the attached Claude Code session ended; notes now go to another", "was", a.bound, "now", live[0].ID)
	}
	a.bindLocked(live[0].ID)
	return live[0].ID
}

// bindLocked makes session the one notes go to, and readdresses pending
// notes that were for the previous (ended) one or for none.
func (a *Attached) bindLocked(session string) {
	if a.bound == session {
		return
	}
	old := a.bound
	a.bound = session
	_ = claudehook.WriteFileAtomic(a.proj.Root, boundName, []byte(session+"\n"))
	if session == "" {
		return
	}
	for name, p := range a.pending {
		if p.session != old && p.session != "" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(a.proj.Inbox(), name))
		if err != nil {
			continue // taken or gone: the sweep reports it
		}
		n, err := a.proj.OpenNote(a.key, name, b)
		if err != nil {
			continue
		}
		n.Session = session
		if a.proj.WriteNote(a.key, name, n) == nil {
			p.session = session
			a.pending[name] = p
		}
	}
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
		a.proj.ReleaseSocket()
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
	a.proj.SweepDelivered(now)
	taken := map[string][]string{} // note file name → claimed/ entries
	entries, _ := os.ReadDir(a.proj.Claimed())
	for _, e := range entries {
		name, session, ok := claudehook.ParseClaimedName(e.Name())
		if !ok {
			continue
		}
		taken[name] = append(taken[name], e.Name())
		p, ok := a.pending[name]
		if !ok {
			continue
		}
		if p.session == claudehook.SessionAll {
			if !p.delivered {
				p.delivered = true
				a.pending[name] = p
				a.events.push(bridge.Event{Kind: bridge.EventInputHandled, TurnID: p.turnID, Text: p.steerID})
			}
			continue // the markers stay until the note expires, so no session gets it twice
		}
		delete(a.pending, name)
		os.Remove(filepath.Join(a.proj.Claimed(), e.Name()))
		ev := bridge.Event{Kind: bridge.EventInputHandled, TurnID: p.turnID, Text: p.steerID}
		if p.endedFor != "" {
			ev.Detail = fmt.Sprintf("delivered to the owner's next Claude Code session in the project (%s): the session it was for (%s) had ended", session, p.endedFor)
		}
		a.events.push(ev)
		if a.session == "" && (a.bound == "" || !a.proj.HasSession(a.bound)) {
			a.log.Info("notes for this project now go to the Claude Code session that took the first one", "session", session)
			a.bindLocked(session)
		}
	}
	a.followEndedLocked()
	for name, p := range a.pending {
		if now.Before(p.expires) {
			continue
		}
		// Remove and rename are atomic against each other: either the hook
		// took the note first (Remove fails, it shows up in claimed/ on the
		// next sweep) or the note is gone before any hook could take it.
		err := os.Remove(filepath.Join(a.proj.Inbox(), name))
		switch {
		case err == nil && p.delivered:
			delete(a.pending, name)
			for _, c := range taken[name] {
				os.Remove(filepath.Join(a.proj.Claimed(), c))
			}
		case err == nil:
			delete(a.pending, name)
			ev := bridge.Event{Kind: bridge.EventInputHandled, TurnID: p.turnID, Status: "expired", Text: p.steerID}
			if p.endedFor != "" {
				ev.Detail = fmt.Sprintf("the Claude Code session it was for (%s) ended and no later session in the project took it in time; it was shown to the owner on their bridge", p.endedFor)
				a.log.Warn("a note for a Claude Code session that ended was not taken by any later session; here it is", "session", p.endedFor, "steer", p.steerID,
					"from", p.sender, "text", p.text)
			}
			a.events.push(ev)
		case errors.Is(err, fs.ErrNotExist):
			if len(taken[name]) == 0 && !a.claimedNow(name) {
				// Neither in the inbox nor claimed: someone removed it.
				delete(a.pending, name)
				a.events.push(bridge.Event{Kind: bridge.EventInputHandled, TurnID: p.turnID, Status: "expired", Text: p.steerID})
			}
		default:
			a.log.Warn("cannot expire note", "note", name, "err", err)
		}
	}
}

// followEndedLocked readdresses the pending notes of a session that ended
// (SessionEnd) before taking them to the owner's next session in the
// project (the first to take one, which the attachment then binds to).
// A session named by option session keeps its notes: the owner chose it.
func (a *Attached) followEndedLocked() {
	if a.session != "" {
		return
	}
	for name, p := range a.pending {
		if p.session == "" || p.session == claudehook.SessionAll || a.proj.HasSession(p.session) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(a.proj.Inbox(), name))
		if err != nil {
			continue // taken just now, or gone: the sweep reports it
		}
		n, err := a.proj.OpenNote(a.key, name, b)
		if err != nil {
			continue
		}
		n.Session = ""
		if a.proj.WriteNote(a.key, name, n) != nil {
			continue
		}
		a.log.Info("the Claude Code session a note was for ended; the owner's next session in the project gets it", "session", p.session, "steer", p.steerID)
		p.endedFor, p.session = p.session, ""
		p.sender, p.text = n.Sender, n.Text
		a.pending[name] = p
		if a.bound == p.endedFor {
			a.bindLocked("")
		}
	}
}

// claimedNow looks again for a claimed record of note name (a hook may
// have taken it after the sweep listed claimed/).
func (a *Attached) claimedNow(name string) bool {
	m, _ := filepath.Glob(filepath.Join(a.proj.Claimed(), strings.TrimSuffix(name, ".json")+"~*.json"))
	return len(m) > 0
}

// decide answers a request of the owner's session through the approval
// gate. Only a redeemed grant allows.
func (a *Attached) decide(ctx context.Context, req claudehook.PermRequest) claudehook.PermAnswer {
	tainted := req.Tainted || req.Kind == claudehook.KindPreTool || claudehook.IsTainted(a.proj.StateRoot, req.SessionID)
	if a.perm == "terminal" {
		return claudehook.PermAnswer{Behavior: claudehook.BehaviorTerminal}
	}
	var args map[string]any
	if err := json.Unmarshal(req.Input, &args); err != nil {
		return claudehook.PermAnswer{Behavior: claudehook.BehaviorDeny, Message: "Wheelhouse could not read the tool input; denied."}
	}
	a.mu.Lock()
	turn := a.turn
	a.mu.Unlock()
	call := bridge.ToolCall{Tool: req.Tool, Args: args}
	if err := askAndRedeem(ctx, a.d.Gate, bridge.ApprovalAsk{TurnID: turn, Call: call, Summary: summarizeCall(call), Diff: diffOf(call), Tainted: tainted}); err != nil {
		if errors.Is(err, bridge.ErrHubUnreachable) {
			// No owner decision can come through the hub, and the gate
			// answered at once. The owner sits at this session's
			// terminal: in a session only their words reached, its own
			// prompt asks them; in a tainted one that prompt is where a
			// teammate's words would be approved in a hurry, so deny.
			if !tainted {
				a.log.Info("hub unreachable: Claude Code asks in the terminal", "tool", req.Tool)
				return claudehook.PermAnswer{Behavior: claudehook.BehaviorTerminal}
			}
			return claudehook.PermAnswer{Behavior: claudehook.BehaviorDeny,
				Message: "Denied through Wheelhouse: non-owner words reached this session and the hub is unreachable, so the owner cannot be asked."}
		}
		a.log.Info("permission denied", "tool", req.Tool, "reason", err)
		return claudehook.PermAnswer{Behavior: claudehook.BehaviorDeny, Message: "Denied through Wheelhouse: " + err.Error()}
	}
	return claudehook.PermAnswer{Behavior: claudehook.BehaviorAllow}
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
