package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/chat"
)

// threadRootTx returns the root of the thread a reply to id belongs in: id
// itself for a message in the channel, its root for a reply (threads are
// one level deep). The message must be in room roomID.
func threadRootTx(ctx context.Context, tx querier, roomID, id int64) (int64, error) {
	var rid, thread int64
	err := tx.QueryRowContext(ctx, `SELECT room_id, thread_id FROM messages WHERE id = ?`, id).Scan(&rid, &thread)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && rid != roomID) {
		return 0, wh.Errorf(wh.ENotFound, "there is no message %d in this room to reply to", id)
	}
	if err != nil {
		return 0, err
	}
	if thread != 0 {
		return thread, nil
	}
	return id, nil
}

// threadSummaryTx is what the channel shows of the thread under root.
func threadSummaryTx(ctx context.Context, tx querier, root int64) (chat.ThreadSummary, error) {
	sum := chat.ThreadSummary{Turns: []chat.ThreadTurn{}}
	var lastAuthor sql.NullString
	var lastAt sql.NullString
	err := tx.QueryRowContext(ctx, `SELECT m.reply_count, m.last_reply_id, lr.author, lr.created_at FROM messages m
		LEFT JOIN messages lr ON lr.id = m.last_reply_id WHERE m.id = ?`, root).Scan(&sum.Count, &sum.LastID, &lastAuthor, &lastAt)
	if err != nil {
		return sum, err
	}
	sum.LastAuthor = lastAuthor.String
	if lastAt.Valid {
		t, _ := time.Parse(time.RFC3339Nano, lastAt.String)
		sum.LastAt = &t
	}
	turns, err := threadTurns(ctx, tx, `t.thread_id = ?`, root)
	if err != nil {
		return sum, err
	}
	if ts, ok := turns[root]; ok {
		sum.Turns = ts
	}
	return sum, nil
}

// threadFeedTx tells the room's members the thread under root changed (a
// reply came or went, a turn in it started, waits or ended).
func threadFeedTx(ctx context.Context, tx *sql.Tx, seq uint64, root int64, at time.Time) ([]chat.FeedItem, error) {
	var rid int64
	var room string
	err := tx.QueryRowContext(ctx, `SELECT m.room_id, r.name FROM messages m JOIN rooms r ON r.id = m.room_id WHERE m.id = ?`, root).Scan(&rid, &room)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	sum, err := threadSummaryTx(ctx, tx, root)
	if err != nil {
		return nil, err
	}
	ids, err := roomMembersTx(ctx, tx, rid)
	if err != nil {
		return nil, err
	}
	return feedTx(ctx, tx, seq, rid, 0, ids, map[string]any{"id": seq, "type": chat.FeedThread, "room": room, "at": at,
		"data": map[string]any{"root": root, "replies": sum}})
}

// recountThreadTx recomputes a root's reply count and last reply (after a
// reply was deleted).
func recountThreadTx(ctx context.Context, tx *sql.Tx, root int64) error {
	_, err := tx.ExecContext(ctx, `UPDATE messages SET
		reply_count = (SELECT COUNT(*) FROM messages x WHERE x.thread_id = ?1 AND x.deleted = 0),
		last_reply_id = COALESCE((SELECT MAX(id) FROM messages x WHERE x.thread_id = ?1 AND x.deleted = 0), 0)
		WHERE id = ?1`, root)
	return err
}

// turnThreadTx returns the thread a turn lives in (0: none known).
func turnThreadTx(ctx context.Context, tx querier, agentID int64, turn string) (int64, error) {
	var thread int64
	err := tx.QueryRowContext(ctx, `SELECT thread_id FROM turns WHERE agent_id = ? AND turn_id = ?`, agentID, turn).Scan(&thread)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return thread, err
}

// setTurnThreadTx records the thread of a turn that has none yet, and
// reports whether it did.
func setTurnThreadTx(ctx context.Context, tx *sql.Tx, agentID int64, turn string, thread int64) (bool, error) {
	if thread <= 0 || turn == "" {
		return false, nil
	}
	res, err := tx.ExecContext(ctx, `UPDATE turns SET thread_id = ? WHERE agent_id = ? AND turn_id = ? AND thread_id = 0
		AND EXISTS (SELECT 1 FROM messages WHERE id = ? AND thread_id = 0)`, thread, agentID, turn, thread)
	if err != nil {
		return false, err
	}
	n, _ := res.RowsAffected()
	if n > 0 {
		// Approvals the turn asked for before its thread was known show there too.
		if _, err := tx.ExecContext(ctx, `UPDATE approvals SET thread_id = ? WHERE agent_id = ? AND turn_id = ? AND thread_id = 0`, thread, agentID, turn); err != nil {
			return false, err
		}
	}
	return n > 0, nil
}

// TurnThread returns the thread a turn of an agent lives in (0: none known).
func (s *Store) TurnThread(ctx context.Context, agentID int64, turn string) (int64, error) {
	t, err := turnThreadTx(ctx, s.db.r, agentID, turn)
	if err != nil {
		return 0, wh.Wrap(err, "read turn")
	}
	return t, nil
}

// ThreadOfAgent checks a thread a bridge names for its agent's output: root
// must be a message in the channel of room (not a reply) whose thread holds
// a mention of the agent (a steer of it, from the root or a reply). It
// returns root, or 0 when it is not such a thread.
func (s *Store) ThreadOfAgent(ctx context.Context, agentID int64, room string, root int64) (int64, error) {
	if root <= 0 {
		return 0, nil
	}
	var n int
	err := s.db.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM messages m JOIN rooms r ON r.id = m.room_id
		WHERE m.id = ? AND m.thread_id = 0 AND r.name = ? AND EXISTS (
			SELECT 1 FROM steers s JOIN messages x ON x.id = s.message_id WHERE s.agent_id = ? AND (x.id = m.id OR x.thread_id = m.id))`,
		root, room, agentID).Scan(&n)
	if err != nil {
		return 0, wh.Wrap(err, "check thread")
	}
	if n == 0 {
		return 0, nil
	}
	return root, nil
}
