package chat

import (
	"time"

	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// The owner's authority as the hub records it: the devices each bridge
// trusts (as the bridge reports them), decisions a bridge refused as
// forgeries, room ceilings, and moderated mentions forwarded or declined.
const (
	EvBridgeDevices  = "bridge.devices"
	EvForgeryRefused = "agent.forgery"
	EvAgentCeiling   = "agent.ceiling"
	EvSteerForwarded = "steer.forwarded"
)

// BridgeDevices is the payload of the event recorded when a bridge
// reported the owner devices it trusts (the whole list).
type BridgeDevices struct {
	Bridge  string        `json:"bridge"`
	Devices []wire.Device `json:"devices"`
}

// ForgeryRefused is the payload of the event recorded when a bridge
// refused a decision that was not signed by one of its owner's devices as
// it must be.
type ForgeryRefused struct {
	Bridge string `json:"bridge"`
	Handle string `json:"handle,omitempty"` // owner/name; "" for an enrollment
	wire.Forgery
}

// AgentCeiling is the payload of the event recorded when a room's ceiling
// for an agent changed.
type AgentCeiling struct {
	Room    string `json:"room"`
	Handle  string `json:"handle"`
	Ceiling string `json:"ceiling"`
	By      string `json:"by"`
	Device  string `json:"device,omitempty"`
}

// SteerForwarded is the payload of the event recorded when the owner
// forwarded (signed) or declined a held mention.
type SteerForwarded struct {
	ID      string       `json:"id"`
	By      string       `json:"by"`
	Decline bool         `json:"decline,omitempty"`
	Signed  *wire.Signed `json:"signed,omitempty"`
}

// Device is an owner device as the hub shows it: which bridge trusts it.
type Device struct {
	ID         string     `json:"id"`
	Name       string     `json:"name"`
	Kind       string     `json:"kind"`
	PublicKey  string     `json:"publicKey"`
	Bridge     string     `json:"bridge"`
	BridgeName string     `json:"bridgeName"`
	AddedAt    time.Time  `json:"addedAt"`
	Revoked    bool       `json:"revoked"`
	RevokedAt  *time.Time `json:"revokedAt,omitempty"`
}

// Request is a held (moderated) mention as its owner's inbox shows it.
type Request struct {
	SteerID     string    `json:"steerId"`
	MessageID   int64     `json:"messageId"`
	Room        string    `json:"room"`
	Agent       string    `json:"agent"`
	Owner       string    `json:"owner"`
	Sender      string    `json:"sender"`
	Text        string    `json:"text"`
	TextHash    string    `json:"textHash"`
	Status      string    `json:"status"` // held, or what became of it
	ForwardedBy string    `json:"forwardedBy,omitempty"`
	Expires     time.Time `json:"expires"`
	At          time.Time `json:"at"`
	// Files are the files posted with the message (URL: the request's own
	// route). A forward names each by its name and the SHA-256 of its
	// bytes, which the owner's client computes from the file itself.
	Files []File `json:"files,omitempty"`
}
