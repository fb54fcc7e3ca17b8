package stubmodel

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func postChat(t *testing.T, s *ChatServer, body string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Post(s.URL()+"/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

// dataLines returns the payloads of the stream's "data:" lines.
func dataLines(t *testing.T, stream string) []string {
	t.Helper()
	var out []string
	for _, ev := range strings.Split(strings.TrimSuffix(stream, "\n\n"), "\n\n") {
		p, ok := strings.CutPrefix(ev, "data: ")
		if !ok {
			t.Fatalf("event %q is not one data line", ev)
		}
		out = append(out, p)
	}
	return out
}

func TestChatStream(t *testing.T) {
	s := NewChat(t, ChatReply{Text: "Hi there", ToolCalls: []ChatToolCall{{Name: "read_file", Arguments: `{"path":"a.txt"}`}}})
	resp, body := postChat(t, s, `{"model":"m","stream":true,"stream_options":{"include_usage":true},
		"messages":[{"role":"system","content":"sys"},{"role":"user","content":[{"type":"text","text":"hello"}]}],
		"tools":[{"type":"function","function":{"name":"read_file","parameters":{}}}]}`)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	lines := dataLines(t, body)
	if lines[len(lines)-1] != "[DONE]" {
		t.Fatalf("the stream does not end with [DONE]: %q", lines)
	}
	type chunk struct {
		Object  string `json:"object"`
		Choices []struct {
			Delta struct {
				Role      string `json:"role"`
				Content   string `json:"content"`
				ToolCalls []struct {
					Index    int    `json:"index"`
					ID       string `json:"id"`
					Function struct {
						Name      string `json:"name"`
						Arguments string `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"delta"`
			FinishReason *string `json:"finish_reason"`
		} `json:"choices"`
		Usage *ChatUsage `json:"usage"`
	}
	var content, args strings.Builder
	var finish string
	var usage *ChatUsage
	argPieces := 0
	for _, l := range lines[:len(lines)-1] {
		var c chunk
		if err := json.Unmarshal([]byte(l), &c); err != nil || c.Object != "chat.completion.chunk" {
			t.Fatalf("chunk %s: %v", l, err)
		}
		if c.Usage != nil {
			usage = c.Usage
		}
		for _, ch := range c.Choices {
			content.WriteString(ch.Delta.Content)
			for _, tc := range ch.Delta.ToolCalls {
				if tc.Index != 0 || (tc.ID != "" && tc.ID != "call_stub_1_0") {
					t.Fatalf("tool call piece %+v", tc)
				}
				if tc.Function.Arguments != "" {
					argPieces++
				}
				args.WriteString(tc.Function.Arguments)
			}
			if ch.FinishReason != nil {
				finish = *ch.FinishReason
			}
		}
	}
	if content.String() != "Hi there" || args.String() != `{"path":"a.txt"}` || argPieces != 3 || finish != "tool_calls" || usage == nil || usage.PromptTokens == 0 {
		t.Fatalf("content %q args %q (%d pieces) finish %q usage %+v", content.String(), args.String(), argPieces, finish, usage)
	}
	req := s.WaitRequest(t, 1, time.Second)
	if req.Model != "m" || !req.IncludeUsage || len(req.Messages) != 2 || req.Messages[1].Content != "hello" || req.Tools[0] != "read_file" {
		t.Fatalf("recorded %+v", req)
	}
	<-req.Done
	if req.ClientGone {
		t.Fatal("a finished answer is marked abandoned")
	}
}

func TestChatWithoutUsageAndWhole(t *testing.T) {
	s := NewChat(t)
	_, body := postChat(t, s, `{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`)
	if strings.Contains(body, `"usage"`) {
		t.Fatalf("usage sent without include_usage: %s", body)
	}
	resp, body := postChat(t, s, `{"model":"m","stream":false,"messages":[{"role":"user","content":"x"}]}`)
	var v struct {
		Object  string `json:"object"`
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage ChatUsage `json:"usage"`
	}
	if err := json.Unmarshal([]byte(body), &v); err != nil || resp.Header.Get("Content-Type") != "application/json" ||
		v.Object != "chat.completion" || v.Choices[0].Message.Content != "stub reply #2" || v.Choices[0].FinishReason != "stop" || v.Usage.TotalTokens == 0 {
		t.Fatalf("%s: %v", body, err)
	}
}

func TestChatErrorsAndRaw(t *testing.T) {
	s := NewChat(t, ChatReply{Status: 404, Error: "model not found"}, ChatReply{Raw: "data: {broken\n\n"}, ChatReply{Text: "a b", Truncate: true})
	resp, body := postChat(t, s, `{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`)
	if resp.StatusCode != 404 || !strings.Contains(body, `"message":"model not found"`) {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if _, body = postChat(t, s, `{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`); body != "data: {broken\n\n" {
		t.Fatalf("raw %q", body)
	}
	if _, body = postChat(t, s, `{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`); strings.Contains(body, "finish_reason\":\"") || strings.Contains(body, "[DONE]") {
		t.Fatalf("truncated stream finished: %s", body)
	}
	if resp, _ := postChat(t, s, `{"stream":true}`); resp.StatusCode != 400 {
		t.Fatalf("a request without model and messages: %d", resp.StatusCode)
	}
}

func TestChatHoldAndClientGone(t *testing.T) {
	release := make(chan struct{})
	s := NewChat(t, ChatReply{Hold: release, Text: "slow answer"})
	req, _ := http.NewRequest("POST", s.URL()+"/chat/completions", bytes.NewReader([]byte(`{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	n, _ := resp.Body.Read(buf)
	if !strings.Contains(string(buf[:n]), `"content":"slow "`) {
		t.Fatalf("first chunk %q", buf[:n])
	}
	resp.Body.Close() // the client goes away while the model "thinks"
	r := s.WaitRequest(t, 1, time.Second)
	select {
	case <-r.Done:
	case <-time.After(5 * time.Second):
		t.Fatal("the held answer did not end when the client left")
	}
	if !r.ClientGone {
		t.Fatal("ClientGone not set")
	}
	close(release)
}
