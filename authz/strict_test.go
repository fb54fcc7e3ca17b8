package authz

import (
	"strings"
	"testing"
)

func TestStrictPlacement(t *testing.T) {
	start, steer, queue := Mode{Action: ActionStart}, Mode{Action: ActionSteer}, Mode{Action: ActionQueue}
	limit := Mode{Action: ActionReject, Reason: ReasonSteerLimit, Message: "limit"}
	cases := []struct {
		name       string
		c          StrictCheck
		want       string
		reason     string
		messageHas string
	}{
		{"OwnersWordsStartAsIs", StrictCheck{Mode: start}, ActionStart, "", ""},
		{"OwnersWordsSteerPermissiveTurn", StrictCheck{Mode: steer, CanStrict: true}, ActionSteer, "", ""},
		{"OwnersWordsEvenWithoutStrictHarness", StrictCheck{Mode: start, CanStrict: false}, ActionStart, "", ""},
		{"StrangerStartsStrictTurn", StrictCheck{Mode: start, NeedsStrict: true, CanStrict: true}, ActionStart, "", ""},
		{"StrangerSteersStrictTurn", StrictCheck{Mode: steer, NeedsStrict: true, CanStrict: true, TurnStrict: true}, ActionSteer, "", ""},
		{"StrangerSteerIntoPermissiveTurnQueues", StrictCheck{Mode: steer, NeedsStrict: true, CanStrict: true, Owner: owner}, ActionQueue, "", "asks @" + owner + " before every command"},
		{"StrangerQueuedStaysQueued", StrictCheck{Mode: queue, NeedsStrict: true, CanStrict: true}, ActionQueue, "", ""},
		{"StrangerRejectedWhenHarnessCannot", StrictCheck{Mode: start, NeedsStrict: true, WhyNot: "exec runs its command without asking", Owner: owner}, ActionReject, ReasonNotAllowed, "exec runs its command without asking"},
		{"StrangerSteerRejectedWhenHarnessCannot", StrictCheck{Mode: steer, NeedsStrict: true, TurnStrict: true, Owner: owner}, ActionReject, ReasonNotAllowed, "cannot ask before every command"},
		{"StrangerQueueRejectedWhenHarnessCannot", StrictCheck{Mode: queue, NeedsStrict: true}, ActionReject, ReasonNotAllowed, ""},
		{"RejectStaysReject", StrictCheck{Mode: limit, NeedsStrict: true}, ActionReject, ReasonSteerLimit, "limit"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := StrictPlacement(c.c)
			if got.Action != c.want || got.Reason != c.reason || !strings.Contains(got.Message, c.messageHas) {
				t.Fatalf("got %+v, want action %s reason %q message containing %q", got, c.want, c.reason, c.messageHas)
			}
		})
	}
}
