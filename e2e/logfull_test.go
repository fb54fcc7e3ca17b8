package e2e_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
)

// TestEventLogFull runs an embedded hub whose JetStream store is capped
// (--nats-max-store) and fills it: writes are refused with 507
// storage_full, /readyz says event-log-full (and keeps saying it), reads
// still work, and a restart with room to grow takes writes again with
// nothing lost.
func TestEventLogFull(t *testing.T) {
	h := testhub.Start(t, testhub.Options{NATSMaxStore: 256 << 10})
	admin := h.Setup("root", "correct horse")
	admin.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "r"})
	big := strings.Repeat("x", 15000)
	var full testhub.Response
	posted := 0
	for ; posted < 100; posted++ {
		full = admin.Do("POST", "/api/v1/rooms/r/messages", map[string]string{"text": fmt.Sprint(posted, big)})
		if full.Status != 201 {
			break
		}
	}
	if full.Status != 507 || full.ErrCode() != "storage_full" || full.ErrReason() != "event-log-full" {
		t.Fatalf("after %d posts: %d %s", posted, full.Status, full.Raw)
	}
	t.Run("NotReady", func(t *testing.T) {
		// Across several of the hub's checks of the stream: it stays so.
		for end := time.Now().Add(5 * time.Second); time.Now().Before(end); {
			r := testhub.NewClient(t, h.URL()).Do("GET", "/readyz", nil)
			if r.Status != 503 || r.Body["reason"] != "event-log-full" {
				t.Fatalf("readyz %d %s", r.Status, r.Raw)
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	t.Run("WritesRefused", func(t *testing.T) {
		r := admin.Do("POST", "/api/v1/rooms/r/messages", map[string]string{"text": "small, still too much"})
		if r.Status != 507 || r.ErrReason() != "event-log-full" {
			t.Fatalf("%d %s", r.Status, r.Raw)
		}
	})
	t.Run("ReadsWork", func(t *testing.T) {
		if n := len(roomTexts(t, admin, "r")); n != posted {
			t.Fatalf("%d messages, want %d", n, posted)
		}
	})
	t.Run("RestartWithRoom", func(t *testing.T) {
		dir := h.DataDir
		h.Stop()
		h2 := testhub.Start(t, testhub.Options{DataDir: dir, NATSMaxStore: 4 << 20})
		admin.Base = h2.URL()
		if r := testhub.NewClient(t, h2.URL()).Do("GET", "/readyz", nil); r.Status != 200 {
			t.Fatalf("readyz %d %s", r.Status, r.Raw)
		}
		admin.Post("r", "room again")
		texts := roomTexts(t, admin, "r")
		if len(texts) != posted+1 || texts[posted] != "room again" {
			t.Fatalf("%d messages: %q", len(texts), shorten(texts))
		}
	})
}

// With an external NATS whose JetStream store fills, the hub refuses
// writes with 507 and is not ready; when the operator makes room (here:
// raises the server's max_file_store with a config reload, which
// nats-server allows upward only), the next write goes through and the hub
// is ready again, without a restart.
func TestEventLogFullExternalRecovers(t *testing.T) {
	ns := testhub.StartNATSWith(t, func(o *server.Options) { o.JetStreamMaxStore = 256 << 10 })
	opts := ns.Options
	h := testhub.Start(t, testhub.Options{NATS: ns})
	admin := h.Setup("root", "correct horse")
	admin.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "r"})
	big := strings.Repeat("x", 15000)
	for i := 0; ; i++ {
		r := admin.Do("POST", "/api/v1/rooms/r/messages", map[string]string{"text": big})
		if r.Status == 201 && i < 100 {
			continue
		}
		if r.Status != 507 || r.ErrReason() != "event-log-full" {
			t.Fatalf("post %d: %d %s", i, r.Status, r.Raw)
		}
		break
	}
	if r := testhub.NewClient(t, h.URL()).Do("GET", "/readyz", nil); r.Status != 503 || r.Body["reason"] != "event-log-full" {
		t.Fatalf("readyz %d %s", r.Status, r.Raw)
	}

	bigger := opts.Clone()
	bigger.JetStreamMaxStore = 4 << 20
	if err := ns.ReloadOptions(bigger); err != nil {
		t.Fatal(err)
	}
	admin.Post("r", "room again")
	testhub.WaitFor(t, 10*time.Second, "readyz 200", func() bool {
		return testhub.NewClient(t, h.URL()).Do("GET", "/readyz", nil).Status == 200
	})
}
