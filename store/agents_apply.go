package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/chat"
)

func (s *Store) registerAgentAppliers() {
	s.appliers[chat.EvPairingCreated] = applyPairingCreated
	s.appliers[chat.EvBridgePaired] = applyBridgePaired
	s.appliers[chat.EvBridgeRevoked] = applyBridgeRevoked
	s.appliers[chat.EvAgentRegistered] = applyAgentRegistered
	s.appliers[chat.EvAgentPolicy] = applyAgentPolicy
	s.appliers[chat.EvAgentStatus] = applyAgentStatus
	s.appliers[chat.EvAgentAdded] = applyAgentRoomChange(true)
	s.appliers[chat.EvAgentRemoved] = applyAgentRoomChange(false)
	s.appliers[chat.EvInvitationCreated] = applyInvitationCreated
	s.appliers[chat.EvInvitationDecided] = applyInvitationDecided
	s.appliers[chat.EvSteerRecorded] = applySteerRecorded
	s.appliers[chat.EvSteerReceipt] = applySteerReceipt
	s.appliers[chat.EvTurn] = applyTurn
	s.appliers[chat.EvApprovalRequested] = applyApprovalRequested
	s.appliers[chat.EvApprovalDecided] = applyApprovalDecided
}

func applyPairingCreated(ctx context.Context, tx *sql.Tx, seq uint64, ev chat.Event) ([]chat.FeedItem, error) {
	var d chat.PairingCreated
	if err := decode(ev, &d); err != nil {
		return nil, err
	}
	uid, err := userIDTx(ctx, tx, d.Owner)
	if err != nil {
		return nil, err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO pairing_tokens (token_hash, owner_id, expires_at) VALUES (?, ?, ?)`, d.TokenHash, uid, ts(d.ExpiresAt))
	return nil, err
}

func applyBridgePaired(ctx context.Context, tx *sql.Tx, seq uint64, ev chat.Event) ([]chat.FeedItem, error) {
	var d chat.BridgePaired
	if err := decode(ev, &d); err != nil {
		return nil, err
	}
	var owner int64
	var exp string
	var used bool
	err := tx.QueryRowContext(ctx, `SELECT owner_id, expires_at, used FROM pairing_tokens WHERE token_hash = ?`, d.TokenHash).Scan(&owner, &exp, &used)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, wh.Errorf(wh.EForbidden, "unknown pairing token: create one in the hub (POST /api/v1/bridges/pairing-tokens)")
	}
	if err != nil {
		return nil, err
	}
	if used {
		return nil, wh.Errorf(wh.EForbidden, "this pairing token was already used: create a new one")
	}
	if t, _ := time.Parse(time.RFC3339Nano, exp); ev.At.After(t) {
		return nil, wh.Errorf(wh.EForbidden, "this pairing token has expired: create a new one")
	}
	if _, err := tx.ExecContext(ctx, `UPDATE pairing_tokens SET used = 1 WHERE token_hash = ?`, d.TokenHash); err != nil {
		return nil, err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO bridges (id, owner_id, public_key, name, created_at) VALUES (?, ?, ?, ?, ?)`, d.ID, owner, d.PublicKey, d.Name, ts(ev.At))
	if err != nil {
		if IsConstraint(err) {
			return nil, wh.Errorf(wh.EConflict, "this bridge key is already paired")
		}
		return nil, err
	}
	return nil, nil
}

func applyBridgeRevoked(ctx context.Context, tx *sql.Tx, seq uint64, ev chat.Event) ([]chat.FeedItem, error) {
	var d chat.BridgeRevoked
	if err := decode(ev, &d); err != nil {
		return nil, err
	}
	res, err := tx.ExecContext(ctx, `UPDATE bridges SET revoked = 1 WHERE id = ?`, d.ID)
	if err != nil {
		return nil, err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil, wh.Errorf(wh.ENotFound, "no bridge %s", d.ID)
	}
	_, err = tx.ExecContext(ctx, `UPDATE agents SET status = 'offline', turn_id = '' WHERE bridge_id = ?`, d.ID)
	return nil, err
}

func applyAgentRegistered(ctx context.Context, tx *sql.Tx, seq uint64, ev chat.Event) ([]chat.FeedItem, error) {
	var d chat.AgentRegistered
	if err := decode(ev, &d); err != nil {
		return nil, err
	}
	var owner int64
	var revoked bool
	err := tx.QueryRowContext(ctx, `SELECT owner_id, revoked FROM bridges WHERE id = ?`, d.Bridge).Scan(&owner, &revoked)
	if err != nil || revoked {
		return nil, wh.Errorf(wh.EForbidden, "bridge %s is not paired", d.Bridge)
	}
	pol, _ := json.Marshal(d.Policy)
	_, err = tx.ExecContext(ctx, `INSERT INTO agents (id, owner_id, name, bridge_id, harness, can_steer, policy) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (owner_id, name) DO UPDATE SET bridge_id = excluded.bridge_id, harness = excluded.harness, can_steer = excluded.can_steer,
		policy = CASE WHEN agents.policy_set = 1 THEN agents.policy ELSE excluded.policy END`,
		seq, owner, d.Name, d.Bridge, d.Harness, d.CanSteer, string(pol))
	if err != nil {
		return nil, err
	}
	var id int64
	if err := tx.QueryRowContext(ctx, `SELECT id FROM agents WHERE owner_id = ? AND name = ?`, owner, d.Name).Scan(&id); err != nil {
		return nil, err
	}
	return nil, timelineTx(ctx, tx, seq, id, "registered", "", "", d, ev.At)
}

