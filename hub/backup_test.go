package hub_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/hub"
	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
)

// TestBackupDuringLoadAndRestore: a backup taken while posts are being
// acknowledged, restored into an empty data directory, gives the same
// answer for every post acknowledged before the backup began, and the
// file posted before it downloads with the same bytes.
func TestBackupDuringLoadAndRestore(t *testing.T) {
	ctx := context.Background()
	h := testhub.Start(t, testhub.Options{})
	admin := h.Setup("root", "correct horse")
	admin.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "load"})
	content := []byte("the bytes of a file posted before the backup")
	up := admin.DoWith("POST", "/api/v1/rooms/load/files?name="+url.QueryEscape("notes.txt"), content, map[string]string{"Content-Type": "text/plain"})
	if up.Status != 201 {
		t.Fatalf("upload: %d %s", up.Status, up.Raw)
	}
	file := up.Body["file"].(map[string]any)
	admin.Must(201, "POST", "/api/v1/rooms/load/messages", map[string]any{"text": "with a file", "files": []string{file["id"].(string)}})

	var (
		mu    sync.Mutex
		acked []int64
		stop  = make(chan struct{})
		wg    sync.WaitGroup
	)
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				r := admin.Do("POST", "/api/v1/rooms/load/messages", map[string]string{"text": fmt.Sprintf("load %d-%d", w, i)})
				if r.Status == 201 {
					mu.Lock()
					acked = append(acked, int64(r.Body["message"].(map[string]any)["id"].(float64)))
					mu.Unlock()
				}
			}
		}()
	}
	testhub.WaitFor(t, 30*time.Second, "posts under load", func() bool { mu.Lock(); defer mu.Unlock(); return len(acked) >= 60 })
	t.Log("backing up")
	mu.Lock()
	before := append([]int64(nil), acked...)
	mu.Unlock()
	dir := filepath.Join(t.TempDir(), "backup")
	m, err := hub.Backup(ctx, h.ConnectAs(t, hub.RoleOps), h.DataDir, dir)
	if err != nil {
		t.Fatal(err)
	}
	testhub.WaitFor(t, 30*time.Second, "posts after the backup", func() bool { mu.Lock(); defer mu.Unlock(); return len(acked) >= len(before)+30 })
	close(stop)
	wg.Wait()
	t.Logf("backup: database at %d, streams %v; %d posts acknowledged before it began, %d in all", m.Database, m.Streams, len(before), len(acked))
	orig := byID(history(t, admin, "load"))

	restored := filepath.Join(t.TempDir(), "restored")
	if _, err := hub.RestoreEmbedded(ctx, dir, restored); err != nil {
		t.Fatal(err)
	}
	h.Stop()
	h2 := testhub.Start(t, testhub.Options{DataDir: restored})
	c := h2.NewClient()
	c.Must(201, "POST", "/api/v1/sessions", map[string]string{"name": "root", "password": "correct horse"})
	got := byID(history(t, c, "load"))
	for _, id := range before {
		if got[id] != orig[id] || got[id] == "" {
			t.Fatalf("post %d acknowledged before the backup: restored %s, was %s", id, got[id], orig[id])
		}
	}
	dl := c.Do("GET", file["url"].(string), nil)
	if dl.Status != 200 || !bytes.Equal(dl.Raw, content) {
		t.Fatalf("the file after a restore: %d %q", dl.Status, dl.Raw)
	}
}

// history is every message of a room, oldest first.
func history(t *testing.T, c *testhub.Client, room string) []map[string]any {
	t.Helper()
	var all []map[string]any
	after := int64(0)
	for {
		r := c.Must(200, "GET", fmt.Sprintf("/api/v1/rooms/%s/messages?after=%d&limit=200", room, after), nil)
		ms := testhub.AsList(r.Body["messages"])
		all = append(all, ms...)
		if len(ms) < 200 {
			return all
		}
		after = int64(all[len(all)-1]["id"].(float64))
	}
}

// byID is each message's JSON by its id.
func byID(ms []map[string]any) map[int64]string {
	out := map[int64]string{}
	for _, m := range ms {
		b, _ := json.Marshal(m)
		out[int64(m["id"].(float64))] = string(b)
	}
	return out
}
