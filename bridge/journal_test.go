package bridge

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/authz"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

func TestJournalFile(t *testing.T) {
	dir := t.TempDir()
	path := JournalPath(dir, "alice", "codex")
	now := func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }
	key := JournalKey("SUAtest-seed")
	j, err := openJournal(path, key, now)
	if err != nil {
		t.Fatal(err)
	}
	j.add(JournalEntry{Kind: JournalSteer, SteerID: "s1", Sender: "bob"})
	j.add(JournalEntry{Kind: JournalTool, TurnID: "u1", Text: "$ ls → exit 0"})
	j.close()
	// A torn last write, then a reopen: the chain continues from entry 2.
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"n":3,"kind":"ste`)
	f.Close()
	j, _ = openJournal(path, key, now)
	j.add(JournalEntry{Kind: JournalDecision, ApprovalID: "a1", Status: "approve", By: "alice"})
	j.close()

	t.Run("ModeAndFolder", func(t *testing.T) {
		fi, _ := os.Stat(path)
		di, _ := os.Stat(filepath.Dir(path))
		if fi.Mode().Perm() != 0o600 || di.Mode().Perm() != 0o700 {
			t.Fatalf("file %v folder %v", fi.Mode(), di.Mode())
		}
	})
	es, err := ReadJournal(path)
	t.Run("ChainsAcrossReopen", func(t *testing.T) {
		if err != nil || len(es) != 3 || es[2].N != 3 || es[2].Prev != es[1].Hash || VerifyJournal(es) != -1 {
			t.Fatalf("entries %+v, err %v, verify %d", es, err, VerifyJournal(es))
		}
	})
	t.Run("EditIsCaught", func(t *testing.T) {
		bad := append([]JournalEntry(nil), es...)
		bad[1].Text = "$ rm -rf / → exit 0"
		if VerifyJournal(bad) != 1 {
			t.Fatal("an edited entry verifies")
		}
	})
	t.Run("KeyedAndHead", func(t *testing.T) {
		for _, e := range es {
			if e.Key != JournalKeyID(key) || e.MAC != JournalMAC(key, e.Hash) {
				t.Fatalf("entry %d is not bound to the key: %+v", e.N, e)
			}
		}
		j, _ := openJournal(path, key, now)
		defer j.close()
		if h := j.head(); h == nil || h.N != 3 || h.Hash != es[2].Hash || h.MAC != es[2].MAC {
			t.Fatalf("head %+v", h)
		}
	})
	t.Run("DeletionIsCaught", func(t *testing.T) {
		bad := append([]JournalEntry{es[0]}, es[2])
		if VerifyJournal(bad) != 1 {
			t.Fatal("a deleted entry verifies")
		}
	})
}

// hubChain builds a hub timeline the way the hub chains it (hash over the
// previous hash and the entry's body), so CompareJournal sees a verifying
// chain unless a case breaks it.
func hubChain(es []HubEntry) []HubEntry {
	prev := ""
	for i := range es {
		es[i].Prev = prev
		body, _ := json.Marshal(es[i].Detail)
		es[i].Hash = authz.ChainHash(prev, append([]byte(es[i].Kind+es[i].Actor), body...))
		prev = es[i].Hash
	}
	return es
}

