package stubmodel

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
)

// sseEvents posts body to the stub and returns the "type" of every data
// event and the concatenated text deltas.
func sseEvents(ctx context.Context, url, body string) (types []string, text string, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/responses", strings.NewReader(body))
	if err != nil {
		return nil, "", err
	}
	req.Header.Set("x-codex-turn-metadata", `{"turn_id":"turn-1"}`)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		return nil, "", fmt.Errorf("content type %q", ct)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Type  string `json:"type"`
			Delta string `json:"delta"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			return nil, "", fmt.Errorf("bad event %q: %v", line, err)
		}
		types = append(types, ev.Type)
		text += ev.Delta
	}
	return types, text, sc.Err()
}

func mustEvents(t *testing.T, url string) ([]string, string) {
	t.Helper()
	types, text, err := sseEvents(context.Background(), url, userBody)
	if err != nil {
		t.Fatal(err)
	}
	return types, text
}

const userBody = `{"model":"m","stream":true,"input":[
 {"type":"message","role":"developer","content":[{"type":"input_text","text":"dev"}]},
 {"type":"message","role":"user","content":[{"type":"input_text","text":"hello there"}]},
 {"type":"function_call","call_id":"c1","name":"exec_command","arguments":"{}"},
 {"type":"function_call_output","call_id":"c1","output":"rejected by user"}]}`

func TestResponses(t *testing.T) {
	t.Run("TextReplyRecorded", func(t *testing.T) {
		r := NewResponses(t, Text("hello from stub"))
		types, text := mustEvents(t, r.URL())
		if text != "hello from stub" {
			t.Fatalf("deltas %q", text)
		}
		want := []string{"response.created", "response.output_item.added", "response.output_text.delta",
			"response.output_text.delta", "response.output_text.delta", "response.output_item.done", "response.completed"}
		if strings.Join(types, ",") != strings.Join(want, ",") {
			t.Fatalf("events %v", types)
		}
		req := r.WaitRequest(t, 1, time.Second)
		if !req.HasUserText("hello there") || req.HasUserText("dev") {
			t.Fatalf("user texts %q", req.UserTexts())
		}
		if got := req.FunctionCallOutputs(); len(got) != 1 || got[0] != "rejected by user" {
			t.Fatalf("outputs %q", got)
		}
		if req.TurnID() != "turn-1" {
			t.Fatalf("turn id %q", req.TurnID())
		}
	})
	t.Run("FallbackAfterScript", func(t *testing.T) {
		r := NewResponses(t, Exec("touch x"))
		types, _ := mustEvents(t, r.URL())
		if len(types) != 3 || types[1] != "response.output_item.done" {
			t.Fatalf("call events %v", types)
		}
		_, text := mustEvents(t, r.URL())
		if text != "stub reply #2" {
			t.Fatalf("fallback %q", text)
		}
	})
	t.Run("HoldUntilReleased", func(t *testing.T) {
		release := make(chan struct{})
		r := NewResponses(t, Hold(release, "partial"))
		done := make(chan string, 1)
		go func() {
			_, text, err := sseEvents(context.Background(), r.URL(), userBody)
			if err != nil {
				text = err.Error()
			}
			done <- text
		}()
		r.WaitRequest(t, 1, 5*time.Second)
		select {
		case <-done:
			t.Fatal("held stream ended before release")
		default:
		}
		close(release)
		select {
		case text := <-done:
			if text != "partial" {
				t.Fatalf("text %q", text)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("stream not finished after release")
		}
	})
	t.Run("HoldEndsOnClose", func(t *testing.T) {
		r := NewResponses(t, Hold(make(chan struct{}), ""))
		done := make(chan struct{})
		go func() {
			defer close(done)
			req, _ := http.NewRequest(http.MethodPost, r.URL()+"/responses", strings.NewReader(userBody))
			if resp, err := http.DefaultClient.Do(req); err == nil {
				_, _ = bufio.NewReader(resp.Body).ReadString(0)
				resp.Body.Close()
			}
		}()
		r.WaitRequest(t, 1, 5*time.Second)
		r.Close() // must not hang on the held handler
		<-done
	})
	t.Run("CodexHomeIsValidTOML", func(t *testing.T) {
		r := NewResponses(t)
		home := filepath.Join(t.TempDir(), "home")
		if err := r.WriteCodexHome(home); err != nil {
			t.Fatal(err)
		}
		raw, err := os.ReadFile(filepath.Join(home, "config.toml"))
		if err != nil {
			t.Fatal(err)
		}
		var cfg struct {
			ModelProvider  string `toml:"model_provider"`
			ModelProviders map[string]struct {
				BaseURL string `toml:"base_url"`
				WireAPI string `toml:"wire_api"`
			} `toml:"model_providers"`
		}
		if _, err := toml.Decode(string(raw), &cfg); err != nil {
			t.Fatal(err)
		}
		p := cfg.ModelProviders[cfg.ModelProvider]
		if p.BaseURL != r.URL() || p.WireAPI != "responses" {
			t.Fatalf("provider %+v", p)
		}
	})
}
