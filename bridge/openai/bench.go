package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// BenchModelCalls measures what the harness adds to one model call: n
// calls that build the request from a conversation, send it and parse the
// streamed answer (harness), interleaved with n plain HTTP round trips that
// post a body of the same size and read the same answer without looking at
// it (raw). Both go to one in-process server that answers every request
// with the same stream: 120 text chunks, a tool call split over four
// chunks, the finish reason, usage and [DONE].
func BenchModelCalls(ctx context.Context, n int) (raw, harness []time.Duration, err error) {
	srv, err := startBenchServer()
	if err != nil {
		return nil, nil, err
	}
	defer srv.close()
	cfg := benchConfig(srv.url)
	r := newBenchRun(cfg)
	c := newClient(cfg)
	defer c.close()
	body, err := json.Marshal(r.request())
	if err != nil {
		return nil, nil, err
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConns: 4}}
	defer hc.CloseIdleConnections()
	rawCall := func() error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, cfg.BaseURL+"/chat/completions", bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return err
	}
	harnessCall := func() error {
		comp, err := c.complete(ctx, r.request(), func(string) {})
		if err == nil && (len(comp.ToolCalls) != 1 || comp.Usage == nil) {
			err = fmt.Errorf("the benchmark answer was parsed wrong: %+v", comp)
		}
		return err
	}
	for range 20 { // warm up connections and caches
		if err := rawCall(); err != nil {
			return nil, nil, err
		}
		if err := harnessCall(); err != nil {
			return nil, nil, err
		}
	}
	raw, harness = make([]time.Duration, 0, n), make([]time.Duration, 0, n)
	for range n {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		t0 := time.Now()
		if err := rawCall(); err != nil {
			return nil, nil, err
		}
		t1 := time.Now()
		if err := harnessCall(); err != nil {
			return nil, nil, err
		}
		raw, harness = append(raw, t1.Sub(t0)), append(harness, time.Since(t1))
	}
	return raw, harness, nil
}

func benchConfig(url string) *Config {
	return &Config{Name: "bench", BaseURL: url, Model: "bench-model", ContextTokens: DefaultContextTokens, Tools: allTools,
		MaxSteps: DefaultMaxSteps, OutputCap: DefaultOutputCap, StreamUsage: true, IdleTimeout: time.Minute}
}

// newBenchRun is a turn's loop state with a conversation of a few
// exchanges, tool calls and results included: about 12 KiB of messages.
func newBenchRun(cfg *Config) *turnRun {
	h := &Harness{cfg: *cfg}
	var ms []histMessage
	for i := range 4 {
		ms = append(ms,
			histMessage{chatMessage: chatMessage{Role: "user", Content: fmt.Sprintf("=== Wheelhouse message %d ===\n| please look at file%d.go and fix the test", i, i)}},
			histMessage{chatMessage: chatMessage{Role: "assistant", ToolCalls: []toolCall{{ID: fmt.Sprintf("call_%d", i), Type: "function",
				Function: functionCall{Name: toolRead, Arguments: fmt.Sprintf(`{"path":"file%d.go"}`, i)}}}}},
			histMessage{chatMessage: chatMessage{Role: "tool", ToolCallID: fmt.Sprintf("call_%d", i), Content: strings.Repeat("func example() { return }\n", 100)}, Tool: toolRead},
			histMessage{chatMessage: chatMessage{Role: "assistant", Content: "Fixed: the test now passes."}})
	}
	h.conv = stateFile{Messages: ms}
	return &turnRun{h: h, conv: &h.conv}
}

// benchServer answers every chat request with one prepared stream.
type benchServer struct {
	url    string
	srv    *http.Server
	ln     net.Listener
	answer []byte
}

func startBenchServer() (*benchServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &benchServer{url: "http://" + ln.Addr().String() + "/v1", ln: ln, answer: benchAnswer()}
	s.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(s.answer)
	}), ReadHeaderTimeout: 10 * time.Second}
	go s.srv.Serve(ln)
	return s, nil
}

func (s *benchServer) close() { s.srv.Close() }

func benchAnswer() []byte {
	var b bytes.Buffer
	chunk := func(delta string, finish string) {
		f := "null"
		if finish != "" {
			f = `"` + finish + `"`
		}
		fmt.Fprintf(&b, `data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,"model":"bench-model","choices":[{"index":0,"delta":%s,"logprobs":null,"finish_reason":%s}]}`+"\n\n", delta, f)
	}
	chunk(`{"role":"assistant","content":""}`, "")
	for i := range 120 {
		chunk(fmt.Sprintf(`{"content":"word%d "}`, i), "")
	}
	chunk(`{"tool_calls":[{"index":0,"id":"call_bench","type":"function","function":{"name":"read_file","arguments":""}}]}`, "")
	for _, p := range []string{`{\"pa`, `th\":\"ma`, `in.go\"}`} {
		chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"`+p+`"}}]}`, "")
	}
	chunk(`{}`, "tool_calls")
	b.WriteString(`data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,"model":"bench-model","choices":[],"usage":{"prompt_tokens":3000,"completion_tokens":130,"total_tokens":3130}}` + "\n\n")
	b.WriteString("data: [DONE]\n\n")
	return b.Bytes()
}
