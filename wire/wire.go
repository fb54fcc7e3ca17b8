package wire

import (
	"fmt"
	"strings"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/authz"
)

// Version is the protocol version carried in every announce. A hub refuses a
// bridge with another major version, with a message saying which to upgrade.
const Version = 1

// Subjects. The hub publishes to ToBridge subjects; a bridge publishes only to
// its FromBridge subjects. The embedded NATS server enforces both (see hub).
//
//	wh.bridge.<bridgeID>.<kind>   hub → bridge (steer, control, decision)
//	wh.hub.<bridgeID>.<kind>      bridge → hub (announce, heartbeat, receipt, turn, output, approval)
//	_INBOX.<bridgeID>.>           replies to a bridge's own requests
const (
	KindSteer          = "steer"          // Steer, request/reply: answer is Receipt
	KindControl        = "control"        // Control (interrupt, policy), request/reply: answer is Ack
	KindDecision       = "decision"       // Decision on an approval, request/reply: answer is Ack
	KindAnnounce       = "announce"       // Announce, request/reply: answer is Ack
	KindHeartbeat      = "heartbeat"      // Heartbeat, publish
	KindReceipt        = "receipt"        // Receipt (asynchronous: queued → delivered/expired), publish
	KindTurn           = "turn"           // TurnEvent, publish
	KindApproval       = "approval"       // ApprovalRequest, request/reply: answer is Ack
	KindApprovalUpdate = "approvalupdate" // ApprovalUpdate (decided on the bridge, expired), publish
	KindInvitations    = "invitations"    // InvitationsRequest, request/reply: answer is InvitationsReply
	KindFile           = "file"           // FileRequest, request with a reply inbox: answered by FileChunk messages
)

// InvitationsRequest lists (Decide empty) or answers the owner's pending
// invitations from the bridge machine.
type InvitationsRequest struct {
	Decide string `json:"decide,omitempty"` // "accept" or "decline"
	ID     int64  `json:"id,omitempty"`
}

// Invitation is a request to add one of the owner's agents to a room.
type Invitation struct {
	ID          int64  `json:"id"`
	Room        string `json:"room"`
	Agent       string `json:"agent"`
	RequestedBy string `json:"requestedBy"`
	Status      string `json:"status"`
}

// InvitationsReply answers an InvitationsRequest.
type InvitationsReply struct {
	Ack
	Invitations []Invitation `json:"invitations,omitempty"`
}

// ToBridge is the subject the hub uses to send kind to bridge id.
func ToBridge(bridgeID, kind string) string { return fmt.Sprintf("wh.bridge.%s.%s", bridgeID, kind) }

// FromBridge is the subject bridge id publishes kind on.
func FromBridge(bridgeID, kind string) string { return fmt.Sprintf("wh.hub.%s.%s", bridgeID, kind) }

// InboxPrefix is the reply-inbox prefix a bridge must use (nats.CustomInboxPrefix).
func InboxPrefix(bridgeID string) string { return "_INBOX." + bridgeID }

// IsBridgeInbox reports whether subject is a reply inbox of bridge
// bridgeID: under InboxPrefix(bridgeID)+".", with only literal, non-empty
// tokens (no wildcard, no space or control character). A reply subject is
// chosen by the bridge that sends the request: the hub answers a bridge on
// nothing else, or a bridge could have the hub publish anywhere with the
// hub's rights.
func IsBridgeInbox(bridgeID, subject string) bool {
	rest, ok := strings.CutPrefix(subject, InboxPrefix(bridgeID)+".")
	if !ok || bridgeID == "" || strings.ContainsAny(bridgeID, ".*> ") || len(subject) > maxInboxSubject {
		return false
	}
	for _, tok := range strings.Split(rest, ".") {
		if tok == "" || tok == "*" || tok == ">" {
			return false
		}
		for _, c := range tok {
			if c <= ' ' || c == 0x7f {
				return false
			}
		}
	}
	return true
}

