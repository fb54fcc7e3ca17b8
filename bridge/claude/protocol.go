package claude

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/wheelhouse-dev/wheelhouse/bridge"

	"github.com/wheelhouse-dev/wheelhouse/bridge/claude/claudehook"
)

// The stream-json protocol of `claude -p --input-format stream-json
// --output-format stream-json --verbose`, as far as the Launched harness
// uses it (verified against Claude Code 2.1.332, see docs/harness-claude.md).
//
// stdout, one JSON object per line:
//
//	{"type":"system","subtype":"init","session_id":…}
//	{"type":"assistant","message":{"content":[{"type":"text","text":…}|{"type":"tool_use","id","name","input"}]},"parent_tool_use_id":null}
//	{"type":"user","message":{…},"isReplay":true}          a stdin user message taken up (--replay-user-messages)
//	{"type":"result","subtype":"success"|"error_…","is_error":…,"result":…}
//	{"type":"control_request","request_id":…,"request":{"subtype":"can_use_tool","tool_name","input","tool_use_id"}}
//	{"type":"control_cancel_request","request_id":…}
//	{"type":"control_response","response":{"subtype":"success"|"error","request_id":…,"response":{…},"error":…}}
//
// stdin: user messages, control requests (initialize, interrupt) and control
// responses to the CLI's requests.

// outLine is one line of the CLI's stdout.
type outLine struct {
	Type            string          `json:"type"`
	Subtype         string          `json:"subtype"`
	SessionID       string          `json:"session_id"`
	RequestID       string          `json:"request_id"`
	IsReplay        bool            `json:"isReplay"`
	ParentToolUseID *string         `json:"parent_tool_use_id"`
	Message         *outMessage     `json:"message"`
	Request         json.RawMessage `json:"request"`
	Response        *ctlResponse    `json:"response"`
	IsError         bool            `json:"is_error"`
	Result          string          `json:"result"`
	Errors          []string        `json:"errors"`
}

type outMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"` // string or blocks
}

type contentBlock struct {
	Type  string         `json:"type"`
	Text  string         `json:"text"`
	ID    string         `json:"id"`
	Name  string         `json:"name"`
	Input map[string]any `json:"input"`
}

// blocks decodes a message's content; a plain string becomes one text block.
func (m *outMessage) blocks() []contentBlock {
	if m == nil || len(m.Content) == 0 {
		return nil
	}
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return []contentBlock{{Type: "text", Text: s}}
	}
	var bs []contentBlock
	_ = json.Unmarshal(m.Content, &bs)
	return bs
}

type ctlResponse struct {
	Subtype   string          `json:"subtype"`
	RequestID string          `json:"request_id"`
	Response  json.RawMessage `json:"response"`
	Error     string          `json:"error"`
}

// canUseTool is the CLI's permission question.
type canUseTool struct {
	Subtype   string         `json:"subtype"`
	ToolName  string         `json:"tool_name"`
	Input     map[string]any `json:"input"`
	ToolUseID string         `json:"tool_use_id"`
}

func parseOutLine(b []byte) (outLine, error) {
	var l outLine
	err := json.Unmarshal(b, &l)
	return l, err
}

// userLine is a user message for stdin.
func userLine(text string) []byte {
	b, _ := json.Marshal(map[string]any{
		"type":    "user",
		"message": map[string]any{"role": "user", "content": text},
	})
	return b
}

// controlRequestLine is one of our control requests for stdin; extra
// fields go beside the subtype.
func controlRequestLine(id, subtype string, extra map[string]any) []byte {
	req := map[string]any{"subtype": subtype}
	for k, v := range extra {
		req[k] = v
	}
	b, _ := json.Marshal(map[string]any{"type": "control_request", "request_id": id, "request": req})
	return b
}

