package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"slices"
	"strings"
	"time"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/chat"
)

// querier is what reads need: the read pool, or the projector's
// transaction (a feed item renders a message as it is after the event).
type querier interface {
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row
}

// messageCols selects a message with its room, its tombstone and edit
// state, and its thread's last reply (lr).
const messageCols = `m.id, r.name, m.author_kind, m.author, m.text, m.mentions, m.parts, m.turn_id, m.kind, m.created_at,
	m.thread_id, m.files, m.edited_at, m.deleted, m.deleted_by, m.partial, m.reply_count, m.last_reply_id, COALESCE(lr.author, ''), lr.created_at
	FROM messages m JOIN rooms r ON r.id = m.room_id LEFT JOIN messages lr ON lr.id = m.last_reply_id`

func scanMessage(sc scanner) (chat.Message, error) {
	var m chat.Message
	var mentions, parts, at, files string
	var edited, lastAt sql.NullString
	var replies int
	var lastID int64
	var lastAuthor string
	if err := sc.Scan(&m.ID, &m.Room, &m.AuthorKind, &m.Author, &m.Text, &mentions, &parts, &m.TurnID, &m.Kind, &at,
		&m.Thread, &files, &edited, &m.Deleted, &m.DeletedBy, &m.Partial, &replies, &lastID, &lastAuthor, &lastAt); err != nil {
		return m, err
	}
	json.Unmarshal([]byte(mentions), &m.Mentions)
	json.Unmarshal([]byte(parts), &m.Parts)
	json.Unmarshal([]byte(files), &m.Files)
	for i := range m.Files {
		m.Files[i].URL = chat.FileURL(m.Room, m.Files[i].ID)
	}
	m.CreatedAt, _ = time.Parse(time.RFC3339Nano, at)
	if edited.Valid {
		t, _ := time.Parse(time.RFC3339Nano, edited.String)
		m.EditedAt = &t
	}
	if replies > 0 {
		m.Replies = &chat.ThreadSummary{Count: replies, LastID: lastID, LastAuthor: lastAuthor, Turns: []chat.ThreadTurn{}}
		if lastAt.Valid {
			t, _ := time.Parse(time.RFC3339Nano, lastAt.String)
			m.Replies.LastAt = &t
		}
	}
	m.Normalize()
	return m, nil
}

// messagesWith reads the messages q selects (a query over messageCols)
// with their reactions and their threads' agent turns.
func messagesWith(ctx context.Context, qr querier, q string, args ...any) ([]chat.Message, error) {
	rows, err := qr.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, wh.Wrap(err, "read messages")
	}
	out := []chat.Message{}
	for rows.Next() {
		m, err := scanMessage(rows)
		if err != nil {
			rows.Close()
			return nil, wh.Wrap(err, "read messages")
		}
		out = append(out, m)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, wh.Wrap(err, "read messages")
	}
	if err := addReactions(ctx, qr, out); err != nil {
		return nil, err
	}
	if err := addThreadTurns(ctx, qr, out); err != nil {
		return nil, err
	}
	return out, nil
}

// placeholders returns "?, ?, …" for n values and the values.
func placeholders[T any](vs []T) (string, []any) {
	args := make([]any, len(vs))
	for i, v := range vs {
		args[i] = v
	}
	return strings.TrimSuffix(strings.Repeat("?, ", len(vs)), ", "), args
}

// addReactions fills in each message's reactions: emoji in the order they
// were first used, users in the order they reacted.
func addReactions(ctx context.Context, qr querier, ms []chat.Message) error {
	if len(ms) == 0 {
		return nil
	}
	ids := make([]int64, len(ms))
	for i, m := range ms {
		ids[i] = m.ID
	}
	ph, args := placeholders(ids)
	rows, err := qr.QueryContext(ctx, `SELECT x.message_id, x.emoji, u.name FROM reactions x JOIN users u ON u.id = x.user_id
		WHERE x.message_id IN (`+ph+`) ORDER BY x.message_id, x.seq, u.name`, args...)
	if err != nil {
		return wh.Wrap(err, "read reactions")
	}
	defer rows.Close()
	by := map[int64][]chat.Reaction{}
	for rows.Next() {
		var id int64
		var emoji, user string
		if err := rows.Scan(&id, &emoji, &user); err != nil {
			return wh.Wrap(err, "read reactions")
		}
		rs := by[id]
		i := slices.IndexFunc(rs, func(r chat.Reaction) bool { return r.Emoji == emoji })
		if i < 0 {
			rs = append(rs, chat.Reaction{Emoji: emoji})
			i = len(rs) - 1
		}
		rs[i].Count++
		rs[i].Users = append(rs[i].Users, user)
		by[id] = rs
	}
	if err := rows.Err(); err != nil {
		return wh.Wrap(err, "read reactions")
	}
	for i := range ms {
		if rs, ok := by[ms[i].ID]; ok {
			ms[i].Reactions = rs
		}
	}
	return nil
}

