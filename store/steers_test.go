package store

import (
	"testing"

	"github.com/wheelhouse-dev/wheelhouse/chat"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// A receipt moves forward only: final receipts never change (but for the
// hub's own timeout giving way to the bridge's late word), and a delivered
// receipt takes the bridge's new word of where the message went without
// moving its status.
func TestReceiptMove(t *testing.T) {
	const redirected = "delivered to the owner's next Claude Code session in the project (s2): the session it was for (s1) had ended"
	finals := []string{wire.StatusDone, wire.StatusFailed, wire.StatusInterrupted, wire.StatusExpired, wire.StatusRejected}
	type tc struct {
		name                                        string
		cur, curReason, curDetail, next, nextDetail string
		want                                        receiptMoves
	}
	cases := []tc{
		{"PendingStarts", chat.StatusPending, "", "", wire.StatusStarted, "", receiptMoved},
		{"PendingQueues", chat.StatusPending, "", "", wire.StatusQueued, "", receiptMoved},
		{"HeldStarts", wire.StatusHeld, "", "waiting for @alice", wire.StatusStarted, "", receiptMoved},
		{"QueuedDelivered", wire.StatusQueued, "", "", wire.StatusDelivered, "", receiptMoved},
		{"QueuedQueuedAgain", wire.StatusQueued, "", "", wire.StatusQueued, "again", receiptRefused},
		{"StartedDone", wire.StatusStarted, "", "", wire.StatusDone, "", receiptMoved},
		{"StartedRedirected", wire.StatusStarted, "", "", wire.StatusDelivered, redirected, receiptNewDetail},
		{"SteeredRedirected", wire.StatusSteered, "", "", wire.StatusSteered, redirected, receiptNewDetail},
		{"DeliveredNewDetail", wire.StatusDelivered, "", "", wire.StatusDelivered, redirected, receiptNewDetail},
		{"RedirectedAgainSameWords", wire.StatusStarted, "", redirected, wire.StatusDelivered, redirected, receiptRefused},
		{"StartedDeliveredNoDetail", wire.StatusStarted, "", "", wire.StatusDelivered, "", receiptRefused},
		{"StartedBackToQueued", wire.StatusStarted, "", "", wire.StatusQueued, redirected, receiptRefused},
		{"StartedBackToHeld", wire.StatusStarted, "", "", wire.StatusHeld, redirected, receiptRefused},
		{"StartedBackToPending", wire.StatusStarted, "", "", chat.StatusPending, redirected, receiptRefused},
		{"StartedUnknownStatus", wire.StatusStarted, "", "", "redirected", redirected, receiptRefused},
		{"TimeoutGivesWayToStarted", wire.StatusRejected, wire.ReasonTimeout, "", wire.StatusStarted, "", receiptMoved},
		{"TimeoutStaysAgainstFinal", wire.StatusRejected, wire.ReasonTimeout, "", wire.StatusDone, "", receiptRefused},
	}
	// No update moves a final receipt, whatever it says (the timeout
	// exception aside, above).
	for _, f := range finals {
		for _, next := range append([]string{chat.StatusPending, wire.StatusHeld, wire.StatusQueued, wire.StatusStarted, wire.StatusSteered, wire.StatusDelivered}, finals...) {
			for _, d := range []string{"", redirected} {
				cases = append(cases, tc{"Final/" + f + "/" + next + "/" + map[bool]string{true: "detail", false: "nodetail"}[d != ""], f, "", "", next, d, receiptRefused})
			}
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := receiptMove(c.cur, c.curReason, c.curDetail, c.next, c.nextDetail); got != c.want {
				t.Fatalf("receiptMove(%q, %q, %q, %q, %q) = %d, want %d", c.cur, c.curReason, c.curDetail, c.next, c.nextDetail, got, c.want)
			}
		})
	}
}
