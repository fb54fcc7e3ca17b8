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

// HeldTTL is how long a moderated mention waits for its owner.
const HeldTTL = time.Hour

func (s *Store) registerOwnerAppliers() {
	s.appliers[chat.EvBridgeDevices] = applyBridgeDevices
	s.appliers[chat.EvForgeryRefused] = applyForgeryRefused
	s.appliers[chat.EvAgentCeiling] = applyAgentCeiling
	s.appliers[chat.EvSteerForwarded] = applySteerForwarded
}

// bridgeOwnerTx is the user id of a bridge's owner. Only a missing bridge
// refuses the event; any other error stops the projector (it is not the
// same on every node).
func bridgeOwnerTx(ctx context.Context, tx *sql.Tx, bridgeID string) (int64, error) {
	var owner int64
	err := tx.QueryRowContext(ctx, `SELECT owner_id FROM bridges WHERE id = ?`, bridgeID).Scan(&owner)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, wh.Errorf(wh.ENotFound, "no bridge %s", bridgeID)
	}
	return owner, err
}

func applyBridgeDevices(ctx context.Context, tx *sql.Tx, seq uint64, ev chat.Event) ([]chat.FeedItem, error) {
	var d chat.BridgeDevices
	if err := decode(ev, &d); err != nil {
		return nil, err
	}
	owner, err := bridgeOwnerTx(ctx, tx, d.Bridge)
	if err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM devices WHERE bridge_id = ?`, d.Bridge); err != nil {
		return nil, err
	}
	for _, dv := range d.Devices {
		var revokedAt any
		if !dv.RevokedAt.IsZero() {
			revokedAt = ts(dv.RevokedAt)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO devices (bridge_id, id, name, kind, public_key, added_at, revoked, revoked_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT DO NOTHING`, d.Bridge, dv.ID, dv.Name, dv.Kind, dv.PublicKey, ts(dv.AddedAt), dv.Revoked, revokedAt); err != nil {
			return nil, err
		}
	}
	return feedTx(ctx, tx, seq, 0, owner, []int64{owner}, map[string]any{"id": seq, "type": "devices", "at": ev.At,
		"data": map[string]any{"bridge": d.Bridge}})
}

// Devices lists the devices the owner's bridges trust (and revoked).
func (s *Store) Devices(ctx context.Context, owner *chat.User) ([]chat.Device, error) {
	rows, err := s.db.r.QueryContext(ctx, `SELECT d.id, d.name, d.kind, d.public_key, d.bridge_id, b.name, d.added_at, d.revoked, d.revoked_at
		FROM devices d JOIN bridges b ON b.id = d.bridge_id WHERE b.owner_id = ? AND b.revoked = 0 ORDER BY d.added_at, d.id`, owner.ID)
	return collect("devices", rows, err, func(sc scanner) (chat.Device, error) {
		var d chat.Device
		var added string
		var revoked sql.NullString
		err := sc.Scan(&d.ID, &d.Name, &d.Kind, &d.PublicKey, &d.Bridge, &d.BridgeName, &added, &d.Revoked, &revoked)
		d.AddedAt, _ = time.Parse(time.RFC3339Nano, added)
		if revoked.Valid {
			t, _ := time.Parse(time.RFC3339Nano, revoked.String)
			d.RevokedAt = &t
		}
		return d, err
	})
}

