package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/bridge"
	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
)

// A turn that ends while its hub is down (the hub killed -9 mid-turn, back
// only after the turn ended) still ends with every reply in its thread,
// turn.started and turn.ended in the timeline, a final receipt and a clean
// inspect --verify: the bridge keeps what the hub did not acknowledge in
// its outbox and sends it again once the hub is back. (Before, the bridge
// published them fire-and-forget and all it said while the hub was down
// was lost.)
func TestHubKilledMidTurnLosesNothing(t *testing.T) {
	r := startFaultRig(t, "")
	id := r.alice.Post("dev", "@alice/demo list the files")
	receiptWith(t, r.alice, "dev", id, "started")
	r.hub.cmd.Process.Signal(syscall.SIGKILL)
	r.hub.cmd.Wait()
	r.bridge.expect(t, `turn \S+ ended: completed`) // the whole rest of the turn with no hub
	r.startHub()
	r.alice = relogin(t, r.url, "alice", "alice password")

	rc := finalReceipt(t, r.alice, "dev", id, 60*time.Second)
	if rc["status"] != "done" {
		t.Fatalf("receipt %v, want done", rc)
	}
	turn, _ := rc["turnId"].(string)
	// The demo's turn says: its intro, one line per step (6), its reply.
	const want = 1 + 6 + 1
	var texts []string
	testhub.CheckFor(t, 30*time.Second, "every reply of the turn in its thread", func() error {
		texts = nil
		th := r.alice.Must(200, "GET", fmt.Sprintf("/api/v1/rooms/dev/messages?thread=%d&limit=200", id), nil)
		for _, m := range testhub.AsList(th.Body["messages"]) {
			if m["author"] == "alice/demo" && m["turnId"] == turn {
				texts = append(texts, m["text"].(string))
			}
		}
		if len(texts) != want {
			all := r.alice.Must(200, "GET", "/api/v1/rooms/dev/messages?include=replies&limit=200", nil)
			return fmt.Errorf("%d agent messages, want %d: %q\nthe room: %s", len(texts), want, texts, all.Raw)
		}
		return nil
	})
	if !strings.Contains(texts[len(texts)-1], "I'm the Wheelhouse demo agent") || !strings.Contains(texts[1], "listing files") {
		t.Fatalf("the thread is out of order or incomplete: %q", texts)
	}
	kinds := timelineKinds(t, r.alice, "alice/demo", turn)
	if !contains(kinds, "turn.started") || !contains(kinds, "turn.ended") {
		t.Fatalf("timeline of the turn %v, want turn.started and turn.ended", kinds)
	}
	for _, k := range []string{"turn.started", "turn.ended"} {
		if n := count(kinds, k); n != 1 {
			t.Fatalf("%d %s entries, want 1: %v", n, k, kinds)
		}
	}
	tok := r.alice.Must(201, "POST", "/api/v1/tokens", map[string]string{"label": "inspect"}).Body["token"].(string)
	journal := bridge.JournalPath(filepath.Join(r.bridgeDir, "journal"), "alice", "demo")
	if out, code := runCmd(t, "inspect", "@alice/demo", "--hub", r.url, "--token", tok, "--verify", "--journal", journal,
		"--credentials", filepath.Join(r.bridgeDir, "bridge.json")); code != 0 || !strings.HasPrefix(out, "OK:") {
		t.Fatalf("inspect --verify: %d %s", code, out)
	}
}

func count(xs []string, x string) int {
	n := 0
	for _, y := range xs {
		if y == x {
			n++
		}
	}
	return n
}

// A mention sent to a bridge that is frozen (SIGSTOP) ends the moment the
// hub declares the bridge offline, rejected as agent-offline, rather than
// at the end of its wait (17 s before); the bridge, woken, refuses it, and
// nothing runs.
func TestFrozenBridgeSteerEndsWhenOffline(t *testing.T) {
	r := startFaultRig(t, "")
	r.signalBridge(syscall.SIGSTOP)
	id := r.alice.Post("dev", "@alice/demo list the files")
	rc := finalReceipt(t, r.alice, "dev", id, 30*time.Second)
	if rc["status"] != "rejected" || rc["reason"] != "agent-offline" {
		t.Fatalf("receipt %v, want rejected: agent-offline", rc)
	}
	r.signalBridge(syscall.SIGCONT)
	r.bridge.expect(t, `refused @alice's message for @alice/demo`)
	waitAgent(t, r.alice, "alice/demo", func(st string) bool { return st == "idle" })
	if kinds := timelineKinds(t, r.alice, "alice/demo", ""); contains(kinds, "turn.started") {
		t.Fatalf("a turn started after the receipt said rejected: %v", kinds)
	}
	if rc2 := finalReceipt(t, r.alice, "dev", id, time.Second); rc2["status"] != rc["status"] {
		t.Fatalf("the receipt changed from %v to %v", rc["status"], rc2["status"])
	}
}
