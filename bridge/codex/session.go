package codex

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	wheelhouse "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/bridge"
	"github.com/wheelhouse-dev/wheelhouse/internal/procgroup"
)

// Process lifetimes.
const (
	// startTimeout bounds spawn → initialize → thread ready.
	startTimeout = 60 * time.Second
	// exitGrace is how long a closed or exited process gets before we kill
	// its group and stop reading its output.
	exitGrace = 3 * time.Second
)

// session is one codex process, its connection and its thread. When the
// process dies the Harness replaces the whole session.
type session struct {
	h      *Harness
	log    *slog.Logger
	cmd    *exec.Cmd
	stdin  io.Closer
	conn   *conn
	exited chan struct{} // closed once the process is gone and its output read
	// exitErr is the process's wait error, valid after exited.
	exitErr error

	mu        sync.Mutex
	threadID  string
	turn      string // the active turn, "" when idle
	starting  bool   // a turn/start is in flight
	ended     []string
	items     map[string]*liveItem        // by threadID/itemID
	itemSeq   int                         // insertion order of items
	approvals map[string]*pendingApproval // pending approvals by server request id
	turnErr   map[string]string           // last non-retried error per turn

	// What codex runs without asking (see policy.go): the thread's settings
	// as codex last reported them, a channel closed and replaced whenever
	// they change, the owner's sandbox as codex reported it at thread start,
	// and the settings each recent turn started under.
	policy          policy
	settingsChanged chan struct{}
	ownerSandbox    json.RawMessage
	turnPolicy      map[string]policy
	// The model's calls as codex relayed them (rawResponseItem), and how
	// many approval requests each item made, by threadID/itemID.
	calls map[string]*callInfo
	asked map[string]int
}

// spawn starts codex app-server and completes the handshake on a thread:
// resumeID's if it can be resumed, else a new one.
func (h *Harness) spawn(ctx context.Context, resumeID string) (*session, error) {
	cmd := exec.Command(h.cfg.binary, h.cfg.args()...)
	cmd.Dir = h.cfg.dir
	cmd.Env = h.cfg.env
	stderr := &stderrLog{log: h.log}
	cmd.Stderr = stderr
	cmd.WaitDelay = exitGrace
	procgroup.Own(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, wheelhouse.Wrap(err, "cannot open a pipe to codex")
	}
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		stdin.Close()
		return nil, wheelhouse.Wrap(err, "cannot open a pipe from codex")
	}
	cmd.Stdout = stdoutW
	if err := cmd.Start(); err != nil {
		stdoutR.Close()
		stdoutW.Close()
		return nil, &wheelhouse.Error{Code: wheelhouse.EUnavailable, Err: err,
			Message: fmt.Sprintf("cannot start codex (%s): install codex-cli or set binary in the agent config", h.cfg.binary)}
	}
	stdoutW.Close()

	var w io.Writer = stdin
	if h.wrapStdin != nil {
		w = h.wrapStdin(w)
	}
	s := &session{
		h: h, log: h.log.With("pid", cmd.Process.Pid), cmd: cmd, stdin: stdin,
		exited:    make(chan struct{}),
		items:     map[string]*liveItem{},
		approvals: map[string]*pendingApproval{},
		turnErr:   map[string]string{},

		settingsChanged: make(chan struct{}),
		turnPolicy:      map[string]policy{},
		calls:           map[string]*callInfo{},
		asked:           map[string]int{},
	}
	s.conn = newConn(w, handlers{notify: s.onNotify, request: s.onRequest}, s.log)
	s.conn.start(stdoutR)
	go s.monitor(stdoutR)

	if err := s.handshake(ctx, resumeID); err != nil {
		procgroup.Kill(cmd)
		<-s.exited
		msg := "codex app-server did not start; run `codex app-server` by hand to see why"
		if errors.Is(err, errConnClosed) {
			err = fmt.Errorf("%w (exit: %v)", err, s.exitErr)
			if last := stderr.last(); last != "" {
				msg = "codex app-server did not start: " + last
			}
		}
		return nil, &wheelhouse.Error{Code: wheelhouse.EUnavailable, Err: err, Message: msg}
	}
	return s, nil
}

// monitor waits for the process to exit and its output to end, whichever
// comes first taking the other down with it, then closes exited.
func (s *session) monitor(stdout *os.File) {
	waitErr := make(chan error, 1)
	go func() { waitErr <- s.cmd.Wait() }()
	var err error
	select {
	case <-s.conn.Done():
		procgroup.Kill(s.cmd) // output ended: the process is of no use any more
		err = <-waitErr
	case err = <-waitErr:
		grace := time.NewTimer(exitGrace)
		select {
		case <-s.conn.Done():
		case <-grace.C: // a child holds our stdout open; stop reading
			stdout.Close()
			<-s.conn.Done()
		}
		grace.Stop()
	}
	procgroup.Kill(s.cmd) // commands codex left behind
	stdout.Close()
	s.exitErr = err
	close(s.exited)
}

