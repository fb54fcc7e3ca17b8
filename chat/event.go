package chat

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// Event is one state change, as appended to the stream. Apply is a pure
// function of the event and the current projection, so every hub node that
// applies the stream in order reaches the same state.
type Event struct {
	ID   string          `json:"id"` // idempotency key, sent as Nats-Msg-Id
	Type string          `json:"type"`
	At   time.Time       `json:"at"`
	Data json.RawMessage `json:"data"`
}

// Event types.
const (
	EvUserCreated       = "user.created"
	EvCredentialCreated = "credential.created"
	EvCredentialRevoked = "credential.revoked"
	EvRoomCreated       = "room.created"
	EvMemberAdded       = "member.added"
	EvMemberRemoved     = "member.removed"
	EvMessagePosted     = "message.posted"
)

func newEventID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// NewEventWithID builds an event with a given idempotency key, for changes
// several hub nodes may notice at once (the stream keeps the first).
func NewEventWithID(id, typ string, at time.Time, data any) (Event, error) {
	ev, err := NewEvent(typ, at, data)
	ev.ID = id
	return ev, err
}

// NewEvent builds an event with a fresh idempotency key.
func NewEvent(typ string, at time.Time, data any) (Event, error) {
	b, err := json.Marshal(data)
	if err != nil {
		return Event{}, err
	}
	return Event{ID: newEventID(), Type: typ, At: at.UTC(), Data: b}, nil
}

// UserCreated is the payload of the event recorded when an account was created.
type UserCreated struct {
	Name         string `json:"name"`
	Display      string `json:"display,omitempty"`
	PasswordHash string `json:"passwordHash"`
	Admin        bool   `json:"admin,omitempty"`
	Setup        bool   `json:"setup,omitempty"` // the first admin, refused once any user exists
}

// CredentialCreated is the payload of the event recorded when a session or API token was issued.
type CredentialCreated struct {
	TokenHash string     `json:"tokenHash"`
	User      string     `json:"user"`
	Kind      string     `json:"kind"`
	Label     string     `json:"label,omitempty"`
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
	// Client and Addr say where a session was opened (the browser's
	// User-Agent, shortened, and the client address), for its user's list
	// of sessions.
	Client string `json:"client,omitempty"`
	Addr   string `json:"addr,omitempty"`
}

// CredentialRevoked is the payload of the event recorded when a session or token was revoked.
type CredentialRevoked struct {
	TokenHash string `json:"tokenHash"`
	Reason    string `json:"reason,omitempty"` // End*; empty in older events: EndRevoked
}

// RoomCreated is the payload of the event recorded when a room or DM was created.
type RoomCreated struct {
	Name    string   `json:"name"`
	Kind    string   `json:"kind"`
	Private bool     `json:"private,omitempty"`
	Topic   string   `json:"topic,omitempty"`
	Creator string   `json:"creator"`
	Members []string `json:"members,omitempty"` // DMs: both people
}

// MemberChange is the payload of the event recorded when someone joined or left a room.
type MemberChange struct {
	Room string `json:"room"`
	User string `json:"user"`
	Role string `json:"role,omitempty"`
	By   string `json:"by"`
}

// MessagePosted is the payload of the event recorded when a message was posted.
type MessagePosted struct {
	Room       string    `json:"room"`
	AuthorKind string    `json:"authorKind"`
	Author     string    `json:"author"`
	Text       string    `json:"text"`
	Mentions   []Mention `json:"mentions,omitempty"`
	Parts      []Part    `json:"parts,omitempty"`
	TurnID     string    `json:"turnId,omitempty"`
	Kind       string    `json:"kind,omitempty"`
	// Route: the projection records a steer for every agent mention (the
	// hub's router then delivers it). Messages from before routing was
	// driven by the log have their steers in steer.recorded events.
	Route bool `json:"route,omitempty"`
	// Turns names, per agent handle, the turn the sender saw running.
	Turns map[string]string `json:"turns,omitempty"`
	// Thread is the root of the thread the message replies in (0: the
	// channel).
	Thread int64 `json:"thread,omitempty"`
	// Files names files the author uploaded to the room, now posted.
	Files []string `json:"files,omitempty"`
	// Words are the owner's signed message statements, by the handle
	// (owner/name) of the agent each names: the projection puts each on
	// the steer of its agent and the router relays it unchanged
	// (wire.Steer.Words). The hub checked them when it took the post.
	Words map[string]wire.Signed `json:"words,omitempty"`
	// Item names an agent's streamed message (with TurnID): a message
	// posted again with the same item replaces the text of the first, in
	// place; Partial marks every version but the last.
	Item    string `json:"item,omitempty"`
	Partial bool   `json:"partial,omitempty"`
	// BridgeEvent names the bridge event this output came from (bridge id
	// and the bridge's event id): the projection applies it once.
	BridgeEvent string `json:"bridgeEvent,omitempty"`
}

// SteerID is the id of the steer for the i-th agent mention of message seq.
func SteerID(seq uint64, i int) string { return fmt.Sprintf("s%d.%d", seq, i) }
