package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Limits on what one streamed answer may hold.
const (
	maxAnswerBytes   = 4 << 20 // text (content and reasoning together)
	maxToolCalls     = 64      // tool calls in one answer
	maxArgumentBytes = 1 << 20 // one tool call's arguments
)

// chatMessage is one message of the conversation, as the Chat Completions
// API takes it.
type chatMessage struct {
	Role       string     `json:"role"` // system, user, assistant, tool
	Content    string     `json:"content"`
	ToolCalls  []toolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

// toolCall is an assistant's request to run a function.
type toolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"` // "function"
	Function functionCall `json:"function"`
}

type functionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"` // JSON text, as the model wrote it
}

// usage is the endpoint's token count for one call.
type usage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
}

// chatChunk is one "data:" payload of a streamed chat completion.
type chatChunk struct {
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Content          string          `json:"content"`
			ReasoningContent string          `json:"reasoning_content"` // vLLM, llama.cpp
			Reasoning        string          `json:"reasoning"`         // Ollama, OpenRouter
			ToolCalls        []toolCallDelta `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *usage          `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// toolCallDelta is a piece of a tool call; the pieces of one call share
// its index.
type toolCallDelta struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name string `json:"name"`
		// Arguments is a piece of JSON text, as a JSON string; a server that
		// sends the arguments as an object is taken at its word.
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

// argText is the arguments text of a piece.
func argText(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return "", nil
	case raw[0] == '"':
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	case raw[0] == '{':
		return string(raw), nil
	}
	return "", fmt.Errorf("arguments are neither a string nor an object: %s", clip(raw, 60))
}

// completion is one model answer, assembled from its stream.
type completion struct {
	Content      string
	Reasoning    string
	ToolCalls    []toolCall
	FinishReason string // stop, tool_calls, length, content_filter, …
	Usage        *usage // nil if the endpoint sent none
}

// errStream marks an answer the endpoint sent broken: malformed, truncated
// or too large. The turn fails with its message.
type errStream struct{ msg string }

func (e *errStream) Error() string { return e.msg }

func streamErrorf(format string, args ...any) error {
	return &errStream{msg: fmt.Sprintf(format, args...)}
}

// accumulator assembles a completion from stream chunks. Tool calls are
// keyed by their index, so pieces of several calls may interleave.
type accumulator struct {
	content   strings.Builder
	reasoning strings.Builder
	calls     []*callAcc // in order of first appearance
	byIndex   map[int]*callAcc
	finish    string
	usage     *usage
	done      bool // "[DONE]" seen
	// onText, if set, gets every piece of content as it arrives.
	onText func(delta string)
}

type callAcc struct {
	id, typ, name string
	args          strings.Builder
}

// add takes one event's data.
func (a *accumulator) add(data []byte) error {
	data = bytes.TrimSpace(data)
	if a.done {
		return nil // some servers send more after [DONE]; it ends the answer
	}
	if string(data) == "[DONE]" {
		a.done = true
		return nil
	}
	var c chatChunk
	if err := json.Unmarshal(data, &c); err != nil {
		return streamErrorf("the model endpoint sent a malformed stream chunk (%v): %s", err, clip(data, 200))
	}
	if len(c.Error) > 0 && string(c.Error) != "null" {
		return streamErrorf("the model endpoint reported an error mid-answer: %s", apiErrorMessage(c.Error))
	}
	if c.Usage != nil {
		a.usage = c.Usage
	}
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue // we ask for one choice
		}
		d := ch.Delta
		if d.Content != "" {
			a.content.WriteString(d.Content)
			if a.onText != nil {
				a.onText(d.Content)
			}
		}
		a.reasoning.WriteString(d.ReasoningContent)
		a.reasoning.WriteString(d.Reasoning)
		if a.content.Len()+a.reasoning.Len() > maxAnswerBytes {
			return streamErrorf("the model's answer is longer than %d MiB", maxAnswerBytes>>20)
		}
		for _, td := range d.ToolCalls {
			if err := a.addCall(td); err != nil {
				return err
			}
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			a.finish = *ch.FinishReason
		}
	}
	return nil
}

