package hub_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/wheelhouse-dev/wheelhouse/chat"
	"github.com/wheelhouse-dev/wheelhouse/eventlog"
	"github.com/wheelhouse-dev/wheelhouse/hub"
	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
	"github.com/wheelhouse-dev/wheelhouse/store"
)

// opsStream is the event stream as the hub's ops user sees it.
func opsStream(t *testing.T, h *testhub.Hub) (jetstream.JetStream, jetstream.Stream) {
	t.Helper()
	js, err := jetstream.New(h.ConnectAs(t, hub.RoleOps))
	if err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(context.Background(), eventlog.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	return js, st
}

// TestOperatorStreamLimitsSurviveRestart: a max_age (and max_bytes) an
// operator set on the event stream is still there after the hub restarts;
// the hub resets only what it owns.
func TestOperatorStreamLimitsSurviveRestart(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	h := testhub.Start(t, testhub.Options{DataDir: data})
	js, st := opsStream(t, h)
	cfg := st.CachedInfo().Config
	cfg.MaxAge, cfg.MaxBytes, cfg.Description = 720*time.Hour, 1<<30, "the operator's"
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	h.Stop()

	h2 := testhub.Start(t, testhub.Options{DataDir: data})
	_, st2 := opsStream(t, h2)
	got := st2.CachedInfo().Config
	if got.MaxAge != 720*time.Hour || got.MaxBytes != 1<<30 || got.Description != "the operator's" {
		t.Fatalf("after a restart: max_age %v, max_bytes %d, description %q; want the operator's 720h, 1 GiB, kept", got.MaxAge, got.MaxBytes, got.Description)
	}
	if got.Duplicates != eventlog.DedupWindow || len(got.Subjects) != 1 || got.Subjects[0] != eventlog.SubjectPrefix+">" {
		t.Fatalf("the hub's own settings: duplicates %v, subjects %v", got.Duplicates, got.Subjects)
	}
}

// answers are the API answers a restart must keep: every page of the
// room's history (small pages, so paging is compared too), its thread and
// the room list.
func answers(t *testing.T, c *testhub.Client, room string) string {
	t.Helper()
	var out []any
	after := int64(0)
	for {
		r := c.Must(200, "GET", fmt.Sprintf("/api/v1/rooms/%s/messages?after=%d&limit=7", room, after), nil)
		ms := r.Body["messages"].([]any)
		out = append(out, r.Body)
		if len(ms) < 7 {
			break
		}
		after = int64(ms[len(ms)-1].(map[string]any)["id"].(float64))
	}
	out = append(out, c.Must(200, "GET", "/api/v1/rooms", nil).Body)
	b, _ := json.Marshal(out)
	return string(b)
}

// removeDB deletes the hub's SQLite files.
func removeDB(t *testing.T, data string) {
	t.Helper()
	for _, f := range []string{store.DBFile, store.DBFile + "-wal", store.DBFile + "-shm"} {
		if err := os.Remove(filepath.Join(data, f)); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}
}

// snapshotLoad starts a hub, posts some messages with a reply, takes a
// snapshot, posts more, and returns the data dir, the answers, the
// snapshot and the hub (running).
func snapshotLoad(t *testing.T) (string, *testhub.Hub, *testhub.Client, chat.SnapshotTaken) {
	t.Helper()
	data := t.TempDir()
	h := testhub.Start(t, testhub.Options{DataDir: data})
	admin := h.Setup("root", "correct horse")
	admin.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "kept"})
	var first int64
	for i := 0; i < 20; i++ {
		id := admin.Post("kept", fmt.Sprintf("before the snapshot %d", i))
		if first == 0 {
			first = id
		}
	}
	admin.Must(201, "POST", "/api/v1/rooms/kept/messages", map[string]any{"text": "a reply", "thread": first})
	s, _, err := h.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 15; i++ {
		admin.Post("kept", fmt.Sprintf("after the snapshot %d", i))
	}
	return data, h, admin, s
}

// restartWithoutDB stops h, deletes its SQLite file and starts a hub on
// the same data; it returns it, a client logged in as root, and how many
// events its projection applied at start.
func restartWithoutDB(t *testing.T, h *testhub.Hub, data string) (*testhub.Hub, *testhub.Client, uint64) {
	t.Helper()
	h.Stop()
	removeDB(t, data)
	h2 := testhub.Start(t, testhub.Options{DataDir: data})
	_, applied := h2.Rooms().Log.Batches()
	c := h2.NewClient()
	c.Must(201, "POST", "/api/v1/sessions", map[string]string{"name": "root", "password": "correct horse"})
	return h2, c, applied
}