// shutdown closes stdin (codex then exits on its own) and kills the
// process group if it has not exited within exitGrace.
func (s *session) shutdown() {
	_ = s.stdin.Close()
	t := time.NewTimer(exitGrace)
	defer t.Stop()
	select {
	case <-s.exited:
	case <-t.C:
		procgroup.Kill(s.cmd)
		<-s.exited
	}
	s.dropApprovals()
}

// exitReason says in words why the process is gone.
func (s *session) exitReason() string {
	if s.exitErr != nil {
		return "codex app-server exited: " + s.exitErr.Error()
	}
	return "codex app-server exited"
}

func clientVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

func (s *session) handshake(ctx context.Context, resumeID string) error {
	var ip initializeParams
	ip.ClientInfo = clientInfo{Name: "wheelhouse", Title: "Wheelhouse", Version: clientVersion()}
	ip.Capabilities.OptOutNotificationMethods = optOutNotifications
	// For thread/settings/update and its confirmation, and raw items.
	ip.Capabilities.ExperimentalAPI = true
	if err := s.conn.call(ctx, methodInitialize, ip, nil); err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	if err := s.conn.notify(methodInitialized, nil); err != nil {
		return fmt.Errorf("initialized: %w", err)
	}
	cfg := s.h.cfg
	tp := threadParams{Cwd: cfg.dir, ApprovalPolicy: cfg.approvalPolicy, Sandbox: cfg.sandbox, Model: cfg.model,
		Config: map[string]any{"projects": map[string]any{cfg.dir: map[string]any{"trust_level": "untrusted"}}}}
	var res threadResult
	if resumeID != "" {
		rp := tp
		rp.ThreadID, rp.ExcludeTurns = resumeID, true
		if err := s.conn.call(ctx, methodThreadResume, rp, &res); err != nil {
			if errors.Is(err, errConnClosed) || ctx.Err() != nil {
				return fmt.Errorf("thread/resume: %w", err)
			}
			s.log.Warn("codex: cannot resume the thread; starting a new one", "thread", resumeID, "err", err)
			res.Thread.ID = ""
		}
	}
	if res.Thread.ID == "" {
		sp := tp
		sp.ExperimentalRawEvents = true
		if err := s.conn.call(ctx, methodThreadStart, sp, &res); err != nil {
			return fmt.Errorf("thread/start: %w", err)
		}
	}
	if res.Thread.ID == "" {
		return errors.New("thread/start returned no thread id")
	}
	pol, err := parsePolicy(res.ApprovalPolicy, res.Sandbox)
	if err != nil {
		s.log.Warn("codex: cannot read the thread's settings; every turn will set them", "err", err)
	}
	s.mu.Lock()
	s.threadID, s.policy = res.Thread.ID, pol
	if pol == cfg.owner() {
		s.ownerSandbox = res.Sandbox
	}
	s.mu.Unlock()
	s.log.Info("codex: ready", "thread", res.Thread.ID, "resumed", resumeID == res.Thread.ID)
	return nil
}

func (s *session) thread() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.threadID
}

// markEnded records a finished turn so a late reply cannot revive it.
// Callers hold s.mu.
func (s *session) markEnded(id string) {
	if s.turn == id {
		s.turn = ""
	}
	s.ended = append(s.ended, id)
	if len(s.ended) > 16 {
		s.ended = s.ended[1:]
	}
	delete(s.turnErr, id)
}

func (s *session) isEnded(id string) bool {
	for _, e := range s.ended {
		if e == id {
			return true
		}
	}
	return false
}

