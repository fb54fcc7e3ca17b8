package stubmodel

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"
)

// MessagesServer is a fake Anthropic Messages API: POST /v1/messages answered
// as server-sent events (or one JSON body when the request says
// "stream":false), the way the real API streams. Replies are scripted per
// test; every request is recorded. Point Claude Code at it with
// ANTHROPIC_BASE_URL=URL() and any ANTHROPIC_API_KEY.
type MessagesServer struct {
	srv *httptest.Server

	replies replies[MessagesRequest, MessagesReply]
	reqs    recorded[MessagesRequest]
}

// MessagesReply is one scripted answer.
type MessagesReply struct {
	// Text, if set, is sent as a text block (before any tool_use blocks).
	Text string
	// ToolUses are sent as tool_use blocks; with any present the stop
	// reason is "tool_use", else "end_turn".
	ToolUses []MessagesToolUse
	// Hold, if non-nil, keeps the response open after message_start until
	// it is closed (or the client goes away): a model that is "thinking".
	Hold <-chan struct{}
	// Status, if not 0 or 200, answers with that HTTP status and an
	// Anthropic error body (ErrorType, default "api_error").
	Status    int
	ErrorType string
}

// MessagesToolUse is one tool call the stub model makes.
type MessagesToolUse struct {
	ID    string // default toolu_stub_<request>_<index>
	Name  string
	Input map[string]any
}

// MessagesRequest is one recorded request.
type MessagesRequest struct {
	N      int // 1-based arrival order
	Method string
	Path   string
	Header http.Header
	Body   []byte
	At     time.Time
}

// NewMessagesServer starts a stub on a random loopback port. The default
// answer, when the script is empty, is the text "done".
func NewMessagesServer() *MessagesServer {
	s := &MessagesServer{}
	s.replies.setFallback(MessagesReply{Text: "done"})
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// URL is the base URL (ANTHROPIC_BASE_URL).
func (s *MessagesServer) URL() string { return s.srv.URL }

// Close stops the server; held replies are released by their clients
// disconnecting.
func (s *MessagesServer) Close() {
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// Script appends replies, answered in order, one per model request.
func (s *MessagesServer) Script(replies ...MessagesReply) { s.replies.push(replies...) }

// SetFallback sets the reply used when the script is empty.
func (s *MessagesServer) SetFallback(r MessagesReply) { s.replies.setFallback(r) }

// SetResponder installs a function consulted before the script: if it
// returns ok, its reply is used and the script is left alone.
func (s *MessagesServer) SetResponder(f func(MessagesRequest) (MessagesReply, bool)) {
	s.replies.setResponder(f)
}

// Requests returns a copy of every request recorded so far.
func (s *MessagesServer) Requests() []MessagesRequest {
	reqs, _ := s.reqs.all()
	return reqs
}

// WaitFor blocks until cond holds for the recorded requests, or ctx ends.
func (s *MessagesServer) WaitFor(ctx context.Context, cond func([]MessagesRequest) bool) ([]MessagesRequest, error) {
	return s.reqs.waitFor(ctx, cond)
}

// WaitRequests blocks until at least n requests were recorded.
func (s *MessagesServer) WaitRequests(ctx context.Context, n int) ([]MessagesRequest, error) {
	return s.WaitFor(ctx, func(r []MessagesRequest) bool { return len(r) >= n })
}

func (s *MessagesServer) record(r *http.Request, body []byte) MessagesRequest {
	return s.reqs.add(func(n int) MessagesRequest {
		return MessagesRequest{N: n, Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body, At: time.Now()}
	})
}

func (s *MessagesServer) next(req MessagesRequest) MessagesReply {
	_, r, _ := s.replies.take(func() MessagesRequest { return req })
	return r
}

func (s *MessagesServer) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	req := s.record(r, body)
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/v1/messages/count_tokens"):
		writeMessagesJSON(w, http.StatusOK, map[string]any{"input_tokens": 100})
		return
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/v1/messages"):
	default:
		writeMessagesError(w, http.StatusNotFound, "not_found_error", "stub: no route "+r.Method+" "+r.URL.Path)
		return
	}
	var in struct {
		Model  string `json:"model"`
		Stream bool   `json:"stream"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		writeMessagesError(w, http.StatusBadRequest, "invalid_request_error", "stub: body is not JSON")
		return
	}
	reply := s.next(req)
	if reply.Status != 0 && reply.Status != http.StatusOK {
		et := reply.ErrorType
		if et == "" {
			et = "api_error"
		}
		writeMessagesError(w, reply.Status, et, "stub: scripted error")
		return
	}
	model := in.Model
	if model == "" {
		model = "claude-stub"
	}
	msgID := fmt.Sprintf("msg_stub_%d", req.N)
	blocks := messagesBlocks(reply, req.N)
	stop := "end_turn"
	if len(reply.ToolUses) > 0 {
		stop = "tool_use"
	}
	if !in.Stream {
		if reply.Hold != nil {
			select {
			case <-reply.Hold:
			case <-r.Context().Done():
				return
			}
		}
		writeMessagesJSON(w, http.StatusOK, map[string]any{
			"id": msgID, "type": "message", "role": "assistant", "model": model,
			"content": blocks, "stop_reason": stop, "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": 100, "output_tokens": 10},
		})
		return
	}
	s.stream(w, r, reply, msgID, model, blocks, stop)
}

func (s *MessagesServer) stream(w http.ResponseWriter, r *http.Request, reply MessagesReply, msgID, model string, blocks []map[string]any, stop string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("request-id", "req_"+msgID)
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	send := func(event string, data any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
		if fl != nil {
			fl.Flush()
		}
	}
	send("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": msgID, "type": "message", "role": "assistant", "model": model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 100, "output_tokens": 1},
	}})
	if reply.Hold != nil {
		select {
		case <-reply.Hold:
		case <-r.Context().Done():
			return
		}
	}
	for i, b := range blocks {
		switch b["type"] {
		case "text":
			send("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "text", "text": ""}})
			send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
				"delta": map[string]any{"type": "text_delta", "text": b["text"]}})
		case "tool_use":
			send("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "tool_use", "id": b["id"], "name": b["name"], "input": map[string]any{}}})
			in, _ := json.Marshal(b["input"])
			send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": string(in)}})
		}
		send("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	send("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": 10}})
	send("message_stop", map[string]any{"type": "message_stop"})
}

func messagesBlocks(r MessagesReply, n int) []map[string]any {
	var out []map[string]any
	if r.Text != "" || len(r.ToolUses) == 0 {
		out = append(out, map[string]any{"type": "text", "text": r.Text})
	}
	for i, tu := range r.ToolUses {
		id := tu.ID
		if id == "" {
			id = fmt.Sprintf("toolu_stub_%d_%d", n, i)
		}
		input := tu.Input
		if input == nil {
			input = map[string]any{}
		}
		out = append(out, map[string]any{"type": "tool_use", "id": id, "name": tu.Name, "input": input})
	}
	return out
}

func writeMessagesJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeMessagesError(w http.ResponseWriter, status int, typ, msg string) {
	writeMessagesJSON(w, status, map[string]any{"type": "error",
		"error": map[string]any{"type": typ, "message": msg}})
}