// TestSnapshotRebuild: a hub whose SQLite file is gone starts from the
// newest snapshot and applies only the log after it; every answer is as
// before.
func TestSnapshotRebuild(t *testing.T) {
	data, h, admin, s := snapshotLoad(t)
	want := answers(t, admin, "kept")
	last := h.Rooms().Log.Applied()
	if s.Seq == 0 || s.Seq >= last {
		t.Fatalf("snapshot at %d, log at %d", s.Seq, last)
	}
	h2, c, applied := restartWithoutDB(t, h, data)
	if got := answers(t, c, "kept"); got != want {
		t.Fatalf("answers after a rebuild from the snapshot differ:\n got %s\nwant %s", got, want)
	}
	// The session event and after: at most what followed the snapshot.
	if applied > last-s.Seq {
		t.Fatalf("the rebuild applied %d events; the log after the snapshot at %d has %d (the snapshot was not used)", applied, s.Seq, last-s.Seq)
	}
	_ = h2
}

// TestForgedSnapshotNotUsed: a snapshot whose bytes are not the ones its
// event names (replaced in the bucket by someone with the ops user: a
// valid database at the right sequence, one message's text changed) is
// not used; the hub rebuilds from the log, and every answer is as before.
func TestForgedSnapshotNotUsed(t *testing.T) {
	ctx := context.Background()
	data, h, admin, s := snapshotLoad(t)
	want := answers(t, admin, "kept")

	js, _ := opsStream(t, h)
	obs, err := js.ObjectStore(ctx, hub.SnapshotsBucket)
	if err != nil {
		t.Fatal(err)
	}
	forged := forgeSnapshot(t, obs, s.Object)
	f, err := os.Open(forged)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := obs.Put(ctx, jetstream.ObjectMeta{Name: s.Object}, f); err != nil { // replaces the object
		t.Fatal(err)
	}
	_, c, applied := restartWithoutDB(t, h, data)
	if got := answers(t, c, "kept"); got != want {
		t.Fatalf("answers after a forged snapshot differ (it was used?):\n got %s\nwant %s", got, want)
	}
	if applied <= s.Seq {
		t.Fatalf("the rebuild applied %d events, no more than the snapshot's %d: it started from the forged snapshot", applied, s.Seq)
	}
}

// copyFile copies src to dst.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestLiveCopyAheadOfItsStreamStarts: a copy of the data directory whose
// SQLite file was copied after its stream (as a copy made while the hub
// runs) has a database ahead of the stream. The hub starts on it: the
// database is moved aside and rebuilt from the stream, and the answers
// are the stream's.
func TestLiveCopyAheadOfItsStreamStarts(t *testing.T) {
	data := t.TempDir()
	h := testhub.Start(t, testhub.Options{DataDir: data})
	admin := h.Setup("root", "correct horse")
	admin.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "kept"})
	for i := 0; i < 10; i++ {
		admin.Post("kept", fmt.Sprintf("copied %d", i))
	}
	want := answers(t, admin, "kept")
	h.Stop()
	cp := filepath.Join(t.TempDir(), "copy")
	if err := os.CopyFS(cp, os.DirFS(data)); err != nil {
		t.Fatal(err)
	}
	h = testhub.Start(t, testhub.Options{DataDir: data})
	c := h.NewClient()
	c.Must(201, "POST", "/api/v1/sessions", map[string]string{"name": "root", "password": "correct horse"})
	for i := 0; i < 5; i++ {
		c.Post("kept", fmt.Sprintf("after the copy of the stream %d", i))
	}
	h.Stop() // a clean stop: the database is one file
	copyFile(t, filepath.Join(data, store.DBFile), filepath.Join(cp, store.DBFile))
	for _, f := range []string{"-wal", "-shm"} {
		os.Remove(filepath.Join(cp, store.DBFile+f))
	}

	h2 := testhub.Start(t, testhub.Options{DataDir: cp})
	c2 := h2.NewClient()
	c2.Must(201, "POST", "/api/v1/sessions", map[string]string{"name": "root", "password": "correct horse"})
	if got := answers(t, c2, "kept"); got != want {
		t.Fatalf("answers on the copy are not the stream's:\n got %s\nwant %s", got, want)
	}
	aside, _ := filepath.Glob(filepath.Join(cp, store.DBFile+".ahead-*[0-9]"))
	if len(aside) != 1 {
		t.Fatalf("the database ahead of the stream was not kept aside: %v", aside)
	}
}