// maxInboxSubject bounds a reply subject (nats.go's inboxes are under 100
// bytes).
const maxInboxSubject = 256

// HubWildcard is what the hub subscribes to for all bridges' traffic.
const HubWildcard = "wh.hub.*.*"

// Receipt statuses. A steer moves from pending (at the hub) to delivered
// states and ends in exactly one final status.
const (
	StatusStarted     = "started"     // delivered: a new turn was started with the message
	StatusSteered     = "steered"     // delivered: the message was put into the running turn
	StatusQueued      = "queued"      // waits for the running turn to end
	StatusDelivered   = "delivered"   // delivered: a queued message started a turn
	StatusDone        = "done"        // final: the turn it reached completed
	StatusFailed      = "failed"      // final: the turn it reached failed (the harness crashed or errored, the bridge went away)
	StatusInterrupted = "interrupted" // final: the turn it reached was stopped (Detail says by whom)
	StatusExpired     = "expired"     // final: it was not delivered in time (Reason expired)
	StatusRejected    = "rejected"    // final, with Reason
)

// Final reports whether a receipt status is final: nothing changes it.
func Final(status string) bool {
	switch status {
	case StatusDone, StatusFailed, StatusInterrupted, StatusExpired, StatusRejected:
		return true
	}
	return false
}

// Reasons for StatusRejected (and Expired). Those authz decides are its
// own constants.
const (
	ReasonNotAMember       = authz.ReasonNotAMember
	ReasonNotAllowed       = authz.ReasonNotAllowed
	ReasonAgentNotInRoom   = authz.ReasonAgentNotInRoom
	ReasonAgentOffline     = "agent-offline"
	ReasonAgentFailed      = "agent-failed"
	ReasonAgentBusy        = "agent-busy"
	ReasonStaleTurn        = authz.ReasonStaleTurn
	ReasonTurnEnded        = authz.ReasonTurnEnded
	ReasonRateLimited      = "rate-limited"
	ReasonSteeringDisabled = authz.ReasonSteeringDisabled
	ReasonSteerLimit       = authz.ReasonSteerLimit
	ReasonExpired          = authz.ReasonExpired
	ReasonUnknownAgent     = "unknown-agent"
	ReasonTimeout          = "timeout"
	ReasonPeerAgent        = authz.ReasonPeerAgent
	ReasonDuplicate        = "duplicate"
)

// Part is a span of a message's text that the sender quoted or pasted; the
// envelope fences it as data.
type Part struct {
	Kind  string `json:"kind"` // "code", "quote", "forwarded"
	Start int    `json:"start"`
	End   int    `json:"end"`
}

// Policy is the owner's setting for one agent.
type Policy struct {
	// Address: "owner" (default), "users" (owner + Allowed), "members" (any member of a room the agent is in),
	// "moderate" (owner + Allowed; anyone else's mention waits for the owner to forward it).
	Address      string   `json:"address"`
	Allowed      []string `json:"allowed,omitempty"`     // user names for Address=="users"
	Steering     bool     `json:"steering"`              // busy mentions steer (true) or queue (false)
	MaxSteers    int      `json:"maxSteers"`             // per turn; 0 = unlimited
	Grace        Duration `json:"grace"`                 // after a turn ends, a steer for it starts a new turn within this window
	StartOnEnded bool     `json:"startOnEnded"`          // a steer for a turn that ended starts a new turn
	MaxAge       Duration `json:"maxAge"`                // queued steers expire after this
	ApprovalTTL  Duration `json:"approvalTimeout"`       // undecided approvals are denied after this
	AutoApprove  []string `json:"autoApprove,omitempty"` // tools auto-approved in untainted turns
}

// Address policies.
const (
	AddressOwner   = authz.AddressOwner
	AddressUsers   = authz.AddressUsers
	AddressMembers = authz.AddressMembers
)

