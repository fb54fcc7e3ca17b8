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

func (s *Store) registerAgentAppliers() {
	s.appliers[chat.EvPairingCreated] = applyPairingCreated
	s.appliers[chat.EvBridgePaired] = applyBridgePaired
	s.appliers[chat.EvBridgeRevoked] = applyBridgeRevoked
	s.appliers[chat.EvAgentRegistered] = applyAgentRegistered
	s.appliers[chat.EvAgentReleased] = applyAgentReleased
	s.appliers[chat.EvAgentPolicy] = applyAgentPolicy
	s.appliers[chat.EvAgentStatus] = applyAgentStatus
	s.appliers[chat.EvAgentJournal] = applyAgentJournal
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
	var feed []chat.FeedItem
	handles, err := queryStrings(ctx, tx, `SELECT u.name || '/' || a.name FROM agents a JOIN users u ON u.id = a.owner_id WHERE a.bridge_id = ?`, d.ID)
	if err != nil {
		return nil, err
	}
	for _, h := range handles {
		a, err := agentByHandleTx(ctx, tx, h)
		if err != nil {
			return nil, err
		}
		items, err := agentGoneTx(ctx, tx, seq, a, "the agent's bridge was revoked", ev.At)
		if err != nil {
			return nil, err
		}
		feed = append(feed, items...)
	}
	_, err = tx.ExecContext(ctx, `UPDATE agents SET status = 'offline', turn_id = '', turn_room = '', steered_by = '[]' WHERE bridge_id = ?`, d.ID)
	return feed, err
}

