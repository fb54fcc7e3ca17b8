package codex

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/wheelhouse-dev/wheelhouse/bridge"
)

// Tool names an approval is bound to (ToolCall.Tool).
const (
	ToolExec       = "exec_command"
	ToolApplyPatch = "apply_patch"
)

// Our only two answers. acceptForSession and exec-policy amendments are
// never sent: each grant covers exactly one call.
const (
	decisionAccept  = "accept"
	decisionDecline = "decline"
)

// onRequest serves codex's server requests. Approvals are asked in their
// own goroutine so the reader loop never waits on the owner.
func (s *session) onRequest(id json.RawMessage, method string, params json.RawMessage) bool {
	var ask bridge.ApprovalAsk
	var err error
	switch method {
	case reqCommandApproval:
		ask, err = s.commandAsk(params)
	case reqFileChangeApproval:
		ask, err = s.fileChangeAsk(params)
	default:
		return false
	}
	if err != nil {
		s.log.Warn("codex: declining an approval request we cannot present", "method", method, "err", err)
		s.answer(id, decisionDecline)
		return true
	}
	ctx, cancel := context.WithCancel(s.h.life)
	pa := &pendingApproval{key: requestKey(id), cancel: cancel}
	s.mu.Lock()
	if prev := s.approvals[pa.key]; prev != nil {
		prev.cancel() // codex reused an id: the old request is void
	}
	s.approvals[pa.key] = pa
	s.mu.Unlock()
	if !s.h.goTracked(func() { s.runAsk(ctx, pa, id, ask) }) {
		s.takeApproval(pa)
		cancel()
		s.answer(id, decisionDecline)
	}
	return true
}

// pendingApproval is a server request waiting on the owner.
type pendingApproval struct {
	key    string // requestKey of the server request id
	cancel context.CancelFunc
}

// runAsk asks the gate and answers codex, unless codex resolved the request
// by itself meanwhile (interrupt, turn end) or the process went away.
func (s *session) runAsk(ctx context.Context, pa *pendingApproval, id json.RawMessage, ask bridge.ApprovalAsk) {
	defer pa.cancel()
	var grant bridge.Grant
	err := errors.New("no approval gate configured")
	if s.h.gate != nil {
		grant, err = s.h.gate.Ask(ctx, ask)
	}
	if !s.takeApproval(pa) {
		s.log.Info("codex: approval request resolved before the owner decided; dropped",
			"turn", ask.TurnID, "tool", ask.Call.Tool)
		return
	}
	decision := decisionDecline
	switch {
	case err != nil:
		s.log.Info("codex: declined", "turn", ask.TurnID, "tool", ask.Call.Tool, "why", err)
	case grant == nil:
		s.log.Warn("codex: gate approved without a grant; declining", "turn", ask.TurnID)
	default:
		if rerr := grant.Redeem(ask.Call); rerr != nil {
			s.log.Warn("codex: grant does not redeem for this call; declining", "turn", ask.TurnID, "err", rerr)
		} else {
			decision = decisionAccept
		}
	}
	s.answer(id, decision)
}

func (s *session) answer(id json.RawMessage, decision string) {
	if err := s.conn.reply(id, approvalDecision{Decision: decision}); err != nil {
		s.log.Warn("codex: cannot answer an approval request", "decision", decision, "err", err)
	}
}

// takeApproval removes a pending approval; false if it was no longer pending.
func (s *session) takeApproval(pa *pendingApproval) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.approvals[pa.key] != pa {
		return false
	}
	delete(s.approvals, pa.key)
	return true
}

// resolved drops a pending approval codex no longer waits for.
func (s *session) resolved(requestID json.RawMessage) {
	key := requestKey(requestID)
	s.mu.Lock()
	pa := s.approvals[key]
	delete(s.approvals, key)
	s.mu.Unlock()
	if pa != nil {
		pa.cancel()
	}
}

// dropApprovals cancels every pending approval (the process is gone).
func (s *session) dropApprovals() {
	s.mu.Lock()
	pending := s.approvals
	s.approvals = map[string]*pendingApproval{}
	s.mu.Unlock()
	for _, pa := range pending {
		pa.cancel()
	}
}

// requestKey normalizes a JSON-RPC id (number or string) for map keys.
func requestKey(id json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, id) != nil {
		return string(id)
	}
	return b.String()
}

