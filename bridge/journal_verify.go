package bridge

import (
	"bytes"
	"crypto/hmac"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// HubEntry is one entry of the hub's timeline of an agent, as
// GET /api/v1/agents/{owner}/{name}/timeline returns it.
type HubEntry struct {
	Seq    uint64          `json:"seq"`
	Idx    int             `json:"idx,omitempty"`
	Kind   string          `json:"kind"`
	TurnID string          `json:"turnId,omitempty"`
	Actor  string          `json:"actor,omitempty"`
	Detail json.RawMessage `json:"detail"`
	At     time.Time       `json:"at"`
	Prev   string          `json:"prevHash"`
	Hash   string          `json:"hash"`
}

// Finding kinds of CompareJournal.
const (
	FindingEdited     = "edited"     // an entry differs from what the bridge recorded
	FindingRecomputed = "recomputed" // it differs although the hub's chain verifies: the chain was recomputed
	FindingTruncated  = "truncated"  // the timeline ends before an entry the hub once showed the bridge
	FindingDeleted    = "deleted"    // an entry the hub once showed the bridge is gone from the middle
	FindingMissing    = "missing"    // something the bridge received or reported has no entry
	FindingJournal    = "journal"    // the bridge's own journal does not chain, or an entry's MAC is wrong
	FindingAdded      = "added"      // the timeline has a steer, approval, decision or turn the bridge never journaled
	FindingCut        = "cut"        // the journal ends before the head the bridge reported to the hub
	FindingNote       = "note"       // not a problem: what could not be checked, and why
)

// Finding is one discrepancy between the hub's timeline and the journal.
type Finding struct {
	Kind    string
	Message string
}

func (f Finding) String() string { return strings.ToUpper(f.Kind) + ": " + f.Message }

// Problem says whether the finding fails the verification (a note does not).
func (f Finding) Problem() bool { return f.Kind != FindingNote }

// CompareJournal checks the hub's timeline of an agent against the bridge's
// journal of it, both ways. chainIntact says whether the hub's own hash
// chain verified: when it does, any entry that differs from the journal was
// rewritten with the later hashes recomputed. key is the bridge's journal
// key (JournalKey; nil: the MACs cannot be checked here). now is when the
// timeline was read: a steer or approval the journal lacks that is younger
// than JournalInFlight is noted as possibly on its way to the bridge, not
// failed (zero: no grace). It returns no
// problems when the journal is whole (its chain and MACs verify, and it
// reaches every head the bridge reported to the hub), the timeline holds
// everything the journal says the bridge saw and did, unchanged, and the
// timeline holds no steer, approval, decision, turn or tool event the
// bridge never journaled.
func CompareJournal(hub []HubEntry, jr []JournalEntry, chainIntact bool, key []byte, now time.Time) []Finding {
	var out []Finding
	add := func(kind, format string, args ...any) { out = append(out, Finding{kind, fmt.Sprintf(format, args...)}) }
	changed := FindingEdited
	if chainIntact {
		changed = FindingRecomputed
	}
	all := jr
	whole := true
	if bad := VerifyJournal(jr); bad >= 0 {
		add(FindingJournal, "the bridge's own journal does not chain at entry %d: it was edited, so it proves nothing after that", bad+1)
		jr, whole = jr[:bad], false
	}
	keyed, keyFindings := checkJournalKey(jr, key)
	out = append(out, keyFindings...)
	if keyed < len(jr) {
		jr, whole = jr[:keyed], false
	}
	anchors := checkAnchors(hub, all, key)
	out = append(out, anchors...)
	if slices.ContainsFunc(anchors, func(f Finding) bool { return f.Kind == FindingCut }) {
		whole = false // what the cut end held is unknown: the timeline past the last match is not held against it
	}
	type pos struct {
		seq uint64
		idx int
	}
	byPos := map[pos]HubEntry{}
	var last pos
	for _, e := range hub {
		p := pos{e.Seq, e.Idx}
		byPos[p] = e
		if p.seq > last.seq || (p.seq == last.seq && p.idx > last.idx) {
			last = p
		}
	}
	name := func(p pos) string {
		if p.idx > 0 {
			return fmt.Sprintf("seq %d.%d", p.seq, p.idx)
		}
		return fmt.Sprintf("seq %d", p.seq)
	}
	find := func(kind, key, val string) (HubEntry, bool) {
		for _, e := range hub {
			if e.Kind == kind && detailString(e.Detail, key) == val {
				return e, true
			}
		}
		return HubEntry{}, false
	}
	tools := map[string]int{} // turn + "\n" + text → count on the hub
	for _, e := range hub {
		if e.Kind == "turn.tool" {
			tools[e.TurnID+"\n"+detailString(e.Detail, "text")]++
		}
	}
	seenHead := map[pos]bool{}
	for _, j := range jr {
		when := j.At.Format(time.RFC3339)
		if h := j.HubHead; h != nil && !seenHead[pos{h.Seq, h.Idx}] {
			p := pos{h.Seq, h.Idx}
			seenHead[p] = true
			e, ok := byPos[p]
			switch {
			case ok && e.Hash != h.Hash:
				add(changed, "entry %s now has hash %s, but the hub showed the bridge %s for it on %s: it or an entry before it was rewritten", name(p), short(e.Hash), short(h.Hash), when)
			case !ok && (p.seq > last.seq || (p.seq == last.seq && p.idx > last.idx)):
				add(FindingTruncated, "the timeline ends at %s, but the hub showed the bridge entry %s (hash %s) on %s: entries were deleted from its end", name(last), name(p), short(h.Hash), when)
			case !ok:
				add(FindingDeleted, "entry %s (hash %s), which the hub showed the bridge on %s, is gone", name(p), short(h.Hash), when)
			}
		}
		switch j.Kind {
		case JournalSteer:
			e, ok := find("steer", "steerId", j.SteerID)
			if !ok {
				add(FindingMissing, "steer %s from @%s in %s (message %d), received %s, has no entry", j.SteerID, j.Sender, j.Room, j.MessageID, when)
				continue
			}
			var diffs []string
			if e.Actor != j.Sender {
				diffs = append(diffs, fmt.Sprintf("sender @%s (the bridge received @%s)", e.Actor, j.Sender))
			}
			if r := detailString(e.Detail, "room"); r != j.Room {
				diffs = append(diffs, fmt.Sprintf("room %s (received %s)", r, j.Room))
			}
			if m := detailInt(e.Detail, "messageId"); m != j.MessageID {
				diffs = append(diffs, fmt.Sprintf("message %d (received %d)", m, j.MessageID))
			}
			if len(diffs) > 0 {
				add(changed, "entry seq %d, steer %s, says %s", e.Seq, j.SteerID, strings.Join(diffs, ", "))
			}
			if r, ok := receiptAgainst(hub, j); ok {
				add(changed, "entry seq %d, the receipt of steer %s, says %s, but the bridge answered %s", r.Seq, j.SteerID, detailString(r.Detail, "status"), j.Status)
			}
		case JournalApproval:
			e, ok := find("approval.requested", "approvalId", j.ApprovalID)
			if !ok {
				add(FindingMissing, "approval request %s (%s, hash %s), acknowledged by the hub on %s, has no entry", j.ApprovalID, j.Tool, short(j.PayloadHash), when)
				continue
			}
			if t, h := detailString(e.Detail, "tool"), detailString(e.Detail, "payloadHash"); t != j.Tool || h != j.PayloadHash {
				add(changed, "entry seq %d, approval request %s, says %s with hash %s; the bridge asked for %s with hash %s", e.Seq, j.ApprovalID, t, short(h), j.Tool, short(j.PayloadHash))
			}
		case JournalDecision:
			if j.Status != "approve" && j.Status != "deny" {
				continue // voids and expiries are the hub's or the bridge's, not the owner's
			}
			kind := map[string]string{"approve": "approval.approved", "deny": "approval.denied"}[j.Status]
			e, ok := find(kind, "approvalId", j.ApprovalID)
			if !ok {
				if other, found := findAny(hub, "approvalId", j.ApprovalID, "approval.approved", "approval.denied"); found {
					add(changed, "entry seq %d says approval %s was %s, but @%s's decision was %s", other.Seq, j.ApprovalID, strings.TrimPrefix(other.Kind, "approval."), j.By, j.Status)
				} else {
					add(FindingMissing, "@%s's decision to %s %s, accepted by the bridge on %s, has no entry", j.By, j.Status, j.ApprovalID, when)
				}
				continue
			}
			if e.Actor != j.By || detailString(e.Detail, "payloadHash") != j.PayloadHash {
				add(changed, "entry seq %d, decision on %s, says by @%s for hash %s; the bridge accepted @%s's for %s", e.Seq, j.ApprovalID, e.Actor, short(detailString(e.Detail, "payloadHash")), j.By, short(j.PayloadHash))
			}
		case JournalTurn:
			kind := "turn.started"
			if strings.HasPrefix(j.Status, "ended") {
				kind = "turn.ended"
			}
			i := slices.IndexFunc(hub, func(e HubEntry) bool { return e.Kind == kind && e.TurnID == j.TurnID })
			if i < 0 {
				add(FindingMissing, "turn %s %s at %s has no %s entry (lost on the way, deleted or edited)", j.TurnID, j.Status, when, kind)
				continue
			}
			if e := hub[i]; kind == "turn.ended" {
				if st, want := detailString(e.Detail, "status"), endStatus(strings.TrimPrefix(j.Status, "ended ")); st != want {
					add(changed, "entry seq %d says turn %s ended %s, but the bridge ended it %s", e.Seq, j.TurnID, st, want)
				}
			}
		case JournalTool:
			k := j.TurnID + "\n" + j.Text
			if tools[k] > 0 {
				tools[k]--
				continue
			}
			add(FindingMissing, "tool event of turn %s at %s has no entry (lost on the way, deleted or edited): %s", j.TurnID, when, firstLine(j.Text))
		}
	}
	return append(out, checkUnjournaled(hub, jr, whole, now)...)
}

// receiptAgainst finds a receipt of the journaled steer that contradicts the
// bridge's own answer to it: another first answer (started, steered,
// queued), or one that says it was delivered when the bridge rejected it.
func receiptAgainst(hub []HubEntry, j JournalEntry) (HubEntry, bool) {
	first := func(st string) bool {
		return st == wire.StatusStarted || st == wire.StatusSteered || st == wire.StatusQueued
	}
	for _, e := range hub {
		if e.Kind != "receipt" || detailString(e.Detail, "steerId") != j.SteerID {
			continue
		}
		st := detailString(e.Detail, "status")
		switch {
		case first(j.Status) && first(st) && st != j.Status:
			return e, true
		case j.Status == wire.StatusRejected && (first(st) || st == wire.StatusDelivered || st == wire.StatusDone):
			return e, true
		}
	}
	return HubEntry{}, false
}

func findAny(hub []HubEntry, key, val string, kinds ...string) (HubEntry, bool) {
	for _, e := range hub {
		for _, k := range kinds {
			if e.Kind == k && detailString(e.Detail, key) == val {
				return e, true
			}
		}
	}
	return HubEntry{}, false
}

func detailString(d json.RawMessage, key string) string {
	var m map[string]any
	if json.Unmarshal(d, &m) != nil {
		return ""
	}
	s, _ := m[key].(string)
	return s
}

func detailInt(d json.RawMessage, key string) int64 {
	var raw map[string]any
	dec := json.NewDecoder(bytes.NewReader(d))
	dec.UseNumber()
	if dec.Decode(&raw) != nil {
		return 0
	}
	n, _ := raw[key].(json.Number)
	v, _ := n.Int64()
	return v
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return oneLine(s)
}

// JournalInFlight is how long a steer, approval request or decision the
// hub recorded may take to reach the bridge's journal before inspect
// --verify counts its absence as an entry the hub added.
const JournalInFlight = 15 * time.Second

// checkJournalKey checks each entry's MAC under key. Entries written before
// journals were keyed, and those of an earlier pairing's key, are noted, not
// failed — but only before the first entry of the current key: after it an
// unkeyed or foreign entry was written by someone without the key. It
// returns how many leading entries it vouches for.
func checkJournalKey(jr []JournalEntry, key []byte) (int, []Finding) {
	var out []Finding
	if len(jr) == 0 {
		return 0, nil
	}
	if key == nil {
		return len(jr), []Finding{{FindingNote, "this machine has no bridge credentials (pass --credentials): the journal's MACs were not checked, only its chain"}}
	}
	id := JournalKeyID(key)
	unkeyed, foreign, current := 0, 0, false
	for i, e := range jr {
		switch {
		case e.Key == "" && e.MAC == "" && !current && foreign == 0:
			unkeyed++
		case e.Key == "" || (e.Key != id && current):
			return i, append(out, Finding{FindingJournal, fmt.Sprintf("entry %d (%s) is not bound to the bridge's key although entries before it are: it was written by someone without the key, so the journal proves nothing from there", e.N, e.Kind)})
		case e.Key != id:
			foreign++
		case !hmac.Equal([]byte(e.MAC), []byte(JournalMAC(key, e.Hash))):
			return i, append(out, Finding{FindingJournal, fmt.Sprintf("entry %d (%s at %s) does not carry the bridge's MAC: it was written or changed by someone without the bridge's key, so the journal proves nothing from there", e.N, e.Kind, e.At.Format(time.RFC3339))})
		default:
			current = true
		}
	}
	if unkeyed > 0 {
		out = append(out, Finding{FindingNote, fmt.Sprintf("entries 1-%d were written before the journal was keyed: only their chain was checked", unkeyed)})
	}
	if foreign > 0 {
		out = append(out, Finding{FindingNote, fmt.Sprintf("%d entries after them were written under another key (an earlier pairing of the bridge): their MACs were not checked", foreign)})
	}
	return len(jr), out
}

// checkAnchors holds the journal, as read, against the heads the bridge
// reported to the hub ("journal.head" entries): a head the journal no
// longer reaches means entries were cut from its end; one it reaches with
// another hash means it was rewritten up to there.
func checkAnchors(hub []HubEntry, jr []JournalEntry, key []byte) []Finding {
	var out []Finding
	byN := map[uint64]JournalEntry{}
	var lastN uint64
	for _, e := range jr {
		if _, dup := byN[e.N]; !dup {
			byN[e.N] = e
		}
		lastN = max(lastN, e.N)
	}
	var top *HubEntry
	var topN uint64
	foreign := 0
	for i, h := range hub {
		if h.Kind != "journal.head" {
			continue
		}
		n, hash, mac := uint64(detailInt(h.Detail, "n")), detailString(h.Detail, "hash"), detailString(h.Detail, "mac")
		if key != nil && !hmac.Equal([]byte(mac), []byte(JournalMAC(key, hash))) {
			foreign++ // an earlier pairing's, or made up by the hub: it proves nothing about this journal
			continue
		}
		e, ok := byN[n]
		switch {
		case ok && e.Hash != hash:
			out = append(out, Finding{FindingJournal, fmt.Sprintf("entry %d of the journal has hash %s, but the bridge reported entry %d with hash %s to the hub (timeline seq %d, %s): the journal was rewritten up to there", n, short(e.Hash), n, short(hash), h.Seq, h.At.Format(time.RFC3339))})
		case !ok && n <= lastN:
			out = append(out, Finding{FindingCut, fmt.Sprintf("entry %d, which the bridge reported to the hub as its journal's head (timeline seq %d, %s), is gone from the journal", n, h.Seq, h.At.Format(time.RFC3339))})
		case !ok && n > topN:
			top, topN = &hub[i], n
		}
	}
	if top != nil {
		gone := fmt.Sprintf("entries %d-%d were", lastN+1, topN)
		if topN == lastN+1 {
			gone = fmt.Sprintf("entry %d was", topN)
		}
		out = append(out, Finding{FindingCut, fmt.Sprintf("the journal ends at entry %d, but the bridge reported entry %d (hash %s) to the hub as its head (timeline seq %d, %s): %s cut from the journal's end",
			lastN, topN, short(detailString(top.Detail, "hash")), top.Seq, top.At.Format(time.RFC3339), gone)})
	}
	if foreign > 0 {
		out = append(out, Finding{FindingNote, fmt.Sprintf("%d journal heads in the timeline do not carry this bridge's MAC (an earlier pairing, or not the bridge's): they were not used", foreign)})
	}
	return out
}

// checkUnjournaled is the other direction: every steer, approval request,
// owner decision, turn start or end and tool event in the timeline, in the
// period the journal covers, must have its entry in the journal — else the
// hub recorded something the bridge never received or did. The period
// starts at the first timeline entry the journal matches (or the journal's
// first entry's time); it runs to the timeline's end when the journal is
// whole, else to the last entry it matches. What the hub ended or refused
// on its own (a steer it refused or expired before it reached the bridge, a
// turn it failed when the bridge went away) is not the bridge's to journal.
func checkUnjournaled(hub []HubEntry, jr []JournalEntry, whole bool, now time.Time) []Finding {
	if len(jr) == 0 {
		return nil
	}
	steers, approvals, decisions, started, ended := map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}
	tools := map[string]int{}
	for _, j := range jr {
		switch j.Kind {
		case JournalSteer:
			steers[j.SteerID] = true
		case JournalApproval:
			approvals[j.ApprovalID] = true
		case JournalDecision:
			decisions[j.ApprovalID+" "+j.Status] = true
		case JournalTurn:
			if j.Status == "started" {
				started[j.TurnID] = true
			} else {
				ended[j.TurnID] = true
			}
		case JournalTool:
			tools[j.TurnID+"\n"+j.Text]++
		case JournalHub:
			switch j.Status {
			case "steer expired":
				steers[j.SteerID] = true
			case "turn ended":
				ended[j.TurnID] = true
			}
		}
	}
	// Steers the hub ended before they reached the bridge, and those its
	// receipts say reached it.
	hubOnly, reached := map[string]bool{}, map[string]bool{}
	for _, e := range hub {
		if e.Kind != "receipt" {
			continue
		}
		id, st, why := detailString(e.Detail, "steerId"), detailString(e.Detail, "status"), detailString(e.Detail, "reason")
		switch {
		case st == wire.StatusExpired || (st == wire.StatusRejected && (why == wire.ReasonAgentOffline || why == wire.ReasonTimeout || why == wire.ReasonUnknownAgent)):
			hubOnly[id] = true
		case st != wire.StatusRejected && st != wire.StatusHeld && st != "pending":
			reached[id] = true
		}
	}
	type check struct {
		want   bool   // of a kind the bridge journals
		have   bool   // the journal has it
		what   string // how to name it
		flight bool   // the hub records it before the bridge has it: it may be on its way
	}
	judge := func(e HubEntry) check {
		d := e.Detail
		switch e.Kind {
		case "steer":
			id, st := detailString(d, "steerId"), detailString(d, "status")
			// refused or expired by the hub, or held for the owner's moderation, and never delivered
			if !reached[id] && (st == wire.StatusRejected || st == wire.StatusExpired || st == wire.StatusHeld || hubOnly[id]) {
				return check{}
			}
			return check{true, steers[id], fmt.Sprintf("a steer %s from @%s in %s (message %d)", id, e.Actor, detailString(d, "room"), detailInt(d, "messageId")), !reached[id]}
		case "approval.requested":
			id := detailString(d, "approvalId")
			return check{true, approvals[id], fmt.Sprintf("approval request %s (%s, hash %s)", id, detailString(d, "tool"), short(detailString(d, "payloadHash"))), true}
		case "approval.approved", "approval.denied":
			id, verb := detailString(d, "approvalId"), map[string]string{"approval.approved": "approve", "approval.denied": "deny"}[e.Kind]
			return check{true, decisions[id+" "+verb], fmt.Sprintf("@%s's decision to %s %s", e.Actor, verb, id), true}
		case "turn.started":
			return check{true, started[e.TurnID], "the start of turn " + e.TurnID, false}
		case "turn.ended":
			if e.Actor == "" && detailString(d, "reason") != "" && detailString(d, "status") == "failed" {
				return check{} // the hub failed it when the bridge went away
			}
			return check{true, ended[e.TurnID], "the end of turn " + e.TurnID, false}
		case "turn.tool":
			k := e.TurnID + "\n" + detailString(d, "text")
			if tools[k] > 0 {
				tools[k]--
				return check{true, true, "", false}
			}
			return check{true, false, fmt.Sprintf("a tool event of turn %s (%s)", e.TurnID, firstLine(detailString(d, "text"))), false}
		}
		return check{}
	}
	checks := make([]check, len(hub))
	first, last := -1, -1
	for i, e := range hub {
		checks[i] = judge(e)
		if checks[i].want && checks[i].have {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	since := jr[0].At.Add(wire.ClockSkew)
	var out []Finding
	for i, e := range hub {
		c := checks[i]
		if !c.want || c.have || (!whole && i > last) || (i < first || first < 0) && !e.At.After(since) {
			continue
		}
		if c.flight && !now.IsZero() && e.At.After(now.Add(-JournalInFlight)) {
			out = append(out, Finding{FindingNote, fmt.Sprintf("entry seq %d, %s at %s, is not in the bridge's journal yet: it may be on its way to the bridge; run --verify again (once it is %s old, it counts as added by the hub)", e.Seq, c.what, e.At.Format(time.RFC3339), JournalInFlight)})
			continue
		}
		out = append(out, Finding{FindingAdded, fmt.Sprintf("entry seq %d, %s at %s, has no entry in the bridge's journal: the bridge never received or did it, so the hub added it", e.Seq, c.what, e.At.Format(time.RFC3339))})
	}
	return out
}
