package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/bridge"
	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
)

// Faults with real processes: a hub and a bridge, each a wheelhouse child
// process, killed (-9) or stopped (SIGSTOP) at the worst moment. Every
// receipt, approval and the timeline must end in agreeing final states
// within seconds, and nothing may run after a rejected or expired receipt.

// freePort returns a loopback address whose port was free a moment ago (a
// restarted hub must come back on the same ports for its bridge).
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// faultRig is a hub process, an owner with a room, and a bridge process
// running a slow demo agent.
type faultRig struct {
	t              *testing.T
	data, http, ns string
	hub            *proc
	url            string
	alice          *testhub.Client
	bridgeDir      string
	bridge         *proc
}

// startFaultRig starts the rig; policy is extra TOML for the agent's policy.
func startFaultRig(t *testing.T, policy string, hubArgs ...string) *faultRig {
	r := &faultRig{t: t, data: t.TempDir(), http: freePort(t), ns: freePort(t), bridgeDir: t.TempDir()}
	r.startHub(hubArgs...)
	tok := r.hub.expect(t, `setup token (\S+)`)[1]
	admin := testhub.NewClient(t, r.url)
	admin.Must(201, "POST", "/api/v1/setup", map[string]string{"token": tok, "name": "root", "password": "correct horse"})
	admin.Must(201, "POST", "/api/v1/users", map[string]any{"name": "alice", "password": "alice password"})
	r.alice = testhub.NewClient(t, r.url)
	r.alice.Must(201, "POST", "/api/v1/sessions", map[string]string{"name": "alice", "password": "alice password"})
	r.alice.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "dev"})

	pair := r.alice.Must(201, "POST", "/api/v1/bridges/pairing-tokens", nil).Body["token"].(string)
	creds := filepath.Join(r.bridgeDir, "bridge.json")
	if out, code := runCmd(t, "bridge", "pair", "--hub", r.url, "--token", pair, "--name", "laptop", "--credentials", creds); code != 0 {
		t.Fatalf("pair: %s", out)
	}
	conf := filepath.Join(r.bridgeDir, "bridge.toml")
	os.WriteFile(conf, []byte(fmt.Sprintf(`credentials = %q
[[agent]]
name = "demo"
harness = "demo"
  [agent.rooms]
  dev = "normal"
  [agent.options]
  steps = "6"
  step = "1s"
  [agent.policy]
  address = "members"
%s%s
`, creds, approvalTimeout(policy), policy)), 0o600)
	r.startBridge()
	r.alice.AddAgent("dev", "alice/demo")
	return r
}

// pendingApproval waits for alice's agent to ask her, and returns the id.
func (r *faultRig) pendingApproval() string {
	r.t.Helper()
	var approval string
	testhub.CheckFor(r.t, 10*time.Second, "a pending approval", func() error {
		for _, a := range testhub.AsList(r.alice.Must(200, "GET", "/api/v1/approvals?state=pending", nil).Body["approvals"]) {
			approval = a["id"].(string)
			return nil
		}
		return fmt.Errorf("none yet")
	})
	return approval
}

// approvalTimeout is the rig's approval timeout line, unless the test's
// policy sets its own.
func approvalTimeout(policy string) string {
	if strings.Contains(policy, "approval_timeout") {
		return ""
	}
	return "  approval_timeout = \"1m\"\n"
}

func (r *faultRig) startHub(extra ...string) {
	args := append([]string{"hub", "--data", r.data, "--http", r.http, "--nats", r.ns}, extra...)
	r.hub = startProc(r.t, nil, args...)
	r.url = r.hub.expect(r.t, `^Wheelhouse hub at (\S+) `)[1]
}

func (r *faultRig) startBridge() {
	r.bridge = startProc(r.t, []string{"XDG_RUNTIME_DIR=" + r.bridgeDir, "XDG_STATE_HOME=" + r.bridgeDir},
		"bridge", "run", "--config", filepath.Join(r.bridgeDir, "bridge.toml"), "--call-timeout", "2s", "--journal", filepath.Join(r.bridgeDir, "journal"))
	r.bridge.expect(r.t, `connected to`)
	waitAgent(r.t, r.alice, "alice/demo", func(st string) bool { return st == "idle" })
}

func (r *faultRig) signalBridge(sig syscall.Signal) {
	if err := r.bridge.cmd.Process.Signal(sig); err != nil {
		r.t.Fatal(err)
	}
	if sig == syscall.SIGKILL {
		r.bridge.cmd.Wait()
	}
}

