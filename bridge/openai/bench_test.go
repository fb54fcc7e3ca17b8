package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
)

// BenchmarkModelCall is the harness's cost per model call beside a plain
// HTTP round trip to the same in-process server (same answer, a body of the
// same size): Harness builds the request from a conversation, sends it and
// parses the stream; Raw posts prepared bytes and discards the answer. The
// difference is the harness's overhead. `wheelhouse bench` reports the
// same comparison as a ratio.
func BenchmarkModelCall(b *testing.B) {
	srv, err := startBenchServer()
	if err != nil {
		b.Fatal(err)
	}
	defer srv.close()
	cfg := benchConfig(srv.url)
	r := newBenchRun(cfg)
	ctx := context.Background()
	b.Run("Raw", func(b *testing.B) {
		body, _ := json.Marshal(r.request())
		hc := &http.Client{}
		defer hc.CloseIdleConnections()
		b.SetBytes(int64(len(srv.answer)))
		for b.Loop() {
			resp, err := hc.Post(cfg.BaseURL+"/chat/completions", "application/json", bytes.NewReader(body))
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
	b.Run("Harness", func(b *testing.B) {
		c := newClient(cfg)
		defer c.close()
		b.SetBytes(int64(len(srv.answer)))
		for b.Loop() {
			if _, err := c.complete(ctx, r.request(), func(string) {}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func TestBenchModelCallsRuns(t *testing.T) {
	raw, harness, err := BenchModelCalls(context.Background(), 5)
	if err != nil || len(raw) != 5 || len(harness) != 5 {
		t.Fatalf("%v %v %v", raw, harness, err)
	}
}
