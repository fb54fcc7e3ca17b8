package room

import (
	"context"
	"database/sql"
	"errors"
	"time"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// Receipt is what became of one mention of one agent.
type Receipt struct {
	SteerID   string     `json:"steerId"`
	MessageID int64      `json:"messageId"`
	Room      string     `json:"room"`
	Agent     string     `json:"agent"`
	Sender    string     `json:"sender"`
	Status    string     `json:"status"`
	Reason    string     `json:"reason,omitempty"`
	Detail    string     `json:"detail,omitempty"`
	TurnID    string     `json:"turnId,omitempty"`
	Expires   *time.Time `json:"expires,omitempty"`
	At        time.Time  `json:"at"`
}

// StatusPending is a steer sent to the bridge with no answer yet.
const StatusPending = "pending"

// RecordSteer stores a steer (pending, or already rejected by the hub). It
// returns once the record is durable in the log; the projection applies it
// before any receipt appended later (the stream keeps the order).
func (s *Service) RecordSteer(ctx context.Context, r Receipt) error {
	ev, err := NewEvent(EvSteerRecorded, s.now(), steerRecorded{ID: r.SteerID, MessageID: r.MessageID, Room: r.Room, Handle: r.Agent,
		Sender: r.Sender, Status: r.Status, Reason: r.Reason, Detail: r.Detail, TurnID: r.TurnID, ExpiresAt: r.Expires})
	if err != nil {
		return wh.Wrap(err, "encode steer")
	}
	_, err = s.Log.Record(ctx, ev)
	return err
}

// UpdateSteer records a receipt from the bridge. A final status is never
// replaced (the first final receipt wins, on every node).
func (s *Service) UpdateSteer(ctx context.Context, rc wire.Receipt) error {
	var exp *time.Time
	if !rc.Expires.IsZero() {
		exp = &rc.Expires
	}
	_, err := s.append(ctx, EvSteerReceipt, steerRecorded{ID: rc.SteerID, Status: rc.Status, Reason: rc.Reason, Detail: rc.Detail, TurnID: rc.TurnID, ExpiresAt: exp})
	return err
}

func applySteerRecorded(ctx context.Context, tx *sql.Tx, seq uint64, ev Event) ([]FeedItem, error) {
	var d steerRecorded
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
	if _, err := tx.ExecContext(ctx, `INSERT INTO steers (id, message_id, room_id, agent_id, sender, status, reason, detail, turn_id, expires_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, d.ID, d.MessageID, rid, agentID, d.Sender, d.Status, d.Reason, d.Detail, d.TurnID, exp, ts(ev.At)); err != nil {
		return nil, wh.Errorf(wh.EConflict, "steer %s already recorded", d.ID)
	}
	if agentID != 0 {
		if err := timelineTx(ctx, tx, seq, agentID, "steer", d.TurnID, d.Sender, map[string]any{"steerId": d.ID, "room": d.Room, "messageId": d.MessageID, "status": d.Status, "reason": d.Reason}, ev.At); err != nil {
			return nil, err
		}
	}
	return receiptFeedTx(ctx, tx, seq, d.ID, ev.At)
}

func applySteerReceipt(ctx context.Context, tx *sql.Tx, seq uint64, ev Event) ([]FeedItem, error) {
	var d steerRecorded
	if err := decode(ev, &d); err != nil {
		return nil, err
	}
	var cur string
	var agentID int64
	err := tx.QueryRowContext(ctx, `SELECT status, agent_id FROM steers WHERE id = ?`, d.ID).Scan(&cur, &agentID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, wh.Errorf(wh.ENotFound, "no steer %s", d.ID)
	}
	if err != nil {
		return nil, err
	}
	if cur != StatusPending && cur != wire.StatusQueued {
		return nil, wh.Errorf(wh.EConflict, "steer %s already ended as %s", d.ID, cur)
	}
	var exp any
	if d.ExpiresAt != nil {
		exp = ts(*d.ExpiresAt)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE steers SET status = ?, reason = ?, detail = ?, turn_id = CASE WHEN ? = '' THEN turn_id ELSE ? END,
		expires_at = COALESCE(?, expires_at), updated_at = ? WHERE id = ?`, d.Status, d.Reason, d.Detail, d.TurnID, d.TurnID, exp, ts(ev.At), d.ID); err != nil {
		return nil, err
	}
	if agentID != 0 { // a mention of an unknown agent has no timeline
		if err := timelineTx(ctx, tx, seq, agentID, "receipt", d.TurnID, "", map[string]any{"steerId": d.ID, "status": d.Status, "reason": d.Reason, "detail": d.Detail}, ev.At); err != nil {
			return nil, err
		}
	}
	return receiptFeedTx(ctx, tx, seq, d.ID, ev.At)
}

const receiptCols = `s.id, s.message_id, r.name, COALESCE(u.name || '/' || a.name, ''), s.sender, s.status, s.reason, s.detail, s.turn_id, s.expires_at, s.updated_at
	FROM steers s JOIN rooms r ON r.id = s.room_id LEFT JOIN agents a ON a.id = s.agent_id LEFT JOIN users u ON u.id = a.owner_id`

func scanReceipt(sc scanner) (Receipt, error) {
	var r Receipt
	var exp sql.NullString
	var at string
	err := sc.Scan(&r.SteerID, &r.MessageID, &r.Room, &r.Agent, &r.Sender, &r.Status, &r.Reason, &r.Detail, &r.TurnID, &exp, &at)
	if exp.Valid {
		t, _ := time.Parse(time.RFC3339Nano, exp.String)
		r.Expires = &t
	}
	r.At, _ = time.Parse(time.RFC3339Nano, at)
	return r, err
}

func receiptFeedTx(ctx context.Context, tx *sql.Tx, seq uint64, id string, at time.Time) ([]FeedItem, error) {
	r, err := scanReceipt(tx.QueryRowContext(ctx, `SELECT `+receiptCols+` WHERE s.id = ?`, id))
	if err != nil {
		return nil, err
	}
	if r.Agent == "" {
		r.Agent = "" // unknown agent: the mention names it
	}
	rid, err := roomIDTx(ctx, tx, r.Room)
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
func (s *Service) Receipt(ctx context.Context, steerID string) (Receipt, error) {
	r, err := scanReceipt(s.db.stmt(ctx, `SELECT `+receiptCols+` WHERE s.id = ?`).QueryRowContext(ctx, steerID))
	if errors.Is(err, sql.ErrNoRows) {
		return r, wh.Errorf(wh.ENotFound, "no steer %s", steerID)
	}
	return r, err
}

// ReceiptsFor returns the receipts of the given messages.
func (s *Service) ReceiptsFor(ctx context.Context, ids []int64) ([]Receipt, error) {
	out := []Receipt{}
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
func (s *Service) PendingSteers(ctx context.Context, handle string) ([]Receipt, error) {
	a, err := s.AgentByHandle(ctx, handle)
	if err != nil {
		return nil, err
	}
	return s.queryReceipts(ctx, `WHERE s.agent_id = ? AND s.status IN ('pending', 'queued')`, a.ID)
}

func (s *Service) queryReceipts(ctx context.Context, where string, args ...any) ([]Receipt, error) {
	rows, err := s.db.r.QueryContext(ctx, `SELECT `+receiptCols+` `+where, args...)
	if err != nil {
		return nil, wh.Wrap(err, "read steers")
	}
	defer rows.Close()
	var out []Receipt
	for rows.Next() {
		r, err := scanReceipt(rows)
		if err != nil {
			return nil, wh.Wrap(err, "read steers")
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// RecordTurn stores a turn start or end (and the agent's new state), or a
// tool event of the turn (its command and outcome, refusals included).
func (s *Service) RecordTurn(ctx context.Context, handle string, te wire.TurnEvent, by string) error {
	ev := turnEvent{Handle: handle, TurnID: te.TurnID, Kind: te.Kind, Status: te.Status, Room: te.Room, By: by}
	if te.Kind == wire.TurnTool {
		ev.Text = te.Text
		if len(ev.Text) > 4<<10 {
			ev.Text = ev.Text[:4<<10] + "…"
		}
	}
	_, err := s.append(ctx, EvTurn, ev)
	return err
}

func applyTurn(ctx context.Context, tx *sql.Tx, seq uint64, ev Event) ([]FeedItem, error) {
	var d turnEvent
	if err := decode(ev, &d); err != nil {
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
	if d.Text != "" {
		detail["text"] = d.Text
	}
	return nil, timelineTx(ctx, tx, seq, a.ID, "turn."+d.Kind, d.TurnID, d.By, detail, ev.At)
}

// StalePendingSteers lists steers still pending (sent, never answered)
// that were last updated before cutoff.
func (s *Service) StalePendingSteers(ctx context.Context, cutoff time.Time) ([]Receipt, error) {
	return s.queryReceipts(ctx, `WHERE s.status = 'pending' AND s.updated_at < ? LIMIT 100`, ts(cutoff))
}
