package authz

import "fmt"

// Steer actions.
const (
	ActionStart  = "start"  // the agent is idle: start a turn
	ActionSteer  = "steer"  // put the message into the running turn
	ActionQueue  = "queue"  // deliver it as a follow-up when the turn ends
	ActionReject = "reject" // refuse it (Reason says why)
)

// ModeCheck is the delivery state of one agent when a steer arrives.
type ModeCheck struct {
	Busy            bool // a turn is running
	CanSteer        bool // the harness can put input into a running turn
	SteeringEnabled bool // the owner's policy lets busy mentions steer
	SteersThisTurn  int  // steers already delivered into the running turn
	MaxSteers       int  // per turn; 0 (or less) = unlimited
}

// Mode is how a steer is delivered. Reason is set for a reject, and for a
// queue caused by the owner's policy (ReasonSteeringDisabled); Message is a
// sentence for the sender when there is something to explain.
type Mode struct {
	Action  string
	Reason  string
	Message string
}

// SteerMode decides how a steer that passed the address checks is
// delivered. A harness that cannot steer, or an owner who turned steering
// off, queues; the per-turn limit rejects only steers that would steer.
func SteerMode(c ModeCheck) Mode {
	switch {
	case !c.Busy:
		return Mode{Action: ActionStart}
	case !c.CanSteer:
		return Mode{Action: ActionQueue, Message: "The agent is busy and its harness cannot take input mid-turn; your message will be delivered when the turn ends."}
	case !c.SteeringEnabled:
		return Mode{Action: ActionQueue, Reason: ReasonSteeringDisabled, Message: "The agent is busy and its owner turned mid-turn steering off; your message will be delivered when the turn ends."}
	case c.MaxSteers > 0 && c.SteersThisTurn >= c.MaxSteers:
		return Mode{Action: ActionReject, Reason: ReasonSteerLimit, Message: fmt.Sprintf("This turn already took %d steers, the owner's limit; wait for it to end and send your message again.", c.MaxSteers)}
	default:
		return Mode{Action: ActionSteer}
	}
}
