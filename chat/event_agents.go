package chat

import (
	"time"

	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// Agent, consent, steering and approval event types.
const (
	EvPairingCreated    = "pairing.created"
	EvBridgePaired      = "bridge.paired"
	EvBridgeRevoked     = "bridge.revoked"
	EvAgentRegistered   = "agent.registered"
	EvAgentReleased     = "agent.released"
	EvAgentPolicy       = "agent.policy"
	EvAgentStatus       = "agent.status"
	EvAgentJournal      = "agent.journal"
	EvAgentAdded        = "agent.added"
	EvAgentRemoved      = "agent.removed"
	EvInvitationCreated = "invitation.created"
	EvInvitationDecided = "invitation.decided"
	EvSteerRecorded     = "steer.recorded"
	EvSteerReceipt      = "steer.receipt"
	EvTurn              = "turn"
	EvApprovalRequested = "approval.requested"
	EvApprovalDecided   = "approval.decided"
)

// PairingCreated is the payload of the event recorded when an owner asked for a pairing token.
type PairingCreated struct {
	TokenHash string    `json:"tokenHash"`
	Owner     string    `json:"owner"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// BridgePaired is the payload of the event recorded when a bridge redeemed a pairing token.
type BridgePaired struct {
	ID        string `json:"id"`
	TokenHash string `json:"tokenHash"`
	PublicKey string `json:"publicKey"`
	Name      string `json:"name"`
}

// BridgeRevoked is the payload of the event recorded when an owner revoked a bridge.
type BridgeRevoked struct {
	ID string `json:"id"`
	By string `json:"by"`
}

// AgentRegistered is the payload of the event recorded when a bridge announced an agent (or changed it).
type AgentRegistered struct {
	Bridge   string      `json:"bridge"`
	Name     string      `json:"name"`
	Harness  string      `json:"harness"`
	CanSteer bool        `json:"canSteer"`
	Policy   wire.Policy `json:"policy"`
}

// AgentReleased is the payload of the event recorded when a bridge stopped
// announcing an agent: the name is free for another of the owner's bridges.
type AgentReleased struct {
	Bridge string `json:"bridge"`
	Handle string `json:"handle"`
}

// AgentPolicy is the payload of the event recorded when an owner changed an agent's policy.
type AgentPolicy struct {
	Handle string      `json:"handle"`
	Policy wire.Policy `json:"policy"`
	By     string      `json:"by"`
	Device string      `json:"device,omitempty"` // the owner device that signed a widening
}

// AgentStatus is the payload of the event recorded when an agent's live state changed.
type AgentStatus struct {
	Handle    string   `json:"handle"`
	Status    string   `json:"status"`
	TurnID    string   `json:"turnId,omitempty"`
	TurnRoom  string   `json:"turnRoom,omitempty"`
	SteeredBy []string `json:"steeredBy,omitempty"`
}

// AgentJournal is the payload of the event recorded when an agent's bridge
// reported a new head of its journal of the agent (wire.JournalHead).
type AgentJournal struct {
	Handle string           `json:"handle"`
	Bridge string           `json:"bridge"`
	Head   wire.JournalHead `json:"head"`
}

// AgentRoomChange is the payload of the event recorded when an agent was added to or removed from a room.
type AgentRoomChange struct {
	Room   string `json:"room"`
	Handle string `json:"handle"`
	By     string `json:"by"`
	// Ceiling (on add) is what the room's turns may do; "" is normal.
	Ceiling string `json:"ceiling,omitempty"`
	// Device is the owner device whose signed consent the bridge took.
	Device string `json:"device,omitempty"`
}

// InvitationCreated is the payload of the event recorded when someone invited an agent into a room.
type InvitationCreated struct {
	Room   string `json:"room"`
	Handle string `json:"handle"`
	By     string `json:"by"`
}

// InvitationDecided is the payload of the event recorded when the owner answered an invitation.
type InvitationDecided struct {
	ID     int64  `json:"id"`
	Accept bool   `json:"accept"`
	By     string `json:"by"`
	Device string `json:"device,omitempty"`
}

// SteerRecorded is the payload of the event recorded when a mention of an agent was recorded, or its receipt changed.
type SteerRecorded struct {
	ID        string     `json:"id"`
	MessageID int64      `json:"messageId"`
	Room      string     `json:"room"`
	Handle    string     `json:"handle"`
	Sender    string     `json:"sender"`
	Status    string     `json:"status"`
	Reason    string     `json:"reason,omitempty"`
	Detail    string     `json:"detail,omitempty"`
	TurnID    string     `json:"turnId,omitempty"`
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
}

// TurnRecorded is the payload of the event recorded when a turn started, ended or was interrupted.
type TurnRecorded struct {
	Handle string `json:"handle"`
	TurnID string `json:"turnId"`
	Kind   string `json:"kind"` // started, ended, interrupted, tool
	Status string `json:"status,omitempty"`
	Room   string `json:"room,omitempty"`
	By     string `json:"by,omitempty"`
	Reason string `json:"reason,omitempty"` // ended as failed: why
	Text   string `json:"text,omitempty"`   // kind "tool": the command and its outcome
	// Usage is the ended turn's model token count, as the bridge reported it.
	Usage *wire.Usage `json:"usage,omitempty"`
	// Thread is the root of the thread the turn lives in (0: none known).
	Thread int64 `json:"thread,omitempty"`
	// BridgeEvent names the bridge event this came from (MessagePosted).
	BridgeEvent string `json:"bridgeEvent,omitempty"`
}

// ApprovalRequested is the payload of the event recorded when a bridge asked the owner to approve a call.
type ApprovalRequested struct {
	wire.ApprovalRequest
	Handle string `json:"handle"`
}

// ApprovalDecided is the payload of the event recorded when an approval was decided, expired or voided.
type ApprovalDecided struct {
	ID     string `json:"id"`
	Status string `json:"status"` // approved, denied, expired, voided
	By     string `json:"by,omitempty"`
	Hash   string `json:"hash,omitempty"`
	Reason string `json:"reason,omitempty"`
	Device string `json:"device,omitempty"` // the owner device that signed the decision
}