// TestRetentionWithSnapshot: retention purges the room content before the
// newest verified snapshot (not past it, whatever the operator's cutoff),
// records it, and keeps the agents' and bridges' entries; a hub whose
// SQLite file is then gone rebuilds from the snapshot with every answer as
// before. Without a snapshot that covers the purge, the hub refuses to
// rebuild a history it no longer has, and says so.
func TestRetentionWithSnapshot(t *testing.T) {
	ctx := context.Background()
	data, h, admin, s := snapshotLoad(t)
	want := answers(t, admin, "kept")
	if c, err := h.Compact(ctx, hub.Retention{Age: time.Hour}); err != nil || c.Before != 0 {
		t.Fatalf("nothing is an hour old, yet compacted before %d (%v)", c.Before, err)
	}
	c, err := h.Compact(ctx, hub.Retention{Bytes: 1}) // the cutoff: everything
	if err != nil {
		t.Fatal(err)
	}
	if c.Before != s.Seq+1 || c.Snapshot != s.Seq {
		t.Fatalf("compacted before %d (snapshot %d), want up to the snapshot at %d", c.Before, c.Snapshot, s.Seq)
	}
	_, st := opsStream(t, h)
	for _, subj := range []string{chat.EvMessagePosted, chat.EvMessagePosted + eventlog.PlainSuffix} {
		if m, err := st.GetMsg(ctx, 1, jetstream.WithGetMsgSubject(eventlog.SubjectPrefix+subj)); err == nil && m.Sequence < c.Before {
			t.Fatalf("a message before the cutoff is still in the log: %d", m.Sequence)
		}
	}
	if m, err := st.GetMsg(ctx, 1); err != nil || m.Sequence != 1 {
		t.Fatalf("the log's first event (an account's) was purged: %v", err)
	}
	h2, c2, _ := restartWithoutDB(t, h, data)
	if got := answers(t, c2, "kept"); got != want {
		t.Fatalf("answers after retention and a rebuild differ:\n got %s\nwant %s", got, want)
	}

	// A database older than a later compaction (a node down for long) is
	// set aside, and the hub starts from the snapshot that covers it.
	stale := filepath.Join(t.TempDir(), "stale.db")
	if _, err := store.CopyDatabase(ctx, filepath.Join(data, store.DBFile), stale); err != nil {
		t.Fatal(err)
	}
	c2.Post("kept", "after the stale copy")
	if _, _, err := h2.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := h2.Compact(ctx, hub.Retention{Bytes: 1}); err != nil {
		t.Fatal(err)
	}
	want = answers(t, c2, "kept")
	h2.Stop()
	removeDB(t, data)
	copyFile(t, stale, filepath.Join(data, store.DBFile))
	h2 = testhub.Start(t, testhub.Options{DataDir: data})
	c2 = h2.NewClient()
	c2.Must(201, "POST", "/api/v1/sessions", map[string]string{"name": "root", "password": "correct horse"})
	if got := answers(t, c2, "kept"); got != want {
		t.Fatalf("answers after starting on a database older than the compaction:\n got %s\nwant %s", got, want)
	}

	// The snapshots gone: no rebuild.
	js, _ := opsStream(t, h2)
	if err := js.DeleteObjectStore(ctx, hub.SnapshotsBucket); err != nil {
		t.Fatal(err)
	}
	h2.Stop()
	removeDB(t, data)
	h3, err := hub.New(hub.Config{DataDir: data, HTTPAddr: "127.0.0.1:0", NATSAddr: "127.0.0.1:0", Logger: testhub.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	err = h3.Open(ctx)
	h3.Close(ctx)
	if err == nil || !strings.Contains(err.Error(), "compacted") || !strings.Contains(err.Error(), "restore") {
		t.Fatalf("a rebuild without the snapshot that covers the purged events: %v", err)
	}
}

// forgeSnapshot is a copy of the snapshot object with one message's text
// changed: a valid database at the snapshot's sequence.
func forgeSnapshot(t *testing.T, obs jetstream.ObjectStore, object string) string {
	t.Helper()
	forged := filepath.Join(t.TempDir(), "forged.db")
	if err := obs.GetFile(context.Background(), object, forged); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", forged)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if res, err := db.Exec(`UPDATE messages SET text = 'forged' WHERE text = 'before the snapshot 3'`); err != nil {
		t.Fatal(err)
	} else if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("forged %d rows", n)
	}
	return forged
}

// TestUnauthenticSnapshotEventNotUsed: a snapshot event without the hub's
// MAC (published with the log-writer's credentials), naming a forged
// database whose digest it gives right, newer than the real snapshot, is
// not used: the hub starts from the real one.
func TestUnauthenticSnapshotEventNotUsed(t *testing.T) {
	ctx := context.Background()
	data, h, admin, s := snapshotLoad(t)
	want := answers(t, admin, "kept")
	js, _ := opsStream(t, h)
	obs, err := js.ObjectStore(ctx, hub.SnapshotsBucket)
	if err != nil {
		t.Fatal(err)
	}
	forged := forgeSnapshot(t, obs, s.Object)
	b, err := os.ReadFile(forged)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	if _, err := obs.PutBytes(ctx, "forged.db", b); err != nil {
		t.Fatal(err)
	}
	ev, _ := chat.NewEvent(chat.EvSnapshotTaken, time.Now(), chat.SnapshotTaken{Seq: s.Seq, SHA256: hex.EncodeToString(sum[:]), Bytes: int64(len(b)), Object: "forged.db"})
	data2, _ := json.Marshal(ev)
	ljs, err := jetstream.New(h.ConnectAs(t, hub.RoleLogWriter))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ljs.Publish(ctx, eventlog.SubjectPrefix+chat.EvSnapshotTaken, data2, jetstream.WithMsgID(ev.ID)); err != nil {
		t.Fatal(err)
	}
	_, c, applied := restartWithoutDB(t, h, data)
	if got := answers(t, c, "kept"); got != want {
		t.Fatalf("answers after an unauthentic snapshot event differ (it was used?):\n got %s\nwant %s", got, want)
	}
	if applied == 0 {
		t.Fatal("nothing applied after the snapshot")
	}
}
