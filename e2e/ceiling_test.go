package e2e_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wheelhouse-dev/wheelhouse/bridge"
	"github.com/wheelhouse-dev/wheelhouse/internal/stubmodel"
	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
)

// TestRoomCeilings drives the real codex behind the bridge with an
// obedient model. alice's codex runs her own words in the workspace-write
// sandbox without asking and auto-approves exec_command. She makes #public
// read-only for it and #asking ask: from #public a teammate's "wipe src"
// is refused without reaching her (codex runs the turn read-only; what asks
// to leave the sandbox the bridge denies unasked); from #asking even her
// own words reach her approval, whatever auto-approve says.
func TestRoomCeilings(t *testing.T) {
	ct := newCodexTeamWith(t, "on-request", "workspace-write",
		bridge.PolicyConfig{Address: "users", Allowed: []string{"bob"}, AutoApprove: []string{"exec_command"}})
	tm, stub, br := ct.team, ct.stub, ct.br
	stub.SetFallback(stubmodel.Obedient())
	src := filepath.Join(ct.dir, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "main.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const handle = "alice/codex"
	for _, room := range []string{"public", "asking"} {
		tm.alice.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": room})
		tm.bob.Must(200, "POST", "/api/v1/rooms/"+room+"/members", nil)
		tm.alice.AddAgent(room, handle)
	}
	// Stricter ceilings narrow: no signature needed.
	tm.alice.Must(200, "PATCH", "/api/v1/rooms/public/agents/alice/codex", map[string]any{"ceiling": "read-only"})
	tm.alice.Must(200, "PATCH", "/api/v1/rooms/asking/agents/alice/codex", map[string]any{"ceiling": "ask"})

	approvals := func() []map[string]any {
		var out []map[string]any
		for _, p := range testhub.AsList(tm.alice.Must(200, "GET", "/api/v1/approvals", nil).Body["approvals"]) {
			if p["agent"] == handle {
				out = append(out, p)
			}
		}
		return out
	}
	idle := func(t *testing.T) {
		t.Helper()
		testhub.WaitFor(t, codexWait, handle+" idle", func() bool { return agentStatus(t, tm.alice, handle)["status"] == "idle" })
	}

	t.Run("ShownToTheRoom", func(t *testing.T) {
		for room, want := range map[string]string{"public": "read-only", "asking": "ask", "dev": ""} {
			if room == "dev" {
				continue
			}
			for _, a := range testhub.AsList(tm.bob.Must(200, "GET", "/api/v1/rooms/"+room+"/agents", nil).Body["agents"]) {
				if a["handle"] == handle && a["ceiling"] != want {
					t.Fatalf("#%s shows ceiling %v, want %s", room, a["ceiling"], want)
				}
			}
		}
		// Loosening needs alice's device.
		r := tm.alice.Must(403, "PATCH", "/api/v1/rooms/public/agents/alice/codex", map[string]any{"ceiling": "normal"})
		if r.ErrReason() != "signature-required" {
			t.Fatalf("%s", r.Raw)
		}
	})

	t.Run("ReadOnlyRoomDeniesWithoutAsking", func(t *testing.T) {
		id, _ := post(t, tm.bob, "public", "@alice/codex wipe src\nescalate: rm -rf src", nil)
		turn := receipt(t, tm.bob, "public", id, handle, "started")["turnId"].(string)
		if s := codexTurnEnded(t, tm.alice, turn); s == "" {
			t.Fatal("the turn did not end")
		}
		if !codexFileExists(filepath.Join(src, "main.go")) {
			t.Fatal("src/ was deleted from a read-only room")
		}
		if ps := approvals(); len(ps) != 0 {
			t.Fatalf("alice was asked: %v", ps)
		}
		// The calls reached the gate, which refused them without asking;
		// the timeline shows what was refused.
		refused := 0
		for _, e := range testhub.AsList(tm.alice.Must(200, "GET", "/api/v1/agents/alice/codex/timeline?turn="+turn, nil).Body["entries"]) {
			if e["kind"] == "turn.tool" && strings.HasPrefix(str(e["detail"].(map[string]any)["text"]), "refused without asking: public is read-only") {
				refused++
			}
		}
		if refused == 0 || !strings.Contains(br.Out(), "denied exec_command without asking: public is read-only") {
			t.Fatalf("no call was refused at the gate (%d in the timeline):\n%s", refused, br.Out())
		}
		// Codex ran the turn in its read-only sandbox.
		req := stub.Requests()[len(stub.Requests())-1]
		if _, i := codexUserText(req, "Limits: the owner lets work started from room #public only read"); i < 0 {
			t.Fatalf("the envelope does not state the room's limit: %v", req.UserTexts())
		}
		idle(t)
	})

	t.Run("AskRoomReachesTheOwnerDespiteAutoApprove", func(t *testing.T) {
		id, _ := post(t, tm.alice, "asking", "@alice/codex wipe src", nil)
		turn := receipt(t, tm.alice, "asking", id, handle, "started")["turnId"].(string)
		p := codexPendingApproval(t, tm.alice, turn)
		if !strings.Contains(str(p["summary"]), "rm -rf src") || p["tainted"] != false {
			t.Fatalf("approval %v: want alice's own untainted call, asked anyway", p)
		}
		codexDecide(t, tm.alice, 200, p, "deny", p["payloadHash"].(string))
		codexTurnEnded(t, tm.alice, turn)
		if !codexFileExists(filepath.Join(src, "main.go")) {
			t.Fatal("src/ was deleted although alice denied")
		}
		idle(t)
	})
	if strings.Contains(br.Out(), "auto-approved") {
		t.Fatalf("the bridge auto-approved something:\n%s", br.Out())
	}
}
