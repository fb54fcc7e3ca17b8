package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
)

func startHubProc(t *testing.T, data string) (*proc, string) {
	p := startProc(t, nil, "hub", "--data", data, "--http", "127.0.0.1:0", "--nats", "127.0.0.1:0")
	m := p.expect(t, `^Wheelhouse hub at (\S+) `)
	url := m[1]
	return p, url
}

func history(t *testing.T, c *testhub.Client, room string) []map[string]any {
	var all []map[string]any
	after := int64(0)
	for {
		r := c.Must(200, "GET", fmt.Sprintf("/api/v1/rooms/%s/messages?after=%d&limit=200", room, after), nil)
		ms := r.Body["messages"].([]any)
		for _, m := range ms {
			all = append(all, m.(map[string]any))
		}
		if len(ms) < 200 {
			return all
		}
		after = int64(all[len(all)-1]["id"].(float64))
	}
}

func TestDurability(t *testing.T) {
	data := t.TempDir()
	p, url := startHubProc(t, data)
	tok := p.expect(t, `setup token (\S+)`)[1]

	admin := testhub.NewClient(t, url)
	admin.Must(201, "POST", "/api/v1/setup", map[string]string{"token": tok, "name": "root", "password": "correct horse"})
	admin.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "durable"})
	const n = 230 // more than a page (200): paging from after=0 must see them all
	acked := map[int64]string{}
	for i := 0; i < n; i++ {
		text := fmt.Sprintf("message %d", i)
		acked[admin.Post("durable", text)] = text
	}

	// Kill -9: no graceful shutdown.
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.cmd.Wait()

	t.Run("AllAcknowledgedSurviveKill", func(t *testing.T) {
		p2, url2 := startHubProc(t, data)
		c := testhub.NewClient(t, url2)
		c.Must(201, "POST", "/api/v1/sessions", map[string]string{"name": "root", "password": "correct horse"})
		got := history(t, c, "durable")
		if len(got) != n {
			t.Fatalf("%d messages after restart, want %d", len(got), n)
		}
		for _, m := range got {
			id := int64(m["id"].(float64))
			if acked[id] != m["text"] {
				t.Fatalf("message %d: %q, want %q", id, m["text"], acked[id])
			}
		}
		before, _ := json.Marshal(got)

		p2.cmd.Process.Signal(syscall.SIGKILL)
		p2.cmd.Wait()
		for _, f := range []string{"wheelhouse.db", "wheelhouse.db-wal", "wheelhouse.db-shm"} {
			os.Remove(filepath.Join(data, f))
		}

		t.Run("RebuiltFromStreamIdentical", func(t *testing.T) {
			_, url3 := startHubProc(t, data)
			c := testhub.NewClient(t, url3)
			c.Must(201, "POST", "/api/v1/sessions", map[string]string{"name": "root", "password": "correct horse"})
			after, _ := json.Marshal(history(t, c, "durable"))
			if string(before) != string(after) {
				t.Fatalf("history differs after rebuild:\n%s\nvs\n%s", before[:200], after[:200])
			}
		})
	})
}