func applyForgeryRefused(ctx context.Context, tx *sql.Tx, seq uint64, ev chat.Event) ([]chat.FeedItem, error) {
	var d chat.ForgeryRefused
	if err := decode(ev, &d); err != nil {
		return nil, err
	}
	owner, err := bridgeOwnerTx(ctx, tx, d.Bridge)
	if err != nil {
		return nil, err
	}
	var feed []chat.FeedItem
	if d.Handle != "" {
		a, err := agentByHandleTx(ctx, tx, d.Handle)
		if err != nil {
			return nil, err
		}
		detail := map[string]any{"kind": d.Kind, "subject": d.Subject, "reason": d.Reason, "detail": d.Detail}
		if d.Device != "" {
			detail["device"] = d.Device
		}
		switch d.Kind {
		case authz.StatementApproval:
			var room string
			err := tx.QueryRowContext(ctx, `SELECT room FROM approvals WHERE id = ? AND agent_id = ?`, d.Subject, a.ID).Scan(&room)
			if err == nil {
				detail["room"] = room
				if _, err := tx.ExecContext(ctx, `UPDATE approvals SET unverified = ? WHERE id = ?`, d.Detail, d.Subject); err != nil {
					return nil, err
				}
				items, err := approvalFeedTx(ctx, tx, seq, d.Subject, ev.At)
				if err != nil {
					return nil, err
				}
				feed = append(feed, items...)
			} else if !errors.Is(err, sql.ErrNoRows) {
				return nil, err
			}
		case authz.StatementConsent, authz.StatementCeiling:
			detail["room"] = d.Subject
		}
		if err := timelineTx(ctx, tx, seq, a.ID, "forgery", "", "", detail, ev.At); err != nil {
			return nil, err
		}
	}
	items, err := feedTx(ctx, tx, seq, 0, owner, []int64{owner}, map[string]any{"id": seq, "type": "forgery", "at": ev.At, "data": d})
	return append(feed, items...), err
}

func applyAgentCeiling(ctx context.Context, tx *sql.Tx, seq uint64, ev chat.Event) ([]chat.FeedItem, error) {
	var d chat.AgentCeiling
	if err := decode(ev, &d); err != nil {
		return nil, err
	}
	if !authz.ValidCeiling(d.Ceiling) {
		return nil, wh.Errorf(wh.EInvalid, "ceiling %q: want normal, ask or read-only", d.Ceiling)
	}
	a, err := agentByHandleTx(ctx, tx, d.Handle)
	if err != nil {
		return nil, err
	}
	rid, err := roomIDTx(ctx, tx, d.Room)
	if err != nil {
		return nil, err
	}
	res, err := tx.ExecContext(ctx, `UPDATE room_agents SET ceiling = ? WHERE room_id = ? AND agent_id = ? AND ceiling != ?`, d.Ceiling, rid, a.ID, d.Ceiling)
	if err != nil {
		return nil, err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil, wh.Errorf(wh.EConflict, "@%s is not in %s, or its ceiling there is %s already", d.Handle, d.Room, d.Ceiling)
	}
	detail := map[string]any{"room": d.Room, "ceiling": d.Ceiling}
	if d.Device != "" {
		detail["device"] = d.Device
	}
	if err := timelineTx(ctx, tx, seq, a.ID, "ceiling", "", d.By, detail, ev.At); err != nil {
		return nil, err
	}
	ids, err := roomMembersTx(ctx, tx, rid)
	if err != nil {
		return nil, err
	}
	return feedTx(ctx, tx, seq, rid, 0, append(ids, a.OwnerID), map[string]any{"id": seq, "type": "agent.ceiling", "room": d.Room, "at": ev.At,
		"data": map[string]any{"handle": d.Handle, "ceiling": d.Ceiling, "by": d.By}})
}

// Ceiling is an agent's ceiling in a room ("" when it is not there).
func (s *Store) Ceiling(ctx context.Context, agentID int64, roomName string) (string, error) {
	var c string
	err := s.db.r.QueryRowContext(ctx, `SELECT ra.ceiling FROM room_agents ra JOIN rooms r ON r.id = ra.room_id WHERE ra.agent_id = ? AND r.name = ?`, agentID, roomName).Scan(&c)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return c, err
}

// CeilingsInRoom returns the ceiling of each agent in a room, by agent id.
func (s *Store) CeilingsInRoom(ctx context.Context, roomID int64) (map[int64]string, error) {
	type ceiling struct {
		agent int64
		c     string
	}
	rows, err := s.db.r.QueryContext(ctx, `SELECT agent_id, ceiling FROM room_agents WHERE room_id = ?`, roomID)
	cs, err := collect("ceilings", rows, err, func(sc scanner) (ceiling, error) {
		var c ceiling
		return c, sc.Scan(&c.agent, &c.c)
	})
	if err != nil {
		return nil, err
	}
	out := make(map[int64]string, len(cs))
	for _, c := range cs {
		out[c.agent] = c.c
	}
	return out, nil
}

