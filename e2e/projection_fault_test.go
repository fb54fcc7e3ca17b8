//go:build linux

package e2e_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
	"github.com/wheelhouse-dev/wheelhouse/store"
)

// TestProjectionDiskFull fills the disk under a running hub's SQLite file:
// the data dir is a small tmpfs of its own (the event log is on an
// external NATS, so only the projection's writes fail, with ENOSPC →
// SQLITE_FULL). The projector stops and says so in /readyz, the write in
// flight learns that it was recorded, later writes are refused with a 503
// that says why, nothing is skipped, and once space returns the hub
// recovers on its own. Its projection then equals a fresh rebuild.
func TestProjectionDiskFull(t *testing.T) {
	ns := testhub.StartNATS(t)
	dir := mountTmpfs(t, "4m")
	h := testhub.Start(t, testhub.Options{DataDir: dir, NATS: ns})
	admin := h.Setup("root", "correct horse")
	admin.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "r"})
	admin.Post("r", "before the disk filled")

	filler := fillDisk(t, dir)
	// Writes go on until SQLite needs a page it cannot get.
	big := strings.Repeat("the disk is full; ", 800)
	var failed testhub.Response
	for i := 0; ; i++ {
		r := admin.Do("POST", "/api/v1/rooms/r/messages", map[string]string{"text": fmt.Sprintf("%d %s", i, big)})
		if r.Status == 201 {
			if i > 300 {
				t.Fatal("the projection kept writing to a full disk")
			}
			continue
		}
		failed = r
		break
	}
	if failed.Status != 503 || failed.ErrCode() != "unavailable" || failed.ErrReason() != "projection-stopped" ||
		!strings.Contains(string(failed.Raw), "recorded") {
		t.Fatalf("the write in flight: %d %s", failed.Status, failed.Raw)
	}
	t.Run("NotReady", func(t *testing.T) {
		r := testhub.NewClient(t, h.URL()).Do("GET", "/readyz", nil)
		if r.Status != 503 || r.Body["reason"] != "projection-stopped" {
			t.Fatalf("readyz %d %s", r.Status, r.Raw)
		}
	})
	t.Run("WritesRefusedClearly", func(t *testing.T) {
		r := admin.Do("POST", "/api/v1/rooms/r/messages", map[string]string{"text": "while the disk is full"})
		if r.Status != 503 || r.ErrReason() != "projection-stopped" || !strings.Contains(string(r.Raw), "try again") {
			t.Fatalf("%d %s", r.Status, r.Raw)
		}
	})
	t.Run("ReadsStillWork", func(t *testing.T) {
		admin.Must(200, "GET", "/api/v1/rooms/r/messages", nil)
	})

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	t.Run("RecoversOnItsOwn", func(t *testing.T) {
		testhub.WaitFor(t, 30*time.Second, "readyz 200", func() bool {
			return testhub.NewClient(t, h.URL()).Do("GET", "/readyz", nil).Status == 200
		})
		admin.Post("r", "after the disk had room again")
	})
	t.Run("NothingSkipped", func(t *testing.T) {
		texts := roomTexts(t, admin, "r")
		// Every message posted while the disk filled, the one in flight
		// included (it was recorded), once; the refused one never.
		var n int
		for _, s := range texts {
			if strings.HasSuffix(s, big) {
				n++
			}
			if s == "while the disk is full" {
				t.Fatal("a refused write was stored")
			}
		}
		if want := len(texts) - 2; n != want {
			t.Fatalf("%d of the big messages, want %d: %q", n, want, shorten(texts))
		}
		for i := 0; i < n; i++ {
			if !strings.HasPrefix(texts[1+i], fmt.Sprintf("%d ", i)) {
				t.Fatalf("message %d is %q", i, shorten(texts)[1+i])
			}
		}
	})
	t.Run("EqualsAFreshRebuild", func(t *testing.T) {
		before := apiState(t, admin)
		h.Stop()
		for _, f := range []string{store.DBFile, store.DBFile + "-wal", store.DBFile + "-shm"} {
			if err := os.Remove(filepath.Join(dir, f)); err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
		}
		h2 := testhub.Start(t, testhub.Options{DataDir: dir, NATS: ns})
		admin.Base = h2.URL() // the session is in the log: it survives the rebuild
		if after := apiState(t, admin); after != before {
			t.Fatalf("rebuilt projection differs:\nlive    %s\nrebuilt %s", before, after)
		}
	})
}

