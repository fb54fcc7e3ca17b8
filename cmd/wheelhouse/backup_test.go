package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
)

// TestBackupRestoreCLI: wheelhouse backup against a running hub process
// (its ops-access.json), then wheelhouse restore into an empty data
// directory: a hub started there has every post.
func TestBackupRestoreCLI(t *testing.T) {
	data := t.TempDir()
	p, url := startHubProc(t, data)
	tok := p.expect(t, `setup token (\S+)`)[1]
	admin := testhub.NewClient(t, url)
	admin.Must(201, "POST", "/api/v1/setup", map[string]string{"token": tok, "name": "root", "password": "correct horse"})
	admin.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "kept"})
	for i := 0; i < 25; i++ {
		admin.Post("kept", fmt.Sprintf("message %d", i))
	}
	want := history(t, admin, "kept")

	dir := filepath.Join(t.TempDir(), "backup")
	var out, errOut bytes.Buffer
	if rc := run(context.Background(), []string{"backup", "--data", data, dir}, &out, &errOut); rc != 0 {
		t.Fatalf("backup: %d %s%s", rc, out.String(), errOut.String())
	}
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.cmd.Wait()

	restored := filepath.Join(t.TempDir(), "restored")
	if rc := run(context.Background(), []string{"restore", "--data", restored, dir}, &out, &errOut); rc != 0 {
		t.Fatalf("restore: %d %s%s", rc, out.String(), errOut.String())
	}
	if rc := run(context.Background(), []string{"restore", "--data", restored, dir}, &out, &errOut); rc == 0 {
		t.Fatal("a second restore into the same data directory succeeded")
	}
	t.Log(out.String(), errOut.String())
	_, url2 := startHubProc(t, restored)
	c := testhub.NewClient(t, url2)
	c.Must(201, "POST", "/api/v1/sessions", map[string]string{"name": "root", "password": "correct horse"})
	got := history(t, c, "kept")
	if len(got) != len(want) {
		t.Fatalf("%d messages after a restore, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i]["id"] != want[i]["id"] || got[i]["text"] != want[i]["text"] {
			t.Fatalf("message %d: %v, want %v", i, got[i], want[i])
		}
	}
}