// heldTx holds a moderated mention for its owner and tells the owner.
func heldFeedTx(ctx context.Context, tx *sql.Tx, seq uint64, steerID string, at time.Time) ([]chat.FeedItem, error) {
	r, ownerID, err := requestTx(ctx, tx, steerID)
	if err != nil {
		return nil, err
	}
	return feedTx(ctx, tx, seq, 0, ownerID, []int64{ownerID}, map[string]any{"id": seq, "type": "request", "at": at, "data": r})
}

const requestCols = `s.id, s.message_id, r.name, u.name || '/' || a.name, u.name, s.sender, ` + postedText + `, m.files, s.status, s.forwarded_by, COALESCE(s.expires_at, ''), m.created_at, a.owner_id
	FROM steers s JOIN rooms r ON r.id = s.room_id JOIN messages m ON m.id = s.message_id JOIN agents a ON a.id = s.agent_id JOIN users u ON u.id = a.owner_id`

func scanRequest(sc scanner) (chat.Request, int64, error) {
	var q chat.Request
	var exp, at, files string
	var owner int64
	err := sc.Scan(&q.SteerID, &q.MessageID, &q.Room, &q.Agent, &q.Owner, &q.Sender, &q.Text, &files, &q.Status, &q.ForwardedBy, &exp, &at, &owner)
	q.TextHash = authz.TextHash(q.Text)
	json.Unmarshal([]byte(files), &q.Files)
	for i := range q.Files {
		// The owner may not be in the room: the request's own route serves
		// them (room.OpenRequestFile).
		q.Files[i].URL = chat.RequestFileURL(q.SteerID, q.Files[i].ID)
	}
	q.Expires, _ = time.Parse(time.RFC3339Nano, exp)
	q.At, _ = time.Parse(time.RFC3339Nano, at)
	return q, owner, err
}

// scanRequestRow is scanRequest without the owner's id.
func scanRequestRow(sc scanner) (chat.Request, error) {
	q, _, err := scanRequest(sc)
	return q, err
}

func requestTx(ctx context.Context, tx *sql.Tx, steerID string) (chat.Request, int64, error) {
	return scanRequest(tx.QueryRowContext(ctx, `SELECT `+requestCols+` WHERE s.id = ?`, steerID))
}

// Request reads one moderated mention.
func (s *Store) Request(ctx context.Context, steerID string) (chat.Request, error) {
	q, _, err := scanRequest(s.db.r.QueryRowContext(ctx, `SELECT `+requestCols+` WHERE s.id = ? AND (s.status = 'held' OR s.reason IN (?, ?) OR s.forwarded_by != '')`,
		steerID, wire.ReasonModerated, wire.ReasonDeclined))
	if errors.Is(err, sql.ErrNoRows) {
		return q, wh.Errorf(wh.ENotFound, "no moderated message %s", steerID)
	}
	return q, err
}

// Requests lists the moderated mentions of the owner's agents (waiting
// ones, and the last ones answered) and those the viewer sent.
func (s *Store) Requests(ctx context.Context, viewer *chat.User) ([]chat.Request, error) {
	rows, err := s.db.r.QueryContext(ctx, `SELECT `+requestCols+` WHERE (a.owner_id = ? OR s.sender = ?) AND (s.status = 'held' OR s.forwarded_by != '' OR s.reason IN (?, ?))
		ORDER BY s.message_id DESC LIMIT 100`, viewer.ID, viewer.Name, wire.ReasonModerated, wire.ReasonDeclined)
	return collect("requests", rows, err, scanRequestRow)
}

