package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/chat"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

func applySteerRecorded(ctx context.Context, tx *sql.Tx, seq uint64, ev chat.Event) ([]chat.FeedItem, error) {
	var d chat.SteerRecorded
	if err := decode(ev, &d); err != nil {
		return nil, err
	}
	rid, err := roomIDTx(ctx, tx, d.Room)
	if err != nil {
		return nil, err
	}
	var agentID int64
	if a, err := agentByHandleTx(ctx, tx, d.Handle); err == nil {
		agentID = a.ID
	}
	var exp any
	if d.ExpiresAt != nil {
		exp = ts(*d.ExpiresAt)
	}
	if _, err := execTx(ctx, tx, `INSERT INTO steers (id, message_id, room_id, agent_id, sender, status, reason, detail, turn_id, expires_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, d.ID, d.MessageID, rid, agentID, d.Sender, d.Status, d.Reason, d.Detail, d.TurnID, exp, ts(ev.At)); err != nil {
		if IsConstraint(err) {
			return nil, wh.Errorf(wh.EConflict, "steer %s already recorded", d.ID)
		}
		return nil, err
	}
	if agentID != 0 {
		if err := timelineTx(ctx, tx, seq, agentID, "steer", d.TurnID, d.Sender, map[string]any{"steerId": d.ID, "room": d.Room, "messageId": d.MessageID, "status": d.Status, "reason": d.Reason}, ev.At); err != nil {
			return nil, err
		}
	}
	return receiptFeedTx(ctx, tx, seq, d.ID, ev.At)
}

func applySteerReceipt(ctx context.Context, tx *sql.Tx, seq uint64, ev chat.Event) ([]chat.FeedItem, error) {
	var d chat.SteerRecorded
	if err := decode(ev, &d); err != nil {
		return nil, err
	}
	var cur string
	var agentID int64
	err := queryRowTx(ctx, tx, `SELECT status, agent_id FROM steers WHERE id = ?`, d.ID).Scan(&cur, &agentID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, wh.Errorf(wh.ENotFound, "no steer %s", d.ID)
	}
	if err != nil {
		return nil, err
	}
	var curReason, curDetail, turn string
	if err := queryRowTx(ctx, tx, `SELECT reason, detail, turn_id FROM steers WHERE id = ?`, d.ID).Scan(&curReason, &curDetail, &turn); err != nil {
		return nil, err
	}
	move := receiptMove(cur, curReason, curDetail, d.Status, d.Detail)
	if move == receiptRefused {
		return nil, wh.Errorf(wh.EConflict, "steer %s is already %s", d.ID, cur)
	}
	var exp any
	if d.ExpiresAt != nil {
		exp = ts(*d.ExpiresAt)
	}
	if d.TurnID != "" {
		turn = d.TurnID
	}
	status, reason, detail, via := d.Status, d.Reason, d.Detail, ""
	if move == receiptNewDetail {
		// The bridge's new word on where the message went (the owner's next
		// session took it): the status stays, the detail is the news.
		status, reason = cur, curReason
	}
	if agentID != 0 && turn != "" && (status == wire.StatusStarted || status == wire.StatusSteered || status == wire.StatusDelivered) {
		// The turn may have ended before this receipt was recorded.
		tstat, by, ended, err := turnOutcomeTx(ctx, tx, agentID, turn)
		if err != nil {
			return nil, err
		}
		if ended {
			via = status
			status, detail = receiptOutcome(tstat, by, "")
		}
	}
	if _, err := execTx(ctx, tx, `UPDATE steers SET status = ?, via = CASE WHEN ? = '' THEN via ELSE ? END, reason = ?, detail = ?, turn_id = ?,
		expires_at = COALESCE(?, expires_at), updated_at = ? WHERE id = ?`, status, via, via, reason, detail, turn, exp, ts(ev.At), d.ID); err != nil {
		return nil, err
	}
	if agentID != 0 { // a mention of an unknown agent has no timeline
		if err := timelineTx(ctx, tx, seq, agentID, "receipt", turn, "", map[string]any{"steerId": d.ID, "status": d.Status, "reason": d.Reason, "detail": d.Detail}, ev.At); err != nil {
			return nil, err
		}
	}
	feed, err := receiptFeedTx(ctx, tx, seq, d.ID, ev.At)
	if err != nil {
		return nil, err
	}
	if agentID != 0 && turn != "" && (d.Status == wire.StatusStarted || d.Status == wire.StatusDelivered) {
		// The steer started the turn: it lives in the steer's thread (if
		// the bridge has not said so already).
		items, err := turnThreadFromSteerTx(ctx, tx, seq, d.ID, agentID, turn, ev.At)
		if err != nil {
			return nil, err
		}
		feed = append(feed, items...)
	}
	return feed, nil
}

// turnThreadFromSteerTx records that the turn a steer started lives in the
// thread of the steer's message (its root, or the message itself), unless
// the message is in a person's DM with the agent (one conversation).
func turnThreadFromSteerTx(ctx context.Context, tx *sql.Tx, seq uint64, steerID string, agentID int64, turn string, at time.Time) ([]chat.FeedItem, error) {
	var msgID, thread int64
	var room string
	err := tx.QueryRowContext(ctx, `SELECT m.id, m.thread_id, r.name FROM steers s JOIN messages m ON m.id = s.message_id JOIN rooms r ON r.id = s.room_id
		WHERE s.id = ?`, steerID).Scan(&msgID, &thread, &room)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if _, _, _, dm := chat.AgentDMParts(room); dm {
		return nil, nil
	}
	if thread == 0 {
		thread = msgID
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO turns (agent_id, turn_id, room, started_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING`, agentID, turn, room, ts(at)); err != nil {
		return nil, err
	}
	set, err := setTurnThreadTx(ctx, tx, agentID, turn, thread)
	if err != nil || !set {
		return nil, err
	}
	return threadFeedTx(ctx, tx, seq, thread, at)
}

