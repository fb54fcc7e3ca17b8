package bridge

import (
	"bytes"
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
		case JournalHub: // what the hub said it ended must be in its timeline
			var ok bool
			switch j.Status {
			case "steer expired":
				_, ok = find("steer", "steerId", j.SteerID)
			case "approval voided":
				_, ok = findAny(hub, "approvalId", j.ApprovalID, "approval.voided", "approval.expired")
			case "turn ended":
				ok = slices.ContainsFunc(hub, func(e HubEntry) bool { return e.Kind == "turn.ended" && e.TurnID == j.TurnID })
			default:
				continue
			}
			if !ok {
				add(FindingMissing, "the hub told the bridge on %s: %s %s; the timeline has no entry of it", when, j.Status, j.SteerID+j.ApprovalID+j.TurnID)
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