func applyAgentRegistered(ctx context.Context, tx *sql.Tx, seq uint64, ev chat.Event) ([]chat.FeedItem, error) {
	var d chat.AgentRegistered
	if err := decode(ev, &d); err != nil {
		return nil, err
	}
	var owner int64
	var revoked bool
	err := tx.QueryRowContext(ctx, `SELECT owner_id, revoked FROM bridges WHERE id = ?`, d.Bridge).Scan(&owner, &revoked)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && revoked) {
		return nil, wh.Errorf(wh.EForbidden, "bridge %s is not paired", d.Bridge)
	}
	if err != nil {
		return nil, err // not a refusal: the projector stops and retries
	}
	// An agent name belongs to one bridge of its owner: another bridge may
	// take it only once the first released it or was revoked.
	var holder string
	err = tx.QueryRowContext(ctx, `SELECT a.bridge_id FROM agents a JOIN bridges b ON b.id = a.bridge_id
		WHERE a.owner_id = ? AND a.name = ? AND a.released = 0 AND b.revoked = 0`, owner, d.Name).Scan(&holder)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}
	if err == nil && holder != d.Bridge {
		return nil, wh.Errorf(wh.EConflict, "agent %s is already run by bridge %s", d.Name, holder)
	}
	pol, _ := json.Marshal(d.Policy)
	_, err = tx.ExecContext(ctx, `INSERT INTO agents (id, owner_id, name, bridge_id, harness, can_steer, policy) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (owner_id, name) DO UPDATE SET bridge_id = excluded.bridge_id, harness = excluded.harness, can_steer = excluded.can_steer,
		released = 0, policy = excluded.policy`,
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

func applyAgentReleased(ctx context.Context, tx *sql.Tx, seq uint64, ev chat.Event) ([]chat.FeedItem, error) {
	var d chat.AgentReleased
	if err := decode(ev, &d); err != nil {
		return nil, err
	}
	a, err := agentByHandleTx(ctx, tx, d.Handle)
	if err != nil {
		return nil, err
	}
	if a.Bridge != d.Bridge {
		return nil, wh.Errorf(wh.EConflict, "@%s is not run by bridge %s", d.Handle, d.Bridge)
	}
	feed, err := agentGoneTx(ctx, tx, seq, a, "its bridge no longer runs it", ev.At)
	if err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE agents SET released = 1, status = 'offline', turn_id = '', turn_room = '', steered_by = '[]' WHERE id = ?`, a.ID); err != nil {
		return nil, err
	}
	if err := timelineTx(ctx, tx, seq, a.ID, "released", "", "", map[string]string{"bridge": d.Bridge}, ev.At); err != nil {
		return nil, err
	}
	items, err := agentStatusFeedTx(ctx, tx, seq, a.Handle, ev.At)
	return append(feed, items...), err
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
	if _, err := tx.ExecContext(ctx, `UPDATE agents SET policy = ? WHERE id = ?`, string(pol), a.ID); err != nil {
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
	var feed []chat.FeedItem
	if d.Status == wire.AgentOffline && a.Status != wire.AgentOffline {
		items, err := agentGoneTx(ctx, tx, seq, a, "the agent's machine went offline", ev.At)
		if err != nil {
			return nil, err
		}
		feed = items
	}
	steered, _ := json.Marshal(chat.NonNilStrings(d.SteeredBy))
	if _, err := tx.ExecContext(ctx, `UPDATE agents SET status = ?, turn_id = ?, turn_room = ?, steered_by = ? WHERE id = ?`,
		d.Status, d.TurnID, d.TurnRoom, string(steered), a.ID); err != nil {
		return nil, err
	}
	items, err := agentStatusFeedTx(ctx, tx, seq, a.Handle, ev.At)
	if err != nil {
		return nil, err
	}
	feed = append(feed, items...)
	// A turn that starts or stops waiting for an approval shows so in its thread.
	if d.TurnID != "" && d.TurnID == a.TurnID && (d.Status == wire.AgentNeedsApproval) != (a.Status == wire.AgentNeedsApproval) {
		thread, err := turnThreadTx(ctx, tx, a.ID, d.TurnID)
		if err != nil {
			return nil, err
		}
		if thread > 0 {
			items, err := threadFeedTx(ctx, tx, seq, thread, ev.At)
			if err != nil {
				return nil, err
			}
			feed = append(feed, items...)
		}
	}
	return feed, nil
}

// agentStatusFeedTx tells the agent's audience its current state: the
// running turn's details (room, senders) go to the owner and the members
// of the room it runs in; everyone else in the agent's rooms hears only
// the status (authz.MaySeeActivity).
func agentStatusFeedTx(ctx context.Context, tx *sql.Tx, seq uint64, handle string, at time.Time) ([]chat.FeedItem, error) {
	a, err := agentByHandleTx(ctx, tx, handle)
	if err != nil {
		return nil, err
	}
	ids, err := agentAudienceTx(ctx, tx, a.ID, a.OwnerID)
	if err != nil {
		return nil, err
	}
	inTurn := map[int64]bool{a.OwnerID: true}
	if a.TurnRoom != "" {
		if rid, err := roomIDTx(ctx, tx, a.TurnRoom); err == nil {
			ms, err := roomMembersTx(ctx, tx, rid)
			if err != nil {
				return nil, err
			}
			for _, m := range ms {
				inTurn[m] = true
			}
		}
	}
	var full, outside []int64
	for _, id := range ids {
		if inTurn[id] {
			full = append(full, id)
		} else {
			outside = append(outside, id)
		}
	}
	var feed []chat.FeedItem
	for _, part := range []struct {
		to     []int64
		detail bool
	}{{full, true}, {outside, false}} {
		if len(part.to) == 0 {
			continue
		}
		data := map[string]any{"handle": a.Handle, "status": a.Status, "harness": a.Harness, "canSteer": a.CanSteer, "turnId": "", "turnRoom": "", "steeredBy": []string{}}
		if part.detail {
			data["turnId"], data["turnRoom"], data["steeredBy"] = a.TurnID, a.TurnRoom, a.SteeredBy
		}
		idx := nextIdx(ctx)
		b, err := feedBody(idx, map[string]any{"id": seq, "type": "agent.status", "at": at, "data": data})
		if err != nil {
			return nil, err
		}
		// Not stored in the feed: clients reload agents on (re)connect.
		feed = append(feed, chat.FeedItem{Seq: seq, Idx: idx, Kind: "agent.status", Recipients: part.to, Body: b})
	}
	return feed, nil
}

// applyAgentRoomChange adds (owner's consent) or removes an agent from a
// room: the same steps, opposite statements.
func applyAgentRoomChange(add bool) applier {
	stmt, kind, typ := `DELETE FROM room_agents WHERE room_id = ? AND agent_id = ?`, "consent.removed", chat.EvAgentRemoved
	if add {
		stmt, kind, typ = `INSERT INTO room_agents (room_id, agent_id, added_by, ceiling) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING`, "consent.added", chat.EvAgentAdded
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
			ceiling := d.Ceiling
			if ceiling == "" {
				ceiling = authz.CeilingNormal
			}
			args = append(args, d.By, ceiling)
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
		detail := map[string]string{"room": d.Room}
		if d.Ceiling != "" && d.Ceiling != authz.CeilingNormal {
			detail["ceiling"] = d.Ceiling
		}
		if d.Device != "" {
			detail["device"] = d.Device
		}
		if err := timelineTx(ctx, tx, seq, a.ID, kind, "", d.By, detail, ev.At); err != nil {
			return nil, err
		}
		var feed []chat.FeedItem
		if !add {
			why := "@" + d.Handle + " was removed from " + d.Room
			items, err := voidApprovalsTx(ctx, tx, seq, `agent_id = ? AND room = ?`, []any{a.ID, d.Room}, why, ev.At)
			if err != nil {
				return nil, err
			}
			feed = items
			items, err = expireSteersTx(ctx, tx, seq, `agent_id = ? AND room_id = ? AND status = 'queued'`, []any{a.ID, rid}, wire.StatusRejected, wire.ReasonAgentNotInRoom, why, ev.At)
			if err != nil {
				return nil, err
			}
			feed = append(feed, items...)
		}
		ids, err := roomMembersTx(ctx, tx, rid)
		if err != nil {
			return nil, err
		}
		items, err := feedTx(ctx, tx, seq, rid, 0, ids, map[string]any{"id": seq, "type": typ, "room": d.Room, "at": ev.At,
			"data": map[string]any{"handle": d.Handle, "by": d.By}})
		return append(items, feed...), err
	}
}
