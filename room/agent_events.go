package room

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
	EvAgentPolicy       = "agent.policy"
	EvAgentStatus       = "agent.status"
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

type pairingCreated struct {
	TokenHash string    `json:"tokenHash"`
	Owner     string    `json:"owner"`
	ExpiresAt time.Time `json:"expiresAt"`
}

type bridgePaired struct {
	ID        string `json:"id"`
	TokenHash string `json:"tokenHash"`
	PublicKey string `json:"publicKey"`
	Name      string `json:"name"`
}

type bridgeRevoked struct {
	ID string `json:"id"`
	By string `json:"by"`
}

type agentRegistered struct {
	Bridge   string      `json:"bridge"`
	Name     string      `json:"name"`
	Harness  string      `json:"harness"`
	CanSteer bool        `json:"canSteer"`
	Policy   wire.Policy `json:"policy"`
}

type agentPolicy struct {
	Handle string      `json:"handle"`
	Policy wire.Policy `json:"policy"`
	By     string      `json:"by"`
}

type agentStatus struct {
	Handle    string   `json:"handle"`
	Status    string   `json:"status"`
	TurnID    string   `json:"turnId,omitempty"`
	TurnRoom  string   `json:"turnRoom,omitempty"`
	SteeredBy []string `json:"steeredBy,omitempty"`
}

type agentRoomChange struct {
	Room   string `json:"room"`
	Handle string `json:"handle"`
	By     string `json:"by"`
}

type invitationCreated struct {
	Room   string `json:"room"`
	Handle string `json:"handle"`
	By     string `json:"by"`
}

type invitationDecided struct {
	ID     int64  `json:"id"`
	Accept bool   `json:"accept"`
	By     string `json:"by"`
}

type steerRecorded struct {
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

type turnEvent struct {
	Handle string `json:"handle"`
	TurnID string `json:"turnId"`
	Kind   string `json:"kind"` // started, ended, interrupted, tool
	Status string `json:"status,omitempty"`
	Room   string `json:"room,omitempty"`
	By     string `json:"by,omitempty"`
	Text   string `json:"text,omitempty"` // kind "tool": the command and its outcome
}

type approvalRequested struct {
	wire.ApprovalRequest
	Handle string `json:"handle"`
}

type approvalDecided struct {
	ID     string `json:"id"`
	Status string `json:"status"` // approved, denied, expired, voided
	By     string `json:"by,omitempty"`
	Hash   string `json:"hash,omitempty"`
	Reason string `json:"reason,omitempty"`
}
