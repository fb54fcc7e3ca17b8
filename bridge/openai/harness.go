package openai

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/bridge"
)

// DefaultPartialEvery is the least time between two updates of a message
// while it streams.
const DefaultPartialEvery = 500 * time.Millisecond

// Harness is one agent on an OpenAI-compatible Chat Completions endpoint.
// It runs its own loop: ask the model, run the tools it calls, ask again,
// until it answers without tools. Steers join the running turn before the
// next model call. It is safe for concurrent use.
type Harness struct {
	cfg    Config
	gate   bridge.Gate
	sink   bridge.Sink
	log    *slog.Logger
	client *client
	store  store
	env    []string // run_command's environment
	idPfx  string   // random per harness, so a turn id from an earlier run never matches

	// partialEvery is the least time between two partial updates of a
	// streamed message (tests and benchmarks shorten it).
	partialEvery time.Duration

	life    context.Context // ends at Close; turns derive from it
	stop    context.CancelFunc
	running sync.WaitGroup // turn goroutines

	mu    sync.Mutex
	state int // stateNew, stateRunning, stateClosed
	seq   int
	cur   *turn
	ws    *workspace
	// conv is the conversation. The running turn's goroutine owns it;
	// between turns nothing touches it (a turn hands it over under mu).
	conv stateFile
}

const (
	stateNew = iota
	stateRunning
	stateClosed
)

var (
	_ bridge.Harness = (*Harness)(nil)
	_ bridge.Gating  = (*Harness)(nil) // every side effect reaches the gate
)

// New checks the agent's options; Start opens its directory and
// conversation.
func New(d bridge.Deps) (*Harness, error) {
	cfg, err := ParseConfig(d.Agent, os.LookupEnv)
	if err != nil {
		return nil, err
	}
	return newHarness(cfg, d), nil
}

func newHarness(cfg Config, d bridge.Deps) *Harness {
	log := d.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h := &Harness{
		cfg: cfg, gate: d.Gate, sink: d.Events,
		log:          log.With("harness", Kind),
		client:       newClient(&cfg),
		store:        store{dir: cfg.StateDir},
		env:          commandEnv(os.Environ(), cfg.APIKeyEnv, cfg.Env),
		partialEvery: DefaultPartialEvery,
	}
	if h.sink == nil {
		h.sink = func(bridge.Event) {}
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	h.idPfx = "oai-" + hex.EncodeToString(b[:])
	h.life, h.stop = context.WithCancel(context.Background())
	return h
}

// Kind returns "openai".
func (h *Harness) Kind() string { return Kind }

// CanSteer returns true: a steer joins the running turn before its next
// model call.
func (h *Harness) CanSteer() bool { return true }

// Start opens the agent's directory and loads its conversation. It does
// not contact the endpoint: a model server that is down makes turns fail
// (with the reason), not the agent.
func (h *Harness) Start(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch h.state {
	case stateClosed:
		return fmt.Errorf("%w: agent closed", bridge.ErrNotRunning)
	case stateRunning:
		return errors.New("openai: already started")
	}
	ws, err := openWorkspace(h.cfg.Dir, h.cfg.DirAsGiven)
	if err != nil {
		return fmt.Errorf("open the agent's dir: %w", err)
	}
	conv, aside, err := h.store.load()
	if err != nil {
		ws.Close()
		return err
	}
	if aside != "" {
		h.log.Warn("the saved conversation could not be read; moved aside, starting afresh", "file", aside)
	}
	h.ws, h.conv, h.state = ws, conv, stateRunning
	h.log.Info("ready", "endpoint", h.cfg.BaseURL, "model", h.cfg.Model, "messages", len(conv.Messages))
	return nil
}

// StartTurn starts a turn with in and returns its id. It fails with
// bridge.ErrBusy while another turn runs. An endpoint that is down fails
// the turn (with the reason), not StartTurn: the sender's receipt then
// ends "failed" saying why.
func (h *Harness) StartTurn(ctx context.Context, in bridge.Input) (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.state != stateRunning {
		return "", bridge.ErrNotRunning
	}
	if h.cur != nil {
		return "", fmt.Errorf("%w: turn %s is running", bridge.ErrBusy, h.cur.id)
	}
	h.seq++
	t := &turn{id: fmt.Sprintf("%s-%d", h.idPfx, h.seq)}
	t.ctx, t.cancel = context.WithCancel(h.life)
	h.cur = t
	h.running.Add(1)
	h.log.Info("turn started", "turn", t.id, "sender", in.Sender)
	h.sink(bridge.Event{Kind: bridge.EventTurnStarted, TurnID: t.id})
	go h.run(t, in)
	return t.id, nil
}

// Steer adds in to the running turn if it is expectedTurnID: the model
// gets it as a user message before its next call.
func (h *Harness) Steer(ctx context.Context, expectedTurnID string, in bridge.Input) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.state != stateRunning {
		return bridge.ErrNotRunning
	}
	t, err := h.turnLocked(expectedTurnID)
	if err != nil {
		return err
	}
	t.pending = append(t.pending, in)
	return nil
}

// Interrupt ends turnID: the request in flight is cancelled, a running
// command killed, a pending approval withdrawn. The turn reports
// EventTurnEnded with status "interrupted"; Interrupt does not wait for it.
func (h *Harness) Interrupt(ctx context.Context, turnID string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.state != stateRunning {
		return bridge.ErrNotRunning
	}
	t, err := h.turnLocked(turnID)
	if err != nil {
		return err
	}
	t.ending = true
	t.cancel()
	return nil
}

// StrictTurns returns nil: in every turn, each write, patch and command
// goes to the gate before it happens (reading is confined to the agent's
// dir and has no side effects).
func (h *Harness) StrictTurns() error { return nil }

// TurnStrict reports whether turnID is running; all its side effects reach
// the gate.
func (h *Harness) TurnStrict(turnID string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cur != nil && h.cur.id == turnID
}

// OwnerTurns returns "": the owner's turns ask before every side effect
// too (the owner's auto_approve list may answer for the owner).
func (h *Harness) OwnerTurns() string { return "" }

// turnLocked returns the running turn if it is id and still takes input.
func (h *Harness) turnLocked(id string) (*turn, error) {
	t := h.cur
	if t == nil {
		return nil, bridge.CheckTurn("", false, id)
	}
	if err := bridge.CheckTurn(t.id, t.ending, id); err != nil {
		return nil, err
	}
	return t, nil
}

// Close interrupts a running turn, waits until it has reported its end,
// and releases the directory. No events follow Close.
func (h *Harness) Close() error {
	h.mu.Lock()
	h.state = stateClosed
	if h.cur != nil {
		h.cur.ending = true
	}
	h.mu.Unlock()
	h.stop()
	h.running.Wait()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ws != nil {
		h.ws.Close()
		h.ws = nil
	}
	h.client.close()
	return nil
}
