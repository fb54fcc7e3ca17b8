package stubmodel

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// ChatServer is a fake OpenAI Chat Completions API, as Ollama, llama.cpp's
// llama-server, vLLM and LM Studio serve it: POST {URL}/chat/completions
// answered with server-sent events ("data: {chunk}" lines, tool calls split
// across deltas keyed by index, a finish_reason, a usage chunk when the
// request asks for it with stream_options.include_usage, then
// "data: [DONE]"), or with one chat.completion JSON body when the request
// says "stream": false. Each request takes the next scripted reply (or the
// responder's, or the fallback); every request is recorded.
type ChatServer struct {
	srv    *httptest.Server
	closed chan struct{}

	mu      sync.Mutex // guards closed
	replies replies[*ChatRequest, ChatReply]
	reqs    recorded[*ChatRequest]
}

// ChatReply is one scripted answer.
type ChatReply struct {
	// Text is the assistant's text, streamed a word at a time.
	Text string
	// Reasoning is streamed first as delta.reasoning_content (vLLM's and
	// llama.cpp's field for a reasoning model's thinking).
	Reasoning string
	// ToolCalls are streamed after the text: each call's id, type and
	// name in its first delta, its arguments split over ArgPieces deltas.
	ToolCalls []ChatToolCall
	ArgPieces int // default 3
	// FinishReason defaults to "tool_calls" with tool calls, else "stop".
	FinishReason string
	// Usage is sent when the request asked for it; nil computes one (prompt
	// tokens ≈ request bytes / 4). NoUsage never sends it.
	Usage   *ChatUsage
	NoUsage bool
	// Hold, if non-nil, keeps the stream open after the first chunk (the
	// role, and the first word of Text) until it is closed, the client goes
	// away or the server closes: a model that is thinking.
	Hold <-chan struct{}
	// Status, if not 0 or 200, answers with that HTTP status and an OpenAI
	// error body carrying Error.
	Status int
	Error  string
	// Raw, if set, is written verbatim as the event stream (malformed
	// streams).
	Raw string
	// Truncate ends the stream after the text and tool call pieces: no
	// finish_reason, no usage, no [DONE] (a server that died mid-answer).
	Truncate bool
}

// ChatToolCall is one function call of the model (or, in a recorded
// request, of an assistant message).
type ChatToolCall struct {
	ID        string // default call_stub_<request>_<index>
	Name      string
	Arguments string // JSON text
}

// ChatUsage is a usage object.
type ChatUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// ChatRequest is one recorded POST /v1/chat/completions.
type ChatRequest struct {
	N            int // 1-based arrival order
	Header       http.Header
	Body         []byte
	Model        string
	Stream       bool
	IncludeUsage bool
	Temperature  *float64
	Messages     []ChatMessage
	Tools        []string // the function names offered
	// Done is closed when the answer has been written or abandoned;
	// ClientGone (read after Done) says the client went away first.
	Done       chan struct{}
	ClientGone bool
}

// ChatMessage is one message of a recorded request.
type ChatMessage struct {
	Role       string
	Content    string // text parts joined
	ToolCalls  []ChatToolCall
	ToolCallID string
}