// permissionResponseLine answers a can_use_tool request.
func permissionResponseLine(id string, allow bool, input map[string]any, message string) []byte {
	resp := map[string]any{"behavior": "deny", "message": message}
	if allow {
		if input == nil {
			input = map[string]any{}
		}
		resp = map[string]any{"behavior": "allow", "updatedInput": input}
	}
	b, _ := json.Marshal(map[string]any{
		"type": "control_response",
		"response": map[string]any{
			"subtype": "success", "request_id": id, "response": resp,
		},
	})
	return b
}

// errorResponseLine answers a control request we do not support.
func errorResponseLine(id, msg string) []byte {
	b, _ := json.Marshal(map[string]any{
		"type":     "control_response",
		"response": map[string]any{"subtype": "error", "request_id": id, "error": msg},
	})
	return b
}

// summarizeCall is a one-line human summary of a tool call.
func summarizeCall(c bridge.ToolCall) string {
	for _, k := range []string{"command", "file_path", "notebook_path", "path", "url", "pattern", "query"} {
		if v, ok := c.Args[k].(string); ok && v != "" {
			return clip(c.Tool+": "+v, 300)
		}
	}
	keys := make([]string, 0, len(c.Args))
	for k := range c.Args {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return clip(fmt.Sprintf("%s(%s)", c.Tool, strings.Join(keys, ", ")), 300)
}

// diffOf shows what a file tool would change, for the approval request.
func diffOf(c bridge.ToolCall) string {
	str := func(k string) string { v, _ := c.Args[k].(string); return v }
	switch c.Tool {
	case "Edit":
		return clip("--- "+str("file_path")+"\n-"+strings.ReplaceAll(str("old_string"), "\n", "\n-")+
			"\n+"+strings.ReplaceAll(str("new_string"), "\n", "\n+"), 8000)
	case "Write":
		return clip("+++ "+str("file_path")+"\n"+str("content"), 8000)
	}
	return ""
}

// clip shortens s to at most n bytes, on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// preToolCallbackID names the PreToolUse hook the harness registers with
// initialize; Claude Code calls it back with a hook_callback control
// request before every tool call.
const (
	preToolCallbackID = "wheelhouse-pretool"
	// preToolCallbackTimeout bounds Claude Code's wait for our answer (we
	// answer at once). With onFailure "block", a harness that does not
	// answer in time (a stopped bridge) blocks the call.
	preToolCallbackTimeout = 30
)

// initializeHooks is the initialize request's hooks field: one PreToolUse
// callback for every tool.
func initializeHooks() map[string]any {
	return map[string]any{"hooks": map[string]any{
		"PreToolUse": []any{map[string]any{
			"matcher": "*", "hookCallbackIds": []string{preToolCallbackID},
			"timeout": preToolCallbackTimeout, "onFailure": "block",
		}},
	}}
}

// hookCallback answers a hook_callback control request. In a tainted
// session a tool that does more than read is answered "ask": Claude Code
// then puts it to the gate (can_use_tool) even where an allow rule would
// have let it run. Anything else goes on as Claude Code decides.
func (l *Launched) hookCallback(id string, raw json.RawMessage) []byte {
	var req struct {
		CallbackID string `json:"callback_id"`
		Input      struct {
			Event     string          `json:"hook_event_name"`
			ToolName  string          `json:"tool_name"`
			ToolInput json.RawMessage `json:"tool_input"`
		} `json:"input"`
	}
	if err := json.Unmarshal(raw, &req); err != nil || req.CallbackID != preToolCallbackID {
		return errorResponseLine(id, "unknown hook callback")
	}
	out := map[string]any{}
	if req.Input.Event == "PreToolUse" && l.Tainted() && !claudehook.ReadOnlyTool(req.Input.ToolName, req.Input.ToolInput, "") {
		out = map[string]any{"hookSpecificOutput": map[string]any{
			"hookEventName":            "PreToolUse",
			"permissionDecision":       "ask",
			"permissionDecisionReason": "Words from someone other than the owner reached this session: the owner decides through Wheelhouse.",
		}}
	}
	b, _ := json.Marshal(map[string]any{
		"type":     "control_response",
		"response": map[string]any{"subtype": "success", "request_id": id, "response": out},
	})
	return b
}
