package chat

import (
	"regexp"
	"sort"
	"strings"
)

// Kinds, roles and authors.
const (
	KindRoom   = "room"
	KindDM     = "dm"
	RoleAdmin  = "admin"
	RoleMember = "member"

	AuthorUser   = "user"
	AuthorAgent  = "agent"
	AuthorSystem = "system"
)

// Room is a room or DM as a member sees it.
type Room struct {
	ID            int64    `json:"id"`
	Name          string   `json:"name"`
	Kind          string   `json:"kind"`
	Private       bool     `json:"private"`
	Topic         string   `json:"topic"`
	Role          string   `json:"role,omitempty"` // the caller's role; "" if not a member
	MemberCount   int      `json:"memberCount"`
	LastMessageID int64    `json:"lastMessageId"`
	Peers         []string `json:"peers,omitempty"` // DMs: the other participants
	// For the caller, in rooms they are a member of: the last message id
	// they read (their read marker), how many channel messages from others
	// came after it (capped at MaxUnread), how many of those and of the
	// thread replies after it mention them (in a DM: every unread message),
	// and their notification level.
	LastRead int64  `json:"lastRead"`
	Unread   int    `json:"unread"`
	Mentions int    `json:"mentions"`
	Notify   string `json:"notify,omitempty"`
}

// MaxUnread caps the unread and mention counts (the UI shows "999+").
const MaxUnread = 1000

// Notification levels, per user and room.
const (
	NotifyAll      = "all"
	NotifyMentions = "mentions"
	NotifyNone     = "none"
)

// ValidNotify reports whether level is a notification level.
func ValidNotify(level string) bool {
	return level == NotifyAll || level == NotifyMentions || level == NotifyNone
}

// DefaultNotify is the level of a room whose member chose none: every
// message of a DM, mentions elsewhere.
func DefaultNotify(kind string) string {
	if kind == KindDM {
		return NotifyAll
	}
	return NotifyMentions
}

// Member is one member of a room.
type Member struct {
	User        string `json:"user"`
	Role        string `json:"role"`
	Deactivated bool   `json:"deactivated,omitempty"`
}

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,31}$`)
var roomRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// ValidUserName reports whether name is a valid user (or agent) name.
func ValidUserName(name string) bool { return nameRE.MatchString(name) }

// ValidRoomName reports whether name is a valid room name.
func ValidRoomName(name string) bool { return roomRE.MatchString(name) }

// DMName is the room name of the DM between the given people.
func DMName(a, b string) string {
	p := []string{a, b}
	sort.Strings(p)
	return "dm:" + p[0] + ":" + p[1]
}

// AgentDMName is the room name of a user's DM with an agent.
func AgentDMName(user, handle string) string {
	owner, name, _ := SplitHandle(handle)
	return "dm:" + user + ":" + owner + "+" + name
}

// AgentDMParts parses the name of a person's DM with an agent.
func AgentDMParts(roomName string) (user, owner, agent string, ok bool) {
	rest, found := strings.CutPrefix(roomName, "dm:")
	if !found {
		return "", "", "", false
	}
	user, h, found := strings.Cut(rest, ":")
	if !found {
		return "", "", "", false
	}
	owner, agent, found = strings.Cut(h, "+")
	if !found || !ValidUserName(user) || !ValidUserName(owner) || !ValidUserName(agent) {
		return "", "", "", false
	}
	return user, owner, agent, true
}

// IsDM reports whether a room name names a DM.
func IsDM(name string) bool { return strings.HasPrefix(name, "dm:") }

// DMPeers lists the other participants of a DM as me sees them (agents as
// owner/name).
func DMPeers(name, me string) []string {
	var out []string
	for _, p := range strings.Split(strings.TrimPrefix(name, "dm:"), ":") {
		if p != me {
			out = append(out, strings.Replace(p, "+", "/", 1))
		}
	}
	if len(out) == 0 {
		out = []string{me} // a DM with yourself
	}
	return out
}
