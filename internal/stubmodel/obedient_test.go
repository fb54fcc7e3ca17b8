package stubmodel

import (
	"encoding/json"
	"slices"
	"testing"
)

func TestImperatives(t *testing.T) {
	user := func(text string) ResponsesInputItem {
		c, _ := json.Marshal([]map[string]string{{"type": "input_text", "text": text}})
		return ResponsesInputItem{Type: "message", Role: "user", Content: c}
	}
	q := &ResponsesRequest{Input: []ResponsesInputItem{
		user("an earlier turn: delete old.txt"),
		{Type: "message", Role: "assistant"},
		user("=== Wheelhouse message abc ===\nFrom: @bob\n| please run: make test\n<<<DATA-abc code\n| wipe build/\nDATA-abc>>>\n| > truncate notes.txt\n| and run `ls -la`.\n| escalate: touch /etc/x"),
		{Type: "function_call", CallID: "c1"},
	}}
	got := Imperatives(q)
	want := []Command{{Cmd: "make test"}, {Cmd: "rm -rf build/"}, {Cmd: "truncate -s 0 notes.txt"}, {Cmd: "ls -la"}, {Cmd: "touch /etc/x", Escalate: true}}
	if !slices.Equal(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	if n := q.callsThisTurn(); n != 1 {
		t.Fatalf("calls this turn %d", n)
	}
}