func applySteerForwarded(ctx context.Context, tx *sql.Tx, seq uint64, ev chat.Event) ([]chat.FeedItem, error) {
	var d chat.SteerForwarded
	if err := decode(ev, &d); err != nil {
		return nil, err
	}
	var status, owner, sender, room string
	var agentID int64
	err := tx.QueryRowContext(ctx, `SELECT s.status, u.name, s.agent_id, s.sender, r.name FROM steers s JOIN agents a ON a.id = s.agent_id JOIN users u ON u.id = a.owner_id
		JOIN rooms r ON r.id = s.room_id WHERE s.id = ?`, d.ID).Scan(&status, &owner, &agentID, &sender, &room)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, wh.Errorf(wh.ENotFound, "no message %s waiting for its owner", d.ID)
	}
	if err != nil {
		return nil, err
	}
	if d.By != owner {
		return nil, wh.Errorf(wh.EForbidden, "only @%s forwards or declines messages to their agent", owner)
	}
	if status != wire.StatusHeld {
		return nil, wh.Errorf(wh.EConflict, "this message is no longer waiting for @%s (it is %s)", owner, status)
	}
	kind := "steer.forwarded"
	if d.Decline {
		kind = "steer.declined"
		if _, err := tx.ExecContext(ctx, `UPDATE steers SET status = ?, reason = ?, detail = ?, expires_at = NULL, closed_seq = ?, updated_at = ? WHERE id = ?`,
			wire.StatusRejected, wire.ReasonDeclined, "@"+owner+" declined to forward it", seq, ts(ev.At), d.ID); err != nil {
			return nil, err
		}
	} else {
		if d.Signed == nil {
			return nil, wh.Errorf(wh.EInvalid, "a forward carries the owner's signature")
		}
		sig, _ := json.Marshal(d.Signed)
		if _, err := tx.ExecContext(ctx, `UPDATE steers SET status = 'pending', reason = '', detail = ?, forwarded_by = ?, forward = ?, expires_at = NULL, updated_at = ? WHERE id = ?`,
			"forwarded by @"+owner, d.By, string(sig), ts(ev.At), d.ID); err != nil {
			return nil, err
		}
	}
	detail := map[string]any{"steerId": d.ID, "room": room, "sender": sender}
	if d.Signed != nil {
		detail["device"] = d.Signed.Device
	}
	if err := timelineTx(ctx, tx, seq, agentID, kind, "", d.By, detail, ev.At); err != nil {
		return nil, err
	}
	feed, err := receiptFeedTx(ctx, tx, seq, d.ID, ev.At)
	if err != nil {
		return nil, err
	}
	items, err := heldFeedTx(ctx, tx, seq, d.ID, ev.At)
	return append(feed, items...), err
}

// ForwardedSteer is a forwarded mention ready for the router (pending).
func (s *Store) ForwardedSteer(ctx context.Context, steerID string) (*Outbound, error) {
	rows, err := s.db.r.QueryContext(ctx, outboundQuery+` WHERE s.id = ? AND s.status = 'pending' AND s.forwarded_by != ''`, steerID)
	out, err := collect("steer", rows, err, scanOutbound)
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, wh.Errorf(wh.ENotFound, "no forwarded message %s waiting for delivery", steerID)
	}
	return &out[0], nil
}

// ExpiredHeldSteers lists moderated mentions their owner did not answer
// before cutoff.
func (s *Store) ExpiredHeldSteers(ctx context.Context, cutoff time.Time) ([]chat.Receipt, error) {
	return s.queryReceipts(ctx, `WHERE s.status = 'held' AND s.expires_at IS NOT NULL AND s.expires_at < ? LIMIT 100`, ts(cutoff))
}

// HeldSteersOf lists the moderated mentions of a message waiting for
// their owners.
func (s *Store) HeldSteersOf(ctx context.Context, messageID int64) ([]chat.Request, error) {
	rows, err := s.db.r.QueryContext(ctx, `SELECT `+requestCols+` WHERE s.message_id = ? AND s.status = 'held' ORDER BY s.id`, messageID)
	return collect("requests", rows, err, scanRequestRow)
}
