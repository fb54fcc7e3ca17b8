package main

import (
	"database/sql"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/authz"
	"github.com/wheelhouse-dev/wheelhouse/bridge"
	"github.com/wheelhouse-dev/wheelhouse/chat"
	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
	"github.com/wheelhouse-dev/wheelhouse/store"
)

// TestInspectVerifyJournal: the bridge journals what it received and did;
// inspect --verify on its machine catches a timeline whose edit was covered
// by recomputing the chain (which the hub's chain alone cannot), and a
// deleted tail.
func TestInspectVerifyJournal(t *testing.T) {
	h := testhub.Start(t, testhub.Options{})
	admin := h.Setup("root", "correct horse")
	alice, bob := h.AddUser(admin, "alice"), h.AddUser(admin, "bob")
	alice.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "dev"})
	bob.Must(200, "POST", "/api/v1/rooms/dev/members", nil)
	br := h.StartBridge(alice, nil, bridge.AgentConfig{Name: "demo", Harness: "demo", Options: map[string]string{"steps": "2", "step": "10ms"},
		PolicyFile: bridge.PolicyConfig{Address: "members"}})
	alice.AddAgent("dev", "alice/demo")
	tok := alice.Must(201, "POST", "/api/v1/tokens", map[string]string{"label": "cli"}).Body["token"].(string)
	journal := bridge.JournalPath(br.Journals, "alice", "demo")
	verify := func() (string, int) {
		return runCmd(t, "inspect", "@alice/demo", "--hub", h.URL(), "--token", tok, "--verify", "--journal", journal)
	}

	// bob's steer, then an approval alice decides in the browser's API.
	bob.Post("dev", "@alice/demo delete notes.txt please")
	var id, hash string
	testhub.WaitFor(t, 10*time.Second, "the approval request", func() bool {
		for _, p := range testhub.AsList(alice.Must(200, "GET", "/api/v1/approvals?state=pending", nil).Body["approvals"]) {
			id, hash = p["id"].(string), p["payloadHash"].(string)
			return true
		}
		return false
	})
	alice.Must(200, "POST", "/api/v1/approvals/"+id, map[string]string{"decision": "deny", "payloadHash": hash})
	testhub.WaitFor(t, 10*time.Second, "the turn's end in the timeline and the journal", func() bool {
		out, _ := runCmd(t, "inspect", "@alice/demo", "--hub", h.URL(), "--token", tok)
		es, _ := bridge.ReadJournal(journal)
		return strings.Contains(out, "turn.ended") && len(es) > 0 && es[len(es)-1].Kind == bridge.JournalTurn
	})

	t.Run("Intact", func(t *testing.T) {
		out, code := verify()
		if code != 0 || !strings.Contains(out, "OK: the timeline holds all") {
			t.Fatalf("%d\n%s", code, out)
		}
	})
	db, err := sql.Open("sqlite", filepath.Join(h.DataDir, store.DBFile)+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	t.Run("RecomputedChainReported", func(t *testing.T) {
		if _, err := db.Exec(`UPDATE timeline SET actor = 'mallory' WHERE kind = 'steer'`); err != nil {
			t.Fatal(err)
		}
		rechain(t, db)
		out, code := verify()
		t.Logf("inspect --verify:\n%s", out)
		if code == 0 || !strings.Contains(out, "OK: ") || !strings.Contains(out, "hash chain intact") ||
			!strings.Contains(out, "RECOMPUTED: ") || !strings.Contains(out, "says sender @mallory (the bridge received @bob)") {
			t.Fatalf("a recomputed chain passed: %d\n%s", code, out)
		}
	})
	t.Run("DeletedTailReported", func(t *testing.T) {
		if _, err := db.Exec(`DELETE FROM timeline WHERE seq >= (SELECT seq FROM timeline WHERE kind = 'approval.requested')`); err != nil {
			t.Fatal(err)
		}
		out, code := verify()
		t.Logf("inspect --verify:\n%s", out)
		if code == 0 || !strings.Contains(out, "hash chain intact") || !strings.Contains(out, "TRUNCATED: the timeline ends at seq") ||
			!strings.Contains(out, "MISSING: approval request "+id) {
			t.Fatalf("a deleted tail passed: %d\n%s", code, out)
		}
	})
	t.Run("NoJournalSaysSo", func(t *testing.T) {
		t.Setenv("XDG_STATE_HOME", t.TempDir())
		out, _ := runCmd(t, "inspect", "@alice/demo", "--hub", h.URL(), "--token", tok, "--verify")
		if !strings.Contains(out, "no bridge journal of @alice/demo on this machine") {
			t.Fatalf("%s", out)
		}
	})
}

// rechain recomputes every timeline hash the way the hub does
// (chat.EntryBody), as someone covering an edit would.
func rechain(t *testing.T, db *sql.DB) {
	t.Helper()
	rows, err := db.Query(`SELECT seq, idx, agent_id, kind, turn_id, actor, body, at FROM timeline ORDER BY agent_id, seq, idx`)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		e     chat.TimelineEntry
		agent int64
	}
	var all []row
	for rows.Next() {
		var r row
		var body, at string
		rows.Scan(&r.e.Seq, &r.e.Idx, &r.agent, &r.e.Kind, &r.e.TurnID, &r.e.Actor, &body, &at)
		r.e.Detail = json.RawMessage(body)
		r.e.At, _ = time.Parse(time.RFC3339Nano, at)
		all = append(all, r)
	}
	rows.Close()
	prev, agent := "", int64(-1)
	for _, r := range all {
		if r.agent != agent {
			prev, agent = "", r.agent
		}
		hash := authz.ChainHash(prev, chat.EntryBody(r.e))
		if _, err := db.Exec(`UPDATE timeline SET prev_hash = ?, hash = ? WHERE seq = ? AND idx = ? AND agent_id = ?`, prev, hash, r.e.Seq, r.e.Idx, r.agent); err != nil {
			t.Fatal(err)
		}
		prev = hash
	}
}
