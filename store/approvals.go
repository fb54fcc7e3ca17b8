package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/authz"
	"github.com/wheelhouse-dev/wheelhouse/chat"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

const approvalCols = `p.id, u.name || '/' || a.name, u.name, p.turn_id, p.room, p.tool, p.summary, p.diff, p.payload, p.payload_hash, p.steered_by,
	p.tainted, p.status, p.decided_by, p.reason, p.expires_at, p.created_at, p.sandbox, p.data, p.thread_id, p.decided_device,
	COALESCE((SELECT d.name FROM devices d WHERE d.id = p.decided_device AND d.bridge_id = a.bridge_id), ''), p.unverified
	FROM approvals p JOIN agents a ON a.id = p.agent_id JOIN users u ON u.id = a.owner_id`

func scanApproval(sc scanner) (*chat.Approval, error) {
	var p chat.Approval
	var steered, exp, at, data string
	if err := sc.Scan(&p.ID, &p.Agent, &p.Owner, &p.TurnID, &p.Room, &p.Tool, &p.Summary, &p.Diff, &p.Payload, &p.PayloadHash, &steered,
		&p.Tainted, &p.Status, &p.DecidedBy, &p.Reason, &exp, &at, &p.Sandbox, &data, &p.Thread, &p.DecidedDevice, &p.DeviceName, &p.Unverified); err != nil {
		return nil, err
	}
	json.Unmarshal([]byte(steered), &p.SteeredBy)
	if p.SteeredBy == nil {
		p.SteeredBy = []string{}
	}
	json.Unmarshal([]byte(data), &p.Data)
	if p.Data == nil {
		p.Data = []string{}
	}
	p.DataTainted = len(p.Data) > 0
	p.Expires, _ = time.Parse(time.RFC3339Nano, exp)
	p.At, _ = time.Parse(time.RFC3339Nano, at)
	return &p, nil
}

