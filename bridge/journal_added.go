package bridge

import (
	"fmt"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// The timeline against the journal: what the hub recorded that the bridge
// never received or did.

// JournalInFlight is how long a steer, approval request or decision the
// hub recorded may take to reach the bridge's journal before inspect
// --verify counts its absence as an entry the hub added.
const JournalInFlight = 15 * time.Second

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
			case "approval refused", "approval unanswered": // the bridge asked for it
				approvals[j.ApprovalID] = true
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
