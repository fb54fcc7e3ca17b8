package hub_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/hub"
	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
	"github.com/wheelhouse-dev/wheelhouse/store"
)

// lockedBuffer collects a hub's log lines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A hub started over a stream it cannot apply at once (its projector
// held, as a rebuild of millions of events is) listens at once and says
// so: /readyz is catching-up with its progress, /metrics and the UI's
// files are served, the API answers 503 catching-up with Retry-After, and
// the log shows the progress. No deadline ends it: once the projection
// has caught up, the hub is ready and answers from it. (It used to wait,
// not listening, and exit after two minutes.)
func TestStartCatchingUpThenReady(t *testing.T) {
	dir := t.TempDir()
	first := testhub.Start(t, testhub.Options{DataDir: dir})
	admin := first.Setup("root", "correct horse")
	admin.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "history"})
	const posts = 60
	for i := 0; i < posts; i++ {
		admin.Post("history", fmt.Sprintf("message %d", i))
	}
	first.Stop()
	for _, f := range []string{store.DBFile, store.DBFile + "-wal", store.DBFile + "-shm"} {
		os.Remove(filepath.Join(dir, f)) // rebuild the whole projection from the log
	}

	logs := &lockedBuffer{}
	hold := make(chan struct{})
	h, err := hub.New(hub.Config{DataDir: dir, HTTPAddr: "127.0.0.1:0", NATSAddr: "127.0.0.1:0", MetricsAddr: "127.0.0.1:0",
		Logger: slog.New(slog.NewTextHandler(logs, nil)), HoldProjection: hold, CatchUpLog: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	opened := make(chan error, 1)
	go func() { opened <- h.Open(context.Background()) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		h.Close(ctx)
	})
	select {
	case <-h.Listening():
	case err := <-opened:
		t.Fatalf("Open returned before the hub listened: %v", err)
	}
	base := strings.TrimSuffix(h.LocalURL(), "/")

	t.Run("ReadyzCatchingUp", func(t *testing.T) {
		code, body, _ := get(t, base+"/readyz")
		if code != 503 || body["reason"] != "catching-up" {
			t.Fatalf("/readyz = %d %v, want 503 catching-up", code, body)
		}
		applied, of := body["applied"].(float64), body["of"].(float64)
		if applied != 0 || of < posts {
			t.Fatalf("/readyz progress %v of %v, want 0 of the stream's %d+ events", applied, of, posts)
		}
	})
	t.Run("APICatchingUp", func(t *testing.T) {
		for _, p := range []string{"/api/v1/rooms", "/api/v1/setup", "/api/v1/me"} {
			code, body, hd := get(t, base+p)
			e, _ := body["error"].(map[string]any)
			if code != 503 || e["code"] != "unavailable" || e["reason"] != "catching-up" || hd.Get("Retry-After") == "" {
				t.Fatalf("GET %s = %d %v (Retry-After %q), want 503 catching-up with Retry-After", p, code, body, hd.Get("Retry-After"))
			}
			if msg, _ := e["message"].(string); !strings.Contains(msg, "catching up") {
				t.Fatalf("GET %s: message %q does not say why", p, msg)
			}
		}
		resp, err := http.Post(base+"/api/v1/sessions", "application/json", strings.NewReader(`{"name":"root","password":"correct horse"}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 503 {
			t.Fatalf("a login while catching up: %d, want 503", resp.StatusCode)
		}
	})
	t.Run("UIAndMetricsServed", func(t *testing.T) {
		if code, _, _ := get(t, base+"/"); code != 200 {
			t.Fatalf("GET / = %d, want the UI", code)
		}
		resp, err := http.Get(h.MetricsURL())
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), "wheelhouse_projection_applied_seq 0") {
			t.Fatalf("/metrics while catching up: %d\n%s", resp.StatusCode, b)
		}
	})
	testhub.WaitFor(t, 30*time.Second, "a progress line in the log", func() bool {
		return strings.Contains(logs.String(), "catching up the projection")
	})

	close(hold)
	select {
	case err := <-opened:
		if err != nil {
			t.Fatalf("open: %v", err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the hub did not catch up")
	}
	if code, body, _ := get(t, base+"/readyz"); code != 200 {
		t.Fatalf("/readyz after catching up = %d %v", code, body)
	}
	c := testhub.NewClient(t, base)
	c.Must(201, "POST", "/api/v1/sessions", map[string]string{"name": "root", "password": "correct horse"})
	r := c.Must(200, "GET", "/api/v1/rooms/history/messages?limit=100", nil)
	if n := len(testhub.AsList(r.Body["messages"])); n != posts {
		t.Fatalf("%d messages after the rebuild, want %d", n, posts)
	}
	if !strings.Contains(logs.String(), "the projection caught up") {
		t.Errorf("no caught-up line in the log:\n%s", logs.String())
	}
}

func get(t *testing.T, url string) (int, map[string]any, http.Header) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	json.Unmarshal(b, &m)
	return resp.StatusCode, m, resp.Header
}
