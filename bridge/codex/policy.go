package codex

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// policy is the pair of thread settings that decides what codex runs
// without asking: the approval policy and the sandbox mode.
type policy struct {
	approval string // untrusted | on-request | never | granular
	sandbox  string // read-only | workspace-write | danger-full-access | external
}

// strictPolicy is what a turn runs under when words that are not the
// owner's own reach it: codex asks before every command (untrusted, which
// in 0.171 asks for reads too) and runs an approved one without a sandbox.
// Without: under untrusted, codex re-runs an approved command outside its
// sandbox whenever the sandbox blocks it, with no second request, so a
// sandbox there would only pretend to limit what the owner approved.
var strictPolicy = policy{approval: "untrusted", sandbox: "danger-full-access"}

// readOnlyPolicy is what a turn from a room the owner made read-only for
// the agent runs under: codex's read-only sandbox, so commands may read but
// nothing can write, and whatever asks to leave the sandbox reaches the
// gate — which denies it without asking the owner.
var readOnlyPolicy = policy{approval: "on-request", sandbox: "read-only"}

func (p policy) String() string { return p.approval + "/" + p.sandbox }

// asksFirst: codex asks before every command and file change.
func (p policy) asksFirst() bool { return p.approval == "untrusted" }

// sandboxed: commands run inside codex's sandbox (a restricting one).
func (p policy) sandboxed() bool { return p.sandbox == "read-only" || p.sandbox == "workspace-write" }

// sandboxObject is turn/start's and thread/settings/update's spelling of a
// sandbox mode (with no extra writable roots and no network).
func sandboxObject(mode string) map[string]any {
	switch mode {
	case "read-only":
		return map[string]any{"type": "readOnly", "networkAccess": false}
	case "workspace-write":
		return map[string]any{"type": "workspaceWrite", "writableRoots": []any{}, "networkAccess": false,
			"excludeTmpdirEnvVar": false, "excludeSlashTmp": false}
	default:
		return map[string]any{"type": "dangerFullAccess"}
	}
}

// parsePolicy reads the settings codex reports (thread/start, thread/resume,
// thread/settings/updated): approvalPolicy is a string or {"granular":…},
// sandbox a tagged object.
func parsePolicy(approval, sandbox json.RawMessage) (policy, error) {
	var p policy
	if err := json.Unmarshal(approval, &p.approval); err != nil {
		var obj map[string]json.RawMessage
		if json.Unmarshal(approval, &obj) != nil || len(obj) != 1 {
			return p, fmt.Errorf("codex reported an approval policy we cannot read: %s", clip(string(approval), 100))
		}
		for k := range obj {
			p.approval = k
		}
	}
	var sb struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(sandbox, &sb); err != nil || sb.Type == "" {
		return p, fmt.Errorf("codex reported a sandbox we cannot read: %s", clip(string(sandbox), 100))
	}
	switch sb.Type {
	case "readOnly":
		p.sandbox = "read-only"
	case "workspaceWrite":
		p.sandbox = "workspace-write"
	case "dangerFullAccess":
		p.sandbox = "danger-full-access"
	default:
		p.sandbox = strings.ToLower(sb.Type)
	}
	return p, nil
}

// ownerTurns says what codex does unasked under p, for the owner; "" when
// it asks before every command.
func (p policy) ownerTurns() string {
	switch {
	case p.asksFirst():
		return ""
	case p.approval == "on-request" && p.sandboxed():
		return "run commands inside the " + p.sandbox + " sandbox without asking (approval_policy = on-request)"
	case p.approval == "on-request":
		return "run commands without asking (approval_policy = on-request, sandbox = " + p.sandbox + ")"
	default:
		return "run commands without asking (approval_policy = " + p.approval + ")"
	}
}

// settingsConfirmTimeout bounds the wait for codex to confirm new settings.
const settingsConfirmTimeout = 5 * time.Second

// ensurePolicy makes the thread's settings want, unless codex last
// reported exactly that: thread/settings/update, then codex's own
// thread/settings/updated as confirmation. Codex ignores fields it does not
// know, so a change it never confirms counts as not made.
func (s *session) ensurePolicy(ctx context.Context, want policy) error {
	s.mu.Lock()
	cur, thread := s.policy, s.threadID
	var sb any = sandboxObject(want.sandbox)
	if want == s.h.cfg.owner() && s.ownerSandbox != nil {
		sb = s.ownerSandbox // the owner's sandbox exactly as codex built it from their config
	}
	s.mu.Unlock()
	if cur == want {
		return nil
	}
	err := s.conn.call(ctx, methodSettingsUpdate, settingsUpdateParams{ThreadID: thread, ApprovalPolicy: want.approval, SandboxPolicy: sb}, nil)
	if err != nil {
		return s.callErr(methodSettingsUpdate, err)
	}
	t := time.NewTimer(settingsConfirmTimeout)
	defer t.Stop()
	for {
		s.mu.Lock()
		cur, changed := s.policy, s.settingsChanged
		s.mu.Unlock()
		if cur == want {
			s.log.Info("codex: thread settings confirmed", "policy", want.String())
			return nil
		}
		select {
		case <-changed:
		case <-t.C:
			return fmt.Errorf("codex did not confirm the policy %s for the thread (it reports %s); no turn was started", want, cur)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// settingsUpdated records codex's report of new thread settings.
func (s *session) settingsUpdated(n settingsNote) {
	p, err := parsePolicy(n.ThreadSettings.ApprovalPolicy, n.ThreadSettings.SandboxPolicy)
	s.mu.Lock()
	defer s.mu.Unlock()
	if n.ThreadID != s.threadID {
		return
	}
	if err != nil {
		s.log.Warn("codex: unreadable thread settings", "err", err)
		p = policy{} // matches nothing: the next turn sets its policy again
	}
	s.policy = p
	if s.settingsChanged != nil {
		close(s.settingsChanged)
	}
	s.settingsChanged = make(chan struct{})
}

// noteTurnPolicy remembers the policy turn started under. Callers hold s.mu.
func (s *session) noteTurnPolicy(turn string, p policy) {
	if s.turnPolicy == nil {
		s.turnPolicy = map[string]policy{}
	}
	if len(s.turnPolicy) >= 64 {
		for k := range s.turnPolicy {
			if k != s.turn {
				delete(s.turnPolicy, k)
			}
		}
	}
	s.turnPolicy[turn] = p
}

// turnPolicyOf is the policy turn started under, else the thread's current
// one. Callers hold s.mu.
func (s *session) turnPolicyOf(turn string) policy {
	if p, ok := s.turnPolicy[turn]; ok {
		return p
	}
	return s.policy
}

// turnStrict: turn started under a policy that asks before every command.
func (s *session) turnStrict(turn string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.turnPolicy[turn]
	// A read-only turn has no side effect that does not reach the gate:
	// the sandbox blocks writes, and leaving it asks.
	return ok && (p.asksFirst() || p == readOnlyPolicy)
}

// turnSandboxed: turn runs inside a restricting sandbox.
func (s *session) turnSandboxed(turn string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.turnPolicyOf(turn).sandboxed()
}
