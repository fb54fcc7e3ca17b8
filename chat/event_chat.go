package chat

import "github.com/wheelhouse-dev/wheelhouse/authz"

// Event types of the chat around messages: edits, deletions, reactions,
// read markers, notification levels, files and the hub's settings.
const (
	EvMessageEdited   = "message.edited"
	EvMessageDeleted  = "message.deleted"
	EvReactionAdded   = "reaction.added"
	EvReactionRemoved = "reaction.removed"
	EvReadMarked      = "read.marked"
	EvNotifySet       = "notify.set"
	EvFileUploaded    = "file.uploaded"
	EvSettingsChanged = "settings.changed"
)

// Feed item types live clients receive besides the event types.
const (
	FeedMessage        = "message"
	FeedMessageUpdated = "message.updated" // a Message after an edit, a deletion or a streamed update
	FeedReactions      = "reactions"       // {"messageId","reactions":[Reaction]}
	FeedThread         = "thread"          // {"root","replies":ThreadSummary}
	FeedRead           = "read"            // to the reader only: {"room","lastRead","unread","mentions"}
	FeedNotify         = "notify"          // to the member only: {"room","level"}
	FeedSettings       = "settings"        // to everyone: Settings
)

// MessageEdited is the payload of the event recorded when an author edited a message.
type MessageEdited struct {
	ID   int64  `json:"id"`
	Room string `json:"room"`
	Text string `json:"text"`
	By   string `json:"by"`
	// Mentions and Parts of the new text, for display: an edit never
	// steers an agent (the steers of a message are its first text's).
	Mentions []Mention `json:"mentions,omitempty"`
	Parts    []Part    `json:"parts,omitempty"`
}

// MessageDeleted is the payload of the event recorded when a message was
// deleted (by its author, or a room admin); it leaves a tombstone.
type MessageDeleted struct {
	ID   int64  `json:"id"`
	Room string `json:"room"`
	By   string `json:"by"`
}

// ReactionChange is the payload of the events recorded when someone added
// or removed a reaction.
type ReactionChange struct {
	Room    string `json:"room"`
	Message int64  `json:"message"`
	Emoji   string `json:"emoji"`
	User    string `json:"user"`
}

// ReadMarked is the payload of the event recorded when someone read a room
// up to a message.
type ReadMarked struct {
	User string `json:"user"`
	Room string `json:"room"`
	ID   int64  `json:"id"`
}

// NotifySet is the payload of the event recorded when someone chose a
// room's notification level.
type NotifySet struct {
	User  string `json:"user"`
	Room  string `json:"room"`
	Level string `json:"level"`
}

// FileUploaded is the payload of the event recorded when a file's bytes
// were stored in the object store: from then on the room's members may
// download it and its uploader may post it.
type FileUploaded struct {
	ID       string `json:"id"`
	Room     string `json:"room"`
	Name     string `json:"name"`
	Size     int64  `json:"size"`
	Type     string `json:"type"`
	SHA256   string `json:"sha256"`
	Uploader string `json:"uploader"`
	// Quota is the uploader's limit on the bytes of their files, as the
	// hub was configured when it took the upload.
	Quota int64 `json:"quota"`
}

// Settings are the hub's settings an admin changes.
type Settings struct {
	// DefaultRooms are public rooms every new user joins.
	DefaultRooms []string `json:"defaultRooms"`
	// Limits are an admin's changes to the hub's per-person limits (nil:
	// the hub's flags).
	Limits *authz.BudgetOverrides `json:"limits,omitempty"`
}

// SettingsChanged is the payload of the event recorded when an admin
// changed the hub's settings.
type SettingsChanged struct {
	Settings
	By string `json:"by"`
}