// addThreadTurns fills in the agent turns of the threads under roots (the
// newest MaxThreadTurns, oldest first), with a summary for a root whose
// thread has turns but no reply yet.
func addThreadTurns(ctx context.Context, qr querier, ms []chat.Message) error {
	var roots []int64
	for _, m := range ms {
		if m.Thread == 0 {
			roots = append(roots, m.ID)
		}
	}
	if len(roots) == 0 {
		return nil
	}
	ph, args := placeholders(roots)
	turns, err := threadTurns(ctx, qr, `t.thread_id IN (`+ph+`)`, args...)
	if err != nil {
		return err
	}
	for i := range ms {
		ts, ok := turns[ms[i].ID]
		if !ok {
			continue
		}
		if ms[i].Replies == nil {
			ms[i].Replies = &chat.ThreadSummary{Turns: []chat.ThreadTurn{}}
		}
		ms[i].Replies.Turns = ts
	}
	return nil
}

// threadTurns reads the turns of the threads that where selects, by root.
func threadTurns(ctx context.Context, qr querier, where string, args ...any) (map[int64][]chat.ThreadTurn, error) {
	rows, err := qr.QueryContext(ctx, `SELECT t.thread_id, u.name || '/' || a.name, t.turn_id, t.status, a.status, a.turn_id
		FROM turns t JOIN agents a ON a.id = t.agent_id JOIN users u ON u.id = a.owner_id
		WHERE `+where+` ORDER BY t.thread_id, t.started_at DESC, t.turn_id DESC`, args...)
	if err != nil {
		return nil, wh.Wrap(err, "read thread turns")
	}
	defer rows.Close()
	out := map[int64][]chat.ThreadTurn{}
	for rows.Next() {
		var root int64
		var tt chat.ThreadTurn
		var agentStatus, agentTurn string
		if err := rows.Scan(&root, &tt.Agent, &tt.TurnID, &tt.Status, &agentStatus, &agentTurn); err != nil {
			return nil, wh.Wrap(err, "read thread turns")
		}
		if tt.Status == chat.TurnRunning && agentTurn == tt.TurnID && agentStatus == chat.TurnNeedsApproval {
			tt.Status = chat.TurnNeedsApproval
		}
		if len(out[root]) < chat.MaxThreadTurns {
			out[root] = append(out[root], tt)
		}
	}
	for k, v := range out {
		slices.Reverse(v)
		out[k] = v
	}
	return out, rows.Err()
}

// MessageByID reads one message.
func (s *Store) MessageByID(ctx context.Context, id int64) (*chat.Message, error) {
	return messageByIDTx(ctx, s.db.r, id)
}

func messageByIDTx(ctx context.Context, qr querier, id int64) (*chat.Message, error) {
	ms, err := messagesWith(ctx, qr, `SELECT `+messageCols+` WHERE m.id = ?`, id)
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
// (0: from the first message); Before pages backward; Around is a page
// with that message in its middle.
//
// Without Thread it is the channel: messages not in a thread (thread
// roots among them), or with Replies every message in order. With
// Thread it is that thread's replies (the root is read on its own).
type Page struct {
	After    int64
	HasAfter bool
	Before   int64 // 0: no upper bound
	Around   int64 // 0: none
	Limit    int
	Thread   int64
	Replies  bool
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
	if p.After < 0 || p.Before < 0 || p.Around < 0 || p.Thread < 0 {
		return nil, wh.Errorf(wh.EInvalid, "after, before, around and thread must be message ids (>= 0)")
	}
	base := `SELECT ` + messageCols + ` WHERE m.room_id = ?`
	args := []any{roomID}
	switch {
	case p.Thread > 0:
		base += ` AND m.thread_id = ?`
		args = append(args, p.Thread)
	case !p.Replies:
		base += ` AND m.thread_id = 0`
	}
	page := func(extra string, xargs []any, order string, n int) ([]chat.Message, error) {
		return messagesWith(ctx, s.db.r, base+extra+` ORDER BY m.id `+order+` LIMIT ?`, append(append(slices.Clone(args), xargs...), n)...)
	}
	switch {
	case p.Around > 0:
		older, err := page(` AND m.id < ?`, []any{p.Around}, `DESC`, limit/2)
		if err != nil {
			return nil, err
		}
		slices.Reverse(older)
		newer, err := page(` AND m.id >= ?`, []any{p.Around}, `ASC`, limit-limit/2)
		return append(older, newer...), err
	case p.HasAfter:
		extra, xargs := ` AND m.id > ?`, []any{p.After}
		if p.Before > 0 {
			extra += ` AND m.id < ?`
			xargs = append(xargs, p.Before)
		}
		return page(extra, xargs, `ASC`, limit)
	case p.Before > 0:
		ms, err := page(` AND m.id < ?`, []any{p.Before}, `DESC`, limit)
		slices.Reverse(ms)
		return ms, err
	default:
		ms, err := page(``, nil, `DESC`, limit)
		slices.Reverse(ms)
		return ms, err
	}
}

// FeedSince returns the feed items after position (since, idx) that user
// should see: events of rooms they are a member of now, and events about
// them alone (their membership, their read markers). Bodies are the exact
// bytes live clients receive.
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

// StreamedMessage reads an agent's streamed message by its item.
func (s *Store) StreamedMessage(ctx context.Context, author, turn, item string) (*chat.Message, error) {
	ms, err := messagesWith(ctx, s.db.r, `SELECT `+messageCols+` WHERE m.author = ? AND m.turn_id = ? AND m.item_id = ?`, author, turn, item)
	if err != nil {
		return nil, err
	}
	if len(ms) == 0 {
		return nil, wh.Errorf(wh.ENotFound, "no message for item %s", item)
	}
	return &ms[0], nil
}
