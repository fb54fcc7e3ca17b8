package authz

import "slices"

// Tainted reports whether a turn steered by these senders is tainted: any
// sender other than the owner (an empty name counts as a stranger) taints
// it, for the whole turn.
func Tainted(owner string, steeredBy []string) bool {
	for _, s := range steeredBy {
		if !isOwner(s, owner) {
			return true
		}
	}
	return false
}

// NeedsOwnerDecision reports whether a tool call needs an explicit owner
// decision. In a tainted turn every approval-worthy call does, whatever the
// owner's auto-approve list says; otherwise only tools not on that list
// (matched exactly) do. Turns that carried data use TurnInputs instead.
func NeedsOwnerDecision(tainted bool, tool string, autoApprove []string) bool {
	if tainted || tool == "" {
		return true
	}
	return !slices.Contains(autoApprove, tool)
}

// MayRemember reports whether an approval may be remembered beyond the one
// call (session-wide or "always"): never in a tainted turn.
func MayRemember(tainted bool) bool { return !tainted }

// VoidOnDeparture reports whether pending approvals of a turn are voided
// because someone left: the agent was removed from the room the turn came
// from, or the departing user steered the turn.
func VoidOnDeparture(steeredBy []string, departed string, agentRemoved bool) bool {
	if agentRemoved {
		return true
	}
	return departed != "" && slices.Contains(steeredBy, departed)
}