// A hub whose projection has stopped shuts down promptly: what waits for
// the projection (routing the message in flight) gives up on shutdown.
func TestStopWhileProjectionStopped(t *testing.T) {
	ns := testhub.StartNATS(t)
	dir := mountTmpfs(t, "4m")
	h := testhub.Start(t, testhub.Options{DataDir: dir, NATS: ns})
	admin := h.Setup("root", "correct horse")
	admin.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "r"})
	fillDisk(t, dir)
	big := strings.Repeat("the disk is full; ", 800)
	for i := 0; i <= 300; i++ {
		if r := admin.Do("POST", "/api/v1/rooms/r/messages", map[string]string{"text": big}); r.Status == 503 {
			break
		}
	}
	if r := testhub.NewClient(t, h.URL()).Do("GET", "/readyz", nil); r.Body["reason"] != "projection-stopped" {
		t.Fatalf("readyz %d %s", r.Status, r.Raw)
	}
	start := time.Now()
	h.Stop()
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("the hub took %s to stop", d)
	}
}

// mountTmpfs mounts a tmpfs of the given size on a fresh directory and
// unmounts it when the test ends (after the hub using it has stopped).
// Mounting needs CAP_SYS_ADMIN (root, as the test machines run).
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "size="+size+",mode=0700"); err != nil {
		t.Fatalf("mount a %s tmpfs for the data dir (this test fills a real disk; it needs CAP_SYS_ADMIN): %v", size, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// fillDisk writes a file until the filesystem under dir has no space left.
func fillDisk(t *testing.T, dir string) string {
	return fillDiskLeaving(t, dir, 0)
}

// fillDiskLeaving writes a file until the filesystem under dir has at most
// leave bytes left.
func fillDiskLeaving(t *testing.T, dir string, leave uint64) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 4096)
	for {
		var st syscall.Statfs_t
		if err := syscall.Statfs(dir, &st); err != nil {
			t.Fatal(err)
		}
		if leave > 0 && st.Bavail*uint64(st.Bsize) <= leave {
			return path
		}
		if _, err := f.Write(chunk); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return path
			}
			t.Fatal(err)
		}
	}
}

func roomTexts(t *testing.T, c *testhub.Client, room string) []string {
	t.Helper()
	r := c.Must(200, "GET", "/api/v1/rooms/"+room+"/messages?limit=200", nil)
	var out []string
	for _, m := range testhub.AsList(r.Body["messages"]) {
		out = append(out, m["text"].(string))
	}
	return out
}

func shorten(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		if len(s) > 40 {
			s = s[:40] + "…"
		}
		out[i] = s
	}
	return out
}

// apiState is what the API answers about users, rooms and messages, as
// one comparable string.
func apiState(t *testing.T, c *testhub.Client) string {
	t.Helper()
	var b strings.Builder
	b.Write(c.Must(200, "GET", "/api/v1/users", nil).Raw)
	rooms := c.Must(200, "GET", "/api/v1/rooms", nil)
	b.Write(rooms.Raw)
	for _, r := range testhub.AsList(rooms.Body["rooms"]) {
		b.Write(c.Must(200, "GET", "/api/v1/rooms/"+r["name"].(string)+"/messages?limit=200", nil).Raw)
	}
	return b.String()
}

// TestEventLogDiskFull fills the disk under an embedded hub's JetStream
// store (its data dir is a tmpfs of its own) before the store reaches its
// own limit, to less than the hub's reserve. The hub refuses writes with 507 before the store runs into
// the full disk (nats-server stops storing into a stream whose write
// failed until it restarts) and is not ready; when space returns it takes
// writes again without a restart.
func TestEventLogDiskFull(t *testing.T) {
	dir := mountTmpfs(t, "48m")
	h := testhub.Start(t, testhub.Options{DataDir: dir})
	admin := h.Setup("root", "correct horse")
	admin.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "r"})
	admin.Post("r", "before the disk filled")

	// The disk fills (to 4 MiB left, below the hub's reserve), as disks do.
	filler := fillDiskLeaving(t, dir, 4<<20)
	testhub.CheckFor(t, 10*time.Second, "readyz event-log-full", func() error {
		if r := testhub.NewClient(t, h.URL()).Do("GET", "/readyz", nil); r.Status != 503 || r.Body["reason"] != "event-log-full" {
			return fmt.Errorf("%d %s", r.Status, r.Raw)
		}
		return nil
	})
	r := admin.Do("POST", "/api/v1/rooms/r/messages", map[string]string{"text": "on a full disk"})
	if r.Status != 507 || r.ErrCode() != "storage_full" || r.ErrReason() != "event-log-full" {
		t.Fatalf("%d %s", r.Status, r.Raw)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	testhub.WaitFor(t, 10*time.Second, "readyz 200", func() bool {
		return testhub.NewClient(t, h.URL()).Do("GET", "/readyz", nil).Status == 200
	})
	admin.Post("r", "after the disk had room again")
	if texts := roomTexts(t, admin, "r"); strings.Join(texts, "|") != "before the disk filled|after the disk had room again" {
		t.Fatalf("messages %q", shorten(texts))
	}
}
