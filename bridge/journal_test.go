package bridge

import (
	"encoding/json"
	"os"
	"path/filepath"
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
	j, err := openJournal(path, now)
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
	j, _ = openJournal(path, now)
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
	journal := func() []JournalEntry {
		j := &journal{now: time.Now}
		var out []JournalEntry
		add := func(e JournalEntry) {
			j.n++
			e.N, e.At, e.Prev = j.n, time.Date(2026, 1, 1, 0, 0, int(j.n), 0, time.UTC), j.last
			e.Hash = authz.ChainHash(e.Prev, e.body())
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
		}, journal, true, []string{"recomputed: entry seq 14 says approval a1 was approved, but @alice's decision was deny", "recomputed: entry seq 16", "missing: steer s2"}},
		{"HeadNamesEntryWithinEvent", base, func() []JournalEntry {
			j := journal()
			last := len(j) - 1
			j[last].HubHead = &wire.ChainHead{Seq: 16, Idx: 1, Hash: hub[5].Hash} // the second entry of event 16, which the hub no longer has
			for i := last; i < len(j); i++ {
				j[i].Hash = authz.ChainHash(j[i].Prev, j[i].body())
			}
			return j
		}, true, []string{"truncated: the timeline ends at seq 16, but the hub showed the bridge entry seq 16.1", "missing: steer s2"}},
		{"JournalEdited", base, func() []JournalEntry {
			j := journal()
			j[3].Text = "something else"
			return j
		}, true, []string{"journal: the bridge's own journal does not chain at entry 4"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := CompareJournal(c.hub(), c.jr(), c.chain)
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
