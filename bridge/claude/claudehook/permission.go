package claudehook

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Kinds of PermRequest: a PermissionRequest hook event (Claude Code would
// prompt), or a PreToolUse gate in a tainted session (Claude Code might
// not prompt at all: its allow rules could let the call run).
const (
	KindPermission = "permission"
	KindPreTool    = "pretool"
)

// PermRequest is what the hook sends the bridge, one JSON line.
type PermRequest struct {
	Kind      string          `json:"kind"`
	Tool      string          `json:"tool"`
	Input     json.RawMessage `json:"input"`
	SessionID string          `json:"sessionId,omitempty"`
	ToolUseID string          `json:"toolUseId,omitempty"`
	Cwd       string          `json:"cwd,omitempty"`
	// Tainted is the hook's record: non-owner words reached this session.
	Tainted bool `json:"tainted,omitempty"`
}

// PermAnswer is one line of the bridge's reply: keep-alives ("pending")
// while the owner decides, then the decision.
type PermAnswer struct {
	Behavior string `json:"behavior"` // BehaviorPending, BehaviorAllow, BehaviorDeny or BehaviorTerminal
	Message  string `json:"message,omitempty"`
}

// Behaviors of a PermAnswer. Terminal lets Claude Code ask as usual (the
// agent's permissions = "terminal" option).
const (
	BehaviorPending  = "pending"
	BehaviorAllow    = "allow"
	BehaviorDeny     = "deny"
	BehaviorTerminal = "terminal"
)

// errNoBridge means no decision can come: nothing listens, or the bridge
// went silent or away. The caller falls back (Claude Code's own prompt,
// or deny in a tainted session).
var errNoBridge = errors.New("the bridge did not answer")

// errForeign means something answers on the socket that is not the
// owner's bridge: its folder is not the owner's private one, or the
// listener runs as another user. Its answer is never believed, and the
// call is denied (never "no gate": that would hand the decision to
// whoever squatted the socket, or to Claude Code's allow rules).
var errForeign = errors.New("the permission socket is not the owner's bridge")

// askBridge hands req to the bridge on sock and waits up to wait for the
// decision. The bridge must say something at least every BridgeSilence
// (it sends keep-alives while the owner decides); if it does not, or
// cannot be reached, the error wraps errNoBridge. When wait passes with
// no decision, the answer is a denial.
func askBridge(ctx context.Context, sock string, req PermRequest, wait time.Duration) (PermAnswer, error) {
	if wait <= 0 {
		return PermAnswer{Behavior: BehaviorDeny, Message: "No time is left to ask the owner before Claude Code's hook timeout; denied."}, nil
	}
	deadline := time.Now().Add(wait)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	if sock == "" {
		return PermAnswer{}, fmt.Errorf("%w: no socket is recorded for this project", errNoBridge)
	}
	if err := ownedPrivateDir(filepath.Dir(sock)); errors.Is(err, fs.ErrNotExist) {
		return PermAnswer{}, fmt.Errorf("%w: not listening on %s: %v", errNoBridge, sock, err)
	} else if err != nil {
		return PermAnswer{}, fmt.Errorf("%w: %v", errForeign, err)
	}
	d := net.Dialer{Timeout: BridgeSilence, Deadline: deadline}
	conn, err := d.DialContext(ctx, "unix", sock)
	if err != nil {
		return PermAnswer{}, fmt.Errorf("%w: not listening on %s: %v", errNoBridge, sock, err)
	}
	defer conn.Close()
	if uid, ok, err := peerUID(conn); err != nil {
		return PermAnswer{}, fmt.Errorf("%w: cannot tell who listens on %s: %v", errForeign, sock, err)
	} else if ok && uid != os.Getuid() {
		return PermAnswer{}, fmt.Errorf("%w: user %d listens on %s", errForeign, uid, sock)
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()
	if len(req.Input) == 0 {
		req.Input = json.RawMessage("{}")
	}
	b, _ := json.Marshal(req)
	_ = conn.SetWriteDeadline(time.Now().Add(BridgeSilence))
	if _, err := conn.Write(append(b, '\n')); err != nil {
		return PermAnswer{}, fmt.Errorf("%w: %v", errNoBridge, err)
	}
	r := bufio.NewReader(conn)
	for {
		until := time.Now().Add(BridgeSilence)
		if deadline.Before(until) {
			until = deadline
		}
		_ = conn.SetReadDeadline(until)
		line, err := r.ReadBytes('\n')
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded) && !time.Now().Before(deadline):
			return PermAnswer{Behavior: BehaviorDeny, Message: "No decision from the owner in time; denied by default."}, nil
		case errors.Is(err, os.ErrDeadlineExceeded):
			return PermAnswer{}, fmt.Errorf("%w: silent for %v", errNoBridge, BridgeSilence)
		case err != nil:
			return PermAnswer{}, fmt.Errorf("%w: it went away: %v", errNoBridge, err)
		}
		var ans PermAnswer
		if err := json.Unmarshal(line, &ans); err != nil {
			return PermAnswer{Behavior: BehaviorDeny, Message: "Unreadable answer from the Wheelhouse bridge; denied."}, nil
		}
		switch ans.Behavior {
		case BehaviorPending:
			continue
		case BehaviorAllow, BehaviorTerminal:
			return ans, nil
		default:
			if ans.Message == "" {
				ans.Message = "Denied by the owner."
			}
			return PermAnswer{Behavior: BehaviorDeny, Message: ans.Message}, nil
		}
	}
}