func waitAgent(t *testing.T, c *testhub.Client, handle string, ok func(status string) bool) {
	t.Helper()
	testhub.CheckFor(t, 10*time.Second, "@"+handle+"'s status", func() error {
		for _, a := range testhub.AsList(c.Must(200, "GET", "/api/v1/agents", nil).Body["agents"]) {
			if a["handle"] == handle {
				if ok(a["status"].(string)) {
					return nil
				}
				return fmt.Errorf("status %v", a["status"])
			}
		}
		return fmt.Errorf("no agent %s", handle)
	})
}

// finalReceipt waits until message id's receipt for handle is final.
func finalReceipt(t *testing.T, c *testhub.Client, room string, id int64, within time.Duration) map[string]any {
	t.Helper()
	var last map[string]any
	testhub.CheckFor(t, within, fmt.Sprintf("a final receipt for message %d", id), func() error {
		r := c.Must(200, "GET", fmt.Sprintf("/api/v1/rooms/%s/messages?after=%d&limit=1", room, id-1), nil)
		for _, rc := range testhub.AsList(r.Body["receipts"]) {
			last = rc
			switch rc["status"] {
			case "done", "failed", "interrupted", "expired", "rejected":
				return nil
			}
		}
		return fmt.Errorf("last receipt %v", last)
	})
	return last
}

func timelineKinds(t *testing.T, c *testhub.Client, handle, turn string) []string {
	t.Helper()
	var out []string
	for _, e := range testhub.AsList(c.Must(200, "GET", "/api/v1/agents/"+handle+"/timeline", nil).Body["entries"]) {
		if turn == "" || e["turnId"] == turn {
			out = append(out, e["kind"].(string))
		}
	}
	return out
}

func TestBridgeKilledMidTurn(t *testing.T) {
	r := startFaultRig(t, "")
	id := r.alice.Post("dev", "@alice/demo list the files slowly")
	receiptWith(t, r.alice, "dev", id, "started")
	r.signalBridge(syscall.SIGKILL)
	start := time.Now()
	rc := finalReceipt(t, r.alice, "dev", id, 10*time.Second)
	if rc["status"] != "failed" {
		t.Fatalf("receipt %v, want failed", rc)
	}
	t.Logf("receipt failed %s after the kill: %v", time.Since(start).Round(100*time.Millisecond), rc["detail"])
	waitAgent(t, r.alice, "alice/demo", func(st string) bool { return st == "offline" })
	kinds := timelineKinds(t, r.alice, "alice/demo", rc["turnId"].(string))
	if !contains(kinds, "turn.ended") {
		t.Fatalf("the killed turn has no end in the timeline: %v", kinds)
	}
}

func TestBridgeKilledWithApprovalPending(t *testing.T) {
	r := startFaultRig(t, "")
	id := r.alice.Post("dev", "@alice/demo delete old.log")
	receiptWith(t, r.alice, "dev", id, "started")
	approval := r.pendingApproval()
	r.signalBridge(syscall.SIGKILL)
	testhub.CheckFor(t, 10*time.Second, "the approval to be voided", func() error {
		a := r.alice.Must(200, "GET", "/api/v1/approvals/"+approval, nil).Body["approval"].(map[string]any)
		if a["status"] != "voided" {
			return fmt.Errorf("status %v", a["status"])
		}
		return nil
	})
	if rc := finalReceipt(t, r.alice, "dev", id, 10*time.Second); rc["status"] != "failed" {
		t.Fatalf("receipt %v, want failed", rc)
	}
	// Deciding it now says why it cannot be decided, not "try again".
	a := r.alice.Must(200, "GET", "/api/v1/approvals/"+approval, nil).Body["approval"].(map[string]any)
	r.alice.Must(409, "POST", "/api/v1/approvals/"+approval, map[string]string{"decision": "approve", "payloadHash": a["payloadHash"].(string)})
	// A restarted bridge does not resurrect it.
	r.startBridge()
	if a := r.alice.Must(200, "GET", "/api/v1/approvals/"+approval, nil).Body["approval"].(map[string]any); a["status"] != "voided" {
		t.Fatalf("after restart: %v", a["status"])
	}
}

