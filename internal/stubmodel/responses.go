package stubmodel

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Responses is a fake OpenAI Responses API: POST {URL}/responses answers
// with a server-sent-event stream, as codex expects. Each request takes the
// next reply from the script (Push); when the script is empty the fallback
// answers (a short text reply unless SetFallback changed it). Every request
// is recorded.
type Responses struct {
	srv    *httptest.Server
	closed chan struct{}

	mu       sync.Mutex // guards closed
	replies  replies[*ResponsesRequest, ResponsesReply]
	requests recorded[*ResponsesRequest]
}

// ResponsesReply writes one streamed response.
type ResponsesReply func(s *ResponsesStream)

// ResponsesRequest is one recorded POST /v1/responses.
type ResponsesRequest struct {
	N      int // 1-based arrival order
	Header http.Header
	Body   []byte
	Input  []ResponsesInputItem // the body's "input" list
}

// ResponsesInputItem is one element of a request's "input" list. Only the
// fields the tests look at are decoded.
type ResponsesInputItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"`
	Name      string          `json:"name,omitempty"`
	CallID    string          `json:"call_id,omitempty"`
	Arguments string          `json:"arguments,omitempty"`
	Output    json.RawMessage `json:"output,omitempty"`
}

// NewResponses starts the server with an initial script; it stops when the
// test ends.
func NewResponses(t testing.TB, script ...ResponsesReply) *Responses {
	t.Helper()
	r := &Responses{closed: make(chan struct{})}
	r.replies.push(script...)
	r.replies.setFallback(func(s *ResponsesStream) { Text(fmt.Sprintf("stub reply #%d", s.Req.N))(s) })
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/responses", r.serveResponses)
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"data":[],"models":[]}`)
	})
	r.srv = httptest.NewServer(mux)
	t.Cleanup(r.Close)
	return r
}

// URL is the API base, ending in /v1 (codex's provider base_url).
func (r *Responses) URL() string { return r.srv.URL + "/v1" }

// Close releases held streams and stops the server. It is safe to call twice.
func (r *Responses) Close() {
	r.mu.Lock()
	select {
	case <-r.closed:
		r.mu.Unlock()
		return
	default:
		close(r.closed)
	}
	r.mu.Unlock()
	r.srv.CloseClientConnections()
	r.srv.Close()
}

// Push appends replies to the script.
func (r *Responses) Push(replies ...ResponsesReply) { r.replies.push(replies...) }

// SetFallback sets the reply used when the script is empty.
func (r *Responses) SetFallback(reply ResponsesReply) { r.replies.setFallback(reply) }

// Requests returns the requests recorded so far.
func (r *Responses) Requests() []*ResponsesRequest {
	reqs, _ := r.requests.all()
	return reqs
}

// WaitRequest returns the nth request (1-based), waiting up to timeout for it.
func (r *Responses) WaitRequest(t testing.TB, n int, timeout time.Duration) *ResponsesRequest {
	t.Helper()
	return r.requests.nth(t, "request", n, timeout)
}

func (r *Responses) serveResponses(w http.ResponseWriter, hr *http.Request) {
	body, err := io.ReadAll(io.LimitReader(hr.Body, 64<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req := &ResponsesRequest{Header: hr.Header.Clone(), Body: body}
	var parsed struct {
		Input []ResponsesInputItem `json:"input"`
	}
	if err := json.Unmarshal(body, &parsed); err != nil {
		http.Error(w, "stubmodel: body is not JSON: "+err.Error(), http.StatusBadRequest)
		return
	}
	req.Input = parsed.Input

	_, reply, _ := r.replies.take(func() *ResponsesRequest {
		return r.requests.add(func(n int) *ResponsesRequest { req.N = n; return req })
	})

	ctx, cancel := context.WithCancel(hr.Context())
	defer cancel()
	go func() {
		select {
		case <-r.closed:
			cancel()
		case <-ctx.Done():
		}
	}()

	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	if flusher != nil {
		flusher.Flush()
	}
	reply(&ResponsesStream{Req: req, ctx: ctx, w: w, flusher: flusher})
}

// ResponsesStream is the response being written for one request.
type ResponsesStream struct {
	Req     *ResponsesRequest
	ctx     context.Context
	w       io.Writer
	flusher http.Flusher
	n       int
}

// Context ends when the client goes away or the server closes.
func (s *ResponsesStream) Context() context.Context { return s.ctx }

// Event writes one SSE event; payload gets "type": typ added.
func (s *ResponsesStream) Event(typ string, payload map[string]any) {
	if payload == nil {
		payload = map[string]any{}
	}
	payload["type"] = typ
	data, err := json.Marshal(payload)
	if err != nil {
		panic(fmt.Sprintf("stubmodel: marshal %s: %v", typ, err))
	}
	if _, err := fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", typ, data); err != nil {
		return // client gone; the reply's remaining writes are moot
	}
	if s.flusher != nil {
		s.flusher.Flush()
	}
}

// id returns an id unique to this request ("<prefix>_<request>_<k>").
func (s *ResponsesStream) id(prefix string) string {
	s.n++
	return fmt.Sprintf("%s_%d_%d", prefix, s.Req.N, s.n)
}

// Created writes response.created and returns the response id.
func (s *ResponsesStream) Created() string {
	id := fmt.Sprintf("resp_stub_%d", s.Req.N)
	s.Event("response.created", map[string]any{"response": map[string]any{"id": id}})
	return id
}

// Completed writes response.completed for response id.
func (s *ResponsesStream) Completed(id string) {
	s.Event("response.completed", map[string]any{"response": map[string]any{
		"id": id,
		"usage": map[string]any{
			"input_tokens": 10, "input_tokens_details": map[string]any{"cached_tokens": 0},
			"output_tokens": 5, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
			"total_tokens": 15,
		},
	}})
}

// StartMessage opens an assistant message and streams delta into it; it
// returns the message id for FinishMessage.
func (s *ResponsesStream) StartMessage(delta string) string {
	id := s.id("msg")
	s.Event("response.output_item.added", map[string]any{"output_index": 0, "item": map[string]any{
		"type": "message", "id": id, "role": "assistant", "content": []any{},
	}})
	if delta != "" {
		s.Event("response.output_text.delta", map[string]any{
			"item_id": id, "output_index": 0, "content_index": 0, "delta": delta,
		})
	}
	return id
}

// FinishMessage closes message id with its full text.
func (s *ResponsesStream) FinishMessage(id, text string) {
	s.Event("response.output_item.done", map[string]any{"output_index": 0, "item": map[string]any{
		"type": "message", "id": id, "role": "assistant",
		"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}},
	}})
}

// Text is a Responses reply: one assistant message, streamed word by word.
func Text(text string) ResponsesReply {
	return func(s *ResponsesStream) {
		resp := s.Created()
		words := strings.SplitAfter(text, " ")
		id := s.StartMessage(words[0])
		for _, w := range words[1:] {
			s.Event("response.output_text.delta", map[string]any{
				"item_id": id, "output_index": 0, "content_index": 0, "delta": w,
			})
		}
		s.FinishMessage(id, text)
		s.Completed(resp)
	}
}

// Call is a Responses reply: one function call; arguments is its JSON text.
func Call(name, arguments string) ResponsesReply {
	return func(s *ResponsesStream) {
		resp := s.Created()
		s.Event("response.output_item.done", map[string]any{"output_index": 0, "item": map[string]any{
			"type": "function_call", "id": s.id("fc"), "call_id": s.id("call"),
			"name": name, "arguments": arguments,
		}})
		s.Completed(resp)
	}
}

// Exec is a Responses reply: an exec_command call (codex's shell tool)
// running cmd.
func Exec(cmd string) ResponsesReply {
	args, _ := json.Marshal(map[string]string{"cmd": cmd})
	return Call("exec_command", string(args))
}

// Hold opens the response (and, if partial is not empty, an assistant
// message with that text so far) and keeps the stream open until release is
// closed, the client goes away or the server closes. After release it
// finishes the message (text partial, or "released" when partial is empty)
// and completes the response.
func Hold(release <-chan struct{}, partial string) ResponsesReply {
	return func(s *ResponsesStream) {
		resp := s.Created()
		msg := ""
		if partial != "" {
			msg = s.StartMessage(partial)
		}
		select {
		case <-release:
		case <-s.ctx.Done():
			return
		}
		if msg == "" {
			partial = "released"
			msg = s.StartMessage(partial)
		}
		s.FinishMessage(msg, partial)
		s.Completed(resp)
	}
}

// Failed is a Responses reply: response.failed carrying message.
func Failed(message string) ResponsesReply {
	return func(s *ResponsesStream) {
		resp := s.Created()
		s.Event("response.failed", map[string]any{"response": map[string]any{
			"id": resp, "error": map[string]any{"code": "server_error", "message": message},
		}})
	}
}

// UserTexts returns the text of every user message in the request input.
func (q *ResponsesRequest) UserTexts() []string {
	var out []string
	for _, it := range q.Input {
		if it.Type != "message" || it.Role != "user" {
			continue
		}
		var parts []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if json.Unmarshal(it.Content, &parts) != nil {
			var s string
			if json.Unmarshal(it.Content, &s) == nil {
				out = append(out, s)
			}
			continue
		}
		for _, p := range parts {
			if p.Type == "input_text" {
				out = append(out, p.Text)
			}
		}
	}
	return out
}

// HasUserText reports whether some user message contains sub.
func (q *ResponsesRequest) HasUserText(sub string) bool {
	for _, s := range q.UserTexts() {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// FunctionCallOutputs returns the text of every function_call_output in the
// input, in order.
func (q *ResponsesRequest) FunctionCallOutputs() []string {
	var out []string
	for _, it := range q.Input {
		if it.Type != "function_call_output" {
			continue
		}
		var s string
		if json.Unmarshal(it.Output, &s) == nil {
			out = append(out, s)
			continue
		}
		out = append(out, string(it.Output))
	}
	return out
}

// TurnID returns the codex turn id from the x-codex-turn-metadata header.
func (q *ResponsesRequest) TurnID() string {
	var md struct {
		TurnID string `json:"turn_id"`
	}
	_ = json.Unmarshal([]byte(q.Header.Get("x-codex-turn-metadata")), &md)
	return md.TurnID
}

// CodexConfig is the config.toml that points codex at this server. Every
// key is known to codex-cli 0.171.0, so it passes --strict-config.
func (r *Responses) CodexConfig() string {
	return fmt.Sprintf(`model = "mock-model"
model_provider = "stub"
approval_policy = "never"
sandbox_mode = "read-only"

[model_providers.stub]
name = "Local stub"
base_url = %q
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
stream_idle_timeout_ms = 20000

[features]
plugins = false
apps = false

[analytics]
enabled = false
`, r.URL())
}

// WriteCodexHome writes CodexConfig to home/config.toml, creating home.
func (r *Responses) WriteCodexHome(home string) error {
	if err := os.MkdirAll(home, 0o700); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(home, "config.toml"), []byte(r.CodexConfig()), 0o600)
}