// PermServer is the bridge end of the socket: it answers each
// connection's request with decide's verdict, sending keep-alives while
// decide runs.
type PermServer struct {
	ln     net.Listener
	decide func(ctx context.Context, req PermRequest) PermAnswer
	ctx    context.Context // ends with close: pending decisions are abandoned
	cancel context.CancelFunc
	done   chan struct{}
}

// Listen listens on path, in a folder private to this user (see
// PrepareSocket). A live listener already there means another bridge is
// attached to the project; a dead socket file is replaced.
func Listen(path string, decide func(context.Context, PermRequest) PermAnswer) (*PermServer, error) {
	if err := ownedPrivateDir(filepath.Dir(path)); err != nil {
		return nil, fmt.Errorf("the permission socket's folder: %w; remove it", err)
	}
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		c.Close()
		return nil, fmt.Errorf("another bridge is already attached to this project (it listens on %s)", path)
	}
	_ = os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	_ = os.Chmod(path, 0o600)
	ctx, cancel := context.WithCancel(context.Background())
	s := &PermServer{ln: ln, decide: decide, ctx: ctx, cancel: cancel, done: make(chan struct{})}
	go s.serve()
	return s, nil
}

func (s *PermServer) serve() {
	defer close(s.done)
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		go s.handle(c)
	}
}

func (s *PermServer) handle(c net.Conn) {
	defer c.Close()
	if uid, ok, err := peerUID(c); err != nil || ok && uid != os.Getuid() {
		return // only the owner's own hooks ask (the folder admits no one else anyway)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReaderSize(c, 64<<10)
	line, err := r.ReadBytes('\n')
	if err != nil {
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	send := func(a PermAnswer) error {
		b, _ := json.Marshal(a)
		_ = c.SetWriteDeadline(time.Now().Add(BridgeSilence))
		_, err := c.Write(append(b, '\n'))
		return err
	}
	var req PermRequest
	if err := json.Unmarshal(line, &req); err != nil || req.Tool == "" {
		_ = send(PermAnswer{Behavior: BehaviorDeny, Message: "malformed permission request"})
		return
	}
	if req.Kind == "" {
		req.Kind = KindPermission
	}
	// The hook closing the connection (it gave up, Claude Code killed it,
	// the owner answered in the terminal) ends the wait.
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	go func() {
		_, _ = r.ReadByte()
		cancel()
	}()
	if send(PermAnswer{Behavior: BehaviorPending}) != nil {
		return
	}
	result := make(chan PermAnswer, 1)
	go func() { result <- s.decide(ctx, req) }()
	t := time.NewTicker(KeepAliveEvery)
	defer t.Stop()
	for {
		select {
		case ans := <-result:
			_ = send(ans)
			return
		case <-t.C:
			if send(PermAnswer{Behavior: BehaviorPending}) != nil {
				cancel()
				<-result
				return
			}
		}
	}
}

// Close stops listening and abandons pending decisions.
func (s *PermServer) Close() {
	s.cancel()
	s.ln.Close()
	<-s.done
}
