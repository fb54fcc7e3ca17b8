package room

import (
	"context"
	"encoding/json"
	"strings"
	"time"
	"unicode/utf8"

	wh "github.com/wheelhouse-dev/wheelhouse"
)

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

// Page bounds.
const (
	DefaultPage = 50
	MaxPage     = 200
)

// Post stores a message from actor in room. Text is stored raw; rendering
// must escape it.
func (s *Service) Post(ctx context.Context, actor *User, roomName, text string) (*Message, error) {
	if strings.TrimSpace(text) == "" {
		return nil, wh.Errorf(wh.EInvalid, "the message is empty")
	}
	if len(text) > MaxMessageBytes {
		return nil, &wh.Error{Code: wh.ETooLarge, Message: "the message is longer than 16 KiB; shorten it or share a file instead"}
	}
	if !utf8.ValidString(text) {
		return nil, wh.Errorf(wh.EInvalid, "the message is not valid UTF-8")
	}
	if _, err := s.access(ctx, actor, roomName); err != nil {
		return nil, err
	}
	d := messagePosted{Room: roomName, AuthorKind: AuthorUser, Author: actor.Name, Text: text, Mentions: ParseMentions(text), Parts: QuotedParts(text)}
	ev, err := NewEvent(EvMessagePosted, s.now(), d)
	if err != nil {
		return nil, wh.Wrap(err, "encode message")
	}
	seq, err := s.Log.Append(ctx, ev)
	if err != nil {
		return nil, err
	}
	// The projection stored exactly this; no need to read it back.
	return &Message{ID: int64(seq), Room: roomName, AuthorKind: AuthorUser, Author: actor.Name, Text: text,
		Mentions: nonNil(d.Mentions), Parts: nonNilParts(d.Parts), CreatedAt: ev.At}, nil
}

// PostAs stores a message from an agent or the system (no membership check:
// the caller is the hub, acting for a bridge whose agent is in the room).
func (s *Service) PostAs(ctx context.Context, authorKind, author, roomName, text, turnID, kind string) (*Message, error) {
	if len(text) > MaxMessageBytes {
		text = text[:MaxMessageBytes-64] + "\n… (truncated)"
		for !utf8.ValidString(text) {
			text = text[:len(text)-1]
		}
	}
	seq, err := s.append(ctx, EvMessagePosted, messagePosted{Room: roomName, AuthorKind: authorKind, Author: author, Text: text, TurnID: turnID, Kind: kind})
	if err != nil {
		return nil, err
	}
	return s.MessageByID(ctx, int64(seq))
}

// MessageByID reads one message.
func (s *Service) MessageByID(ctx context.Context, id int64) (*Message, error) {
	ms, err := s.queryMessages(ctx, `SELECT m.id, r.name, m.author_kind, m.author, m.text, m.mentions, m.parts, m.turn_id, m.kind, m.created_at
		FROM messages m JOIN rooms r ON r.id = m.room_id WHERE m.id = ?`, id)
	if err != nil {
		return nil, err
	}
	if len(ms) == 0 {
		return nil, wh.Errorf(wh.ENotFound, "no message %d", id)
	}
	return &ms[0], nil
}

// History returns up to limit messages of a room, oldest first: the newest
// ones by default, those after `after` or before `before` when given.
func (s *Service) History(ctx context.Context, actor *User, roomName string, after, before int64, limit int) ([]Message, error) {
	roomID, err := s.access(ctx, actor, roomName)
	if err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = DefaultPage
	}
	if limit > MaxPage {
		limit = MaxPage
	}
	if after < 0 || before < 0 {
		return nil, wh.Errorf(wh.EInvalid, "after and before must be message ids (>= 0)")
	}
	base := `SELECT m.id, r.name, m.author_kind, m.author, m.text, m.mentions, m.parts, m.turn_id, m.kind, m.created_at
		FROM messages m JOIN rooms r ON r.id = m.room_id WHERE m.room_id = ?`
	var ms []Message
	switch {
	case after > 0:
		q := base + ` AND m.id > ?`
		args := []any{roomID, after}
		if before > 0 {
			q += ` AND m.id < ?`
			args = append(args, before)
		}
		ms, err = s.queryMessages(ctx, q+` ORDER BY m.id ASC LIMIT ?`, append(args, limit)...)
	case before > 0:
		ms, err = s.queryMessages(ctx, base+` AND m.id < ? ORDER BY m.id DESC LIMIT ?`, roomID, before, limit)
		reverse(ms)
	default:
		ms, err = s.queryMessages(ctx, base+` ORDER BY m.id DESC LIMIT ?`, roomID, limit)
		reverse(ms)
	}
	return ms, err
}

func reverse(ms []Message) {
	for i, j := 0, len(ms)-1; i < j; i, j = i+1, j-1 {
		ms[i], ms[j] = ms[j], ms[i]
	}
}

func (s *Service) queryMessages(ctx context.Context, q string, args ...any) ([]Message, error) {
	rows, err := s.db.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, wh.Wrap(err, "read messages")
	}
	defer rows.Close()
	out := []Message{}
	for rows.Next() {
		var m Message
		var mentions, parts, at string
		if err := rows.Scan(&m.ID, &m.Room, &m.AuthorKind, &m.Author, &m.Text, &mentions, &parts, &m.TurnID, &m.Kind, &at); err != nil {
			return nil, wh.Wrap(err, "read messages")
		}
		json.Unmarshal([]byte(mentions), &m.Mentions)
		json.Unmarshal([]byte(parts), &m.Parts)
		m.CreatedAt, _ = time.Parse(time.RFC3339Nano, at)
		out = append(out, m)
	}
	return out, rows.Err()
}

// FeedSince returns the feed rows after since that user should see: events
// of rooms they are a member of now, and membership events about them.
// Bodies are the exact bytes live clients receive.
func (s *Service) FeedSince(ctx context.Context, userID int64, since uint64, limit int) ([]FeedItem, error) {
	rows, err := s.db.r.QueryContext(ctx, `SELECT seq, room_id, body FROM feed WHERE seq > ? AND (
			room_id IN (SELECT room_id FROM members WHERE user_id = ?) OR user_id = ?)
		ORDER BY seq LIMIT ?`, since, userID, userID, limit)
	if err != nil {
		return nil, wh.Wrap(err, "read feed")
	}
	defer rows.Close()
	var out []FeedItem
	for rows.Next() {
		var it FeedItem
		if err := rows.Scan(&it.Seq, &it.RoomID, &it.Body); err != nil {
			return nil, wh.Wrap(err, "read feed")
		}
		out = append(out, it)
	}
	return out, rows.Err()
}
