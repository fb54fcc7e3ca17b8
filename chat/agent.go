package chat

import (
	"strings"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// Agent is an agent as the hub knows it.
type Agent struct {
	ID        int64        `json:"-"`
	Handle    string       `json:"handle"`
	Owner     string       `json:"owner"`
	OwnerID   int64        `json:"-"`
	Name      string       `json:"name"`
	Bridge    string       `json:"bridge,omitempty"`
	Harness   string       `json:"harness"`
	CanSteer  bool         `json:"canSteer"`
	Status    string       `json:"status"`
	TurnID    string       `json:"turnId,omitempty"`
	TurnRoom  string       `json:"turnRoom,omitempty"`
	SteeredBy []string     `json:"steeredBy"`
	Rooms     []string     `json:"rooms"`
	Policy    *wire.Policy `json:"policy,omitempty"` // shown to the owner only
	Mode      string       `json:"mode,omitempty"`
	ModeText  string       `json:"modeText,omitempty"`
	// Effective is the agent's policy, also when Policy is hidden from
	// the caller.
	Effective wire.Policy `json:"-"`
}

// EffectivePolicy is the agent's policy (also when hidden from the caller).
func (a *Agent) EffectivePolicy() wire.Policy { return a.Effective }

// SplitHandle splits "owner/name" (a leading @ is allowed).
func SplitHandle(h string) (owner, name string, ok bool) {
	h = strings.TrimPrefix(strings.ToLower(strings.TrimSpace(h)), "@")
	owner, name, ok = strings.Cut(h, "/")
	return owner, name, ok && ValidUserName(owner) && ValidUserName(name)
}

// Bridge is a paired machine.
type Bridge struct {
	ID        string    `json:"id"`
	Owner     string    `json:"owner"`
	Name      string    `json:"name"`
	PublicKey string    `json:"publicKey"`
	CreatedAt time.Time `json:"createdAt"`
	Revoked   bool      `json:"revoked"`
}

// Invitation is a request to add an agent to a room, awaiting its owner.
type Invitation struct {
	ID          int64     `json:"id"`
	Room        string    `json:"room"`
	Agent       string    `json:"agent"`
	Owner       string    `json:"owner"`
	RequestedBy string    `json:"requestedBy"`
	Status      string    `json:"status"`
	At          time.Time `json:"at"`
}

// Approval is an owner-only decision a bridge asked for.
type Approval struct {
	ID          string    `json:"id"`
	Agent       string    `json:"agent"`
	Owner       string    `json:"owner"`
	TurnID      string    `json:"turnId"`
	Room        string    `json:"room"`
	Tool        string    `json:"tool"`
	Summary     string    `json:"summary"`
	Diff        string    `json:"diff,omitempty"`
	Payload     string    `json:"payload"`
	PayloadHash string    `json:"payloadHash"`
	SteeredBy   []string  `json:"steeredBy"`
	Tainted     bool      `json:"tainted"`
	DataTainted bool      `json:"dataTainted"`
	Data        []string  `json:"data"`    // kinds of pasted/quoted/peer data that reached the turn
	Sandbox     string    `json:"sandbox"` // where the call runs, as the bridge states it
	Status      string    `json:"status"`
	DecidedBy   string    `json:"decidedBy,omitempty"`
	Reason      string    `json:"reason,omitempty"`
	Expires     time.Time `json:"expires"`
	At          time.Time `json:"at"`
	// Thread is the thread of the turn that asked, where the card shows.
	Thread int64 `json:"thread,omitempty"`
}

// Receipt is what became of one mention of one agent.
type Receipt struct {
	SteerID   string     `json:"steerId"`
	MessageID int64      `json:"messageId"`
	Room      string     `json:"room"`
	Agent     string     `json:"agent"`
	Sender    string     `json:"sender"`
	Status    string     `json:"status"`
	Via       string     `json:"via,omitempty"` // how it reached the agent, once Status is the turn's outcome
	Reason    string     `json:"reason,omitempty"`
	Detail    string     `json:"detail,omitempty"`
	TurnID    string     `json:"turnId,omitempty"`
	Expires   *time.Time `json:"expires,omitempty"`
	At        time.Time  `json:"at"`
}

// StatusPending is a steer sent to the bridge with no answer yet.
const StatusPending = "pending"
