package e2e_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/hub"
	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
	"github.com/wheelhouse-dev/wheelhouse/store"
)

// A SQLite file from another deployment is refused at start with a message
// that says what to do, whether it has applied fewer events than this
// stream holds (it would silently mix two histories) or more.
func TestForeignDatabaseRefused(t *testing.T) {
	// Deployment A: a short stream.
	a := testhub.Start(t, testhub.Options{})
	adminA := a.Setup("root", "correct horse")
	adminA.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "a-room"})
	adminA.Post("a-room", "from deployment A")
	a.Stop()

	// Deployment B: a longer one.
	b := testhub.Start(t, testhub.Options{})
	adminB := b.Setup("root", "correct horse")
	adminB.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "b-room"})
	for i := 0; i < 10; i++ {
		adminB.Post("b-room", "from deployment B")
	}
	b.Stop()

	t.Run("FewerEventsThanTheStream", func(t *testing.T) {
		dir := copyData(t, b.DataDir, a.DataDir) // B's stream, A's database
		err := open(t, dir)
		t.Log(err)
		if err == nil || !strings.Contains(err.Error(), "belongs to another deployment") ||
			!strings.Contains(err.Error(), "rebuild") || !strings.Contains(err.Error(), "--data") {
			t.Fatalf("opened a foreign database: %v", err)
		}
	})
	t.Run("MoreEventsThanTheStream", func(t *testing.T) {
		dir := copyData(t, a.DataDir, b.DataDir) // A's stream, B's database
		err := open(t, dir)
		t.Log(err)
		if err == nil || !strings.Contains(err.Error(), "belongs to another deployment") || !strings.Contains(err.Error(), "rebuild") {
			t.Fatalf("opened a foreign database: %v", err)
		}
	})
	t.Run("OwnDatabaseOpens", func(t *testing.T) {
		dir := copyData(t, b.DataDir, b.DataDir)
		h := testhub.Start(t, testhub.Options{DataDir: dir})
		c := h.Login("root", "correct horse")
		if n := len(testhub.AsList(c.Must(200, "GET", "/api/v1/rooms/b-room/messages", nil).Body["messages"])); n != 10 {
			t.Fatalf("%d messages", n)
		}
	})
}

// copyData makes a data dir with the event log (JetStream store) of one
// deployment and the SQLite file of another.
func copyData(t *testing.T, logFrom, dbFrom string) string {
	t.Helper()
	dir := t.TempDir()
	copyTree(t, filepath.Join(logFrom, "jetstream"), filepath.Join(dir, "jetstream"))
	copyFile(t, filepath.Join(logFrom, hub.LogKeyFile), filepath.Join(dir, hub.LogKeyFile)) // the stream's events' key goes with it
	for _, f := range []string{store.DBFile, store.DBFile + "-wal"} {
		if _, err := os.Stat(filepath.Join(dbFrom, f)); err == nil {
			copyFile(t, filepath.Join(dbFrom, f), filepath.Join(dir, f))
		}
	}
	return dir
}

func open(t *testing.T, dir string) error {
	t.Helper()
	h, err := hub.New(hub.Config{DataDir: dir, HTTPAddr: "127.0.0.1:0", NATSAddr: "127.0.0.1:0", Logger: testhub.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = h.Open(ctx)
	if err == nil {
		h.Close(ctx)
	}
	return err
}

func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o700)
		}
		copyFile(t, p, filepath.Join(to, rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
