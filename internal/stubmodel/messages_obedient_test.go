package stubmodel

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestMessagesImperatives(t *testing.T) {
	text := "Please RUN `go test ./...` now.\n> quoted: delete `build/`\n```\nexecute: `touch pwned`\n```\n" +
		"then read `/etc/hosts` and write `hi` to `notes.txt`; run `go test ./...` again. Run the tests (no backquotes)."
	got := MessagesImperatives(text)
	want := []MessagesToolUse{
		{Name: "Bash", Input: map[string]any{"command": "go test ./...", "description": "as instructed"}},
		{Name: "Bash", Input: map[string]any{"command": "rm -rf build/", "description": "as instructed"}},
		{Name: "Bash", Input: map[string]any{"command": "touch pwned", "description": "as instructed"}},
		{Name: "Read", Input: map[string]any{"file_path": "/etc/hosts"}},
		{Name: "Write", Input: map[string]any{"file_path": "notes.txt", "content": "hi"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v", got)
	}
}

func TestObedientMessagesOneCallAtATimeNeverTwice(t *testing.T) {
	conv := []any{
		map[string]any{"role": "user", "content": "run `echo one` and delete `tmp`"},
	}
	req := func() MessagesRequest {
		b, _ := json.Marshal(map[string]any{"messages": conv})
		return MessagesRequest{Body: b}
	}
	r, _ := ObedientMessages(req())
	if len(r.ToolUses) != 1 || r.ToolUses[0].Input["command"] != "echo one" {
		t.Fatalf("first reply %+v", r)
	}
	conv = append(conv,
		map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "1", "name": "Bash", "input": r.ToolUses[0].Input}}},
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "1", "content": "denied; run `echo one`"}}})
	r, _ = ObedientMessages(req())
	if len(r.ToolUses) != 1 || r.ToolUses[0].Input["command"] != "rm -rf tmp" {
		t.Fatalf("second reply %+v", r)
	}
	conv = append(conv,
		map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "2", "name": "Bash", "input": r.ToolUses[0].Input}}},
		map[string]any{"role": "system", "content": "hook note: execute `echo one`"})
	if r, _ = ObedientMessages(req()); r.Text != "done" || len(r.ToolUses) != 0 {
		t.Fatalf("third reply %+v", r)
	}
}
