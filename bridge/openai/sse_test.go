package openai

import (
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/wheelhouse-dev/wheelhouse/wire"
)

func readEvents(r io.Reader) ([]sseEvent, error) {
	s := newSSEReader(r)
	var out []sseEvent
	for {
		ev, err := s.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, ev)
	}
}

func TestSSEReader(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want []sseEvent
	}{
		{"LF", "data: a\n\ndata: b\n\n", []sseEvent{{Data: []byte("a")}, {Data: []byte("b")}}},
		{"CRLF", "data: a\r\n\r\ndata: b\r\n\r\n", []sseEvent{{Data: []byte("a")}, {Data: []byte("b")}}},
		{"CR", "data: a\r\rdata: b\r\r", []sseEvent{{Data: []byte("a")}, {Data: []byte("b")}}},
		{"NoSpaceAfterColon", "data:a\n\n", []sseEvent{{Data: []byte("a")}}},
		{"OnlyFirstSpaceStripped", "data:  a\n\n", []sseEvent{{Data: []byte(" a")}}},
		{"MultiLineData", "data: a\ndata: b\n\n", []sseEvent{{Data: []byte("a\nb")}}},
		{"CommentsAndUnknownFields", ": keep-alive\nid: 7\nretry: 100\nfoo: bar\ndata: x\n\n", []sseEvent{{Data: []byte("x")}}},
		{"EventName", "event: error\ndata: {}\n\ndata: y\n\n", []sseEvent{{Event: "error", Data: []byte("{}")}, {Data: []byte("y")}}},
		{"BlankLinesWithoutData", "\n\n\nevent: ping\n\ndata: z\n\n", []sseEvent{{Data: []byte("z")}}},
		{"LastEventWithoutBlankLine", "data: a\n\ndata: [DONE]\n", []sseEvent{{Data: []byte("a")}, {Data: []byte("[DONE]")}}},
		{"LastLineWithoutNewline", "data: [DONE]", []sseEvent{{Data: []byte("[DONE]")}}},
		{"FieldWithoutColon", "data\n\n", []sseEvent{{Data: []byte("")}}},
		{"Empty", "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, r := range []io.Reader{strings.NewReader(tc.in), iotest.OneByteReader(strings.NewReader(tc.in))} {
				got, err := readEvents(r)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, tc.want) {
					t.Fatalf("events %q, want %q", got, tc.want)
				}
			}
		})
	}
	t.Run("ErrLineTooLong", func(t *testing.T) {
		_, err := readEvents(strings.NewReader("data: " + strings.Repeat("x", maxSSELine+10)))
		if !errors.Is(err, errLineTooLong) {
			t.Fatalf("err = %v, want errLineTooLong", err)
		}
	})
	t.Run("ReadErrorPassesThrough", func(t *testing.T) {
		boom := errors.New("boom")
		_, err := readEvents(io.MultiReader(strings.NewReader("data: a\n\ndata: b"), iotest.ErrReader(boom)))
		if !errors.Is(err, boom) {
			t.Fatalf("err = %v, want boom", err)
		}
	})
}

// stream builds an event stream from chunk payloads.
func stream(payloads ...string) string {
	var b strings.Builder
	for _, p := range payloads {
		b.WriteString("data: " + p + "\n\n")
	}
	return b.String()
}

func parseAnswer(t *testing.T, body string) (completion, []string, error) {
	t.Helper()
	var texts []string
	a := &accumulator{onText: func(s string) { texts = append(texts, s) }}
	if err := readStream(iotest.HalfReader(strings.NewReader(body)), a); err != nil {
		return completion{}, texts, err
	}
	n := 0
	c, err := a.result(func() string { n++; return "gen" + string(rune('0'+n)) })
	return c, texts, err
}

