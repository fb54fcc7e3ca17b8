package bridge

import (
	"context"
	"errors"
	"fmt"
	"github.com/wheelhouse-dev/wheelhouse/authz"
	"log/slog"

	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// Harness is one running agent as the bridge drives it. Adapters live in
// bridge/<harness>. All methods are safe for concurrent use.
//
// A turn is identified by the id the harness gives it. StartTurn returns
// that id; Steer must put input into exactly the turn expectedTurnID names or
// fail with ErrStaleTurn (another turn is running) or ErrNoActiveTurn (none
// is). Interrupt ends the running turn; the harness still emits EventTurnEnded
// with status "interrupted".
type Harness interface {
	// Kind names the harness ("demo", "exec", "codex", "claude", "claude-attach", "openai").
	Kind() string
	// CanSteer reports whether input can reach a running turn.
	CanSteer() bool
	// Start launches the harness (process, session). It returns once the
	// agent is ready for StartTurn, or with an error.
	Start(ctx context.Context) error
	StartTurn(ctx context.Context, in Input) (turnID string, err error)
	Steer(ctx context.Context, expectedTurnID string, in Input) error
	Interrupt(ctx context.Context, turnID string) error
	// Close stops the harness and releases its process; Events is closed after.
	Close() error
}

// Input is one message for the model.
type Input struct {
	// Text is the full envelope (authz.Envelope) the model must see.
	Text string
	// SteerID ties the input to the steer that carried it.
	SteerID string
	// Sender and SenderIsOwner repeat the provenance for harnesses that
	// need it structurally (for example the Claude hook side channel).
	Sender        string
	SenderIsOwner bool
	// Strict asks for a turn in which every side effect reaches the Gate
	// before it happens (see Gating). The bridge sets it for any input that
	// is not the owner's own typed words; a harness that cannot honour it
	// fails StartTurn with ErrNotStrict. A turn started without it runs
	// under the owner's configured policy.
	Strict bool
	// ReadOnly asks, with Strict, for a turn that changes nothing: the
	// owner made the room the message comes from read-only for the agent.
	// The gate denies every side effect of such a turn without asking; a
	// harness that can also run the turn read-only (codex: its read-only
	// sandbox) does, so what needs no approval cannot write either.
	ReadOnly bool

	// What the bridge built it from, to build it again under the room's
	// ceiling when a queued message starts (the owner may have changed the
	// ceiling while it waited).
	prov        authz.Provenance
	taintStrict bool       // Strict for the message's own sake (taint), whatever the room
	ceiling     string     // the ceiling Text, Strict and ReadOnly were built for
	words       ownerWords // whether the words are the owner's, decided on arrival
}

// Gating is how a harness answers the bridge's question "will every side
// effect of this turn reach the Gate?". The bridge puts a non-owner's words
// (or pasted data) only into turns where the answer is yes; a harness that
// does not implement Gating is taken to answer no.
type Gating interface {
	// StrictTurns returns nil if a turn started with Input.Strict sends
	// every side effect to the Gate first, or an error saying why it
	// cannot (shown to the sender and the owner).
	StrictTurns() error
	// TurnStrict reports whether the running turn turnID sends every side
	// effect to the Gate first (a strict turn, or an owner's turn whose
	// configured policy already asks before everything).
	TurnStrict(turnID string) bool
	// OwnerTurns says, for the owner, what the harness does without asking
	// in a turn started without Input.Strict; "" if it asks before every
	// side effect there too.
	OwnerTurns() string
}

// ErrNotStrict is StartTurn's answer to Input.Strict from a harness that
// cannot run a strict turn right now.
var ErrNotStrict = errors.New("this agent cannot run a turn that asks before every side effect")

// strictTurns is h's StrictTurns, or why not for a harness without Gating.
func strictTurns(h Harness) error {
	if g, ok := h.(Gating); ok {
		return g.StrictTurns()
	}
	return fmt.Errorf("the %s harness cannot say whether its side effects reach the owner's approval", h.Kind())
}

// turnStrict is h's TurnStrict, false for a harness without Gating.
func turnStrict(h Harness, turnID string) bool {
	g, ok := h.(Gating)
	return ok && turnID != "" && g.TurnStrict(turnID)
}

// Errors a Harness returns from Steer and StartTurn.
var (
	ErrStaleTurn    = errors.New("stale turn: another turn is running")
	ErrNoActiveTurn = errors.New("no active turn to steer")
	ErrBusy         = errors.New("agent is busy")
	ErrNotRunning   = errors.New("agent is not running")
)

// CheckTurn is the stale-turn guard of a harness that runs one turn at a
// time: running is the turn it runs ("" for none), ending whether that
// turn has stopped taking input, want the turn a caller addresses.
func CheckTurn(running string, ending bool, want string) error {
	switch {
	case running == "":
		return ErrNoActiveTurn
	case running != want:
		return fmt.Errorf("%w (running %s, not %s)", ErrStaleTurn, running, want)
	case ending:
		return fmt.Errorf("%w: turn %s is ending", ErrNoActiveTurn, want)
	}
	return nil
}

// Event is something a harness reports. Send never blocks the harness for
// long: the bridge drains events promptly.
type Event struct {
	Kind   string // one of the Event* constants
	TurnID string
	Status string // for EventTurnEnded: completed, interrupted, failed
	Text   string // message text, progress line, tool summary, failure reason
	// Detail, for EventInputHandled, is what the sender's receipt says
	// beyond the status (where the input went, why it expired).
	Detail string
	// ItemID and Partial are for streamed messages (EventMessage): updates
	// of one message share an ItemID; every update but the last is Partial
	// and carries the whole text so far.
	ItemID  string
	Partial bool
	// Usage is the turn's token count, on EventTurnEnded, if known.
	Usage *wire.Usage
}

// Event kinds.
const (
	EventTurnStarted  = "turn-started"
	EventTurnEnded    = "turn-ended"
	EventMessage      = "message"  // an agent message (final text of an item)
	EventProgress     = "progress" // a progress line
	EventTool         = "tool"     // a tool call or its result, summarized
	EventFailed       = "failed"   // the harness process died or cannot run
	EventRecovered    = "recovered"
	EventInputHandled = "input-handled" // an input (SteerID in Text) reached the model, for harnesses that deliver asynchronously
)

// ToolCall is exactly what a harness will run. Its canonical JSON is what an
// approval is bound to (authz.PayloadHash).
type ToolCall struct {
	Tool string         `json:"tool"`
	Args map[string]any `json:"args"`
}

// ApprovalAsk is what a harness asks the owner.
type ApprovalAsk struct {
	TurnID  string
	Call    ToolCall
	Summary string // human words: the command line, the files
	Diff    string // for file changes
	// Sandbox says where the call will run ("workspace-write", "none: full
	// access"). A harness that binds it into Call.Args makes the approval
	// hash cover it.
	Sandbox string
	// LeavesSandbox: the call would run outside the sandbox the turn
	// otherwise has (the agent asked to leave it); never auto-approved.
	LeavesSandbox bool
	// Tainted is the harness's own record that words from someone other
	// than the owner reached the session this call comes from (a Claude
	// Code conversation keeps them across turns and bridge restarts). The
	// gate must then treat the call as tainted whatever the turn's
	// steerers say: an explicit owner decision, never auto-approval.
	Tainted bool
}

// Gate is the bridge's approval gate, handed to a harness at construction.
type Gate interface {
	// Ask sends the request to the owner and blocks until a decision, the
	// owner's timeout, or ctx ends. A nil error means approved: the harness
	// must then Redeem the grant with the call it is about to run. Any error
	// means do not run it; its text says why (denied, expired, voided).
	Ask(ctx context.Context, ask ApprovalAsk) (Grant, error)
}

// Grant is an owner approval held by the bridge.
type Grant interface {
	// Redeem checks call against the approved payload hash and consumes
	// the grant. It fails if the call differs from what was approved or the
	// grant was already used.
	Redeem(call ToolCall) error
}

// Sink receives a harness's events.
type Sink func(Event)

// Deps is what the bridge gives a harness constructor.
type Deps struct {
	Agent  AgentConfig
	Gate   Gate
	Events Sink
	// Log already names the agent ("agent"); a harness adds only its own
	// attributes ("harness", …), or every line says the agent twice.
	Log *slog.Logger
}
