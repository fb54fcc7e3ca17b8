package execagent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	wheelhouse "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/bridge"
	"github.com/wheelhouse-dev/wheelhouse/internal/procgroup"
)

// Kind is the harness name in the bridge config.
const Kind = "exec"

// PromptArg in the command is replaced by the input text; without it the
// text goes to the command's stdin.
const PromptArg = "{prompt}"

// DefaultKillGrace is how long Interrupt waits after SIGTERM before it sends
// SIGKILL to the process group (Options["kill_grace"]).
const DefaultKillGrace = 2 * time.Second

// pipeGrace bounds how long a finished command's children may hold its
// output open.
const pipeGrace = 5 * time.Second

// Agent runs one command per turn. It is safe for concurrent use.
type Agent struct {
	name  string
	argv  []string
	dir   string
	env   []string
	grace time.Duration
	sink  bridge.Sink
	log   *slog.Logger
	idPfx string

	mu      sync.Mutex
	state   int // stateNew, stateRunning, stateClosed
	seq     int
	cur     *run
	running sync.WaitGroup // wait goroutines and killers
}

const (
	stateNew = iota
	stateRunning
	stateClosed
)

// run is one turn: one process.
type run struct {
	id          string
	cmd         *exec.Cmd
	stdout      *headBuffer
	stderr      *tailBuffer
	interrupted bool
	done        chan struct{} // closed when the process has been waited for
}

var _ bridge.Harness = (*Agent)(nil)

