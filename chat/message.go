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
}

// Bounds on messages and pages.
const (
	// MaxMessageBytes bounds a message's text.
	MaxMessageBytes = 16 << 10
	DefaultPage     = 50
	MaxPage         = 200
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
