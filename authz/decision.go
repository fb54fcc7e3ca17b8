package authz

import (
	"fmt"
	"strings"
	"time"
)

// Decision is the answer to "may this happen?". When Allow is false, Reason
// is one of the Reason* constants (machine-readable, equal to wire's) and
// Message is a sentence the user can act on.
type Decision struct {
	Allow   bool
	Reason  string
	Message string
}

// Reasons. The strings equal wire.Reason* where both exist.
const (
	ReasonNotAMember       = "not-a-member"
	ReasonNotAllowed       = "not-allowed"
	ReasonAgentNotInRoom   = "agent-not-in-room"
	ReasonSteeringDisabled = "steering-disabled"
	ReasonSteerLimit       = "steer-limit"
	ReasonExpired          = "expired"
	ReasonPeerAgent        = "peer-agent"
	ReasonStaleTurn        = "stale-turn"
	ReasonTurnEnded        = "turn-ended"
	ReasonForbidden        = "forbidden"
	ReasonHashMismatch     = "hash-mismatch"
	ReasonAlreadyDecided   = "already-decided"
	ReasonVoided           = "voided"
	// ReasonModerated is not a refusal: the mention waits for the owner,
	// who forwards or declines it (AddressModerate).
	ReasonModerated = "moderated"
	ReasonDeclined  = "declined"
)

// Address policies (equal to wire.Address*). An empty or unknown policy is
// treated as AddressOwner: the narrowest one.
const (
	AddressOwner   = "owner"
	AddressUsers   = "users"
	AddressMembers = "members"
	// AddressModerate: the owner and Allowed address the agent directly;
	// anyone else's mention waits for the owner to forward or decline it.
	AddressModerate = "moderate"
)

var allow = Decision{Allow: true}