// NewChat starts the server with an initial script; it stops when the test
// ends. The fallback answers "stub reply #N".
func NewChat(t testing.TB, script ...ChatReply) *ChatServer {
	t.Helper()
	s := &ChatServer{closed: make(chan struct{})}
	s.replies.push(script...)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.serveChat)
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"object":"list","data":[{"id":"stub-model","object":"model","created":0,"owned_by":"stub"}]}`)
	})
	s.srv = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// URL is the API base, ending in /v1.
func (s *ChatServer) URL() string { return s.srv.URL + "/v1" }

// Close releases held streams and stops the server. It is safe to call
// twice; afterwards connections to URL are refused.
func (s *ChatServer) Close() {
	s.mu.Lock()
	select {
	case <-s.closed:
		s.mu.Unlock()
		return
	default:
		close(s.closed)
	}
	s.mu.Unlock()
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// Push appends replies to the script.
func (s *ChatServer) Push(replies ...ChatReply) { s.replies.push(replies...) }

// SetFallback sets the reply used when the script is empty.
func (s *ChatServer) SetFallback(r ChatReply) { s.replies.setFallback(r) }

// SetResponder installs a function consulted before the script: if it
// returns ok, its reply is used and the script is left alone.
func (s *ChatServer) SetResponder(f func(*ChatRequest) (ChatReply, bool)) { s.replies.setResponder(f) }

// Requests returns the requests recorded so far.
func (s *ChatServer) Requests() []*ChatRequest {
	reqs, _ := s.reqs.all()
	return reqs
}

// WaitRequest returns the nth request (1-based), waiting up to timeout.
func (s *ChatServer) WaitRequest(t testing.TB, n int, timeout time.Duration) *ChatRequest {
	t.Helper()
	return s.reqs.nth(t, "chat request", n, timeout)
}

type wireToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

func (s *ChatServer) serveChat(w http.ResponseWriter, hr *http.Request) {
	body, err := io.ReadAll(io.LimitReader(hr.Body, 64<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var in struct {
		Model         string   `json:"model"`
		Stream        bool     `json:"stream"`
		Temperature   *float64 `json:"temperature"`
		StreamOptions *struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
		Messages []struct {
			Role       string          `json:"role"`
			Content    json.RawMessage `json:"content"`
			ToolCalls  []wireToolCall  `json:"tool_calls"`
			ToolCallID string          `json:"tool_call_id"`
		} `json:"messages"`
		Tools []struct {
			Type     string `json:"type"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		writeChatError(w, http.StatusBadRequest, "stubmodel: the body is not a chat request: "+err.Error())
		return
	}
	if in.Model == "" || len(in.Messages) == 0 {
		writeChatError(w, http.StatusBadRequest, "stubmodel: model and messages are required")
		return
	}
	req := &ChatRequest{Header: hr.Header.Clone(), Body: body, Model: in.Model, Stream: in.Stream, Temperature: in.Temperature,
		IncludeUsage: in.StreamOptions != nil && in.StreamOptions.IncludeUsage, Done: make(chan struct{})}
	for _, m := range in.Messages {
		cm := ChatMessage{Role: m.Role, Content: contentText(m.Content), ToolCallID: m.ToolCallID}
		for _, tc := range m.ToolCalls {
			cm.ToolCalls = append(cm.ToolCalls, ChatToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
		req.Messages = append(req.Messages, cm)
	}
	for _, t := range in.Tools {
		req.Tools = append(req.Tools, t.Function.Name)
	}

	_, reply, fallback := s.replies.take(func() *ChatRequest {
		return s.reqs.add(func(n int) *ChatRequest { req.N = n; return req })
	})
	if fallback && reply.Text == "" && reply.ToolCalls == nil && reply.Raw == "" && reply.Status == 0 && reply.Hold == nil {
		reply.Text = fmt.Sprintf("stub reply #%d", req.N)
	}
	defer close(req.Done)

	ctx, cancel := context.WithCancel(hr.Context())
	defer cancel()
	go func() {
		select {
		case <-s.closed:
			cancel()
		case <-ctx.Done():
		}
	}()
	if reply.Status != 0 && reply.Status != http.StatusOK {
		writeChatError(w, reply.Status, reply.Error)
		return
	}
	for i := range reply.ToolCalls {
		if reply.ToolCalls[i].ID == "" {
			reply.ToolCalls[i].ID = fmt.Sprintf("call_stub_%d_%d", req.N, i)
		}
	}
	if !in.Stream {
		s.writeWhole(w, req, reply)
		return
	}
	st := &chatStream{w: w, req: req, id: fmt.Sprintf("chatcmpl-stub-%d", req.N), created: time.Now().Unix()}
	st.flusher, _ = w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	if reply.Raw != "" {
		st.raw(reply.Raw)
		return
	}
	if !st.play(ctx, reply) {
		req.ClientGone = ctx.Err() != nil
	}
}

// contentText reads a message's content: a string or a list of text parts.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) == nil {
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(p.Text)
		}
		return b.String()
	}
	return ""
}

func writeChatError(w http.ResponseWriter, status int, msg string) {
	if msg == "" {
		msg = http.StatusText(status)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error", "param": nil, "code": nil}})
	_, _ = w.Write(b)
}

func (r ChatReply) finish() string {
	switch {
	case r.FinishReason != "":
		return r.FinishReason
	case len(r.ToolCalls) > 0:
		return "tool_calls"
	}
	return "stop"
}

func (r ChatReply) usage(req *ChatRequest) ChatUsage {
	if r.Usage != nil {
		return *r.Usage
	}
	out := len(r.Text) + len(r.Reasoning)
	for _, c := range r.ToolCalls {
		out += len(c.Name) + len(c.Arguments)
	}
	u := ChatUsage{PromptTokens: len(req.Body)/4 + 1, CompletionTokens: out/4 + 1}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	return u
}

func (s *ChatServer) writeWhole(w http.ResponseWriter, req *ChatRequest, r ChatReply) {
	msg := map[string]any{"role": "assistant", "content": r.Text}
	if len(r.ToolCalls) > 0 {
		var calls []wireToolCall
		for _, c := range r.ToolCalls {
			tc := wireToolCall{ID: c.ID, Type: "function"}
			tc.Function.Name, tc.Function.Arguments = c.Name, c.Arguments
			calls = append(calls, tc)
		}
		msg["tool_calls"] = calls
	}
	out := map[string]any{"id": fmt.Sprintf("chatcmpl-stub-%d", req.N), "object": "chat.completion", "created": time.Now().Unix(), "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": r.finish()}}}
	if !r.NoUsage {
		out["usage"] = r.usage(req)
	}
	w.Header().Set("Content-Type", "application/json")
	b, _ := json.Marshal(out)
	_, _ = w.Write(b)
}