// startTurn starts a turn under the owner's policy, under strictPolicy
// when strict, or readOnlyPolicy when read-only; the thread's settings are
// changed and confirmed by codex before the text goes in.
func (s *session) startTurn(ctx context.Context, text string, strict, readOnly bool) (string, error) {
	want := s.h.cfg.owner()
	if strict || readOnly {
		if why := homeProblem(s.h.cfg); why != "" {
			return "", fmt.Errorf("%w: %s", bridge.ErrNotStrict, why)
		}
		want = strictPolicy
		if readOnly {
			want = readOnlyPolicy
		}
	}
	s.mu.Lock()
	if s.turn != "" || s.starting {
		turn := s.turn
		s.mu.Unlock()
		return "", fmt.Errorf("%w: turn %q is running", bridge.ErrBusy, turn)
	}
	s.starting = true
	thread := s.threadID
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.starting = false
		s.mu.Unlock()
	}()
	if err := s.ensurePolicy(ctx, want); err != nil {
		return "", err
	}

	var res turnStartResult
	err := s.conn.callThen(ctx, methodTurnStart, turnStartParams{ThreadID: thread, Input: textInput(text)}, &res,
		func(raw json.RawMessage) {
			var r turnStartResult
			if json.Unmarshal(raw, &r) == nil && r.Turn.ID != "" {
				s.mu.Lock()
				if !s.isEnded(r.Turn.ID) {
					s.turn = r.Turn.ID
				}
				s.noteTurnPolicy(r.Turn.ID, want)
				s.mu.Unlock()
			}
		})
	if err != nil {
		return "", s.callErr(methodTurnStart, err)
	}
	if res.Turn.ID == "" {
		return "", wheelhouse.Errorf(wheelhouse.EInternal, "codex turn/start returned no turn id")
	}
	return res.Turn.ID, nil
}

func (s *session) steer(ctx context.Context, expected, text string) error {
	err := s.conn.call(ctx, methodTurnSteer,
		turnSteerParams{ThreadID: s.thread(), ExpectedTurnID: expected, Input: textInput(text)}, nil)
	return s.callErr(methodTurnSteer, err)
}

func (s *session) interrupt(ctx context.Context, turnID string) error {
	s.mu.Lock()
	cur := s.turn
	s.mu.Unlock()
	if cur != "" && cur != turnID {
		return fmt.Errorf("%w: asked to interrupt %q but %q is running", bridge.ErrStaleTurn, turnID, cur)
	}
	err := s.conn.call(ctx, methodTurnInterrupt, turnInterruptParams{ThreadID: s.thread(), TurnID: turnID}, nil)
	return s.callErr(methodTurnInterrupt, err)
}

// callErr maps codex's answers onto the bridge's errors.
func (s *session) callErr(method string, err error) error {
	if err == nil {
		return nil
	}
	var re *rpcError
	switch {
	case errors.Is(err, errConnClosed):
		return fmt.Errorf("%w: codex app-server went away during %s: %v", bridge.ErrNotRunning, method, err)
	case errors.As(err, &re) && re.Code == codeInvalidRequest:
		switch msg := re.Message; {
		case strings.Contains(msg, "expected active turn id"):
			return fmt.Errorf("%w: %s", bridge.ErrStaleTurn, msg)
		case strings.Contains(msg, "no active turn"):
			return fmt.Errorf("%w: %s", bridge.ErrNoActiveTurn, msg)
		case strings.Contains(strings.ToLower(msg), "not steerable"):
			return fmt.Errorf("%w: %s", bridge.ErrBusy, msg)
		}
	}
	return fmt.Errorf("codex %s: %w", method, err)
}

// stderrLog logs codex's stderr line by line and keeps the last few lines
// for start-up errors. Only exec's copy goroutine writes to it; read last
// after the process has been waited for.
type stderrLog struct {
	log       *slog.Logger
	buf       []byte
	tail      []string
	firstErr  string // the first "Error: ..." line
	backtrace bool   // inside a Rust backtrace: log quietly, keep nothing
}

// last is the first error line codex printed, or its last lines.
func (w *stderrLog) last() string {
	if w.firstErr != "" {
		return w.firstErr
	}
	return strings.Join(w.tail, " | ")
}

func (w *stderrLog) line(b []byte) {
	line := clip(string(bytes.TrimSpace(stripANSI(b))), 2000)
	switch {
	case line == "":
		return
	case strings.HasPrefix(line, "Stack backtrace"):
		w.backtrace = true
	}
	if w.backtrace {
		w.log.Debug("codex stderr", "line", line)
		return
	}
	w.log.Info("codex stderr", "line", line)
	if w.firstErr == "" && strings.HasPrefix(line, "Error") {
		w.firstErr = line
	}
	if w.tail = append(w.tail, line); len(w.tail) > 3 {
		w.tail = w.tail[1:]
	}
}

func (w *stderrLog) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.line(w.buf[:i])
		w.buf = w.buf[i+1:]
	}
	if len(w.buf) > 64<<10 {
		w.line(w.buf)
		w.buf = nil
	}
	return len(p), nil
}

// stripANSI removes terminal escape sequences (codex colours its log lines).
func stripANSI(b []byte) []byte {
	if bytes.IndexByte(b, 0x1b) < 0 {
		return b
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != 0x1b {
			out = append(out, b[i])
			continue
		}
		if i+1 < len(b) && b[i+1] == '[' {
			i += 2
			for i < len(b) && (b[i] < 0x40 || b[i] > 0x7e) {
				i++
			}
		}
	}
	return out
}