// askTurn is the turn an approval belongs to. Requests from a sub-agent's
// thread are charged to our running turn, which spawned it.
func (s *session) askTurn(threadID, turnID string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if threadID != s.threadID && s.turn != "" {
		return s.turn
	}
	return turnID
}

func (s *session) commandAsk(params json.RawMessage) (bridge.ApprovalAsk, error) {
	var p commandApprovalParams
	if err := json.Unmarshal(params, &p); err != nil {
		return bridge.ApprovalAsk{}, err
	}
	command, cwd := deref(p.Command), deref(p.Cwd)
	if it := s.item(p.ThreadID, p.ItemID); it != nil {
		if command == "" {
			command = it.Command
		}
		if cwd == "" {
			cwd = it.Cwd
		}
	}
	if command == "" {
		return bridge.ApprovalAsk{}, fmt.Errorf("command approval %q names no command", p.ItemID)
	}
	s.mu.Lock()
	short, long := s.where(p.ThreadID, p.TurnID, p.ItemID)
	s.mu.Unlock()
	args := map[string]any{"command": command, "cwd": cwd, "sandbox": short}
	if p.Kind != "" && p.Kind != "command" {
		args["kind"] = p.Kind
	}
	summary := command
	if len(p.NetworkApprovalContext) > 0 && !bytes.Equal(p.NetworkApprovalContext, []byte("null")) {
		var net any
		if err := json.Unmarshal(p.NetworkApprovalContext, &net); err != nil {
			return bridge.ApprovalAsk{}, err
		}
		args["network"] = net
		summary += " (network access: " + string(p.NetworkApprovalContext) + ")"
	}
	if r := deref(p.Reason); r != "" {
		summary += " — " + r
	}
	return bridge.ApprovalAsk{
		TurnID:  s.askTurn(p.ThreadID, p.TurnID),
		Call:    bridge.ToolCall{Tool: ToolExec, Args: args},
		Summary: summary,
		Sandbox: long,
		// The turn has a sandbox and this call would not be in it.
		LeavesSandbox: short == "none" && s.turnSandboxed(p.TurnID),
	}, nil
}

func (s *session) fileChangeAsk(params json.RawMessage) (bridge.ApprovalAsk, error) {
	var p fileChangeApprovalParams
	if err := json.Unmarshal(params, &p); err != nil {
		return bridge.ApprovalAsk{}, err
	}
	it := s.item(p.ThreadID, p.ItemID)
	if it == nil || it.Type != "fileChange" {
		return bridge.ApprovalAsk{}, fmt.Errorf("file change approval for item %q that codex never announced", p.ItemID)
	}
	changes := make([]any, 0, len(it.Changes))
	var diff strings.Builder
	for _, c := range it.Changes {
		m := map[string]any{"path": c.Path, "kind": c.Kind.Type, "diff": c.Diff}
		header := fmt.Sprintf("%s %s", c.Kind.Type, c.Path)
		if c.Kind.MovePath != nil {
			m["move_path"] = *c.Kind.MovePath
			header += " → " + *c.Kind.MovePath
		}
		changes = append(changes, m)
		fmt.Fprintf(&diff, "=== %s\n%s", header, c.Diff)
		if !strings.HasSuffix(c.Diff, "\n") {
			diff.WriteString("\n")
		}
	}
	s.mu.Lock()
	pol := s.turnPolicyOf(p.TurnID)
	s.mu.Unlock()
	short, long := "none", "none: codex writes the files with your full access"
	if pol.sandboxed() {
		short, long = pol.sandbox, pol.sandbox+": codex writes only what the sandbox allows"
	}
	args := map[string]any{"changes": changes}
	summary := s.fileChangeSummary(threadItem{Changes: it.Changes})
	if root := deref(p.GrantRoot); root != "" {
		args["grant_root"] = root
		summary += " (and write access under " + root + ")"
		short, long = "none", "none: this grants write access under "+root+" beyond the sandbox"
	}
	args["sandbox"] = short
	if r := deref(p.Reason); r != "" {
		summary += " — " + r
	}
	return bridge.ApprovalAsk{
		TurnID:        s.askTurn(p.ThreadID, p.TurnID),
		Call:          bridge.ToolCall{Tool: ToolApplyPatch, Args: args},
		Summary:       summary,
		Diff:          diff.String(),
		Sandbox:       long,
		LeavesSandbox: short == "none" && pol.sandboxed(),
	}, nil
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