const receiptCols = `s.id, s.message_id, r.name, COALESCE(u.name || '/' || a.name, ''), s.sender, s.status, s.via, s.reason, s.detail, s.turn_id, s.expires_at, s.updated_at,
	s.forwarded_by FROM steers s JOIN rooms r ON r.id = s.room_id LEFT JOIN agents a ON a.id = s.agent_id LEFT JOIN users u ON u.id = a.owner_id`

func scanReceipt(sc scanner) (chat.Receipt, error) {
	var r chat.Receipt
	var exp sql.NullString
	var at string
	err := sc.Scan(&r.SteerID, &r.MessageID, &r.Room, &r.Agent, &r.Sender, &r.Status, &r.Via, &r.Reason, &r.Detail, &r.TurnID, &exp, &at, &r.ForwardedBy)
	if exp.Valid {
		t, _ := time.Parse(time.RFC3339Nano, exp.String)
		r.Expires = &t
	}
	r.At, _ = time.Parse(time.RFC3339Nano, at)
	return r, err
}

func receiptFeedTx(ctx context.Context, tx *sql.Tx, seq uint64, id string, at time.Time) ([]chat.FeedItem, error) {
	r, err := scanReceipt(queryRowTx(ctx, tx, `SELECT `+receiptCols+` WHERE s.id = ?`, id))
	if err != nil {
		return nil, err
	}
	if r.Agent == "" {
		r.Agent = "" // unknown agent: the mention names it
	}
	rid, err := roomIDCachedTx(ctx, tx, r.Room)
	if err != nil {
		return nil, err
	}
	ids, err := roomMembersTx(ctx, tx, rid)
	if err != nil {
		return nil, err
	}
	return feedTx(ctx, tx, seq, rid, 0, ids, map[string]any{"id": seq, "type": "receipt", "room": r.Room, "at": at, "data": r})
}

// Receipt reads one steer's receipt.
func (s *Store) Receipt(ctx context.Context, steerID string) (chat.Receipt, error) {
	r, err := scanReceipt(s.db.stmt(ctx, `SELECT `+receiptCols+` WHERE s.id = ?`).QueryRowContext(ctx, steerID))
	if errors.Is(err, sql.ErrNoRows) {
		return r, wh.Errorf(wh.ENotFound, "no steer %s", steerID)
	}
	return r, err
}

// ReceiptsFor returns the receipts of the given messages.
func (s *Store) ReceiptsFor(ctx context.Context, ids []int64) ([]chat.Receipt, error) {
	out := []chat.Receipt{}
	if len(ids) == 0 {
		return out, nil
	}
	lo, hi := ids[0], ids[0]
	for _, id := range ids {
		lo, hi = min(lo, id), max(hi, id)
	}
	rows, err := s.db.r.QueryContext(ctx, `SELECT `+receiptCols+` WHERE s.message_id BETWEEN ? AND ? ORDER BY s.message_id, s.id`, lo, hi)
	if err != nil {
		return nil, wh.Wrap(err, "read receipts")
	}
	defer rows.Close()
	want := map[int64]bool{}
	for _, id := range ids {
		want[id] = true
	}
	for rows.Next() {
		r, err := scanReceipt(rows)
		if err != nil {
			return nil, wh.Wrap(err, "read receipts")
		}
		if want[r.MessageID] {
			out = append(out, r)
		}
	}
	return out, rows.Err()
}

// PendingSteers lists steers still waiting (pending or queued) for an agent.
func (s *Store) PendingSteers(ctx context.Context, handle string) ([]chat.Receipt, error) {
	a, err := s.AgentByHandle(ctx, handle)
	if err != nil {
		return nil, err
	}
	return s.queryReceipts(ctx, `WHERE s.agent_id = ? AND s.status IN ('pending', 'queued')`, a.ID)
}

