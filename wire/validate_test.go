package wire

import (
	"strings"
	"testing"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/authz"
)

// The fields the gate rule added: the sandbox and data kinds of an approval
// request, and the timeline head the hub names with a steer or decision.
func TestValidateGateFields(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	hash, payload, _ := authz.PayloadHash("exec_command", map[string]any{"command": "ls", "sandbox": "none"})
	req := func(f func(*ApprovalRequest)) *ApprovalRequest {
		r := &ApprovalRequest{ID: "a0123456789abcdef", Agent: "codex", TurnID: "t1", Tool: "exec_command", Summary: "ls",
			PayloadHash: hash, Payload: string(payload), Expires: now.Add(time.Minute), Sandbox: "none: full access", Data: []string{"code", "quote"}}
		if f != nil {
			f(r)
		}
		return r
	}
	head := &ChainHead{Seq: 7, Hash: strings.Repeat("a", 64)}
	steer := func(h *ChainHead) *Steer {
		return &Steer{ID: "s1", Agent: "codex", Owner: "alice", Sender: "bob", Deadline: now, TimelineHead: h}
	}
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"ApprovalOK", req(nil).Validate(now), ""},
		{"ErrSandboxTooLong", req(func(r *ApprovalRequest) { r.Sandbox = strings.Repeat("x", MaxDetail+1) }).Validate(now), "sandbox"},
		{"ErrDataKind", req(func(r *ApprovalRequest) { r.Data = []string{"<script>"} }).Validate(now), "data kind"},
		{"ErrTooManyKinds", req(func(r *ApprovalRequest) { r.Data = make([]string, 9) }).Validate(now), "more than 8"},
		{"SteerHeadOK", steer(head).Validate(), ""},
		{"SteerNoHeadOK", steer(nil).Validate(), ""},
		{"ErrSteerHeadHash", steer(&ChainHead{Seq: 7, Hash: "zz"}).Validate(), "timeline head"},
		{"ErrDecisionHeadSeq", (&Decision{ApprovalID: "a0123456789abcdef", Decision: "deny", TimelineHead: &ChainHead{Hash: head.Hash}}).Validate(), "timeline head"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if (c.want == "") != (c.err == nil) || (c.err != nil && !strings.Contains(c.err.Error(), c.want)) {
				t.Fatalf("err %v, want %q", c.err, c.want)
			}
		})
	}
}