func TestCompareJournal(t *testing.T) {
	det := func(kv ...any) json.RawMessage {
		m := map[string]any{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		b, _ := json.Marshal(m)
		return b
	}
	base := func() []HubEntry {
		return hubChain([]HubEntry{
			{Seq: 10, Kind: "registered", Detail: det()},
			{Seq: 12, Kind: "steer", Actor: "bob", Detail: det("steerId", "s1", "room", "dev", "messageId", 7)},
			{Seq: 13, Kind: "approval.requested", TurnID: "u1", Detail: det("approvalId", "a1", "tool", "exec_command", "payloadHash", "h1")},
			{Seq: 14, Kind: "approval.denied", TurnID: "u1", Actor: "alice", Detail: det("approvalId", "a1", "payloadHash", "h1")},
			{Seq: 15, Kind: "turn.tool", TurnID: "u1", Detail: det("text", "$ rm notes.txt → declined")},
			{Seq: 16, Kind: "policy", Actor: "alice", Detail: det()},
		})
	}
	hub := base()
	key := JournalKey("SUAtest-seed")
	now := time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC)
	journal := func() []JournalEntry {
		j := &journal{now: time.Now}
		var out []JournalEntry
		add := func(e JournalEntry) {
			j.n++
			e.N, e.At, e.Prev, e.Key = j.n, time.Date(2026, 1, 1, 0, 0, int(j.n), 0, time.UTC), j.last, JournalKeyID(key)
			e.Hash = authz.ChainHash(e.Prev, e.body())
			e.MAC = JournalMAC(key, e.Hash)
			j.last = e.Hash
			out = append(out, e)
		}
		add(JournalEntry{Kind: JournalSteer, SteerID: "s1", Sender: "bob", Room: "dev", MessageID: 7, HubHead: &wire.ChainHead{Seq: 12, Hash: hub[1].Hash}})
		add(JournalEntry{Kind: JournalApproval, ApprovalID: "a1", Tool: "exec_command", PayloadHash: "h1"})
		add(JournalEntry{Kind: JournalDecision, ApprovalID: "a1", Status: "deny", By: "alice", PayloadHash: "h1", HubHead: &wire.ChainHead{Seq: 13, Hash: hub[2].Hash}})
		add(JournalEntry{Kind: JournalTool, TurnID: "u1", Text: "$ rm notes.txt → declined"})
		add(JournalEntry{Kind: JournalSteer, SteerID: "s2", Sender: "alice", Room: "dev", MessageID: 9, HubHead: &wire.ChainHead{Seq: 16, Hash: hub[5].Hash}})
		return out
	}
	cases := []struct {
		name  string
		hub   func() []HubEntry
		jr    func() []JournalEntry
		chain bool
		want  []string // "kind: substring" of each finding, in order
	}{
		{"Intact", func() []HubEntry {
			h := base()
			return append(h, hubChain(append(append([]HubEntry(nil), h...), HubEntry{Seq: 17, Kind: "steer", Actor: "alice", Detail: det("steerId", "s2", "room", "dev", "messageId", 9)}))[6])
		}, journal, true, nil},
		{"SenderRewrittenChainRecomputed", func() []HubEntry {
			h := base()
			h[1].Actor = "mallory"
			return hubChain(h)
		}, journal, true, []string{"recomputed: entry seq 12 now has hash", "recomputed: entry seq 12, steer s1, says sender @mallory (the bridge received @bob)", "recomputed: entry seq 13 now has hash", "recomputed: entry seq 16", "missing: steer s2"}},
		{"EditedWithoutRecompute", func() []HubEntry {
			h := base()
			h[2].Detail = det("approvalId", "a1", "tool", "exec_command", "payloadHash", "h2")
			return h
		}, journal, false, []string{"edited: entry seq 13, approval request a1, says exec_command with hash h2", "missing: steer s2"}},
		{"TailDeleted", func() []HubEntry { return base()[:3] }, journal, true,
			[]string{"missing: @alice's decision to deny a1", "missing: tool event of turn u1", "truncated: the timeline ends at seq 13, but the hub showed the bridge entry seq 16", "missing: steer s2"}},
		{"MiddleDeleted", func() []HubEntry {
			h := base()
			return hubChain(append(h[:2:2], h[3:]...))
		}, journal, true, []string{"missing: approval request a1", "deleted: entry seq 13", "recomputed: entry seq 16", "missing: steer s2"}},
		{"DecisionFlipped", func() []HubEntry {
			h := base()
			h[3].Kind = "approval.approved"
			return hubChain(h)
		}, journal, true, []string{"recomputed: entry seq 14 says approval a1 was approved, but @alice's decision was deny", "recomputed: entry seq 16", "missing: steer s2",
			"added: entry seq 14, @alice's decision to approve a1"}},
		{"HeadNamesEntryWithinEvent", base, func() []JournalEntry {
			j := journal()
			last := len(j) - 1
			j[last].HubHead = &wire.ChainHead{Seq: 16, Idx: 1, Hash: hub[5].Hash} // the second entry of event 16, which the hub no longer has
			for i := last; i < len(j); i++ {
				j[i].Hash = authz.ChainHash(j[i].Prev, j[i].body())
				j[i].MAC = JournalMAC(key, j[i].Hash)
			}
			return j
		}, true, []string{"truncated: the timeline ends at seq 16, but the hub showed the bridge entry seq 16.1", "missing: steer s2"}},
		{"JournalEdited", base, func() []JournalEntry {
			j := journal()
			j[3].Text = "something else"
			return j
		}, true, []string{"journal: the bridge's own journal does not chain at entry 4"}},
	}
	withS2 := func() []HubEntry { return cases[0].hub() }
	journalWith := func(extra ...JournalEntry) []JournalEntry {
		j := journal()
		for _, e := range extra {
			last := j[len(j)-1]
			e.N, e.At, e.Prev, e.Key = last.N+1, last.At.Add(time.Second), last.Hash, JournalKeyID(key)
			e.Hash = authz.ChainHash(e.Prev, e.body())
			e.MAC = JournalMAC(key, e.Hash)
			j = append(j, e)
		}
		return j
	}
	appended := func(es ...HubEntry) func() []HubEntry {
		return func() []HubEntry { return hubChain(append(withS2(), es...)) }
	}
	anchor := func(e JournalEntry, mac string) HubEntry {
		return HubEntry{Seq: 30, Kind: "journal.head", Detail: det("n", e.N, "hash", e.Hash, "mac", mac, "bridge", "b1")}
	}
	unkeyed := func(which ...int) func() []JournalEntry { // these entries were written without a key
		return func() []JournalEntry {
			j := journal()
			for i := range j {
				if slices.Contains(which, i) {
					j[i].Key, j[i].MAC = "", ""
				}
				if i > 0 {
					j[i].Prev = j[i-1].Hash
				}
				j[i].Hash = authz.ChainHash(j[i].Prev, j[i].body())
				if j[i].Key != "" {
					j[i].MAC = JournalMAC(key, j[i].Hash)
				}
			}
			return j
		}
	}
	cases = append(cases, []struct {
		name  string
		hub   func() []HubEntry
		jr    func() []JournalEntry
		chain bool
		want  []string
	}{
		{"FakeOwnerSteerAppended", appended(HubEntry{Seq: 18, Kind: "steer", Actor: "alice", Detail: det("steerId", "s9", "room", "dm:alice", "messageId", 20, "status", "pending")}), journal, true,
			[]string{"added: entry seq 18, a steer s9 from @alice in dm:alice (message 20)"}},
		{"FakeApprovalAppended", appended(
			HubEntry{Seq: 18, Kind: "approval.requested", TurnID: "u1", Detail: det("approvalId", "a9", "tool", "exec_command", "payloadHash", "h9")},
			HubEntry{Seq: 19, Kind: "approval.approved", TurnID: "u1", Actor: "alice", Detail: det("approvalId", "a9", "payloadHash", "h9")}), journal, true,
			[]string{"added: entry seq 18, approval request a9 (exec_command", "added: entry seq 19, @alice's decision to approve a9"}},
		{"HubRefusedSteerIsNotTheBridges", appended(
			HubEntry{Seq: 18, Kind: "steer", Actor: "carol", Detail: det("steerId", "s10", "room", "dev", "status", "rejected", "reason", "not-a-member")},
			HubEntry{Seq: 19, Kind: "steer", Actor: "carol", Detail: det("steerId", "s11", "room", "dev", "status", "pending")},
			HubEntry{Seq: 20, Kind: "receipt", Detail: det("steerId", "s11", "status", "expired", "reason", "expired")},
			HubEntry{Seq: 21, Kind: "turn.ended", TurnID: "u7", Detail: det("status", "failed", "reason", "the agent's machine went offline")},
			HubEntry{Seq: 22, Kind: "steer", Actor: "carol", Detail: det("steerId", "s12", "room", "dev", "status", "held", "reason", "moderated")}), journal, true, nil},
		{"HeldSteerDeliveredIsTheBridges", appended(
			HubEntry{Seq: 18, Kind: "steer", Actor: "carol", Detail: det("steerId", "s12", "room", "dev", "status", "held", "reason", "moderated")},
			HubEntry{Seq: 19, Kind: "receipt", Detail: det("steerId", "s12", "status", "started")}), journal, true,
			[]string{"added: entry seq 18, a steer s12 from @carol in dev"}},
		{"ToolRewrittenAtTail", appended(HubEntry{Seq: 18, Kind: "turn.tool", TurnID: "u2", Detail: det("text", "$ rm -rf src → exit 0")}), journal, true,
			[]string{"added: entry seq 18, a tool event of turn u2 ($ rm -rf src → exit 0)"}},
		{"HeadsReached", func() []HubEntry { j := journal(); return appended(anchor(j[2], j[2].MAC), anchor(j[4], j[4].MAC))() }, journal, true, nil},
		{"JournalCut", func() []HubEntry { j := journal(); return appended(anchor(j[4], j[4].MAC))() }, func() []JournalEntry { return journal()[:2] }, true,
			[]string{"cut: the journal ends at entry 2, but the bridge reported entry 5 (hash"}},
		{"JournalLastEntryDeleted", func() []HubEntry { j := journal(); return appended(anchor(j[4], j[4].MAC))() }, func() []JournalEntry { return journal()[:4] }, true,
			[]string{"cut: the journal ends at entry 4, but the bridge reported entry 5"}},
		{"JournalRewrittenWithoutKey", func() []HubEntry { j := journal(); return appended(anchor(j[4], j[4].MAC))() }, func() []JournalEntry {
			j := journal()
			j[3].Text = "$ ls → exit 0"
			for i := 3; i < len(j); i++ { // the chain recomputed, but not the MACs: no key
				j[i].Prev = j[i-1].Hash
				j[i].Hash = authz.ChainHash(j[i].Prev, j[i].body())
			}
			return j
		}, true, []string{"journal: entry 4 (tool at", "journal: entry 5 of the journal has hash"}},
		{"JournalForgedAnchorNoted", func() []HubEntry { j := journal(); return appended(anchor(j[4], strings.Repeat("0", 64)))() }, journal, true,
			[]string{"note: 1 journal heads in the timeline do not carry this bridge's MAC"}},
		{"JournalUnkeyedPrefixNoted", withS2, unkeyed(0, 1), true, []string{"note: entries 1-2 were written before the journal was keyed"}},
		{"JournalUnkeyedAfterKeyed", withS2, func() []JournalEntry {
			return unkeyed(3)()
		}, true, []string{"journal: entry 4 (tool) is not bound to the bridge's key"}},
		{"JournalNoKeyNoted", withS2, journal, true, nil},
		{"HubEndingsHeardAndRecorded", func() []HubEntry {
			return appended(HubEntry{Seq: 18, Kind: "steer", Actor: "bob", Detail: det("steerId", "s3", "room", "dev", "status", "pending")},
				HubEntry{Seq: 19, Kind: "receipt", Detail: det("steerId", "s3", "status", "queued")},
				HubEntry{Seq: 20, Kind: "approval.requested", TurnID: "u1", Detail: det("approvalId", "a5", "tool", "exec_command", "payloadHash", "h5")},
				HubEntry{Seq: 21, Kind: "turn.ended", TurnID: "u1", Detail: det("status", "failed", "reason", "the agent's machine went offline")},
				HubEntry{Seq: 21, Idx: 1, Kind: "approval.voided", TurnID: "u1", Detail: det("approvalId", "a5")},
				HubEntry{Seq: 21, Idx: 2, Kind: "receipt", Detail: det("steerId", "s3", "status", "expired", "reason", "expired")})()
		}, func() []JournalEntry {
			return journalWith(
				JournalEntry{Kind: JournalSteer, SteerID: "s3", Sender: "bob", Room: "dev", Status: "queued"},
				JournalEntry{Kind: JournalHub, Status: "approval unanswered", ApprovalID: "a5", Text: "nats: timeout"},
				JournalEntry{Kind: JournalHub, Status: "steer expired", SteerID: "s3"},
				JournalEntry{Kind: JournalHub, Status: "approval voided", ApprovalID: "a5"},
				JournalEntry{Kind: JournalHub, Status: "turn ended", TurnID: "u1"})
		}, true, nil},
		{"HubEndingNotRecorded", withS2, func() []JournalEntry {
			return journalWith(JournalEntry{Kind: JournalHub, Status: "turn ended", TurnID: "u9"})
		}, true, []string{"missing: the hub told the bridge on 2026-01-01T00:00:06Z: turn ended u9; the timeline has no entry of it"}},
		{"ReceiptRewrittenAfterLastHead", func() []HubEntry {
			return appended(HubEntry{Seq: 18, Kind: "receipt", Detail: det("steerId", "s2", "status", "queued")},
				HubEntry{Seq: 19, Kind: "receipt", Detail: det("steerId", "s2", "status", "delivered")})()
		}, func() []JournalEntry {
			j := journal()
			j[4].Status = "started"
			j[4].Hash = authz.ChainHash(j[4].Prev, j[4].body())
			j[4].MAC = JournalMAC(key, j[4].Hash)
			return j
		}, true, []string{"recomputed: entry seq 18, the receipt of steer s2, says queued, but the bridge answered started"}},
		{"ReceiptsThatFollowAgree", func() []HubEntry {
			return appended(HubEntry{Seq: 18, Kind: "receipt", Detail: det("steerId", "s2", "status", "started")},
				HubEntry{Seq: 19, Kind: "receipt", Detail: det("steerId", "s2", "status", "done")})()
		}, func() []JournalEntry {
			j := journal()
			j[4].Status = "started"
			j[4].Hash = authz.ChainHash(j[4].Prev, j[4].body())
			j[4].MAC = JournalMAC(key, j[4].Hash)
			return j
		}, true, nil},
		{"DecisionInFlightNoted", appended(
			HubEntry{Seq: 18, Kind: "approval.requested", TurnID: "u1", At: now.Add(-JournalInFlight / 2), Detail: det("approvalId", "a9", "tool", "exec_command", "payloadHash", "h9")},
			HubEntry{Seq: 19, Kind: "approval.approved", TurnID: "u1", Actor: "alice", At: now.Add(-JournalInFlight / 2), Detail: det("approvalId", "a9", "payloadHash", "h9")}), journal, true,
			[]string{"note: entry seq 18, approval request a9", "note: entry seq 19, @alice's decision to approve a9 at 2026-01-01T00:59:52Z, is not in the bridge's journal yet"}},
		{"ReachedSteerIsNotInFlight", appended(
			HubEntry{Seq: 18, Kind: "steer", Actor: "alice", At: now, Detail: det("steerId", "s9", "room", "dev", "status", "pending")},
			HubEntry{Seq: 19, Kind: "receipt", At: now, Detail: det("steerId", "s9", "status", "started")}), journal, true,
			[]string{"added: entry seq 18, a steer s9"}},
	}...)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			key := key
			if c.name == "JournalNoKeyNoted" {
				key = nil
				c.want = []string{"note: this machine has no bridge credentials"}
			}
			got := CompareJournal(c.hub(), c.jr(), c.chain, key, now)
			var lines []string
			for _, f := range got {
				lines = append(lines, f.Kind+": "+f.Message)
			}
			if len(lines) != len(c.want) {
				t.Fatalf("findings:\n%s\nwant %d:\n%s", strings.Join(lines, "\n"), len(c.want), strings.Join(c.want, "\n"))
			}
			for i, w := range c.want {
				if !strings.HasPrefix(lines[i], w) && !strings.Contains(lines[i], w) {
					t.Fatalf("finding %d:\n%s\nwant %q\nall:\n%s", i, lines[i], w, strings.Join(lines, "\n"))
				}
			}
		})
	}
}

