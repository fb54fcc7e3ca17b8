package e2e_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/bridge"
	"github.com/wheelhouse-dev/wheelhouse/internal/stubmodel"
	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
)

// TestCodexKilledEndsItsReceipts kills the real codex app-server with
// SIGKILL in the middle of a turn that has been steered: every message that
// reached the turn ends in a final receipt saying the harness failed, the
// turn ends failed in the timeline, and the agent comes back for the next
// mention. A steer always ends in a receipt, even when its harness dies.
func TestCodexKilledEndsItsReceipts(t *testing.T) {
	ct := newCodexTeam(t)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	ct.stub.Push(stubmodel.Hold(release, "working on it"))
	turn, started := ct.startTurnOf(t, ct.bob, "@alice/codex run the long job")
	ct.stub.WaitRequest(t, 1, codexWait)
	steered, _ := post(t, ct.bob, "dev", "@alice/codex also mind the tests", map[string]string{"alice/codex": turn})
	if rc := receipt(t, ct.bob, "dev", steered, "alice/codex", "steered", "queued", "rejected"); rc["status"] != "steered" {
		t.Fatalf("receipt %v, want steered into %s", rc, turn)
	}

	pid := codexProcess(t, ct.home)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}

	for _, id := range []int64{started, steered} {
		rc := receipt(t, ct.bob, "dev", id, "alice/codex", "failed", "done", "interrupted", "expired", "rejected")
		if rc["status"] != "failed" || !strings.Contains(rc["detail"].(string), "codex app-server exited") {
			t.Fatalf("message %d: receipt %v, want failed because codex exited", id, rc)
		}
	}
	if st := codexTurnEnded(t, ct.bob, turn); st != "failed" {
		t.Fatalf("turn %s ended %q in the timeline, want failed", turn, st)
	}

	// The bridge restarts codex on the same thread; the next mention runs.
	testhub.WaitFor(t, codexWait, "alice/codex idle again", func() bool { return agentStatus(t, ct.bob, "alice/codex")["status"] == "idle" })
	ct.stub.Push(stubmodel.Text("back at it"))
	next, id := ct.startTurnOf(t, ct.bob, "@alice/codex are you back?")
	if next == turn {
		t.Fatalf("the dead turn %s was reused", turn)
	}
	if rc := receipt(t, ct.bob, "dev", id, "alice/codex", "done", "failed"); rc["status"] != "done" {
		t.Fatalf("the mention after the restart: receipt %v, want done", rc)
	}
}

// codexProcess finds the codex app-server this test's bridge started: a
// child of this process whose CODEX_HOME is home.
func codexProcess(t *testing.T, home string) int {
	t.Helper()
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	me := strconv.Itoa(os.Getpid())
	for _, d := range dirs {
		env, err := os.ReadFile(filepath.Join(d, "environ"))
		if err != nil || !bytes.Contains(env, []byte("CODEX_HOME="+home+"\x00")) {
			continue
		}
		stat, err := os.ReadFile(filepath.Join(d, "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold spaces, so read after ")".
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(f) > 1 && f[1] == me {
			pid, _ := strconv.Atoi(filepath.Base(d))
			return pid
		}
	}
	t.Fatalf("no codex app-server with CODEX_HOME=%s under this process", home)
	return 0
}

// TestCodexFrozenMentionEndsInAReceipt stops the real codex app-server
// (SIGSTOP) while it is idle: a mention's call into it hangs, and the
// bridge's bound on harness calls turns that into a final receipt instead
// of silence. Once the process runs again (SIGCONT), the next mention
// starts a turn.
func TestCodexFrozenMentionEndsInAReceipt(t *testing.T) {
	const bound = 2 * time.Second
	ct := newCodexTeamOn(t, testhub.Options{BridgeCallTimeout: bound}, "untrusted", "danger-full-access",
		bridge.PolicyConfig{Address: "users", Allowed: []string{"bob"}})
	pid := codexProcess(t, ct.home)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			syscall.Kill(pid, syscall.SIGCONT)
		}
	}
	t.Cleanup(resume)

	id, _ := post(t, ct.bob, "dev", "@alice/codex are you there?", nil)
	rc := receipt(t, ct.bob, "dev", id, "alice/codex", "rejected", "failed", "started", "queued")
	if rc["status"] != "rejected" || rc["reason"] != "agent-failed" || !strings.Contains(rc["detail"].(string), "within "+bound.String()) {
		t.Fatalf("receipt %v, want rejected: agent-failed, not within %s", rc, bound)
	}

	resume()
	ct.stub.Push(stubmodel.Text("here now"))
	var next map[string]any
	testhub.WaitFor(t, codexWait, "a mention that starts a turn after SIGCONT", func() bool {
		// The hung call may still hold the agent briefly: ask again until
		// a turn starts.
		id, _ := post(t, ct.bob, "dev", "@alice/codex now?", nil)
		next = receipt(t, ct.bob, "dev", id, "alice/codex", "started", "rejected", "queued", "failed", "done")
		return next["via"] == "started" || next["status"] == "started"
	})
}
