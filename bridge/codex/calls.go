package codex

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/wheelhouse-dev/wheelhouse/bridge"
)

// Codex turns a model's exec_command call into a commandExecution item only
// when it gets as far as running it, and an approved command the sandbox
// then blocks may never complete. Commands codex refuses (its rules, the
// never policy) have no item at all; only the model sees why, in the
// function_call_output. The adapter therefore follows the raw items too:
// it learns from the function_call where the model asked the command to run
// (inside the sandbox or outside it), and it reports every call that ends
// without a completed item as a tool event with its outcome.

// callInfo is one exec_command call of the model.
type callInfo struct {
	turnID   string
	cmd      string
	known    bool   // the model's function_call arrived
	escalate bool   // the model asked to run it outside the sandbox
	why      string // its justification
	started  bool   // codex made an item of it
	done     bool   // the item completed (its tool event was sent)
}

// execTools are the function names whose calls run commands.
var execTools = map[string]bool{"exec_command": true, "shell": true, "local_shell": true, "shell_command": true}

// rawItem handles a noteRawItem.
func (s *session) rawItem(n rawItemNote) []bridge.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := itemKey(n.ThreadID, n.Item.CallID)
	switch n.Item.Type {
	case "function_call":
		if !execTools[n.Item.Name] || n.Item.CallID == "" {
			return nil
		}
		var a execArgs
		_ = json.Unmarshal([]byte(n.Item.Arguments), &a) // an unreadable call asks like an escalated one (see where)
		c := s.call(key)
		c.turnID, c.cmd, c.why, c.known = n.TurnID, a.Cmd, a.Justification, true
		c.escalate = a.Cmd == "" || (a.SandboxPermissions != "" && a.SandboxPermissions != "use_default")
	case "function_call_output":
		c := s.calls[key]
		if c == nil {
			return nil
		}
		delete(s.calls, key)
		if c.done || !c.known || n.ThreadID != s.threadID {
			return nil
		}
		out := outputText(n.Item.Output)
		cmd := c.cmd
		if it := s.items[key]; it != nil {
			cmd = it.item.Command
			delete(s.items, key)
		}
		what := "refused: " + refusal(out)
		if c.started {
			what = "did not complete: " + refusal(out)
		}
		return []bridge.Event{{Kind: bridge.EventTool, TurnID: n.TurnID, Text: fmt.Sprintf("$ %s → %s", cmd, what)}}
	}
	return nil
}

// call returns the call for key, making it if codex told of its item
// before the model's function call (the order is not fixed). Callers hold
// s.mu.
func (s *session) call(key string) *callInfo {
	if s.calls == nil {
		s.calls = map[string]*callInfo{}
	}
	c := s.calls[key]
	if c == nil {
		c = &callInfo{}
		if len(s.calls) < maxItems {
			s.calls[key] = c
		}
	}
	return c
}

// callStarted notes that codex made an item of a call. Callers hold s.mu.
func (s *session) callStarted(threadID, turnID, itemID string) {
	c := s.call(itemKey(threadID, itemID))
	c.started = true
	if c.turnID == "" {
		c.turnID = turnID
	}
}

// callDone notes that a call's item completed. Callers hold s.mu.
func (s *session) callDone(threadID, turnID, itemID string) {
	c := s.call(itemKey(threadID, itemID))
	c.done = true
	if c.turnID == "" {
		c.turnID = turnID
	}
}

// forgetCalls drops the calls of a finished turn. Callers hold s.mu.
func (s *session) forgetCalls(turn string) {
	for k, c := range s.calls {
		if c.turnID == turn {
			delete(s.calls, k)
		}
	}
	if len(s.asked) > maxItems {
		s.asked = map[string]int{} // approvals of finished turns; a long session sheds them
	}
}

func outputText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var obj struct {
		Content string `json:"content"`
	}
	if json.Unmarshal(raw, &obj) == nil && obj.Content != "" {
		return obj.Content
	}
	return string(raw)
}

var rejectedRE = regexp.MustCompile("rejected: ([^\"\\\\]+)")

// refusal is the reason in a refused call's output, or its first line.
func refusal(out string) string {
	if m := rejectedRE.FindStringSubmatch(out); m != nil {
		return strings.TrimSpace(m[1])
	}
	out = strings.TrimSpace(out)
	if i := strings.LastIndex(out, "Output:\n"); i >= 0 && strings.TrimSpace(out[i+8:]) != "" {
		out = strings.TrimSpace(out[i+8:]) // a command's output: its last line is usually why it failed
		out = out[strings.LastIndex(out, "\n")+1:]
	}
	line, _, _ := strings.Cut(out, "\n")
	return clip(line, toolOutputMax)
}

// where is the sandbox an approval request of item runs in, as the card
// states it (long) and as the approved payload binds it (short). The first
// request for an item runs in the turn's sandbox unless the model asked to
// leave it; a second request for the same item is codex asking to run it
// again outside the sandbox. Callers hold s.mu.
func (s *session) where(threadID, turnID, itemID string) (short, long string) {
	key := itemKey(threadID, itemID)
	p := s.turnPolicyOf(turnID)
	if s.asked == nil {
		s.asked = map[string]int{}
	}
	n := s.asked[key]
	s.asked[key] = n + 1
	c := s.calls[key]
	switch {
	case !p.sandboxed():
		return "none", "none: it runs with your full access (approval_policy " + p.approval + ", no sandbox)"
	case n > 0:
		return "none", "none: codex asks to run it again outside the " + p.sandbox + " sandbox"
	case c == nil || !c.known:
		return "none", "none: codex did not say whether it stays in the " + p.sandbox + " sandbox, so count on full access"
	case c.escalate:
		long = "none: the agent asks to run it outside the " + p.sandbox + " sandbox"
		if c.why != "" {
			long += " (" + clip(c.why, 200) + ")"
		}
		return "none", long
	}
	return p.sandbox, p.sandbox + ": codex runs it inside the sandbox and will not leave it without asking again"
}
