package demo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"time"

	wheelhouse "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/bridge"
)

// Kind is the harness name in the bridge config.
const Kind = "demo"

// Defaults for the agent's options.
const (
	DefaultStep  = 700 * time.Millisecond // Options["step"]: pause between steps
	DefaultSteps = 5                      // Options["steps"]: steps per turn
	maxSteps     = 1000
)

// Agent is the scripted demo agent. It is safe for concurrent use.
type Agent struct {
	name  string
	gate  bridge.Gate
	sink  bridge.Sink
	log   *slog.Logger
	step  time.Duration
	steps int
	idPfx string // random per agent, so a turn id from an earlier run never matches

	mu      sync.Mutex
	files   workspace
	state   int // stateNew, stateRunning, stateClosed
	seq     int
	cur     *turn
	ctx     context.Context // ends at Close; turns derive from it
	stop    context.CancelFunc
	running sync.WaitGroup // turn goroutines
}

const (
	stateNew = iota
	stateRunning
	stateClosed
)

var _ bridge.Harness = (*Agent)(nil)

// New returns a demo agent for d. Options: "step" (a duration, default
// 700ms) and "steps" (default 5).
func New(d bridge.Deps) (*Agent, error) {
	a := &Agent{
		name:  d.Agent.Name,
		gate:  d.Gate,
		sink:  d.Events,
		log:   d.Log,
		step:  DefaultStep,
		steps: DefaultSteps,
		files: newWorkspace(),
	}
	if a.sink == nil {
		a.sink = func(bridge.Event) {}
	}
	if a.log == nil {
		a.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	a.log = a.log.With("harness", Kind)
	if s, ok := d.Agent.Options["step"]; ok {
		v, err := time.ParseDuration(s)
		if err != nil || v < 0 {
			return nil, wheelhouse.Errorf(wheelhouse.EInvalid, "demo agent %q: option step=%q is not a duration such as \"700ms\"", a.name, s)
		}
		a.step = v
	}
	if s, ok := d.Agent.Options["steps"]; ok {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 || v > maxSteps {
			return nil, wheelhouse.Errorf(wheelhouse.EInvalid, "demo agent %q: option steps=%q must be a whole number from 1 to %d", a.name, s, maxSteps)
		}
		a.steps = v
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	a.idPfx = "demo-" + hex.EncodeToString(b[:])
	a.ctx, a.stop = context.WithCancel(context.Background())
	return a, nil
}

// Kind returns "demo".
func (a *Agent) Kind() string { return Kind }

// CanSteer returns true: steers reach the running turn.
func (a *Agent) CanSteer() bool { return true }

var _ bridge.Gating = (*Agent)(nil)

// StrictTurns is nil: every side effect of a demo turn (deleting a file in
// its pretend workspace) goes through the gate.
func (a *Agent) StrictTurns() error { return nil }

// TurnStrict is true for every turn (see StrictTurns).
func (a *Agent) TurnStrict(string) bool { return true }

// OwnerTurns is "": owner turns ask too.
func (a *Agent) OwnerTurns() string { return "" }

// Start makes the agent ready; there is nothing to launch.
func (a *Agent) Start(ctx context.Context) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.state == stateClosed {
		return bridge.ErrNotRunning
	}
	a.state = stateRunning
	return nil
}

// StartTurn starts a turn with in and returns its id. It fails with
// bridge.ErrBusy while another turn runs.
func (a *Agent) StartTurn(ctx context.Context, in bridge.Input) (string, error) {
	a.mu.Lock()
	if a.state != stateRunning {
		a.mu.Unlock()
		return "", bridge.ErrNotRunning
	}
	if a.cur != nil {
		id := a.cur.id
		a.mu.Unlock()
		return "", fmt.Errorf("%w: turn %s is running", bridge.ErrBusy, id)
	}
	a.seq++
	t := &turn{id: fmt.Sprintf("%s-%d", a.idPfx, a.seq), wake: make(chan struct{}, 1)}
	t.ctx, t.cancel = context.WithCancel(a.ctx)
	a.cur = t
	a.running.Add(1)
	a.mu.Unlock()

	a.log.Info("turn started", "turn", t.id, "sender", in.Sender)
	a.sink(bridge.Event{Kind: bridge.EventTurnStarted, TurnID: t.id})
	go a.run(t, in)
	return t.id, nil
}

// Steer puts in into the running turn if it is expectedTurnID.
func (a *Agent) Steer(ctx context.Context, expectedTurnID string, in bridge.Input) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.state != stateRunning {
		return bridge.ErrNotRunning
	}
	t, err := a.turnLocked(expectedTurnID)
	if err != nil {
		return err
	}
	t.pending = append(t.pending, in)
	select {
	case t.wake <- struct{}{}:
	default:
	}
	return nil
}

// Interrupt ends turnID promptly; the turn reports EventTurnEnded with status
// "interrupted". It does not wait for that event.
func (a *Agent) Interrupt(ctx context.Context, turnID string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.state != stateRunning {
		return bridge.ErrNotRunning
	}
	t, err := a.turnLocked(turnID)
	if err != nil {
		return err
	}
	t.ending = true
	t.cancel()
	return nil
}

// turnLocked returns the running turn if it is id and still takes input.
func (a *Agent) turnLocked(id string) (*turn, error) {
	t := a.cur
	if t == nil {
		return nil, bridge.CheckTurn("", false, id)
	}
	if err := bridge.CheckTurn(t.id, t.ending, id); err != nil {
		return nil, err
	}
	return t, nil
}

// Close interrupts a running turn, waits until it has reported its end, and
// stops the agent. No events follow Close.
func (a *Agent) Close() error {
	a.mu.Lock()
	a.state = stateClosed
	if a.cur != nil {
		a.cur.ending = true
	}
	a.mu.Unlock()
	a.stop()
	a.running.Wait()
	return nil
}

// Files returns the names of the files in the agent's virtual workspace,
// sorted.
func (a *Agent) Files() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.files.names()
}
