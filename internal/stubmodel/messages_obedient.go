package stubmodel

import (
	"encoding/json"
	"regexp"
	"strings"
)

// The Messages API's obedient model (Obedient's counterpart for Claude
// Code) does whatever its input tells it to. Every imperative it can find
// anywhere in the conversation — the user's words, hook notes,
// tool results, text inside code fences or quotes, forged or not — becomes
// the matching tool call. It is the test of a design that assumes the
// model obeys every instruction it can read.
//
// Imperatives are a verb and a backquoted argument:
//
//	run `CMD`, execute `CMD`    → Bash {"command": CMD}
//	delete `PATH`, remove `PATH` → Bash {"command": "rm -rf PATH"}
//	read `PATH`                 → Read {"file_path": PATH}
//	write `TEXT` to `PATH`      → Write {"file_path": PATH, "content": TEXT}
//
// It makes one call per reply, in the order the imperatives appear, and
// none twice in a conversation (a call already in the conversation counts
// as done, whatever its result). With nothing left to do it answers
// "done". Unlike Obedient's line grammar, delete means rm -rf here, so an
// obedient "delete `build`" really removes a folder.
var messagesImperative = regexp.MustCompile("(?i)\\b(run|execute|delete|remove|read|write)\\s*:?\\s*`([^`\\n]+)`(?:\\s+(?:to|into)\\s+`([^`\\n]+)`)?")

// MessagesImperatives are the tool calls an obedient model makes for text, in
// order, duplicates removed.
func MessagesImperatives(text string) []MessagesToolUse {
	var out []MessagesToolUse
	seen := map[string]bool{}
	for _, m := range messagesImperative.FindAllStringSubmatch(text, -1) {
		verb, arg, dst := strings.ToLower(m[1]), strings.TrimSpace(m[2]), strings.TrimSpace(m[3])
		var tu MessagesToolUse
		switch verb {
		case "run", "execute":
			tu = MessagesToolUse{Name: "Bash", Input: map[string]any{"command": arg, "description": "as instructed"}}
		case "delete", "remove":
			tu = MessagesToolUse{Name: "Bash", Input: map[string]any{"command": "rm -rf " + arg, "description": "as instructed"}}
		case "read":
			tu = MessagesToolUse{Name: "Read", Input: map[string]any{"file_path": arg}}
		case "write":
			if dst == "" {
				continue
			}
			tu = MessagesToolUse{Name: "Write", Input: map[string]any{"file_path": dst, "content": arg}}
		}
		k := callKey(tu.Name, tu.Input)
		if !seen[k] {
			seen[k] = true
			out = append(out, tu)
		}
	}
	return out
}

// ObedientMessages is a responder for MessagesServer.SetResponder that
// makes the stub obedient (see MessagesImperatives).
func ObedientMessages(req MessagesRequest) (MessagesReply, bool) {
	var text strings.Builder
	done := map[string]bool{}
	for _, m := range req.Conversation() {
		if m["role"] == "assistant" {
			blocks, _ := m["content"].([]any)
			for _, b := range blocks {
				bm, _ := b.(map[string]any)
				if bm["type"] == "tool_use" {
					in, _ := bm["input"].(map[string]any)
					name, _ := bm["name"].(string)
					done[callKey(name, in)] = true
				}
			}
			continue
		}
		walkStrings(m["content"], func(s string) {
			text.WriteString(s)
			text.WriteByte('\n')
		})
	}
	for _, tu := range MessagesImperatives(text.String()) {
		if !done[callKey(tu.Name, tu.Input)] {
			return MessagesReply{ToolUses: []MessagesToolUse{tu}}, true
		}
	}
	return MessagesReply{Text: "done"}, true
}

// callKey identifies a call by tool and its main argument.
func callKey(tool string, in map[string]any) string {
	for _, k := range []string{"command", "file_path"} {
		if v, ok := in[k].(string); ok {
			return tool + "\x00" + v
		}
	}
	b, _ := json.Marshal(in)
	return tool + "\x00" + string(b)
}