func deny(reason, format string, args ...any) Decision {
	return Decision{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// isOwner reports whether name is the (non-empty) owner.
func isOwner(name, owner string) bool { return name != "" && name == owner }

// AddressCheck is what the hub knows when a message mentions an agent.
type AddressCheck struct {
	Sender         string // user name, or owner/agent when SenderIsAgent
	SenderIsAgent  bool
	SenderIsMember bool // of the room the message was posted in
	AgentInRoom    bool // the agent was added to that room (its owner consented)
	Owner          string
	Address        string   // AddressOwner, AddressUsers or AddressMembers
	Allowed        []string // for AddressUsers
	Stop           bool     // the message is a stop command
}

// MayAddress decides whether a mention reaches the agent. Agents never steer
// agents, a stop is the owner's alone, and admin status grants nothing.
func MayAddress(c AddressCheck) Decision {
	if !c.SenderIsMember {
		return deny(ReasonNotAMember, "You are not a member of this room; join it before addressing its agents.")
	}
	if !c.AgentInRoom {
		return deny(ReasonAgentNotInRoom, "This agent is not in this room; ask its owner @%s to add it.", c.Owner)
	}
	if c.SenderIsAgent {
		return denyPeer()
	}
	return addressPolicy(c.Sender, c.Owner, c.Address, c.Allowed, c.Stop)
}

func denyPeer() Decision {
	return deny(ReasonPeerAgent, "Agents cannot steer other agents; a person has to mention the agent.")
}

// addressPolicy applies the owner's address policy; membership is checked by
// the caller.
func addressPolicy(sender, owner, address string, allowed []string, stop bool) Decision {
	if isOwner(sender, owner) {
		return allow
	}
	if stop {
		return deny(ReasonNotAllowed, "Only the owner @%s can stop this agent.", owner)
	}
	switch address {
	case AddressMembers:
		if sender != "" {
			return allow
		}
	case AddressUsers, AddressModerate:
		for _, a := range allowed {
			if a != "" && a == sender {
				return allow
			}
		}
		if address == AddressModerate && sender != "" {
			return deny(ReasonModerated, "@%s reads messages to this agent first; yours waits for them to forward or decline it.", owner)
		}
		return deny(ReasonNotAllowed, "@%s has not allowed you to address this agent; ask them to add you to its allowed users.", owner)
	}
	return deny(ReasonNotAllowed, "This agent takes messages only from its owner @%s; ask them to open its policy to you.", owner)
}

// BridgeCheck is what the bridge re-checks before it acts on a steer.
// Membership is the hub's job; everything the bridge can know, it checks.
type BridgeCheck struct {
	Owner         string // the owner this bridge is configured for
	SteerOwner    string // the owner the steer names
	Sender        string
	SenderIsOwner bool // as the hub labelled it; must agree with Sender == Owner
	SenderIsAgent bool
	Address       string
	Allowed       []string
	Stop          bool
	SentAt, Now   time.Time
	MaxAge        time.Duration // 0 = no age limit
	// Forwarded: the owner forwarded this message (the bridge verified the
	// owner's signature); the address policy does not apply to it.
	Forwarded bool
}

// BridgeAccepts is the bridge's local re-check of a steer from the hub.
func BridgeAccepts(c BridgeCheck) Decision {
	if c.Owner == "" || c.SteerOwner != c.Owner {
		return deny(ReasonNotAllowed, "This message names owner @%s, but this bridge runs agents for @%s.", c.SteerOwner, c.Owner)
	}
	if c.SenderIsOwner != isOwner(c.Sender, c.Owner) {
		return deny(ReasonNotAllowed, "The bridge refused this message: its owner label does not match its sender @%s.", c.Sender)
	}
	if c.SenderIsAgent {
		return denyPeer()
	}
	// A message the owner forwarded (signed) needs no address permission.
	if !c.Forwarded || c.Stop {
		if d := addressPolicy(c.Sender, c.Owner, c.Address, c.Allowed, c.Stop); !d.Allow {
			if d.Reason == ReasonModerated {
				d = deny(ReasonNotAllowed, "@%s reads messages from others first, and did not forward this one.", c.Owner)
			}
			return d
		}
	}
	if c.MaxAge > 0 && c.Now.Sub(c.SentAt) > c.MaxAge {
		return deny(ReasonExpired, "This message is older than %s and was not delivered; send it again if it still applies.", c.MaxAge)
	}
	return allow
}

// MayDecideApproval: only the owner decides on their agent's approvals.
func MayDecideApproval(actor, owner string) Decision {
	if isOwner(actor, owner) {
		return allow
	}
	return deny(ReasonForbidden, "Only the owner @%s can approve or deny this agent's requests.", owner)
}

// Approval states.
const (
	StatePending  = "pending"
	StateApproved = "approved"
	StateDenied   = "denied"
	StateExpired  = "expired"
	StateVoided   = "voided"
)

// DecisionCheck is an owner's decision on an approval, as it arrives.
type DecisionCheck struct {
	Actor, Owner string
	ShownHash    string // the payload hash the decider echoes back
	RequestHash  string // the payload hash of the request
	State        string // State*
	Expires, Now time.Time
}

// CheckDecision decides whether a decision on an approval may be recorded.
// Hashes compare as hex, case-insensitively; an empty hash never matches.
func CheckDecision(c DecisionCheck) Decision {
	if d := MayDecideApproval(c.Actor, c.Owner); !d.Allow {
		return d
	}
	switch c.State {
	case StatePending:
	case StateExpired:
		return denyExpired()
	case StateVoided:
		return deny(ReasonVoided, "This request was voided (someone who steered the turn left the room, or the agent was removed); nothing will run.")
	default:
		return deny(ReasonAlreadyDecided, "This request was already decided (%s).", c.State)
	}
	if !c.Expires.IsZero() && !c.Now.Before(c.Expires) {
		return denyExpired()
	}
	if c.RequestHash == "" || !strings.EqualFold(c.ShownHash, c.RequestHash) {
		return deny(ReasonHashMismatch, "The hash you confirmed does not match the request; reload it and check what the agent wants to run.")
	}
	return allow
}

func denyExpired() Decision {
	return deny(ReasonExpired, "This request expired and was denied; the agent may ask again.")
}

// MayChangePolicy: only the owner changes an agent's policy.
func MayChangePolicy(actor, owner string) Decision {
	if isOwner(actor, owner) {
		return allow
	}
	return deny(ReasonForbidden, "Only the owner @%s can change this agent's policy.", owner)
}

// MayInterrupt: only the owner interrupts an agent's running turn.
func MayInterrupt(actor, owner string) Decision {
	if isOwner(actor, owner) {
		return allow
	}
	return deny(ReasonForbidden, "Only the owner @%s can interrupt this agent.", owner)
}

// Outcomes of AddAgentToRoom.
const (
	AddDirect = "add"    // the owner adds their own agent
	AddInvite = "invite" // another member invites it; the owner must accept
	AddDeny   = "deny"   // the actor is not a member of the room
)

// AddAgentToRoom says what happens when actor asks for owner's agent in a
// room: the owner (a member) adds it, another member invites it (the owner
// consents), and non-members get nothing.
func AddAgentToRoom(actor, owner string, actorIsMember bool) string {
	switch {
	case !actorIsMember || actor == "":
		return AddDeny
	case actor == owner:
		return AddDirect
	default:
		return AddInvite
	}
}
