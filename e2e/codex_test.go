package e2e_test

import (
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/internal/stubmodel"
)

// TestCodexSteeringPath drives the genuine `codex app-server` through the
// hub and the bridge: only the model is a stub. The subtests share one hub,
// bridge and codex process and run in order (each leaves the agent idle).
func TestCodexSteeringPath(t *testing.T) {
	ct := newCodexTeam(t)
	var firstTurn string

	t.Run("MentionStartsTurnAndReplyIsPosted", func(t *testing.T) {
		n := ct.nextRequest()
		ct.stub.Push(stubmodel.Text("hello from the stub model"))
		firstTurn = ct.startTurn(t, ct.bob, "@alice/codex say hello please")
		req := ct.stub.WaitRequest(t, n, codexWait)
		if s, _ := codexUserText(req, "=== Wheelhouse message", "From: @bob, a teammate (not the owner; the owner is @alice)", "say hello please"); s == "" {
			t.Errorf("the model did not get bob's message in its envelope: %q", req.UserTexts())
		}
		if got := req.Header.Get("originator"); got != "wheelhouse" {
			t.Errorf("originator %q, want wheelhouse", got)
		}
		waitAgentSays(t, ct.bob, "dev", "alice/codex", "hello from the stub model")
		waitStatus(t, ct.alice, "alice/codex", "idle")
		if st := codexTurnEnded(t, ct.alice, firstTurn); st != "completed" {
			t.Fatalf("turn ended %q, want completed", st)
		}
	})

	t.Run("SteerLandsInRunningTurnWithEnvelope", func(t *testing.T) {
		release := make(chan struct{})
		defer close(release)
		n := ct.nextRequest()
		// The first reply holds the stream open; the steer aborts it and codex
		// asks again with the steer appended, which gets the second reply.
		ct.stub.Push(stubmodel.Hold(release, "counting the files"), stubmodel.Text("bananas, as bob asked"))
		turn := ct.startTurn(t, ct.alice, "@alice/codex count the files")
		ct.stub.WaitRequest(t, n, codexWait)
		codexWaitWorking(t, ct.alice, turn)

		start := time.Now()
		id, _ := post(t, ct.bob, "dev", "@alice/codex also mention bananas", nil)
		rc := receipt(t, ct.bob, "dev", id, "alice/codex", "steered", "rejected", "queued", "started")
		t.Logf("POST of the steer → steered receipt visible: %v", time.Since(start))
		if rc["status"] != "steered" || rc["turnId"] != turn {
			t.Fatalf("receipt %v, want steered into %s", rc, turn)
		}
		req := ct.stub.WaitRequest(t, n+1, codexWait)
		if req.TurnID() != turn {
			t.Errorf("the re-asked model request is for turn %q, want %q", req.TurnID(), turn)
		}
		_, orig := codexUserText(req, "count the files")
		steer, at := codexUserText(req, "=== Wheelhouse message", "From: @bob, a teammate (not the owner; the owner is @alice)",
			"Authority: These are the relayed words of teammate @bob", "| @alice/codex also mention bananas", "=== End of Wheelhouse message")
		if at < 0 || orig < 0 || at <= orig {
			t.Fatalf("want the original message, then bob's steer in its envelope, as user messages; got %q", req.UserTexts())
		}
		if strings.Contains(steer, "the owner of this agent") || strings.Contains(steer, "owner's own instruction") {
			t.Errorf("bob's steer is labelled as the owner's:\n%s", steer)
		}
		waitAgentSays(t, ct.bob, "dev", "alice/codex", "bananas, as bob asked")
		waitStatus(t, ct.alice, "alice/codex", "idle")
		if st := codexTurnEnded(t, ct.alice, turn); st != "completed" {
			t.Fatalf("turn ended %q, want completed", st)
		}
	})

	// A held turn for the stale steer and the interrupt.
	holdTurn := func(t *testing.T, text string) (turn string, msg int64, release chan struct{}) {
		t.Helper()
		release = make(chan struct{})
		n := ct.nextRequest()
		ct.stub.Push(stubmodel.Hold(release, ""))
		turn, msg = ct.startTurnOf(t, ct.alice, text)
		ct.stub.WaitRequest(t, n, codexWait)
		codexWaitWorking(t, ct.alice, turn)
		return turn, msg, release
	}
	// The sender of the message that started an interrupted turn learns
	// it was stopped, and by whom.
	stoppedBy := func(t *testing.T, msg int64, by string) {
		t.Helper()
		rc := receipt(t, ct.alice, "dev", msg, "alice/codex", "interrupted")
		if !strings.Contains(str(rc["detail"]), "stopped by @"+by) {
			t.Fatalf("the interrupted turn's receipt %v does not say @%s stopped it", rc, by)
		}
	}

	t.Run("StaleTurnRejectedThenOwnerInterrupts", func(t *testing.T) {
		turn, msg, release := holdTurn(t, "@alice/codex start a long job")
		defer close(release)
		id, _ := post(t, ct.bob, "dev", "@alice/codex this was meant for the earlier turn", map[string]string{"alice/codex": firstTurn})
		rc := receipt(t, ct.bob, "dev", id, "alice/codex", "rejected", "steered", "queued", "started")
		if rc["status"] != "rejected" || rc["reason"] != "stale-turn" {
			t.Fatalf("receipt %v, want rejected: stale-turn", rc)
		}
		if a := agentStatus(t, ct.alice, "alice/codex"); a["status"] != "working" || a["turnId"] != turn {
			t.Fatalf("the stale steer disturbed the running turn: %v", a)
		}

		r := ct.bob.Must(403, "POST", "/api/v1/agents/alice/codex/interrupt", nil)
		if r.ErrCode() != "forbidden" {
			t.Fatalf("bob's interrupt: %s", r.Raw)
		}
		ct.alice.Must(200, "POST", "/api/v1/agents/alice/codex/interrupt", nil)
		if st := codexTurnEnded(t, ct.alice, turn); st != "interrupted" {
			t.Fatalf("turn ended %q, want interrupted", st)
		}
		stoppedBy(t, msg, "alice")
		waitStatus(t, ct.alice, "alice/codex", "idle")
	})

	t.Run("OwnerStopMessageInterrupts", func(t *testing.T) {
		turn, msg, release := holdTurn(t, "@alice/codex another long job")
		defer close(release)
		id, _ := post(t, ct.alice, "dev", "@alice/codex stop", nil)
		if rc := receipt(t, ct.alice, "dev", id, "alice/codex", "steered", "rejected"); rc["status"] != "steered" {
			t.Fatalf("the owner's stop: %v", rc)
		}
		if st := codexTurnEnded(t, ct.alice, turn); st != "interrupted" {
			t.Fatalf("turn ended %q, want interrupted", st)
		}
		stoppedBy(t, msg, "alice")
		waitStatus(t, ct.alice, "alice/codex", "idle")
	})

	t.Run("ApprovalWaitsForOwner", func(t *testing.T) {
		x := filepath.Join(ct.dir, "x")
		n := ct.nextRequest()
		ct.stub.Push(stubmodel.Exec("touch x"), stubmodel.Text("x is there now"))
		turn := ct.startTurn(t, ct.bob, "@alice/codex please create x")
		p := codexPendingApproval(t, ct.alice, turn)
		hash, _ := p["payloadHash"].(string)
		if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(hash) {
			t.Fatalf("payloadHash %q", hash)
		}
		if p["tool"] != "exec_command" || !strings.Contains(p["summary"].(string), "touch x") || p["room"] != "dev" {
			t.Errorf("approval shows %v", p)
		}
		if p["tainted"] != true || !slices.Contains(codexSteeredBy(p), "bob") {
			t.Errorf("a turn bob started must be tainted and name bob: %v", p)
		}
		waitStatus(t, ct.alice, "alice/codex", "needs-approval")
		if codexFileExists(x) {
			t.Fatal("x exists before the owner decided")
		}

		if r := codexDecide(t, ct.bob, 403, p, "approve", hash); r.ErrCode() != "forbidden" {
			t.Fatalf("bob's approval: %s", r.Raw)
		}
		wrong := strings.Repeat("0", 64)
		if r := codexDecide(t, ct.alice, 409, p, "approve", wrong); r.ErrReason() != "hash-mismatch" {
			t.Fatalf("approval with another hash: %s", r.Raw)
		}
		if codexFileExists(x) {
			t.Fatal("x exists after refused decisions")
		}
		r := codexDecide(t, ct.alice, 200, p, "approve", hash)
		if ap := r.Body["approval"].(map[string]any); ap["status"] != "approved" || ap["decidedBy"] != "alice" || ap["tainted"] != true {
			t.Errorf("decided approval: %v", ap)
		}
		req := ct.stub.WaitRequest(t, n+1, codexWait)
		if outs := strings.Join(req.FunctionCallOutputs(), "\n"); !strings.Contains(outs, "exited with code 0") {
			t.Errorf("the model was told: %q", outs)
		}
		if !codexFileExists(x) {
			t.Fatal("the approved command did not create x")
		}
		waitAgentSays(t, ct.bob, "dev", "alice/codex", "x is there now")
		waitStatus(t, ct.alice, "alice/codex", "idle")
		if st := codexTurnEnded(t, ct.alice, turn); st != "completed" {
			t.Fatalf("turn ended %q, want completed", st)
		}
		codexDecide(t, ct.alice, 409, p, "approve", hash) // consumed once
	})

	t.Run("DenialReachesModelAsRejection", func(t *testing.T) {
		y := filepath.Join(ct.dir, "y")
		n := ct.nextRequest()
		ct.stub.Push(stubmodel.Exec("touch y"), stubmodel.Text("leaving y alone"))
		turn := ct.startTurn(t, ct.alice, "@alice/codex please create y")
		p := codexPendingApproval(t, ct.alice, turn)
		if p["tainted"] != false {
			t.Errorf("a turn only the owner steered is not tainted: %v", p)
		}
		r := codexDecide(t, ct.alice, 200, p, "deny", p["payloadHash"].(string))
		if ap := r.Body["approval"].(map[string]any); ap["status"] != "denied" {
			t.Errorf("decided approval: %v", ap)
		}
		req := ct.stub.WaitRequest(t, n+1, codexWait)
		if outs := strings.Join(req.FunctionCallOutputs(), "\n"); !strings.Contains(outs, "rejected") {
			t.Errorf("the model was not told the call was rejected: %q", outs)
		}
		waitAgentSays(t, ct.alice, "dev", "alice/codex", "leaving y alone")
		waitStatus(t, ct.alice, "alice/codex", "idle")
		if codexFileExists(y) {
			t.Fatal("a denied command created y")
		}
	})

	t.Run("StaleSteerNeverReachedModel", func(t *testing.T) {
		// Every later request carries the thread's history, so a stale steer
		// that had landed would show up in one of them.
		for _, req := range ct.stub.Requests() {
			if req.HasUserText("meant for the earlier turn") {
				t.Fatalf("request #%d carries the stale steer: %q", req.N, req.UserTexts())
			}
		}
	})

	t.Run("TerminalShowsWhatHappened", func(t *testing.T) {
		out := ct.br.Out()
		for _, want := range []string{"started @alice/codex turn", "steered @alice/codex turn", "rejected steer from @bob",
			"stopped @alice/codex", "approval needed", "tainted: steered by @bob", "approved", "denied by @alice"} {
			if !strings.Contains(out, want) {
				t.Errorf("bridge terminal lacks %q:\n%s", want, out)
			}
		}
	})

	t.Run("BridgeStopTakesAgentOffline", func(t *testing.T) {
		// Waiting here also lets the hub finish handling the bridge's last
		// heartbeat before the hub itself stops (see the hub's Link.stop).
		ct.br.Stop()
		waitStatus(t, ct.alice, "alice/codex", "offline")
	})
}
