package stubmodel

import (
	"encoding/json"
	"strings"
)

// Conversation returns the decoded "messages" array of a Messages request
// (nil if the body is not a Messages request).
func (r MessagesRequest) Conversation() []map[string]any {
	var in struct {
		Messages []map[string]any `json:"messages"`
	}
	if json.Unmarshal(r.Body, &in) != nil {
		return nil
	}
	return in.Messages
}

// ConversationText is every string inside the request's "messages" array
// (text blocks, tool inputs and results, system notes), decoded from JSON
// and joined by newlines. Count and Contains search it, so markers match
// whatever JSON escaping the client used.
func (r MessagesRequest) ConversationText() string {
	var in struct {
		Messages any `json:"messages"`
	}
	if json.Unmarshal(r.Body, &in) != nil {
		return ""
	}
	var b strings.Builder
	walkStrings(in.Messages, func(s string) {
		b.WriteString(s)
		b.WriteByte('\n')
	})
	return b.String()
}

// Count is how many times s occurs in ConversationText.
func (r MessagesRequest) Count(s string) int { return strings.Count(r.ConversationText(), s) }

// Contains reports whether s occurs in ConversationText.
func (r MessagesRequest) Contains(s string) bool { return r.Count(s) > 0 }

// ToolResults returns the content text of every tool_result block, in order.
func (r MessagesRequest) ToolResults() []string {
	var out []string
	for _, m := range r.Conversation() {
		blocks, _ := m["content"].([]any)
		for _, b := range blocks {
			bm, _ := b.(map[string]any)
			if bm["type"] != "tool_result" {
				continue
			}
			switch c := bm["content"].(type) {
			case string:
				out = append(out, c)
			case []any:
				var sb strings.Builder
				for _, e := range c {
					if em, _ := e.(map[string]any); em["type"] == "text" {
						t, _ := em["text"].(string)
						sb.WriteString(t)
					}
				}
				out = append(out, sb.String())
			default:
				out = append(out, "")
			}
		}
	}
	return out
}

func walkStrings(v any, f func(string)) {
	switch x := v.(type) {
	case string:
		f(x)
	case []any:
		for _, e := range x {
			walkStrings(e, f)
		}
	case map[string]any:
		for _, e := range x {
			walkStrings(e, f)
		}
	}
}