// BenchmarkJournalAdd: the cost of one journal entry, unkeyed and bound to
// the bridge's key (the MAC is one HMAC-SHA256 over the chain hash).
func BenchmarkJournalAdd(b *testing.B) {
	for _, c := range []struct {
		name string
		key  []byte
	}{{"Unkeyed", nil}, {"Keyed", JournalKey("SUAbench-seed")}} {
		b.Run(c.name, func(b *testing.B) {
			j, err := openJournal(filepath.Join(b.TempDir(), "j.jsonl"), c.key, time.Now)
			if err != nil {
				b.Fatal(err)
			}
			defer j.close()
			e := JournalEntry{Kind: JournalSteer, SteerID: "s1.demo", Sender: "bob", Room: "dev", MessageID: 7, TextHash: TextHash("hello"), Status: "started"}
			for b.Loop() {
				if err := j.add(e); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkJournalMAC is the MAC alone.
func BenchmarkJournalMAC(b *testing.B) {
	key, h := JournalKey("SUAbench-seed"), strings.Repeat("a", 64)
	for b.Loop() {
		JournalMAC(key, h)
	}
}

// FuzzCompareJournal: whatever timeline a hostile hub serves, the check
// against a real journal ends with findings, never a panic.
func FuzzCompareJournal(f *testing.F) {
	dir := f.TempDir()
	key := JournalKey("SUAfuzz-seed")
	j, err := openJournal(JournalPath(dir, "alice", "demo"), key, time.Now)
	if err != nil {
		f.Fatal(err)
	}
	j.add(JournalEntry{Kind: JournalSteer, SteerID: "s1", Sender: "bob", Room: "dev", Status: "started", HubHead: &wire.ChainHead{Seq: 2, Hash: "x"}})
	j.add(JournalEntry{Kind: JournalTurn, TurnID: "u1", Status: "started"})
	j.add(JournalEntry{Kind: JournalTurn, TurnID: "u1", Status: "ended completed"})
	j.close()
	jr, _ := ReadJournal(JournalPath(dir, "alice", "demo"))
	f.Add([]byte(`[{"seq":2,"kind":"steer","actor":"bob","detail":{"steerId":"s1","room":"dev"}},{"seq":3,"kind":"journal.head","detail":{"n":9,"hash":"h","mac":"m"}}]`))
	f.Add([]byte(`[{"seq":1,"kind":"journal.head","detail":{"n":-1,"hash":1}},{"seq":2,"kind":"receipt","detail":{"steerId":"s1","status":"queued"}},{"seq":2,"idx":-3,"kind":"turn.ended","turnId":"u1","detail":[]}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var hub []HubEntry
		if json.Unmarshal(data, &hub) != nil {
			return
		}
		for _, k := range [][]byte{key, nil} {
			for _, intact := range []bool{true, false} {
				CompareJournal(hub, jr, intact, k, time.Now())
				CompareJournal(hub, jr[:1], intact, k, time.Time{})
			}
		}
	})
}