// ApprovalByID reads an approval.
func (s *Store) ApprovalByID(ctx context.Context, id string) (*chat.Approval, error) {
	p, err := scanApproval(s.db.r.QueryRowContext(ctx, `SELECT `+approvalCols+` WHERE p.id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, wh.Errorf(wh.ENotFound, "no approval request %s", id)
	}
	if err != nil {
		return nil, wh.Wrap(err, "read approval")
	}
	return p, nil
}

// Approvals lists approvals the viewer may see (the owner's, and those in
// rooms the viewer is a member of), optionally by state.
func (s *Store) Approvals(ctx context.Context, viewer *chat.User, state string) ([]*chat.Approval, error) {
	q := `SELECT ` + approvalCols + ` WHERE (a.owner_id = ? OR p.room IN (SELECT r.name FROM rooms r JOIN members m ON m.room_id = r.id WHERE m.user_id = ?))`
	args := []any{viewer.ID, viewer.ID}
	if state != "" {
		q += ` AND p.status = ?`
		args = append(args, state)
	}
	rows, err := s.db.r.QueryContext(ctx, q+` ORDER BY p.created_at DESC LIMIT 200`, args...)
	return collect("approvals", rows, err, scanApproval)
}

// PendingApprovalsInRoom lists the pending approvals of turns running in a room.
func (s *Store) PendingApprovalsInRoom(ctx context.Context, roomName string) ([]*chat.Approval, error) {
	rows, err := s.db.r.QueryContext(ctx, `SELECT `+approvalCols+` WHERE p.room = ? AND p.status = 'pending'`, roomName)
	return collect("approvals", rows, err, scanApproval)
}

func applyApprovalRequested(ctx context.Context, tx *sql.Tx, seq uint64, ev chat.Event) ([]chat.FeedItem, error) {
	var d chat.ApprovalRequested
	if err := decode(ev, &d); err != nil {
		return nil, err
	}
	a, err := agentByHandleTx(ctx, tx, d.Handle)
	if err != nil {
		return nil, err
	}
	steered, _ := json.Marshal(chat.NonNilStrings(d.SteeredBy))
	data, _ := json.Marshal(chat.NonNilStrings(d.Data))
	// The card shows in the thread of its turn.
	thread := d.Thread
	if thread == 0 {
		if thread, err = turnThreadTx(ctx, tx, a.ID, d.TurnID); err != nil {
			return nil, err
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO approvals (id, agent_id, turn_id, room, tool, summary, diff, payload, payload_hash, steered_by, tainted, status, expires_at, created_at, sandbox, data, thread_id)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?, ?, ?)`, d.ID, a.ID, d.TurnID, d.Room, d.Tool, d.Summary, d.Diff, d.Payload, d.PayloadHash,
		string(steered), d.Tainted, ts(d.Expires), ts(ev.At), d.Sandbox, string(data), thread); err != nil {
		if IsConstraint(err) {
			return nil, wh.Errorf(wh.EConflict, "approval %s already recorded", d.ID)
		}
		return nil, err
	}
	detail := map[string]any{"approvalId": d.ID, "tool": d.Tool,
		"summary": d.Summary, "payloadHash": d.PayloadHash, "steeredBy": chat.NonNilStrings(d.SteeredBy), "tainted": d.Tainted}
	if d.Sandbox != "" { // added only when present, so older events render (and hash) as they did
		detail["sandbox"] = d.Sandbox
	}
	if len(d.Data) > 0 {
		detail["data"] = d.Data
	}
	if err := timelineTx(ctx, tx, seq, a.ID, "approval.requested", d.TurnID, "", detail, ev.At); err != nil {
		return nil, err
	}
	return approvalFeedTx(ctx, tx, seq, d.ID, ev.At)
}

func applyApprovalDecided(ctx context.Context, tx *sql.Tx, seq uint64, ev chat.Event) ([]chat.FeedItem, error) {
	var d chat.ApprovalDecided
	if err := decode(ev, &d); err != nil {
		return nil, err
	}
	var status, turn string
	var agentID int64
	err := tx.QueryRowContext(ctx, `SELECT status, agent_id, turn_id FROM approvals WHERE id = ?`, d.ID).Scan(&status, &agentID, &turn)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, wh.Errorf(wh.ENotFound, "no approval request %s", d.ID)
	}
	if err != nil {
		return nil, err
	}
	if status != wire.ApprovalPending {
		return nil, &wh.Error{Code: wh.EConflict, Message: "this request was already " + status, Reason: authz.ReasonAlreadyDecided}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE approvals SET status = ?, decided_by = ?, reason = ?, decided_device = ? WHERE id = ?`, d.Status, d.By, d.Reason, d.Device, d.ID); err != nil {
		return nil, err
	}
	detail := map[string]any{"approvalId": d.ID, "payloadHash": d.Hash, "reason": d.Reason}
	if d.Device != "" {
		detail["device"] = d.Device
	}
	if err := timelineTx(ctx, tx, seq, agentID, "approval."+d.Status, turn, d.By, detail, ev.At); err != nil {
		return nil, err
	}
	return approvalFeedTx(ctx, tx, seq, d.ID, ev.At)
}

func approvalFeedTx(ctx context.Context, tx *sql.Tx, seq uint64, id string, at time.Time) ([]chat.FeedItem, error) {
	p, err := scanApproval(tx.QueryRowContext(ctx, `SELECT `+approvalCols+` WHERE p.id = ?`, id))
	if err != nil {
		return nil, err
	}
	ownerID, err := userIDTx(ctx, tx, p.Owner)
	if err != nil {
		return nil, err
	}
	var roomID int64
	ids := []int64{ownerID}
	if p.Room != "" {
		if rid, err := roomIDTx(ctx, tx, p.Room); err == nil {
			roomID = rid
			m, err := roomMembersTx(ctx, tx, rid)
			if err != nil {
				return nil, err
			}
			ids = append(ids, m...)
		}
	}
	return feedTx(ctx, tx, seq, roomID, ownerID, ids, map[string]any{"id": seq, "type": "approval", "room": p.Room, "at": at, "data": p})
}