// A bridge frozen while its approval waits cannot let it hang: the hub
// ends it on its own (expired at its deadline, or voided when it finds the
// bridge gone, whichever comes first), deciding it then is refused, and the
// bridge, when it wakes, leaves it ended and runs nothing.
func TestBridgeStoppedWithApprovalPending(t *testing.T) {
	r := startFaultRig(t, `  approval_timeout = "3s"`)
	id := r.alice.Post("dev", "@alice/demo delete old.log")
	receiptWith(t, r.alice, "dev", id, "started")
	approval := r.pendingApproval()
	r.signalBridge(syscall.SIGSTOP)
	var ended any
	testhub.CheckFor(t, 15*time.Second, "the hub to end the approval", func() error {
		a := r.alice.Must(200, "GET", "/api/v1/approvals/"+approval, nil).Body["approval"].(map[string]any)
		if ended = a["status"]; ended != "expired" && ended != "voided" {
			return fmt.Errorf("status %v", a["status"])
		}
		return nil
	})
	a := r.alice.Must(200, "GET", "/api/v1/approvals/"+approval, nil).Body["approval"].(map[string]any)
	r.alice.Must(409, "POST", "/api/v1/approvals/"+approval, map[string]string{"decision": "deny", "payloadHash": a["payloadHash"].(string)})
	r.signalBridge(syscall.SIGCONT)
	rc := finalReceipt(t, r.alice, "dev", id, 20*time.Second)
	if a := r.alice.Must(200, "GET", "/api/v1/approvals/"+approval, nil).Body["approval"].(map[string]any); a["status"] != ended {
		t.Fatalf("after the bridge woke: %v, was %v", a["status"], ended)
	}
	for _, k := range timelineKinds(t, r.alice, "alice/demo", fmt.Sprint(rc["turnId"])) {
		if k == "approval.approved" {
			t.Fatalf("the expired call was approved after all: %v", rc)
		}
	}
}

// A bridge frozen past a steer's deadline never acts on it when it wakes:
// the sender was told it was not delivered, and that stays true.
func TestBridgeStoppedPastDeadline(t *testing.T) {
	r := startFaultRig(t, "", "--steer-timeout", "1s")
	r.signalBridge(syscall.SIGSTOP)
	id := r.alice.Post("dev", "@alice/demo list the files")
	rc := finalReceipt(t, r.alice, "dev", id, 10*time.Second)
	if rc["status"] != "rejected" && rc["status"] != "expired" {
		t.Fatalf("receipt while stopped: %v", rc)
	}
	r.signalBridge(syscall.SIGCONT)
	r.bridge.expect(t, `refused @alice's message .* after its deadline`) // it reached the bridge, which refused it
	waitAgent(t, r.alice, "alice/demo", func(st string) bool { return st == "idle" })
	// Nothing ran: no turn started for that message, and its receipt is
	// unchanged.
	if kinds := timelineKinds(t, r.alice, "alice/demo", ""); contains(kinds, "turn.started") {
		t.Fatalf("a turn started after the steer's receipt said otherwise: %v", kinds)
	}
	if rc2 := finalReceipt(t, r.alice, "dev", id, time.Second); rc2["status"] != rc["status"] {
		t.Fatalf("the receipt changed from %v to %v", rc["status"], rc2["status"])
	}
	// And the agent works again. Until the hub has heard from a bridge
	// that was stopped long enough to be declared offline, the bridge
	// refuses messages the hub may have ended ("send again"): a person
	// sends again.
	testhub.CheckFor(t, 30*time.Second, "a message after the bridge woke starts a turn", func() error {
		id2 := r.alice.Post("dev", "@alice/demo list the files")
		rc := receiptWith(t, r.alice, "dev", id2, "started", "rejected")
		if rc["status"] != "started" {
			if rc["reason"] != "agent-offline" {
				t.Fatalf("a message after the bridge woke: %v", rc)
			}
			return fmt.Errorf("refused while the bridge re-announces: %v", rc)
		}
		return nil
	})
}