// DefaultPolicy is what an agent gets when its config says nothing.
func DefaultPolicy() Policy {
	return Policy{
		Address:      AddressOwner,
		Steering:     true,
		MaxSteers:    5,
		Grace:        Duration(5 * time.Second),
		StartOnEnded: true,
		MaxAge:       Duration(10 * time.Minute),
		ApprovalTTL:  Duration(5 * time.Minute),
	}
}

// Steer is one mention of one agent, as the hub sends it to the bridge.
type Steer struct {
	ID            string    `json:"id"`        // unique per (message, agent)
	Agent         string    `json:"agent"`     // agent name on this bridge (not owner/name)
	Owner         string    `json:"owner"`     // owner user name
	Room          string    `json:"room"`      // room name (or "dm:<a>,<b>")
	RoomKind      string    `json:"roomKind"`  // "room" or "dm"
	MessageID     int64     `json:"messageId"` // stream sequence of the message
	Sender        string    `json:"sender"`    // user name, or owner/agent for an agent
	SenderIsOwner bool      `json:"senderIsOwner"`
	SenderIsAgent bool      `json:"senderIsAgent"`
	SentAt        time.Time `json:"sentAt"`
	Text          string    `json:"text"`
	Parts         []Part    `json:"parts,omitempty"`
	Stop          bool      `json:"stop,omitempty"` // owner's "stop": interrupt the running turn
	// ExpectedTurn is the turn the hub last saw running ("" if idle). The
	// bridge steers only into the turn it believes active; if this is set and
	// differs from that turn, the steer is rejected as stale.
	ExpectedTurn string `json:"expectedTurn,omitempty"`
	// Deadline (hub clock) is the last moment the bridge may act on the
	// steer. After it the hub has answered the sender "expired" and the
	// bridge refuses it, so the answer and the deed always agree.
	Deadline time.Time `json:"deadline"`
	// TimelineHead is the newest entry of the agent's timeline the hub had
	// when it sent the steer. The bridge journals it; inspect --verify later
	// checks that the hub's timeline still holds that entry unchanged.
	TimelineHead *ChainHead `json:"timelineHead,omitempty"`
	// ForwardedBy names the owner who forwarded a held (moderated) mention;
	// Forward is their signed statement, which the bridge verifies.
	ForwardedBy string  `json:"forwardedBy,omitempty"`
	Forward     *Signed `json:"forward,omitempty"`
	// Thread is the root of the thread the message replies in (0: the
	// message is in the channel, and a turn it starts lives in the thread
	// under it). The bridge reports it with the turn's events (TurnEvent.Thread).
	Thread int64 `json:"thread,omitempty"`
	// NewTurn: the message is a reply in a thread where this agent's turn
	// ended, or has none, so it must start a turn of its own (queued while
	// another turn runs) and never steer a running one: words meant for
	// one thread never land in another thread's turn. Follows names the
	// ended turn it continues, if any: then the owner's startOnEnded
	// decides, as for any steer meant for a turn that ended.
	NewTurn bool   `json:"newTurn,omitempty"`
	Follows string `json:"follows,omitempty"`
	// Files are the files posted with the message. A text file small
	// enough comes inline (Text); the bridge fetches the others (KindFile)
	// into the message's folder before the agent sees the envelope.
	Files []FileRef `json:"files,omitempty"`
	// Words is the owner device's signed message statement
	// (authz.StatementMessage) for exactly this agent, relayed unchanged by
	// the hub. Only words whose statement verifies against the bytes the
	// bridge received are the owner's; without it they are a teammate's.
	Words *Signed `json:"words,omitempty"`
}

// FileRef is a file posted with a message, as a steer names it.
type FileRef struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Type string `json:"type"`
	Size int64  `json:"size"`
	// SHA256 is the file's SHA-256, lower-case hex, as the hub recorded it
	// at upload. The bridge checks the bytes it gets against it, and a
	// forward's signature names it ("" from a hub before it was sent).
	SHA256 string `json:"sha256,omitempty"`
	// Inline: Text is the whole file (valid UTF-8 text); otherwise the
	// bridge fetches it.
	Inline bool   `json:"inline,omitempty"`
	Text   string `json:"text,omitempty"`
}

