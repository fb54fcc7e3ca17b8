package codex

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/bridge"
)

// Restart backoff after the process dies.
const (
	restartDelay    = 200 * time.Millisecond
	restartDelayMax = 10 * time.Second
)

// Harness is one codex agent: a persistent app-server process and thread,
// restarted (and its thread resumed) when the process dies.
type Harness struct {
	cfg  settings
	gate bridge.Gate
	sink bridge.Sink
	log  *slog.Logger

	// wrapStdin, if set before Start, wraps every process's stdin (tests
	// and benchmarks observe what we write).
	wrapStdin func(io.Writer) io.Writer

	life    context.Context // ends at Close
	stop    context.CancelFunc
	wg      sync.WaitGroup // supervisor and approval goroutines
	closing atomic.Bool

	mu      sync.Mutex
	started bool
	closed  bool
	sess    *session // nil while (re)starting
}

var _ bridge.Harness = (*Harness)(nil)

// New checks the agent's codex settings; Start launches the process.
func New(d bridge.Deps) (*Harness, error) {
	cfg, err := resolve(d.Agent)
	if err != nil {
		return nil, err
	}
	log := d.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	life, stop := context.WithCancel(context.Background())
	return &Harness{
		cfg: cfg, gate: d.Gate, sink: d.Events,
		log:  log.With("harness", "codex"),
		life: life, stop: stop,
	}, nil
}

// Kind is "codex".
func (h *Harness) Kind() string { return "codex" }

// CanSteer is true: turn/steer puts input into the running turn.
func (h *Harness) CanSteer() bool { return true }

// Start spawns codex app-server and opens the thread. From then on a dead
// process is restarted until Close.
func (h *Harness) Start(ctx context.Context) error {
	h.mu.Lock()
	switch {
	case h.closed:
		h.mu.Unlock()
		return fmt.Errorf("%w: agent closed", bridge.ErrNotRunning)
	case h.started:
		h.mu.Unlock()
		return errors.New("codex: already started")
	}
	h.started = true
	h.mu.Unlock()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(h.life, cancel)()
	s, err := h.spawn(ctx, "")
	if err != nil {
		h.mu.Lock()
		h.started = false
		h.mu.Unlock()
		return err
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		s.shutdown()
		return fmt.Errorf("%w: agent closed", bridge.ErrNotRunning)
	}
	h.sess = s
	h.wg.Add(1)
	h.mu.Unlock()
	go h.supervise(s)
	return nil
}

// StartTurn starts a turn with in.Text and returns codex's turn id. It
// fails with bridge.ErrBusy while a turn runs.
func (h *Harness) StartTurn(ctx context.Context, in bridge.Input) (string, error) {
	s, err := h.current()
	if err != nil {
		return "", err
	}
	return s.startTurn(ctx, in.Text, in.Strict, in.ReadOnly)
}

var _ bridge.Gating = (*Harness)(nil)

// StrictTurns is nil when codex can run a strict turn: untrusted (it asks
// before every command) with no sandbox to leave, and no rule in
// $CODEX_HOME/rules that lets a command run unasked.
func (h *Harness) StrictTurns() error {
	if why := homeProblem(h.cfg); why != "" {
		return errors.New(why)
	}
	return nil
}

// TurnStrict reports whether turnID started under a policy that asks
// before every command (and the rules still let it).
func (h *Harness) TurnStrict(turnID string) bool {
	s, err := h.current()
	return err == nil && s.turnStrict(turnID) && homeProblem(h.cfg) == ""
}

// OwnerTurns says what codex runs unasked in the owner's own turns.
func (h *Harness) OwnerTurns() string { return h.cfg.owner().ownerTurns() }

// Steer adds in.Text to the running turn if it is expectedTurnID:
// bridge.ErrStaleTurn if another turn runs, bridge.ErrNoActiveTurn if none.
func (h *Harness) Steer(ctx context.Context, expectedTurnID string, in bridge.Input) error {
	s, err := h.current()
	if err != nil {
		return err
	}
	return s.steer(ctx, expectedTurnID, in.Text)
}

// Interrupt stops turnID; codex then ends it with status "interrupted".
func (h *Harness) Interrupt(ctx context.Context, turnID string) error {
	s, err := h.current()
	if err != nil {
		return err
	}
	return s.interrupt(ctx, turnID)
}

// Close stops the process (stdin closed, then killed after a grace period)
// without restarting it. No event is emitted once Close has begun.
func (h *Harness) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	s := h.sess
	h.sess = nil
	h.mu.Unlock()
	h.closing.Store(true)
	h.stop()
	if s != nil {
		s.shutdown()
	}
	h.wg.Wait()
	return nil
}

func (h *Harness) current() (*session, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.closed:
		return nil, fmt.Errorf("%w: agent closed", bridge.ErrNotRunning)
	case h.sess == nil && !h.started:
		return nil, fmt.Errorf("%w: codex not started", bridge.ErrNotRunning)
	case h.sess == nil:
		return nil, fmt.Errorf("%w: codex app-server is restarting", bridge.ErrNotRunning)
	}
	return h.sess, nil
}

func (h *Harness) emit(e bridge.Event) {
	if h.closing.Load() || h.sink == nil {
		return
	}
	h.sink(e)
}

// goTracked runs f in a goroutine Close waits for; false once closed.
func (h *Harness) goTracked(f func()) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return false
	}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		f()
	}()
	return true
}

// supervise waits for the session's process to die and replaces it.
func (h *Harness) supervise(s *session) {
	defer h.wg.Done()
	for {
		<-s.exited
		h.mu.Lock()
		closed := h.closed
		if h.sess == s {
			h.sess = nil
		}
		h.mu.Unlock()
		if closed {
			return
		}
		reason := s.exitReason()
		h.log.Warn("codex: process died; restarting", "reason", reason)
		h.emit(bridge.Event{Kind: bridge.EventFailed, Text: reason})
		s.dropApprovals()
		for _, e := range s.failTurn(reason) {
			h.emit(e)
		}
		ns := h.restart(s.thread())
		if ns == nil {
			return
		}
		h.emit(bridge.Event{Kind: bridge.EventRecovered, Text: "codex app-server restarted"})
		s = ns
	}
}

// restart spawns a new session on threadID with backoff until it works or
// the harness closes (nil).
func (h *Harness) restart(threadID string) *session {
	delay := restartDelay
	for {
		t := time.NewTimer(delay)
		select {
		case <-h.life.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(h.life, startTimeout)
		s, err := h.spawn(ctx, threadID)
		cancel()
		if err == nil {
			h.mu.Lock()
			if h.closed {
				h.mu.Unlock()
				s.shutdown()
				return nil
			}
			h.sess = s
			h.mu.Unlock()
			return s
		}
		if h.life.Err() != nil {
			return nil
		}
		h.log.Warn("codex: restart failed", "err", err, "retry_in", delay)
		delay = min(delay*2, restartDelayMax)
	}
}