// addCall merges one tool call piece. Pieces without an index (some servers
// omit it) belong to the call they name by id; without an id either, a
// piece with a name starts a call and one without continues the last.
func (a *accumulator) addCall(td toolCallDelta) error {
	if a.byIndex == nil {
		a.byIndex = map[int]*callAcc{}
	}
	var c *callAcc
	switch {
	case td.Index != nil:
		c = a.byIndex[*td.Index]
		if c == nil {
			c = a.newCall(*td.Index)
		}
	case td.ID != "":
		for _, x := range a.calls {
			if x.id == td.ID {
				c = x
			}
		}
		if c == nil {
			c = a.newCall(-1 - len(a.calls))
		}
	case td.Function.Name == "" && len(a.calls) > 0:
		c = a.calls[len(a.calls)-1]
	default:
		c = a.newCall(-1 - len(a.calls))
	}
	if c == nil {
		return streamErrorf("the model sent more than %d tool calls in one answer", maxToolCalls)
	}
	if td.ID != "" {
		c.id = td.ID
	}
	if td.Type != "" {
		c.typ = td.Type
	}
	// The name comes whole in one piece; a server that repeats it is not
	// asking for "read_fileread_file".
	if n := td.Function.Name; n != "" && n != c.name {
		c.name += n
	}
	args, err := argText(td.Function.Arguments)
	if err != nil {
		return streamErrorf("the model endpoint sent a malformed tool call: %v", err)
	}
	c.args.WriteString(args)
	if c.args.Len() > maxArgumentBytes {
		return streamErrorf("the model's arguments for %q are longer than %d MiB", c.name, maxArgumentBytes>>20)
	}
	return nil
}

func (a *accumulator) newCall(index int) *callAcc {
	if len(a.calls) >= maxToolCalls {
		return nil
	}
	c := &callAcc{}
	a.calls = append(a.calls, c)
	a.byIndex[index] = c
	return c
}

// result checks that the answer was complete and returns it. newID names
// tool calls the endpoint sent without an id.
func (a *accumulator) result(newID func() string) (completion, error) {
	if !a.done && a.finish == "" {
		return completion{}, streamErrorf("the model's stream ended before the answer was complete (no finish_reason and no [DONE])")
	}
	out := completion{Content: a.content.String(), Reasoning: a.reasoning.String(), FinishReason: a.finish, Usage: a.usage}
	for _, c := range a.calls {
		id := c.id
		if id == "" {
			id = newID()
		}
		out.ToolCalls = append(out.ToolCalls, toolCall{ID: id, Type: "function", Function: functionCall{Name: c.name, Arguments: c.args.String()}})
	}
	if out.FinishReason == "" {
		out.FinishReason = "stop"
		if len(out.ToolCalls) > 0 {
			out.FinishReason = "tool_calls"
		}
	}
	return out, nil
}

// readStream reads a whole streamed answer from body into a.
func readStream(body io.Reader, a *accumulator) error {
	head := &headCapture{r: body}
	r := newSSEReader(head)
	events := 0
	for !a.done {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			if events == 0 && len(bytes.TrimSpace(head.b)) > 0 {
				return streamErrorf("the model endpoint's answer is not an event stream; it began: %s", clip(bytes.TrimSpace(head.b), 120))
			}
			return nil
		}
		events++
		if errors.Is(err, errLineTooLong) {
			return streamErrorf("the model endpoint sent a malformed stream: %v", err)
		}
		if err != nil {
			return err
		}
		if ev.Event == "error" {
			return streamErrorf("the model endpoint reported an error mid-answer: %s", apiErrorMessage(ev.Data))
		}
		if err := a.add(ev.Data); err != nil {
			return err
		}
	}
	return nil
}

// apiErrorMessage reads an error body: {"error":{"message":…}},
// {"error":"…"}, {"message":…} (servers differ) or plain text.
func apiErrorMessage(b []byte) string {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  string          `json:"detail"`
	}
	if json.Unmarshal(b, &v) == nil {
		var inner struct {
			Message string `json:"message"`
		}
		var s string
		switch {
		case json.Unmarshal(v.Error, &inner) == nil && inner.Message != "":
			return clip([]byte(inner.Message), 500)
		case json.Unmarshal(v.Error, &s) == nil && s != "":
			return clip([]byte(s), 500)
		case v.Message != "":
			return clip([]byte(v.Message), 500)
		case v.Detail != "":
			return clip([]byte(v.Detail), 500)
		}
	}
	return clip(bytes.TrimSpace(b), 500)
}

// clip returns b as valid UTF-8 text of at most n bytes, marking a cut.
func clip(b []byte, n int) string {
	s := strings.ToValidUTF8(string(b), "�")
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// visibleText is what the room sees of an answer: a leading
// <think>…</think> block (models that reason inline) is left out, and an
// unclosed one hides everything so far.
func visibleText(content string) string {
	t := strings.TrimLeft(content, " \t\r\n")
	rest, ok := strings.CutPrefix(t, "<think>")
	if !ok {
		return content
	}
	_, after, closed := strings.Cut(rest, "</think>")
	if !closed {
		return ""
	}
	return strings.TrimLeft(after, " \t\r\n")
}

// headCapture keeps the first bytes read through it, to quote an answer
// that is not what it should be.
type headCapture struct {
	r io.Reader
	b []byte
}

func (h *headCapture) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	if room := 200 - len(h.b); room > 0 {
		h.b = append(h.b, p[:min(n, room)]...)
	}
	return n, err
}