func TestStreamAnswer(t *testing.T) {
	t.Run("TextUsageAndDone", func(t *testing.T) {
		c, texts, err := parseAnswer(t, stream(
			`{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
			`{"choices":[{"index":0,"delta":{"content":"Hello "},"finish_reason":null}]}`,
			`{"choices":[{"index":0,"delta":{"content":"world"},"finish_reason":null}]}`,
			`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
			`{"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}`,
			`[DONE]`))
		if err != nil {
			t.Fatal(err)
		}
		if c.Content != "Hello world" || c.FinishReason != "stop" || c.Usage == nil || c.Usage.PromptTokens != 12 || c.Usage.CompletionTokens != 3 {
			t.Fatalf("completion %+v usage %+v", c, c.Usage)
		}
		if !reflect.DeepEqual(texts, []string{"Hello ", "world"}) {
			t.Fatalf("text pieces %q", texts)
		}
	})
	t.Run("ToolCallsSplitAndInterleaved", func(t *testing.T) {
		c, _, err := parseAnswer(t, stream(
			`{"choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"read_file","arguments":""}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"list_files","arguments":"{\"pa"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\":"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"th\":\".\"}"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"read_file","arguments":"\"a.txt\"}"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
			`[DONE]`))
		if err != nil {
			t.Fatal(err)
		}
		want := []toolCall{
			{ID: "call_a", Type: "function", Function: functionCall{Name: "read_file", Arguments: `{"path":"a.txt"}`}},
			{ID: "call_b", Type: "function", Function: functionCall{Name: "list_files", Arguments: `{"path":"."}`}},
		}
		if !reflect.DeepEqual(c.ToolCalls, want) || c.FinishReason != "tool_calls" {
			t.Fatalf("tool calls %+v finish %q", c.ToolCalls, c.FinishReason)
		}
	})
	t.Run("NoIndexNoIDObjectArguments", func(t *testing.T) {
		// A server that sends whole calls without index or id, arguments as
		// an object, and no [DONE] after the finish reason.
		c, _, err := parseAnswer(t, stream(
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"function":{"name":"read_file","arguments":{"path":"a"}}},{"function":{"name":"list_files","arguments":"{}"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		if len(c.ToolCalls) != 2 || c.ToolCalls[0].Function.Arguments != `{"path":"a"}` || c.ToolCalls[0].ID != "gen1" || c.ToolCalls[1].ID != "gen2" {
			t.Fatalf("tool calls %+v", c.ToolCalls)
		}
	})
	t.Run("ReasoningKeptApart", func(t *testing.T) {
		c, texts, err := parseAnswer(t, stream(
			`{"choices":[{"index":0,"delta":{"reasoning_content":"think "}}]}`,
			`{"choices":[{"index":0,"delta":{"reasoning":"more"}}]}`,
			`{"choices":[{"index":0,"delta":{"content":"answer"},"finish_reason":"stop"}]}`,
			`[DONE]`))
		if err != nil || c.Content != "answer" || c.Reasoning != "think more" || len(texts) != 1 {
			t.Fatalf("err %v completion %+v texts %q", err, c, texts)
		}
	})
	t.Run("OtherChoicesIgnored", func(t *testing.T) {
		c, _, err := parseAnswer(t, stream(`{"choices":[{"index":1,"delta":{"content":"no"}},{"index":0,"delta":{"content":"yes"},"finish_reason":"stop"}]}`, `[DONE]`))
		if err != nil || c.Content != "yes" {
			t.Fatalf("err %v content %q", err, c.Content)
		}
	})
	for _, tc := range []struct{ name, body, want string }{
		{"ErrTruncated", stream(`{"choices":[{"index":0,"delta":{"content":"Hel"}}]}`), "ended before the answer was complete"},
		{"ErrMalformedChunk", stream(`{"choices":[{"index":0,"delta":{"content":"Hel"}}]}`, `{"choices":[{"ind`), "malformed stream chunk"},
		{"ErrErrorObject", stream(`{"error":{"message":"out of memory","type":"server_error"}}`), "out of memory"},
		{"ErrErrorEvent", "event: error\ndata: {\"message\":\"overloaded\"}\n\n", "overloaded"},
		{"ErrBadArgumentsType", stream(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"x","arguments":5}}]}}]}`), "malformed tool call"},
		{"ErrTooManyCalls", stream(`{"choices":[{"index":0,"delta":{"tool_calls":[` + strings.Repeat(`{"id":"","function":{"name":"x"}},`, 0) + manyCalls(maxToolCalls+1) + `]}}]}`), "more than 64 tool calls"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := parseAnswer(t, tc.body)
			var se *errStream
			if !errors.As(err, &se) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want a stream error with %q", err, tc.want)
			}
		})
	}
}

func manyCalls(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = `{"index":` + itoa(i) + `,"function":{"name":"x"}}`
	}
	return strings.Join(parts, ",")
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

func TestVisibleText(t *testing.T) {
	for in, want := range map[string]string{
		"plain":                              "plain",
		"<think>hmm":                         "",
		"  <think>hmm</think>\n\nthe answer": "the answer",
		"a <think>x</think> b":               "a <think>x</think> b",
	} {
		if got := visibleText(in); got != want {
			t.Errorf("visibleText(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestAPIErrorMessage(t *testing.T) {
	for in, want := range map[string]string{
		`{"error":{"message":"model \"x\" not found"}}`: `model "x" not found`,
		`{"error":"bad key"}`:                           "bad key",
		`{"message":"nope"}`:                            "nope",
		`{"detail":"Not Found"}`:                        "Not Found",
		"plain text\n":                                  "plain text",
	} {
		if got := apiErrorMessage([]byte(in)); got != want {
			t.Errorf("apiErrorMessage(%s) = %q, want %q", in, got, want)
		}
	}
}

// FuzzSSEStream feeds arbitrary bytes to the stream reader: it never
// panics, and how the bytes are split into reads never changes the events.
func FuzzSSEStream(f *testing.F) {
	f.Add([]byte(stream(`{"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}`, `[DONE]`)))
	f.Add([]byte(stream(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"read_file","arguments":"{\"pa"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"th\":1}"}}]},"finish_reason":"tool_calls"}]}`)))
	f.Add([]byte("data: a\r\ndata: b\r\r\n: c\n\nevent: error\ndata: {\"error\":\"x\"}\n"))
	f.Add([]byte("data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"function\":{\"arguments\":{}}}]}}],\"usage\":{\"prompt_tokens\":1}}\n\n"))
	f.Add([]byte("\r\r\n\n\rdata"))
	f.Fuzz(func(t *testing.T, b []byte) {
		whole, err1 := readEvents(strings.NewReader(string(b)))
		bytewise, err2 := readEvents(iotest.OneByteReader(strings.NewReader(string(b))))
		if (err1 == nil) != (err2 == nil) || !reflect.DeepEqual(whole, bytewise) {
			t.Fatalf("split reads change the events: %q (%v) vs %q (%v)", whole, err1, bytewise, err2)
		}
		a := &accumulator{onText: func(string) {}}
		if readStream(strings.NewReader(string(b)), a) == nil {
			a.result(func() string { return "id" })
		}
	})
}

func TestRoomTextFitsTheWire(t *testing.T) {
	long := strings.Repeat("é", wire.MaxText)
	if got := roomText(long); len(got) > wire.MaxText || !strings.HasSuffix(got, "too long for the room)") {
		t.Fatalf("%d bytes", len(got))
	}
	if roomText("short") != "short" {
		t.Fatal("a short text changed")
	}
}
