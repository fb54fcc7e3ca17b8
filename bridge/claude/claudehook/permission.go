package claudehook

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"time"
)

// DefaultPermissionWait is how long the hook waits for the owner's decision
// before denying. PermissionHookTimeout, the Claude Code timeout Install
// writes for the PermissionRequest hook (seconds), is a little longer, so
// the hook always answers itself.
const (
	DefaultPermissionWait = 590 * time.Second
	PermissionHookTimeout = 600
)

// PermRequest is what the hook sends the bridge, one JSON line.
type PermRequest struct {
	Tool      string          `json:"tool"`
	Input     json.RawMessage `json:"input"`
	SessionID string          `json:"sessionId,omitempty"`
	ToolUseID string          `json:"toolUseId,omitempty"`
	Cwd       string          `json:"cwd,omitempty"`
}

// PermAnswer is the bridge's reply, one JSON line.
type PermAnswer struct {
	Behavior string `json:"behavior"` // "allow", "deny", or "terminal": let Claude Code ask as usual
	Message  string `json:"message,omitempty"`
}

// askBridge hands a PermissionRequest to the bridge and waits. A bridge that
// is not listening is the hook's own failure: it prints nothing and Claude
// Code asks in the terminal as usual. No decision in time is a denial.
func askBridge(ctx context.Context, sc Dir, in hookInput) ([]byte, error) {
	d := net.Dialer{Timeout: 2 * time.Second}
	conn, err := d.DialContext(ctx, "unix", sc.Socket())
	if err != nil {
		return nil, fmt.Errorf("permission request for %s: bridge not listening (Claude Code asked in the terminal): %w", in.ToolName, err)
	}
	defer conn.Close()
	deadline := time.Now().Add(DefaultPermissionWait)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	_ = conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()

	input := in.ToolInput
	if len(input) == 0 {
		input = json.RawMessage("{}")
	}
	req, _ := json.Marshal(PermRequest{Tool: in.ToolName, Input: input, SessionID: in.SessionID, ToolUseID: in.ToolUseID, Cwd: in.Cwd})
	if _, err := conn.Write(append(req, '\n')); err != nil {
		return nil, fmt.Errorf("permission request for %s: %w", in.ToolName, err)
	}
	line, err := bufio.NewReader(conn).ReadBytes('\n')
	var ans PermAnswer
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		ans = PermAnswer{Behavior: "deny", Message: "No decision from the owner in time; denied by default."}
	case err != nil:
		return nil, fmt.Errorf("permission request for %s: bridge went away: %w", in.ToolName, err)
	default:
		if err := json.Unmarshal(line, &ans); err != nil {
			return nil, fmt.Errorf("permission request for %s: bad answer from bridge: %w", in.ToolName, err)
		}
	}
	if ans.Behavior == "terminal" {
		return nil, nil // the owner decides in the terminal
	}
	decision := map[string]any{"behavior": "deny", "message": ans.Message}
	if ans.Behavior == "allow" {
		// Run exactly what was approved.
		decision = map[string]any{"behavior": "allow", "updatedInput": input}
	} else if ans.Message == "" {
		decision["message"] = "Denied by the owner."
	}
	return marshalLine(map[string]any{"hookSpecificOutput": map[string]any{
		"hookEventName": "PermissionRequest",
		"decision":      decision,
	}})
}

// PermServer is the bridge end of the socket: it answers each
// connection's request with decide's verdict.
type PermServer struct {
	ln     net.Listener
	decide func(ctx context.Context, req PermRequest) PermAnswer
	ctx    context.Context // ends with close: pending decisions are abandoned
	cancel context.CancelFunc
	done   chan struct{}
}

// Listen listens on path. A live listener already there means
// another bridge is attached to the project; a dead socket file is replaced.
func Listen(path string, decide func(context.Context, PermRequest) PermAnswer) (*PermServer, error) {
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
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(c)
	line, err := r.ReadBytes('\n')
	if err != nil {
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	var req PermRequest
	if err := json.Unmarshal(line, &req); err != nil || req.Tool == "" {
		b, _ := json.Marshal(PermAnswer{Behavior: "deny", Message: "malformed permission request"})
		_, _ = c.Write(append(b, '\n'))
		return
	}
	// The hook closing the connection (Claude Code gave up, the owner
	// answered in the terminal) ends the wait.
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	go func() {
		_, _ = r.ReadByte()
		cancel()
	}()
	ans := s.decide(ctx, req)
	b, _ := json.Marshal(ans)
	_, _ = c.Write(append(b, '\n'))
}

func (s *PermServer) Close() {
	s.cancel()
	s.ln.Close()
	<-s.done
}