func applyAgentPolicy(ctx context.Context, tx *sql.Tx, seq uint64, ev chat.Event) ([]chat.FeedItem, error) {
	var d chat.AgentPolicy
	if err := decode(ev, &d); err != nil {
		return nil, err
	}
	a, err := agentByHandleTx(ctx, tx, d.Handle)
	if err != nil {
		return nil, err
	}
	pol, _ := json.Marshal(d.Policy)
	if _, err := tx.ExecContext(ctx, `UPDATE agents SET policy = ?, policy_set = 1 WHERE id = ?`, string(pol), a.ID); err != nil {
		return nil, err
	}
	if err := timelineTx(ctx, tx, seq, a.ID, "policy", "", d.By, d.Policy, ev.At); err != nil {
		return nil, err
	}
	return agentStatusFeedTx(ctx, tx, seq, a.Handle, ev.At)
}

func applyAgentStatus(ctx context.Context, tx *sql.Tx, seq uint64, ev chat.Event) ([]chat.FeedItem, error) {
	var d chat.AgentStatus
	if err := decode(ev, &d); err != nil {
		return nil, err
	}
	a, err := agentByHandleTx(ctx, tx, d.Handle)
	if err != nil {
		return nil, err
	}
	steered, _ := json.Marshal(chat.NonNilStrings(d.SteeredBy))
	if _, err := tx.ExecContext(ctx, `UPDATE agents SET status = ?, turn_id = ?, turn_room = ?, steered_by = ? WHERE id = ?`,
		d.Status, d.TurnID, d.TurnRoom, string(steered), a.ID); err != nil {
		return nil, err
	}
	return agentStatusFeedTx(ctx, tx, seq, a.Handle, ev.At)
}

// agentStatusFeedTx tells the agent's audience its current state.
func agentStatusFeedTx(ctx context.Context, tx *sql.Tx, seq uint64, handle string, at time.Time) ([]chat.FeedItem, error) {
	a, err := agentByHandleTx(ctx, tx, handle)
	if err != nil {
		return nil, err
	}
	ids, err := agentAudienceTx(ctx, tx, a.ID, a.OwnerID)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(map[string]any{"id": seq, "type": "agent.status", "at": at, "data": map[string]any{
		"handle": a.Handle, "status": a.Status, "turnId": a.TurnID, "turnRoom": a.TurnRoom, "steeredBy": a.SteeredBy, "harness": a.Harness, "canSteer": a.CanSteer}})
	if err != nil {
		return nil, err
	}
	// Not stored in the feed: clients reload agents on (re)connect.
	return []chat.FeedItem{{Seq: seq, Recipients: ids, Body: b}}, nil
}

// applyAgentRoomChange adds (owner's consent) or removes an agent from a
// room: the same steps, opposite statements.
func applyAgentRoomChange(add bool) applier {
	stmt, kind, typ := `DELETE FROM room_agents WHERE room_id = ? AND agent_id = ?`, "consent.removed", chat.EvAgentRemoved
	if add {
		stmt, kind, typ = `INSERT INTO room_agents (room_id, agent_id, added_by) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`, "consent.added", chat.EvAgentAdded
	}
	return func(ctx context.Context, tx *sql.Tx, seq uint64, ev chat.Event) ([]chat.FeedItem, error) {
		var d chat.AgentRoomChange
		if err := decode(ev, &d); err != nil {
			return nil, err
		}
		a, err := agentByHandleTx(ctx, tx, d.Handle)
		if err != nil {
			return nil, err
		}
		rid, err := roomIDTx(ctx, tx, d.Room)
		if err != nil {
			return nil, err
		}
		args := []any{rid, a.ID}
		if add {
			args = append(args, d.By)
		}
		res, err := tx.ExecContext(ctx, stmt, args...)
		if err != nil {
			return nil, err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			if add {
				return nil, wh.Errorf(wh.EConflict, "@%s is already in %s", d.Handle, d.Room)
			}
			return nil, wh.Errorf(wh.ENotFound, "@%s is not in %s", d.Handle, d.Room)
		}
		if err := timelineTx(ctx, tx, seq, a.ID, kind, "", d.By, map[string]string{"room": d.Room}, ev.At); err != nil {
			return nil, err
		}
		ids, err := roomMembersTx(ctx, tx, rid)
		if err != nil {
			return nil, err
		}
		return feedTx(ctx, tx, seq, rid, 0, ids, map[string]any{"id": seq, "type": typ, "room": d.Room, "at": ev.At,
			"data": map[string]any{"handle": d.Handle, "by": d.By}})
	}
}
