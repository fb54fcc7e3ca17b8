package chat

import "time"

// Message is one chat message. ID is its stream sequence.
type Message struct {
	ID         int64     `json:"id"`
	Room       string    `json:"room"`
	AuthorKind string    `json:"authorKind"`
	Author     string    `json:"author"`
	Text       string    `json:"text"`
	Mentions   []Mention `json:"mentions"`
	Parts      []Part    `json:"parts"`
	TurnID     string    `json:"turnId,omitempty"`
	Kind       string    `json:"kind,omitempty"` // "" chat, "tool", "progress"
	CreatedAt  time.Time `json:"createdAt"`
	// Thread is the id of the thread's first message (its root) for a
	// reply in a thread; 0 (omitted) for a message in the channel.
	Thread int64 `json:"thread,omitempty"`
	// Files are the files posted with the message.
	Files []File `json:"files"`
	// Reactions: each emoji with who reacted with it.
	Reactions []Reaction `json:"reactions"`
	// EditedAt is set once the author edited the text.
	EditedAt *time.Time `json:"editedAt,omitempty"`
	// Deleted marks a tombstone: the text, mentions, files and reactions
	// are gone; DeletedBy is who deleted it (the author or a room admin).
	Deleted   bool   `json:"deleted,omitempty"`
	DeletedBy string `json:"deletedBy,omitempty"`
	// Partial marks an agent's message that is still being written (the
	// agent streams it; the text grows in place until Partial is false).
	Partial bool `json:"partial,omitempty"`
	// Replies summarizes the thread under a root: present once it has a
	// reply or an agent turn.
	Replies *ThreadSummary `json:"replies,omitempty"`
}

// Normalize makes the list fields empty lists rather than null in JSON.
func (m *Message) Normalize() {
	m.Mentions = NonNilMentions(m.Mentions)
	m.Parts = NonNilParts(m.Parts)
	if m.Files == nil {
		m.Files = []File{}
	}
	if m.Reactions == nil {
		m.Reactions = []Reaction{}
	}
}

// File is an uploaded file as messages and the API show it.
type File struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Size int64  `json:"size"`
	Type string `json:"type"` // sniffed from the bytes, never the client's word
	URL  string `json:"url"`
}

// FileURL is where a room's members download a file.
func FileURL(room, id string) string { return "/api/v1/rooms/" + room + "/files/" + id }

// RequestFileURL is where the owner asked to forward a moderated mention
// (and its sender) download a file posted with it.
func RequestFileURL(steerID, id string) string { return "/api/v1/requests/" + steerID + "/files/" + id }

// Reaction is one emoji on a message and who reacted with it.
type Reaction struct {
	Emoji string   `json:"emoji"`
	Count int      `json:"count"`
	Users []string `json:"users"`
}

// ThreadSummary is what the channel shows of a thread under its root: how
// many replies, the last one, and the agent turns that live in it.
type ThreadSummary struct {
	Count      int          `json:"count"`
	LastID     int64        `json:"lastId,omitempty"`
	LastAuthor string       `json:"lastAuthor,omitempty"`
	LastAt     *time.Time   `json:"lastAt,omitempty"`
	Turns      []ThreadTurn `json:"turns"`
}

// ThreadTurn is an agent turn that lives in a thread, with its status:
// running, needs-approval, completed, interrupted or failed.
type ThreadTurn struct {
	Agent  string `json:"agent"`
	TurnID string `json:"turnId"`
	Status string `json:"status"`
}

// Turn statuses a thread shows beyond the wire's end statuses.
const (
	TurnRunning       = "running"
	TurnNeedsApproval = "needs-approval"
)

// Bounds on messages and pages.
const (
	// MaxMessageBytes bounds a message's text.
	MaxMessageBytes = 16 << 10
	DefaultPage     = 50
	MaxPage         = 200
	// MaxFilesPerMessage bounds the files one message carries.
	MaxFilesPerMessage = 10
	// MaxReactionsPerMessage bounds the distinct emoji on one message.
	MaxReactionsPerMessage = 64
	// MaxThreadTurns bounds the turns a thread summary lists (the newest).
	MaxThreadTurns = 10
)

// NonNilMentions returns m, or an empty slice for nil (JSON "[]").
func NonNilMentions(m []Mention) []Mention {
	if m == nil {
		return []Mention{}
	}
	return m
}

// NonNilParts returns p, or an empty slice for nil (JSON "[]").
func NonNilParts(p []Part) []Part {
	if p == nil {
		return []Part{}
	}
	return p
}

// NonNilStrings returns s, or an empty slice for nil (JSON "[]").
func NonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