// Limits on the files of a steer.
const (
	MaxSteerFiles  = 10
	MaxInlineFile  = 64 << 10  // a text file up to this size comes inline
	MaxInlineTotal = 256 << 10 // all inline files of one steer
	MaxFileName    = authz.MaxFileName
	// FileChunk is the size of the chunks the hub streams a fetched file in.
	FileChunk = 128 << 10
)

// FileRequest asks the hub for the bytes of a file posted with a steer this
// bridge received. The hub answers on the request's reply inbox with the
// file in order, FileChunk bytes a message; the last message carries the
// header FileDoneHeader (its value the file's SHA-256, hex); an error is one
// message with the header FileErrorHeader (its value the reason).
type FileRequest struct {
	SteerID string `json:"steerId"`
	FileID  string `json:"fileId"`
}

// Headers of the hub's answer to a FileRequest.
const (
	FileDoneHeader  = "Wh-File-Done"
	FileErrorHeader = "Wh-File-Error"
)

// ChainHead names one entry of an agent's hash-chained timeline: the event
// (stream sequence), the entry's place among that event's entries, its hash.
type ChainHead struct {
	Seq  uint64 `json:"seq"`
	Idx  int    `json:"idx,omitempty"`
	Hash string `json:"hash"`
}

// Receipt reports what became of a steer.
type Receipt struct {
	SteerID string    `json:"steerId"`
	Agent   string    `json:"agent"`
	Status  string    `json:"status"`
	Reason  string    `json:"reason,omitempty"`
	Detail  string    `json:"detail,omitempty"` // human words for the reason
	TurnID  string    `json:"turnId,omitempty"`
	Expires time.Time `json:"expires,omitzero"` // for queued
	At      time.Time `json:"at"`
}

// AgentInfo is how a bridge describes one agent.
type AgentInfo struct {
	Name      string   `json:"name"`
	Harness   string   `json:"harness"`
	CanSteer  bool     `json:"canSteer"`
	Status    string   `json:"status"` // idle, working, needs-approval, failed
	TurnID    string   `json:"turnId,omitempty"`
	TurnRoom  string   `json:"turnRoom,omitempty"`  // room the running turn was started from
	SteeredBy []string `json:"steeredBy,omitempty"` // senders whose steers reached the running turn
	Policy    Policy   `json:"policy"`
	// Pending and Queued name the approvals waiting for the owner and the
	// steers queued for after the turn, so the hub can tell the bridge
	// which of them it already ended (ControlResync).
	Pending []string `json:"pending,omitempty"`
	Queued  []string `json:"queued,omitempty"`
	// Ending names turns that ended on the bridge whose turn.ended is
	// still in its outbox, on its way: the hub does not end them as lost.
	Ending []string `json:"ending,omitempty"`
	// Rooms are the rooms the bridge lets the agent act in (its owner's
	// consent, as the bridge holds it) and their ceilings. The owner's own
	// DM with the agent is always allowed and not listed.
	Rooms []RoomGrant `json:"rooms,omitempty"`
	// Journal is the head of the agent's journal on the bridge; the hub
	// records each new one in the agent's timeline, so a journal cut or
	// edited below it shows at `inspect --verify`.
	Journal *JournalHead `json:"journal,omitempty"`
}

// JournalHead is the newest entry of a bridge's journal of an agent: its
// position, its chain hash and its MAC under the bridge's journal key.
type JournalHead struct {
	N    uint64 `json:"n"`
	Hash string `json:"hash"`
	MAC  string `json:"mac"`
}

// Agent statuses.
const (
	AgentOffline       = "offline"
	AgentIdle          = "idle"
	AgentWorking       = "working"
	AgentNeedsApproval = "needs-approval"
	AgentFailed        = "failed"
)

