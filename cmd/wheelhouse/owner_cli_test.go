package main

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/bridge"
	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
	"github.com/wheelhouse-dev/wheelhouse/store"
)

func runCmd(t *testing.T, args ...string) (string, int) {
	t.Helper()
	var out strings.Builder
	code := run(context.Background(), args, &out, &out)
	return out.String(), code
}

// TestOwnerCLI drives approvals, approve, deny and inspect as an owner
// would, against a real hub and bridge.
func TestOwnerCLI(t *testing.T) {
	h := testhub.Start(t, testhub.Options{})
	admin := h.Setup("root", "correct horse")
	alice := h.AddUser(admin, "alice")
	alice.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "dev"})
	br := h.StartBridge(alice, nil, bridge.AgentConfig{Name: "demo", Harness: "demo", Options: map[string]string{"steps": "2", "step": "10ms"}})
	alice.AddAgent("dev", "alice/demo")
	tok := alice.Must(201, "POST", "/api/v1/tokens", map[string]string{"label": "cli"}).Body["token"].(string)

	out, code := runCmd(t, "approvals", "--socket", br.Socket)
	if code != 0 || !strings.Contains(out, "No approval requests") {
		t.Fatalf("empty list: %d %s", code, out)
	}
	alice.Post("dev", "@alice/demo delete old.log and delete notes.txt")
	var list string
	testhub.WaitFor(t, 10*time.Second, "a request listed", func() bool {
		list, _ = runCmd(t, "approvals", "--socket", br.Socket)
		return strings.Contains(list, "delete old.log")
	})
	fields := strings.Fields(list[strings.Index(list, "wheelhouse approve "):])
	id, hash := fields[2], fields[4]

	t.Run("ApproveNeedsHash", func(t *testing.T) {
		if out, code := runCmd(t, "approve", id, "--socket", br.Socket); code != 2 || !strings.Contains(out, "--hash") {
			t.Fatalf("%d %s", code, out)
		}
	})
	t.Run("Approve", func(t *testing.T) {
		if out, code := runCmd(t, "approve", id, "--hash", hash, "--socket", br.Socket); code != 0 {
			t.Fatalf("%d %s", code, out)
		}
		if out, code := runCmd(t, "approve", id, "--hash", hash, "--socket", br.Socket); code == 0 {
			t.Fatalf("a second approval was accepted: %s", out)
		}
	})
	t.Run("Deny", func(t *testing.T) {
		var next string
		testhub.WaitFor(t, 10*time.Second, "the second request", func() bool {
			next, _ = runCmd(t, "approvals", "--socket", br.Socket, "--json")
			return strings.Contains(next, "notes.txt")
		})
		i := strings.Index(next, `"id":"`) + 6
		id2 := next[i : i+strings.Index(next[i:], `"`)]
		if out, code := runCmd(t, "deny", id2, "--socket", br.Socket); code != 0 {
			t.Fatalf("%d %s", code, out)
		}
	})
	t.Run("Inspect", func(t *testing.T) {
		var out string
		testhub.WaitFor(t, 10*time.Second, "the turn's end in the timeline", func() bool {
			out, _ = runCmd(t, "inspect", "@alice/demo", "--hub", h.URL(), "--token", tok)
			return strings.Contains(out, "turn.ended")
		})
		for _, want := range []string{"approval.requested", "approval.approved", "approval.denied", "@alice"} {
			if !strings.Contains(out, want) {
				t.Errorf("inspect lacks %q:\n%s", want, out)
			}
		}
		if out, code := runCmd(t, "inspect", "@alice/demo", "--hub", h.URL(), "--token", tok, "--json"); code != 0 || !strings.HasPrefix(strings.TrimSpace(out), "[") {
			t.Fatalf("--json: %d %s", code, out)
		}
		if out, code := runCmd(t, "inspect", "@alice/demo", "--hub", h.URL(), "--token", tok, "--verify", "--journal", bridge.JournalPath(br.Journals, "alice", "demo")); code != 0 || !strings.HasPrefix(out, "OK:") {
			t.Fatalf("--verify on an intact chain: %d %s", code, out)
		}
	})
	t.Run("VerifyFindsTampering", func(t *testing.T) {
		db, err := sql.Open("sqlite", filepath.Join(h.DataDir, store.DBFile)+"?_pragma=busy_timeout(10000)")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := db.Exec(`UPDATE timeline SET body = replace(body, 'old.log', 'evil.log') WHERE kind = 'approval.requested'`); err != nil {
			t.Fatal(err)
		}
		out, code := runCmd(t, "inspect", "@alice/demo", "--hub", h.URL(), "--token", tok, "--verify", "--journal", bridge.JournalPath(br.Journals, "alice", "demo"))
		if code == 0 || !strings.Contains(out, "BROKEN") || !strings.Contains(out, "approval.requested") {
			t.Fatalf("tampering not reported: %d %s", code, out)
		}
	})
}
