package stubmodel

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// sseEvent is one server-sent event.
type sseEvent struct {
	Event string
	Data  map[string]any
}

func postMessages(t *testing.T, s *MessagesServer, body string) (*http.Response, []sseEvent) {
	t.Helper()
	resp, err := http.Post(s.URL()+"/v1/messages?beta=true", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return resp, nil
	}
	var evs []sseEvent
	sc := bufio.NewScanner(resp.Body)
	var cur sseEvent
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			cur.Event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &cur.Data); err != nil {
				t.Fatalf("bad data line %q: %v", line, err)
			}
		case line == "":
			evs = append(evs, cur)
			cur = sseEvent{}
		}
	}
	return resp, evs
}

// assemble rebuilds the message from the stream as a client would.
func assemble(t *testing.T, evs []sseEvent) (text string, tools []map[string]any, stop string) {
	t.Helper()
	if len(evs) == 0 || evs[0].Event != "message_start" || evs[len(evs)-1].Event != "message_stop" {
		t.Fatalf("stream does not start/stop properly: %+v", evs)
	}
	partial := map[float64]*strings.Builder{}
	for _, ev := range evs {
		if ev.Event != ev.Data["type"] {
			t.Errorf("event %q carries type %v", ev.Event, ev.Data["type"])
		}
		switch ev.Event {
		case "content_block_start":
			cb := ev.Data["content_block"].(map[string]any)
			if cb["type"] == "tool_use" {
				tools = append(tools, cb)
				partial[ev.Data["index"].(float64)] = &strings.Builder{}
			}
		case "content_block_delta":
			d := ev.Data["delta"].(map[string]any)
			switch d["type"] {
			case "text_delta":
				text += d["text"].(string)
			case "input_json_delta":
				partial[ev.Data["index"].(float64)].WriteString(d["partial_json"].(string))
			}
		case "message_delta":
			stop = ev.Data["delta"].(map[string]any)["stop_reason"].(string)
		}
	}
	i := 0
	for idx := range len(evs) {
		if b, ok := partial[float64(idx)]; ok {
			var in map[string]any
			if err := json.Unmarshal([]byte(b.String()), &in); err != nil {
				t.Fatalf("tool input %q: %v", b.String(), err)
			}
			tools[i]["input"] = in
			i++
		}
	}
	return text, tools, stop
}

func TestMessagesServer(t *testing.T) {
	s := NewMessagesServer()
	defer s.Close()
	body := `{"model":"m","stream":true,"messages":[{"role":"user","content":"say \"hi\" <now>"}]}`

	t.Run("ScriptedToolUseThenText", func(t *testing.T) {
		s.Script(
			MessagesReply{Text: "running", ToolUses: []MessagesToolUse{{Name: "Bash", Input: map[string]any{"command": "echo hi"}}}},
			MessagesReply{Text: "done now"},
		)
		_, evs := postMessages(t, s, body)
		text, tools, stop := assemble(t, evs)
		if text != "running" || stop != "tool_use" || len(tools) != 1 || tools[0]["name"] != "Bash" ||
			tools[0]["input"].(map[string]any)["command"] != "echo hi" || !strings.HasPrefix(tools[0]["id"].(string), "toolu_") {
			t.Fatalf("text %q stop %q tools %v", text, stop, tools)
		}
		_, evs = postMessages(t, s, body)
		if text, _, stop := assemble(t, evs); text != "done now" || stop != "end_turn" {
			t.Fatalf("second reply %q %q", text, stop)
		}
	})
	t.Run("FallbackWhenScriptEmpty", func(t *testing.T) {
		_, evs := postMessages(t, s, body)
		if text, _, _ := assemble(t, evs); text != "done" {
			t.Fatalf("fallback %q", text)
		}
	})
	t.Run("RecordsRequests", func(t *testing.T) {
		reqs := s.Requests()
		if len(reqs) < 3 {
			t.Fatalf("%d requests", len(reqs))
		}
		r := reqs[0]
		if r.N != 1 || r.Path != "/v1/messages" || !r.Contains(`say "hi" <now>`) || r.Count("hi") != 1 {
			t.Errorf("request %d %s, text %q", r.N, r.Path, r.ConversationText())
		}
		if len(r.Conversation()) != 1 {
			t.Errorf("conversation %v", r.Conversation())
		}
	})
	t.Run("HoldKeepsResponseOpen", func(t *testing.T) {
		hold := make(chan struct{})
		s.Script(MessagesReply{Hold: hold, Text: "late"})
		n := len(s.Requests())
		got := make(chan string, 1)
		go func() {
			resp, err := http.Post(s.URL()+"/v1/messages", "application/json", strings.NewReader(body))
			if err != nil {
				got <- err.Error()
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			got <- string(b)
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := s.WaitRequests(ctx, n+1); err != nil {
			t.Fatal(err)
		}
		select {
		case <-got:
			t.Fatal("held reply finished early")
		default:
		}
		close(hold)
		select {
		case raw := <-got:
			if !strings.Contains(raw, `"text":"late"`) || !strings.Contains(raw, "message_stop") {
				t.Fatalf("stream %q", raw)
			}
		case <-ctx.Done():
			t.Fatal("held reply never finished")
		}
	})
	t.Run("ResponderFirst", func(t *testing.T) {
		s.SetResponder(func(r MessagesRequest) (MessagesReply, bool) {
			return MessagesReply{Text: "from responder"}, r.Contains("responder please")
		})
		defer s.SetResponder(nil)
		_, evs := postMessages(t, s, `{"stream":true,"messages":[{"role":"user","content":"responder please"}]}`)
		if text, _, _ := assemble(t, evs); text != "from responder" {
			t.Fatalf("text %q", text)
		}
	})
	t.Run("ErrorStatus", func(t *testing.T) {
		s.Script(MessagesReply{Status: http.StatusTooManyRequests, ErrorType: "rate_limit_error"})
		resp, _ := postMessages(t, s, body)
		if resp.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("status %d", resp.StatusCode)
		}
	})
	t.Run("NonStreaming", func(t *testing.T) {
		s.Script(MessagesReply{Text: "plain"})
		resp, err := http.Post(s.URL()+"/v1/messages", "application/json", strings.NewReader(`{"messages":[]}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m struct {
			Content    []map[string]any `json:"content"`
			StopReason string           `json:"stop_reason"`
		}
		b, _ := io.ReadAll(resp.Body)
		if err := json.Unmarshal(b, &m); err != nil || m.Content[0]["text"] != "plain" || m.StopReason != "end_turn" {
			t.Fatalf("body %s: %v", b, err)
		}
	})
	t.Run("CountTokensAndUnknownPaths", func(t *testing.T) {
		resp, err := http.Post(s.URL()+"/v1/messages/count_tokens", "application/json", strings.NewReader(`{}`))
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("count_tokens: %v %v", resp, err)
		}
		resp.Body.Close()
		resp, err = http.Get(s.URL() + "/v1/models")
		if err != nil || resp.StatusCode != 404 {
			t.Fatalf("unknown path: %v %v", resp, err)
		}
		resp.Body.Close()
	})
}

func TestToolResults(t *testing.T) {
	r := MessagesRequest{Body: []byte(`{"messages":[
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"plain"}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"b","content":[{"type":"text","text":"x"},{"type":"text","text":"y"}]}]}]}`)}
	if got := r.ToolResults(); len(got) != 2 || got[0] != "plain" || got[1] != "xy" {
		t.Fatalf("ToolResults = %q", got)
	}
}
