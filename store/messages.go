package store

import (
	"context"
	"encoding/json"
	"time"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/chat"
)

// MessageByID reads one message.
func (s *Store) MessageByID(ctx context.Context, id int64) (*chat.Message, error) {
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

// Page selects a page of a room's history. With neither After nor
// Before it is the newest messages; After pages forward from that id
// (0: from the first message); Before pages backward.
type Page struct {
	After    int64
	HasAfter bool
	Before   int64 // 0: no upper bound
	Limit    int
}

// History returns a page of a room's messages, oldest first.
func (s *Store) History(ctx context.Context, roomID int64, p Page) ([]chat.Message, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = chat.DefaultPage
	}
	if limit > chat.MaxPage {
		limit = chat.MaxPage
	}
	if p.After < 0 || p.Before < 0 {
		return nil, wh.Errorf(wh.EInvalid, "after and before must be message ids (>= 0)")
	}
	base := `SELECT m.id, r.name, m.author_kind, m.author, m.text, m.mentions, m.parts, m.turn_id, m.kind, m.created_at
		FROM messages m JOIN rooms r ON r.id = m.room_id WHERE m.room_id = ?`
	var ms []chat.Message
	var err error
	switch {
	case p.HasAfter:
		q := base + ` AND m.id > ?`
		args := []any{roomID, p.After}
		if p.Before > 0 {
			q += ` AND m.id < ?`
			args = append(args, p.Before)
		}
		ms, err = s.queryMessages(ctx, q+` ORDER BY m.id ASC LIMIT ?`, append(args, limit)...)
	case p.Before > 0:
		ms, err = s.queryMessages(ctx, base+` AND m.id < ? ORDER BY m.id DESC LIMIT ?`, roomID, p.Before, limit)
		reverse(ms)
	default:
		ms, err = s.queryMessages(ctx, base+` ORDER BY m.id DESC LIMIT ?`, roomID, limit)
		reverse(ms)
	}
	return ms, err
}

func reverse(ms []chat.Message) {
	for i, j := 0, len(ms)-1; i < j; i, j = i+1, j-1 {
		ms[i], ms[j] = ms[j], ms[i]
	}
}

func (s *Store) queryMessages(ctx context.Context, q string, args ...any) ([]chat.Message, error) {
	rows, err := s.db.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, wh.Wrap(err, "read messages")
	}
	defer rows.Close()
	out := []chat.Message{}
	for rows.Next() {
		var m chat.Message
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

// FeedSince returns the feed items after position (since, idx) that user
// should see: events of rooms they are a member of now, and membership
// events about them. Bodies are the exact bytes live clients receive.
func (s *Store) FeedSince(ctx context.Context, userID int64, since uint64, idx int, limit int) ([]chat.FeedItem, error) {
	rows, err := s.db.r.QueryContext(ctx, `SELECT seq, idx, room_id, body FROM feed WHERE (seq > ? OR (seq = ? AND idx > ?)) AND (
			room_id IN (SELECT room_id FROM members WHERE user_id = ?) OR user_id = ?)
		ORDER BY seq, idx LIMIT ?`, since, since, idx, userID, userID, limit)
	if err != nil {
		return nil, wh.Wrap(err, "read feed")
	}
	defer rows.Close()
	var out []chat.FeedItem
	for rows.Next() {
		var it chat.FeedItem
		if err := rows.Scan(&it.Seq, &it.Idx, &it.RoomID, &it.Body); err != nil {
			return nil, wh.Wrap(err, "read feed")
		}
		out = append(out, it)
	}
	return out, rows.Err()
}