func (s *Store) queryReceipts(ctx context.Context, where string, args ...any) ([]chat.Receipt, error) {
	rows, err := s.db.r.QueryContext(ctx, `SELECT `+receiptCols+` `+where, args...)
	if err != nil {
		return nil, wh.Wrap(err, "read steers")
	}
	defer rows.Close()
	var out []chat.Receipt
	for rows.Next() {
		r, err := scanReceipt(rows)
		if err != nil {
			return nil, wh.Wrap(err, "read steers")
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// receiptMoves are what receiptMove decides of a receipt update.
type receiptMoves int

const (
	receiptRefused   receiptMoves = iota // the update changes nothing (the steer keeps its receipt)
	receiptMoved                         // the receipt takes the update's status, reason and detail
	receiptNewDetail                     // the receipt keeps its status and reason and takes the update's detail
)

// receiptMove decides what a receipt in state cur (with curReason and
// curDetail) becomes on an update to next (with nextDetail). Final states
// never change, with one exception: the hub's own "no answer in time"
// gives way to the bridge's word of what it did before its deadline (a
// late answer is the truth). A delivered receipt (started, steered,
// delivered) moves only to a final state, but takes the bridge's later
// word of where the message went (a non-final update with a new, non-empty
// detail, such as "delivered to the owner's next Claude Code session")
// without moving: the same words sent again, or a sideways status, change
// nothing, so a bridge can neither move a receipt backwards nor repeat
// itself into the room.
func receiptMove(cur, curReason, curDetail, next, nextDetail string) receiptMoves {
	switch cur {
	case chat.StatusPending, wire.StatusHeld:
		return receiptMoved
	case wire.StatusQueued:
		if next != wire.StatusQueued {
			return receiptMoved
		}
	case wire.StatusStarted, wire.StatusSteered, wire.StatusDelivered:
		switch {
		case wire.Final(next):
			return receiptMoved
		case delivered(next) && nextDetail != "" && nextDetail != curDetail:
			return receiptNewDetail
		}
	case wire.StatusRejected:
		if curReason == wire.ReasonTimeout && !wire.Final(next) {
			return receiptMoved
		}
	}
	return receiptRefused
}

// delivered reports whether a receipt status says the message reached the
// agent, before the turn's outcome.
func delivered(status string) bool {
	return status == wire.StatusStarted || status == wire.StatusSteered || status == wire.StatusDelivered
}

func applyTurn(ctx context.Context, tx *sql.Tx, seq uint64, ev chat.Event) ([]chat.FeedItem, error) {
	var d chat.TurnRecorded
	if err := decode(ev, &d); err != nil {
		return nil, err
	}
	if err := claimBridgeEventTx(ctx, tx, d.BridgeEvent, seq); err != nil {
		return nil, err
	}
	a, err := agentByHandleTx(ctx, tx, d.Handle)
	if err != nil {
		return nil, err
	}
	detail := map[string]any{"room": d.Room}
	if d.Status != "" {
		detail["status"] = d.Status
	}
	if d.Reason != "" {
		detail["reason"] = d.Reason
	}
	if d.Text != "" { // turn.tool: the command and its outcome
		detail["text"] = d.Text
	}
	if d.Usage != nil {
		detail["usage"] = d.Usage
	}
	var feed []chat.FeedItem
	switch d.Kind {
	case wire.TurnStarted:
		if err := turnStartedTx(ctx, tx, a.ID, d.TurnID, d.Room, d.Thread, ev.At); err != nil {
			return nil, err
		}
		if thread, err := turnThreadTx(ctx, tx, a.ID, d.TurnID); err != nil {
			return nil, err
		} else if thread > 0 {
			if feed, err = threadFeedTx(ctx, tx, seq, thread, ev.At); err != nil {
				return nil, err
			}
		}
	case wire.TurnEnded:
		ended, items, err := turnEndedTx(ctx, tx, seq, a.ID, d.TurnID, d.Status, d.By, d.Reason, ev.At)
		if err != nil {
			return nil, err
		}
		if !ended {
			return nil, wh.Errorf(wh.EConflict, "turn %s had already ended", d.TurnID)
		}
		if d.By != "" {
			detail["by"] = d.By
		}
		feed = items
	}
	// A turn whose thread the hub learns only now (its start was recorded
	// without one) shows in it from here on.
	if set, err := setTurnThreadTx(ctx, tx, a.ID, d.TurnID, d.Thread); err != nil {
		return nil, err
	} else if set {
		items, err := threadFeedTx(ctx, tx, seq, d.Thread, ev.At)
		if err != nil {
			return nil, err
		}
		feed = append(feed, items...)
	}
	return feed, timelineTx(ctx, tx, seq, a.ID, "turn."+d.Kind, d.TurnID, d.By, detail, ev.At)
}

// StalePendingSteers lists steers still pending (sent, never answered)
// that were last updated before cutoff.
func (s *Store) StalePendingSteers(ctx context.Context, cutoff time.Time) ([]chat.Receipt, error) {
	return s.queryReceipts(ctx, `WHERE s.status = 'pending' AND s.updated_at < ? LIMIT 100`, ts(cutoff))
}