// Announce is sent on connect and whenever the set of agents changes.
type Announce struct {
	Version int         `json:"version"`
	Agents  []AgentInfo `json:"agents"`
	// CallTimeout is the bridge's bound on a harness call: the hub waits
	// this long past a steer's deadline for the bridge's answer.
	CallTimeout Duration `json:"callTimeout,omitempty"`
	// Devices are the owner devices the bridge trusts.
	Devices []Device `json:"devices,omitempty"`
}

// AnnounceAck answers an Announce with the owner the hub knows for this
// bridge and each agent's effective policy (the owner may have changed it in
// the hub since the config was written).
type AnnounceAck struct {
	Ack
	Owner    string            `json:"owner"`
	Policies map[string]Policy `json:"policies,omitempty"`
	// HubTime is the hub's clock when it answered: the bridge learns the
	// offset between the clocks and judges steer deadlines on the hub's.
	HubTime time.Time `json:"hubTime,omitzero"`
	// Refused names agents this bridge may not run, with why (another of
	// the owner's bridges runs an agent of that name).
	Refused map[string]string `json:"refused,omitempty"`
	// Resync names, per agent, what the hub already ended (ControlResync).
	Resync []Control `json:"resync,omitempty"`
}

// Heartbeat is published every HeartbeatInterval with current agent states.
type Heartbeat struct {
	Agents []AgentInfo `json:"agents"`
	At     time.Time   `json:"at"`
}

// HeartbeatInterval and OfflineAfter bound how fast a vanished bridge's
// agents turn offline.
const (
	HeartbeatInterval = time.Second
	OfflineAfter      = 3 * time.Second
)

// TurnEvent reports turn lifecycle and output.
type TurnEvent struct {
	Agent  string    `json:"agent"`
	TurnID string    `json:"turnId"`
	Kind   string    `json:"kind"`             // started, ended, message, progress, tool
	Status string    `json:"status,omitempty"` // ended: completed, interrupted, failed
	Text   string    `json:"text,omitempty"`
	Room   string    `json:"room,omitempty"` // room the turn was started from
	By     string    `json:"by,omitempty"`   // ended as interrupted: who stopped it
	At     time.Time `json:"at"`
	// ItemID names one agent message while it is streamed: every update of
	// that message carries the same id. Partial marks an update that a later
	// event with the same ItemID supersedes; the last one is not partial.
	ItemID  string `json:"itemId,omitempty"`
	Partial bool   `json:"partial,omitempty"`
	// Usage is the model's token count for the whole turn (on ended), when
	// the harness knows it.
	Usage *Usage `json:"usage,omitempty"`
	// Thread is the root of the thread the turn lives in: the Steer.Thread
	// of the message that started it, or that message itself.
	Thread int64 `json:"thread,omitempty"`
	// EventID names this event on its bridge: the bridge sends it from its
	// outbox until the hub acknowledges it, and the hub records it once
	// however often it arrives.
	EventID string `json:"eventId,omitempty"`
}

// Usage counts a turn's model tokens.
type Usage struct {
	InputTokens  int64 `json:"inputTokens"`  // prompt tokens, summed over the turn's model calls
	OutputTokens int64 `json:"outputTokens"` // completion tokens, summed
	ModelCalls   int   `json:"modelCalls,omitempty"`
	// Estimated is set when the endpoint reported no usage for some call and
	// the harness counted by its own estimate.
	Estimated bool `json:"estimated,omitempty"`
}

// Turn end statuses.
const (
	TurnCompleted   = "completed"
	TurnInterrupted = "interrupted"
	TurnFailed      = "failed"
)

// Turn event kinds.
const (
	TurnStarted  = "started"
	TurnEnded    = "ended"
	TurnMessage  = "message"
	TurnProgress = "progress"
	TurnTool     = "tool"
)

