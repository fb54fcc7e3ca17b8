package authz

import "fmt"

// StrictCheck is what decides where a message that is not the owner's own
// typed words may go (see MessageNeedsStrict).
type StrictCheck struct {
	Mode        Mode   // SteerMode's answer
	NeedsStrict bool   // the message may only enter a strict turn
	CanStrict   bool   // the harness can start a turn in which every side effect reaches the gate
	WhyNot      string // why it cannot (for the sender), when CanStrict is false
	TurnStrict  bool   // the running turn is such a turn
	Owner       string
}

// StrictPlacement applies the gate rule to SteerMode's answer: a message
// that needs a strict turn never enters a running turn that is not strict
// (it waits for the turn to end and then starts a strict one) and never
// goes to a harness that cannot run one. Other messages keep their mode.
func StrictPlacement(c StrictCheck) Mode {
	if !c.NeedsStrict || c.Mode.Action == ActionReject {
		return c.Mode
	}
	if !c.CanStrict {
		why := c.WhyNot
		if why == "" {
			why = "its harness cannot ask before every command"
		}
		return Mode{Action: ActionReject, Reason: ReasonNotAllowed, Message: fmt.Sprintf(
			"This agent takes only its owner @%s's own words: %s, so anything else could run without @%s deciding.", c.Owner, why, c.Owner)}
	}
	if c.Mode.Action == ActionSteer && !c.TurnStrict {
		return Mode{Action: ActionQueue, Message: fmt.Sprintf(
			"Queued as its own turn: the running turn was started by @%s under a policy that runs some commands without asking, so your message waits for it to end and then starts a turn that asks @%s before every command.", c.Owner, c.Owner)}
	}
	return c.Mode
}