// chatStream writes one streamed answer.
type chatStream struct {
	w       io.Writer
	flusher http.Flusher
	req     *ChatRequest
	id      string
	created int64
	failed  bool
}

func (st *chatStream) raw(s string) {
	if _, err := io.WriteString(st.w, s); err != nil {
		st.failed = true
	}
	if st.flusher != nil {
		st.flusher.Flush()
	}
}

// chunk writes one chat.completion.chunk with choices (nil: usage only).
func (st *chatStream) chunk(delta map[string]any, finish any, usage *ChatUsage) {
	c := map[string]any{"id": st.id, "object": "chat.completion.chunk", "created": st.created, "model": st.req.Model, "system_fingerprint": "stub"}
	if delta != nil {
		c["choices"] = []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}}
	} else {
		c["choices"] = []any{}
	}
	if usage != nil {
		c["usage"] = usage
	}
	b, _ := json.Marshal(c)
	st.raw("data: " + string(b) + "\n\n")
}

// play streams r; false if the client went away (or the server closed)
// before the end.
func (st *chatStream) play(ctx context.Context, r ChatReply) bool {
	words := splitWords(r.Text)
	first := map[string]any{"role": "assistant", "content": ""}
	if len(words) > 0 {
		first["content"] = words[0]
		words = words[1:]
	}
	st.chunk(first, nil, nil)
	if r.Hold != nil {
		select {
		case <-r.Hold:
		case <-ctx.Done():
			return false
		}
	}
	for _, piece := range splitWords(r.Reasoning) {
		st.chunk(map[string]any{"reasoning_content": piece}, nil, nil)
	}
	for _, wd := range words {
		if ctx.Err() != nil || st.failed {
			return false
		}
		st.chunk(map[string]any{"content": wd}, nil, nil)
	}
	pieces := r.ArgPieces
	if pieces <= 0 {
		pieces = 3
	}
	for i, c := range r.ToolCalls {
		st.chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": c.ID, "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": ""}}}}, nil, nil)
		for _, p := range splitN(c.Arguments, pieces) {
			st.chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": p}}}}, nil, nil)
		}
	}
	if r.Truncate || ctx.Err() != nil || st.failed {
		return ctx.Err() == nil && !st.failed
	}
	st.chunk(map[string]any{}, r.finish(), nil)
	if st.req.IncludeUsage && !r.NoUsage {
		u := r.usage(st.req)
		st.chunk(nil, nil, &u)
	}
	st.raw("data: [DONE]\n\n")
	return !st.failed
}

// splitWords splits text after each space, keeping the spaces.
func splitWords(text string) []string {
	if text == "" {
		return nil
	}
	return strings.SplitAfter(text, " ")
}

// splitN cuts s into n pieces of about equal length (fewer if s is short),
// at byte boundaries: a piece may end inside a JSON string or escape, as a
// real server's deltas do.
func splitN(s string, n int) []string {
	if s == "" {
		return nil
	}
	size := (len(s) + n - 1) / n
	var out []string
	for len(s) > size {
		out = append(out, s[:size])
		s = s[size:]
	}
	return append(out, s)
}

// UserTexts returns the content of every user message, in order.
func (q *ChatRequest) UserTexts() []string {
	var out []string
	for _, m := range q.Messages {
		if m.Role == "user" {
			out = append(out, m.Content)
		}
	}
	return out
}

// HasUserText reports whether some user message contains sub.
func (q *ChatRequest) HasUserText(sub string) bool {
	for _, s := range q.UserTexts() {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// ToolResult returns the content of the tool message answering callID.
func (q *ChatRequest) ToolResult(callID string) (string, bool) {
	for _, m := range q.Messages {
		if m.Role == "tool" && m.ToolCallID == callID {
			return m.Content, true
		}
	}
	return "", false
}

// Index returns the position of the first message for which match holds,
// or -1.
func (q *ChatRequest) Index(match func(ChatMessage) bool) int {
	for i, m := range q.Messages {
		if match(m) {
			return i
		}
	}
	return -1
}