// Control is an owner action on an agent, or the hub's resync.
type Control struct {
	Agent  string  `json:"agent"`
	Action string  `json:"action"` // ControlInterrupt, ControlPolicy, ControlResync
	TurnID string  `json:"turnId,omitempty"`
	Policy *Policy `json:"policy,omitempty"`
	By     string  `json:"by"`
	// Signed is the owner's signed policy statement: needed when the
	// policy lets the agent do more than the bridge's current one.
	Signed *Signed `json:"signed,omitempty"`
	// Resync: the approvals and queued steers the hub ended.
	Approvals []string `json:"approvals,omitempty"`
	Steers    []string `json:"steers,omitempty"`
}

// Control actions.
const (
	ControlInterrupt = "interrupt"
	ControlPolicy    = "policy"
	// ControlResync tells a bridge the hub declared it offline: its running
	// turns ended as failed, its approvals were voided and its queued steers
	// expired. The bridge ends them too, so both sides agree.
	ControlResync = "resync"
)

// ApprovalRequest is what a bridge asks the owner to decide.
type ApprovalRequest struct {
	ID          string    `json:"id"` // chosen by the bridge, unique
	Agent       string    `json:"agent"`
	TurnID      string    `json:"turnId"`
	Tool        string    `json:"tool"`
	Summary     string    `json:"summary"`
	Diff        string    `json:"diff,omitempty"`
	PayloadHash string    `json:"payloadHash"`
	Payload     string    `json:"payload"` // the canonical JSON that was hashed
	SteeredBy   []string  `json:"steeredBy"`
	Tainted     bool      `json:"tainted"`
	Room        string    `json:"room,omitempty"`
	Expires     time.Time `json:"expires"`

	// DataTainted: pasted, quoted or forwarded text, or another agent's
	// output, reached the turn (Data lists the kinds); auto-approve is off.
	DataTainted bool     `json:"dataTainted,omitempty"`
	Data        []string `json:"data,omitempty"`
	// Sandbox is where the call will run, in the harness's words (codex
	// also puts it into the approved payload, so the hash binds it).
	Sandbox string `json:"sandbox,omitempty"`
	// Thread is the thread the turn lives in (as TurnEvent.Thread).
	Thread int64 `json:"thread,omitempty"`
}

// Decision is the owner's answer, relayed by the hub (or made locally).
type Decision struct {
	ApprovalID  string `json:"approvalId"`
	Agent       string `json:"agent"`
	Decision    string `json:"decision"` // approve, deny
	PayloadHash string `json:"payloadHash"`
	By          string `json:"by"`
	Reason      string `json:"reason,omitempty"`

	// TimelineHead: as in Steer, the hub's newest timeline entry for the agent.
	TimelineHead *ChainHead `json:"timelineHead,omitempty"`
	// Signed is the owner's signed approval statement; an approval without
	// a valid one is refused (a denial needs none).
	Signed *Signed `json:"signed,omitempty"`
}

// ApprovalUpdate reports an approval decided or ended on the bridge itself:
// by the owner's local CLI, or by expiry.
type ApprovalUpdate struct {
	ApprovalID  string `json:"approvalId"`
	Agent       string `json:"agent"`
	Status      string `json:"status"` // approved, denied, expired, voided
	By          string `json:"by,omitempty"`
	PayloadHash string `json:"payloadHash,omitempty"`
	Reason      string `json:"reason,omitempty"`
	// No device: an update the bridge sends is a decision made on its own
	// machine (or none); a device's signed decision reaches the hub with
	// the device named in it (chat.ApprovalDecided).
}

// Approval states.
const (
	ApprovalPending  = authz.StatePending
	ApprovalApproved = authz.StateApproved
	ApprovalDenied   = authz.StateDenied
	ApprovalExpired  = authz.StateExpired
	ApprovalVoided   = authz.StateVoided
)

// Ack answers a request.
type Ack struct {
	OK      bool   `json:"ok"`
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
	Reason  string `json:"reason,omitempty"` // machine-readable, such as bad-signature
}

// Duration is a time.Duration that reads and writes as "5s" in JSON.
type Duration time.Duration

func (d Duration) D() time.Duration { return time.Duration(d) }

func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}
