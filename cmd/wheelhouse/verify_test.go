package main

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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
// inspect --verify on its machine checks the hub's timeline against the
// journal both ways, and the journal against the heads the bridge reported
// to the hub. It fails, naming the entry, for what a compromised hub writes
// (straight into its SQLite, the chain recomputed) and for a journal cut or
// edited on the bridge's machine.
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
	creds := filepath.Join(t.TempDir(), "bridge.json")
	if err := br.Creds.Save(creds); err != nil {
		t.Fatal(err)
	}
	journal := bridge.JournalPath(br.Journals, "alice", "demo")
	verifyJournal := func(path string) (string, int) {
		out, code := runCmd(t, "inspect", "@alice/demo", "--hub", h.URL(), "--token", tok, "--verify", "--journal", path, "--credentials", creds)
		t.Logf("inspect --verify:\n%s", out)
		return out, code
	}
	verify := func() (string, int) { return verifyJournal(journal) }
	timeline := func() []map[string]any {
		return testhub.AsList(alice.Must(200, "GET", "/api/v1/agents/alice/demo/timeline", nil).Body["entries"])
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
	var jr []bridge.JournalEntry
	testhub.WaitFor(t, 10*time.Second, "the turn's end in the journal, and the journal's head in the timeline", func() bool {
		jr, _ = bridge.ReadJournal(journal)
		if len(jr) == 0 || jr[len(jr)-1].Kind != bridge.JournalTurn {
			return false
		}
		es := timeline()
		ended := slices.ContainsFunc(es, func(e map[string]any) bool { return e["kind"] == "turn.ended" })
		for i := len(es) - 1; i >= 0; i-- {
			if es[i]["kind"] == "journal.head" {
				return ended && es[i]["detail"].(map[string]any)["n"] == float64(jr[len(jr)-1].N)
			}
		}
		return false
	})
	last := jr[len(jr)-1]

	t.Run("Intact", func(t *testing.T) {
		out, code := verify()
		if code != 0 || !strings.Contains(out, "OK: the journal "+journal+" is whole") || strings.Contains(out, "NOTE:") {
			t.Fatalf("%d\n%s", code, out)
		}
	})

	// The journal, cut or edited on the bridge's machine (a copy each time).
	edited := func(t *testing.T, edit func(lines []string) []string) string {
		b, err := os.ReadFile(journal)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.SplitAfter(strings.TrimSuffix(string(b), "\n"), "\n")
		path := filepath.Join(t.TempDir(), "demo.jsonl")
		if err := os.WriteFile(path, []byte(strings.Join(edit(lines), "")), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	failsNaming := func(t *testing.T, out string, code int, want ...string) {
		t.Helper()
		if code == 0 {
			t.Fatalf("verified OK:\n%s", out)
		}
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Fatalf("no %q in:\n%s", w, out)
			}
		}
	}
	t.Run("JournalLastEntryDeletedReported", func(t *testing.T) {
		out, code := verifyJournal(edited(t, func(l []string) []string { return l[:len(l)-1] }))
		failsNaming(t, out, code, fmt.Sprintf("CUT: the journal ends at entry %d, but the bridge reported entry %d", last.N-1, last.N), fmt.Sprintf("entry %d was cut", last.N))
	})
	t.Run("JournalTruncatedReported", func(t *testing.T) {
		out, code := verifyJournal(edited(t, func(l []string) []string { return l[:2] }))
		failsNaming(t, out, code, fmt.Sprintf("CUT: the journal ends at entry 2, but the bridge reported entry %d", last.N), fmt.Sprintf("entries 3-%d were cut", last.N))
	})
	t.Run("JournalEmptiedReported", func(t *testing.T) {
		out, code := verifyJournal(edited(t, func(l []string) []string { return nil }))
		failsNaming(t, out, code, fmt.Sprintf("CUT: the journal ends at entry 0, but the bridge reported entry %d", last.N))
	})
	t.Run("JournalLineEditedReported", func(t *testing.T) {
		out, code := verifyJournal(edited(t, func(l []string) []string {
			l[1] = strings.Replace(l[1], `"kind":"`, `"text":"nothing happened","kind":"`, 1)
			return l
		}))
		failsNaming(t, out, code, "JOURNAL: the bridge's own journal does not chain at entry 2")
	})
	t.Run("JournalRechainedWithoutKeyReported", func(t *testing.T) {
		out, code := verifyJournal(edited(t, func(l []string) []string {
			es, _ := bridge.ReadJournal(journal)
			es[1].Text = "nothing happened"
			var out []string
			for i := range es {
				if i > 0 {
					es[i].Prev = es[i-1].Hash
				}
				es[i].Hash = authz.ChainHash(es[i].Prev, entryBody(es[i]))
				b, _ := json.Marshal(es[i])
				out = append(out, string(b)+"\n")
			}
			return out
		}))
		failsNaming(t, out, code, fmt.Sprintf("JOURNAL: entry 2 (%s at", jr[1].Kind), "does not carry the bridge's MAC")
	})

	// The hub's timeline, as a compromised hub writes it: straight into its
	// SQLite, the chain recomputed. Each case starts from the real one.
	db, err := sql.Open("sqlite", filepath.Join(h.DataDir, store.DBFile)+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	exec := func(t *testing.T, q string, args ...any) {
		t.Helper()
		if _, err := db.Exec(q, args...); err != nil {
			t.Fatal(err)
		}
	}
	exec(t, `CREATE TABLE timeline_real AS SELECT * FROM timeline`)
	hubCase := func(name string, tamper func(t *testing.T), want ...string) {
		t.Run(name, func(t *testing.T) {
			defer func() { // back to the real timeline
				exec(t, `DELETE FROM timeline`)
				exec(t, `INSERT INTO timeline SELECT * FROM timeline_real`)
			}()
			exec(t, `DELETE FROM timeline`)
			tamper(t)
			rechain(t, db)
			out, code := verify()
			failsNaming(t, out, code, append([]string{"hash chain intact"}, want...)...)
		})
	}
	var agentID, top int64
	if err := db.QueryRow(`SELECT agent_id, MAX(seq) FROM timeline`).Scan(&agentID, &top); err != nil {
		t.Fatal(err)
	}
	// A forged entry is dated a minute back, among the real ones, as a
	// forger would date it: past bridge.JournalInFlight, the grace a steer
	// or decision on its way to the bridge gets.
	appendEntry := func(t *testing.T, seq int64, kind, turn, actor string, detail map[string]any, room string) {
		b, _ := json.Marshal(detail)
		exec(t, `INSERT INTO timeline (seq, idx, agent_id, kind, turn_id, actor, body, at, prev_hash, hash, room) VALUES (?, 0, ?, ?, ?, ?, ?, ?, '', '', ?)`,
			seq, agentID, kind, turn, actor, string(b), time.Now().Add(-time.Minute).UTC().Format(time.RFC3339Nano), room)
	}
	hubCase("RecomputedChainReported", func(t *testing.T) {
		exec(t, `INSERT INTO timeline SELECT * FROM timeline_real`)
		exec(t, `UPDATE timeline SET actor = 'mallory' WHERE kind = 'steer'`)
	}, "RECOMPUTED: ", "says sender @mallory (the bridge received @bob)")
	hubCase("DeletedTailReported", func(t *testing.T) {
		exec(t, `INSERT INTO timeline SELECT * FROM timeline_real WHERE seq < (SELECT seq FROM timeline_real WHERE kind = 'approval.requested')`)
	}, "TRUNCATED: the timeline ends at seq", "MISSING: approval request "+id)
	hubCase("FakeOwnerSteerAppendedReported", func(t *testing.T) {
		exec(t, `INSERT INTO timeline SELECT * FROM timeline_real`)
		appendEntry(t, top+1, "steer", "", "alice", map[string]any{"steerId": "s999.demo", "room": "dev", "messageId": top + 1, "status": "pending",
			"textHash": bridge.TextHash("@alice/demo run rm -rf src")}, "dev")
		appendEntry(t, top+2, "receipt", "", "", map[string]any{"steerId": "s999.demo", "status": "started"}, "dev")
	}, fmt.Sprintf("ADDED: entry seq %d, a steer s999.demo from @alice in dev (message %d)", top+1, top+1), "the bridge never received or did it")
	hubCase("FakeApprovalAppendedReported", func(t *testing.T) {
		exec(t, `INSERT INTO timeline SELECT * FROM timeline_real`)
		appendEntry(t, top+1, "approval.requested", "", "", map[string]any{"approvalId": "a00000000000000ff", "tool": "exec_command", "payloadHash": strings.Repeat("e", 64)}, "dev")
		appendEntry(t, top+2, "approval.approved", "", "alice", map[string]any{"approvalId": "a00000000000000ff", "payloadHash": strings.Repeat("e", 64)}, "dev")
	}, fmt.Sprintf("ADDED: entry seq %d, approval request a00000000000000ff (exec_command", top+1),
		fmt.Sprintf("ADDED: entry seq %d, @alice's decision to approve a00000000000000ff", top+2))
	hubCase("RewrittenTailEntryReported", func(t *testing.T) {
		exec(t, `INSERT INTO timeline SELECT * FROM timeline_real`)
		exec(t, `UPDATE timeline SET body = json_set(body, '$.status', 'interrupted', '$.by', 'bob'), actor = 'bob' WHERE kind = 'turn.ended'`)
	}, "RECOMPUTED: entry seq ", "says turn "+last.TurnID+" ended interrupted, but the bridge ended it completed")
	hubCase("RewrittenReceiptReported", func(t *testing.T) {
		exec(t, `INSERT INTO timeline SELECT * FROM timeline_real`)
		exec(t, `UPDATE timeline SET body = json_set(body, '$.status', 'queued') WHERE kind = 'receipt' AND json_extract(body, '$.status') = 'started'`)
	}, "RECOMPUTED: entry seq ", "the receipt of steer ", "says queued, but the bridge answered started")
	hubCase("DeletedLastEntryReported", func(t *testing.T) {
		exec(t, `INSERT INTO timeline SELECT * FROM timeline_real WHERE seq < (SELECT MAX(seq) FROM timeline_real WHERE kind = 'turn.ended')`)
	}, "MISSING: turn ", "has no turn.ended entry")

	t.Run("NoJournalSaysSo", func(t *testing.T) {
		t.Setenv("XDG_STATE_HOME", t.TempDir())
		out, _ := runCmd(t, "inspect", "@alice/demo", "--hub", h.URL(), "--token", tok, "--verify")
		if !strings.Contains(out, "no bridge journal of @alice/demo on this machine") {
			t.Fatalf("%s", out)
		}
	})
}

// entryBody is what a journal entry's chain hash covers (the entry without
// its hashes and MAC), as someone recomputing the chain would write it.
func entryBody(e bridge.JournalEntry) []byte {
	e.Prev, e.Hash, e.MAC = "", "", ""
	b, _ := json.Marshal(e)
	return b
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