// A bridge frozen mid-turn, with a follow-up queued: the hub ends the turn
// (failed) and the queued steer (expired) while it is away; when it wakes
// it ends them too and delivers nothing the hub already ended.
func TestBridgeStoppedMidTurn(t *testing.T) {
	r := startFaultRig(t, "  steering = false")
	id := r.alice.Post("dev", "@alice/demo list the files slowly")
	receiptWith(t, r.alice, "dev", id, "started")
	q := r.alice.Post("dev", "@alice/demo and then delete old.log")
	receiptWith(t, r.alice, "dev", q, "queued")
	r.signalBridge(syscall.SIGSTOP)
	if rc := finalReceipt(t, r.alice, "dev", id, 10*time.Second); rc["status"] != "failed" {
		t.Fatalf("running turn: %v", rc)
	}
	if rc := finalReceipt(t, r.alice, "dev", q, 10*time.Second); rc["status"] != "expired" {
		t.Fatalf("queued steer: %v", rc)
	}
	r.signalBridge(syscall.SIGCONT)
	// It checks with the hub before delivering what it queued, and drops
	// the follow-up the hub ended (else it would start once the turn ends).
	r.bridge.expect(t, `dropped @alice's queued message: the hub already ended it`)
	waitAgent(t, r.alice, "alice/demo", func(st string) bool { return st == "idle" })
	// The queued follow-up was never delivered: no second turn, no approval.
	n := 0
	for _, k := range timelineKinds(t, r.alice, "alice/demo", "") {
		if k == "turn.started" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d turns started, want 1", n)
	}
	if as := testhub.AsList(r.alice.Must(200, "GET", "/api/v1/approvals", nil).Body["approvals"]); len(as) != 0 {
		t.Fatalf("the expired follow-up ran: %v", as)
	}
	// What the hub ended while the bridge was away, the bridge journaled
	// when it heard: the journal and the timeline agree both ways.
	journal := bridge.JournalPath(filepath.Join(r.bridgeDir, "journal"), "alice", "demo")
	tok := r.alice.Must(201, "POST", "/api/v1/tokens", map[string]string{"label": "cli"}).Body["token"].(string)
	var out string
	testhub.CheckFor(t, 10*time.Second, "inspect --verify to pass", func() error {
		var code int
		out, code = runCmd(t, "inspect", "@alice/demo", "--hub", r.url, "--token", tok, "--verify", "--journal", journal, "--credentials", filepath.Join(r.bridgeDir, "bridge.json"))
		if code != 0 || !strings.Contains(out, "is whole") || strings.Contains(out, "NOTE:") {
			return fmt.Errorf("exit %d:\n%s", code, out)
		}
		return nil
	})
	es, _ := bridge.ReadJournal(journal)
	var heard []string
	for _, e := range es {
		if e.Kind == bridge.JournalHub {
			heard = append(heard, e.Status)
		}
	}
	if !slices.Contains(heard, "steer expired") || !slices.Contains(heard, "turn ended") {
		t.Fatalf("the journal lacks what the hub ended (%v):\n%s", heard, out)
	}
}

// A hub killed after a mention was appended but before its bridge answered
// routes it after the restart, once.
func TestHubKilledBeforeRouting(t *testing.T) {
	r := startFaultRig(t, "", "--steer-timeout", "1s")
	r.signalBridge(syscall.SIGSTOP) // the router waits on the bridge…
	id := r.alice.Post("dev", "@alice/demo list the files")
	r.hub.cmd.Process.Signal(syscall.SIGKILL) // …and the hub dies mid-way
	r.hub.cmd.Wait()
	r.signalBridge(syscall.SIGCONT)
	r.startHub("--steer-timeout", "1s")
	r.alice = relogin(t, r.url, "alice", "alice password")
	rc := finalReceipt(t, r.alice, "dev", id, 30*time.Second)
	if rc["via"] != "started" {
		t.Fatalf("receipt %v, want a turn started after the restart", rc)
	}
	n := 0
	for _, k := range timelineKinds(t, r.alice, "alice/demo", "") {
		if k == "turn.started" {
			n++
		}
	}
	if n > 1 {
		t.Fatalf("the mention was acted on %d times", n)
	}
}

func relogin(t *testing.T, url, name, pw string) *testhub.Client {
	c := testhub.NewClient(t, url)
	testhub.CheckFor(t, 30*time.Second, "the hub to serve", func() error {
		r := c.Do("POST", "/api/v1/sessions", map[string]string{"name": name, "password": pw})
		if r.Status != 201 {
			return fmt.Errorf("status %d", r.Status)
		}
		return nil
	})
	return c
}

func receiptWith(t *testing.T, c *testhub.Client, room string, id int64, want ...string) map[string]any {
	t.Helper()
	var last map[string]any
	testhub.CheckFor(t, 15*time.Second, fmt.Sprintf("receipt %s for message %d", strings.Join(want, " or "), id), func() error {
		r := c.Must(200, "GET", fmt.Sprintf("/api/v1/rooms/%s/messages?after=%d&limit=1", room, id-1), nil)
		for _, rc := range testhub.AsList(r.Body["receipts"]) {
			last = rc
			for _, w := range want {
				if rc["status"] == w || rc["via"] == w {
					return nil
				}
			}
		}
		return fmt.Errorf("last %v", last)
	})
	return last
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if strings.EqualFold(x, y) {
			return true
		}
	}
	return false
}