// New returns an exec agent for d. d.Agent.Command is the argv; an argument
// equal to "{prompt}" becomes the input text, otherwise the text is written
// to stdin. The command runs in d.Agent.Dir with d.Agent.Env added to the
// bridge's environment.
func New(d bridge.Deps) (*Agent, error) {
	cfg := d.Agent
	if len(cfg.Command) == 0 || cfg.Command[0] == "" {
		return nil, wheelhouse.Errorf(wheelhouse.EInvalid, "exec agent %q: set command, for example command = [\"mycli\", \"--print\", \"{prompt}\"]", cfg.Name)
	}
	a := &Agent{
		name:  cfg.Name,
		argv:  slices.Clone(cfg.Command),
		dir:   cfg.Dir,
		env:   os.Environ(),
		grace: DefaultKillGrace,
		sink:  d.Events,
		log:   d.Log,
	}
	if cfg.Dir != "" {
		// os/exec updates PWD only when Env is nil; ours is not.
		if abs, err := filepath.Abs(cfg.Dir); err == nil {
			a.env = append(a.env, "PWD="+abs)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(cfg.Env)) {
		a.env = append(a.env, k+"="+cfg.Env[k]) // later entries win in os/exec
	}
	if s, ok := cfg.Options["kill_grace"]; ok {
		v, err := time.ParseDuration(s)
		if err != nil || v < 0 {
			return nil, wheelhouse.Errorf(wheelhouse.EInvalid, "exec agent %q: option kill_grace=%q is not a duration such as \"2s\"", cfg.Name, s)
		}
		a.grace = v
	}
	if a.sink == nil {
		a.sink = func(bridge.Event) {}
	}
	if a.log == nil {
		a.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	a.log = a.log.With("harness", Kind)
	var b [4]byte
	_, _ = rand.Read(b[:])
	a.idPfx = "exec-" + hex.EncodeToString(b[:])
	return a, nil
}

// Kind returns "exec".
func (a *Agent) Kind() string { return Kind }

// CanSteer returns false: a running command takes no more input.
func (a *Agent) CanSteer() bool { return false }

var _ bridge.Gating = (*Agent)(nil)

// StrictTurns always fails: the configured command runs as it is, and
// nothing it does reaches the owner's approval gate.
func (a *Agent) StrictTurns() error {
	return errors.New("it runs its configured command without asking its owner about anything the command does")
}

// TurnStrict is false: see StrictTurns.
func (a *Agent) TurnStrict(string) bool { return false }

// OwnerTurns says what every turn does unasked.
func (a *Agent) OwnerTurns() string { return "run the configured command without asking" }

// Start checks that the command and its directory exist.
func (a *Agent) Start(ctx context.Context) error {
	if !strings.ContainsRune(a.argv[0], os.PathSeparator) {
		if _, err := exec.LookPath(a.argv[0]); err != nil {
			return wheelhouse.Errorf(wheelhouse.EInvalid, "exec agent %q: command %q is not on PATH", a.name, a.argv[0])
		}
	}
	if a.dir != "" {
		if fi, err := os.Stat(a.dir); err != nil || !fi.IsDir() {
			return wheelhouse.Errorf(wheelhouse.EInvalid, "exec agent %q: dir %q is not a directory", a.name, a.dir)
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.state == stateClosed {
		return bridge.ErrNotRunning
	}
	a.state = stateRunning
	return nil
}

// StartTurn runs the command with in. It fails with bridge.ErrBusy while an
// earlier run is in progress, and with the start error if the command
// cannot run (then no events are sent).
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
	r := &run{
		id:     fmt.Sprintf("%s-%d", a.idPfx, a.seq),
		stdout: &headBuffer{max: MaxOutput + 4<<10},
		stderr: &tailBuffer{max: stderrTail},
		done:   make(chan struct{}),
	}
	r.cmd = a.command(in.Text)
	r.cmd.Stdout, r.cmd.Stderr = r.stdout, r.stderr
	if err := r.cmd.Start(); err != nil {
		a.mu.Unlock()
		return "", wheelhouse.Errorf(wheelhouse.EUnavailable, "exec agent %q: cannot run %q: %v", a.name, a.argv[0], err)
	}
	a.cur = r
	a.running.Add(1)
	a.mu.Unlock()

	a.log.Info("turn started", "turn", r.id, "pid", r.cmd.Process.Pid, "sender", in.Sender)
	a.sink(bridge.Event{Kind: bridge.EventTurnStarted, TurnID: r.id})
	go a.wait(r)
	return r.id, nil
}

// command builds the process for one turn.
func (a *Agent) command(text string) *exec.Cmd {
	argv := slices.Clone(a.argv)
	usesArg := false
	for i, arg := range argv {
		if arg == PromptArg {
			argv[i] = text
			usesArg = true
		}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = a.dir
	cmd.Env = a.env
	if !usesArg {
		cmd.Stdin = strings.NewReader(text)
	}
	cmd.WaitDelay = pipeGrace
	procgroup.Own(cmd)
	return cmd
}

// wait reports the end of r: its output, then the turn's end.
func (a *Agent) wait(r *run) {
	defer a.running.Done()
	err := r.cmd.Wait()
	close(r.done)
	if errors.Is(err, exec.ErrWaitDelay) {
		// It exited 0 but something it started still holds its output.
		a.log.Warn("command exited, its children kept its output open", "turn", r.id)
		err = nil
	}

	a.mu.Lock()
	interrupted := r.interrupted
	a.mu.Unlock()

	end := bridge.Event{Kind: bridge.EventTurnEnded, TurnID: r.id, Status: "completed"}
	switch {
	case interrupted:
		end.Status, end.Text = "interrupted", "interrupted"
	case err != nil:
		end.Status, end.Text = "failed", failure(err, r.stderr)
	}
	out := formatOutput(r.stdout)
	if out == "" && end.Status == "completed" {
		out = "(the command printed nothing)"
	}
	if out != "" {
		a.sink(bridge.Event{Kind: bridge.EventMessage, TurnID: r.id, Text: out})
	}
	a.log.Info("turn ended", "turn", r.id, "status", end.Status, "err", err)

	// Idle before the end is announced, so whoever reacts to it can start
	// the next turn at once.
	a.mu.Lock()
	if a.cur == r {
		a.cur = nil
	}
	a.mu.Unlock()
	a.sink(end)
}

// Steer always fails: an exec command takes no input while it runs. The
// bridge queues the message as a follow-up instead.
func (a *Agent) Steer(ctx context.Context, expectedTurnID string, in bridge.Input) error {
	return &wheelhouse.Error{
		Code:    wheelhouse.EConflict,
		Message: fmt.Sprintf("exec agent %q cannot be steered during a turn; the message waits for the next turn", a.name),
		Err:     errors.ErrUnsupported,
	}
}

// Interrupt stops turnID's process group: SIGTERM, then SIGKILL after the
// grace period. The turn reports EventTurnEnded with status "interrupted".
func (a *Agent) Interrupt(ctx context.Context, turnID string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.state != stateRunning {
		return bridge.ErrNotRunning
	}
	r := a.cur
	switch {
	case r == nil:
		return bridge.ErrNoActiveTurn
	case r.id != turnID:
		return fmt.Errorf("%w (running %s, not %s)", bridge.ErrStaleTurn, r.id, turnID)
	case r.interrupted:
		return nil
	}
	r.interrupted = true
	a.log.Info("interrupting turn", "turn", r.id)
	if err := procgroup.Signal(r.cmd, a.grace == 0); err != nil {
		a.log.Warn("signal process group", "turn", r.id, "err", err)
	}
	if a.grace > 0 {
		a.running.Add(1)
		go a.killAfter(r, a.grace)
	}
	return nil
}

// killAfter sends SIGKILL to r's group unless it is gone within grace.
func (a *Agent) killAfter(r *run, grace time.Duration) {
	defer a.running.Done()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-r.done:
	case <-t.C:
		_ = procgroup.Signal(r.cmd, true)
	}
}

// Close kills a running command's process group, waits until its turn has
// reported its end, and stops the agent. No events follow Close.
func (a *Agent) Close() error {
	a.mu.Lock()
	a.state = stateClosed
	if r := a.cur; r != nil {
		r.interrupted = true
		_ = procgroup.Signal(r.cmd, true)
	}
	a.mu.Unlock()
	a.running.Wait()
	return nil
}
