package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/chat"
)

// BridgeByID reads a bridge.
func (s *Store) BridgeByID(ctx context.Context, id string) (*chat.Bridge, error) {
	bs, err := s.queryBridges(ctx, `WHERE b.id = ?`, id)
	if err != nil {
		return nil, err
	}
	if len(bs) == 0 {
		return nil, wh.Errorf(wh.ENotFound, "no bridge %s", id)
	}
	return &bs[0], nil
}

// BridgeByKey resolves a public key to a paired, unrevoked bridge.
func (s *Store) BridgeByKey(ctx context.Context, key string) (*chat.Bridge, error) {
	bs, err := s.queryBridges(ctx, `WHERE b.public_key = ? AND b.revoked = 0 AND u.deactivated = 0`, key)
	if err != nil {
		return nil, err
	}
	if len(bs) == 0 {
		return nil, wh.Errorf(wh.ENotFound, "no paired bridge with this key")
	}
	return &bs[0], nil
}

// Bridges lists the owner's bridges.
func (s *Store) Bridges(ctx context.Context, owner *chat.User) ([]chat.Bridge, error) {
	return s.queryBridges(ctx, `WHERE b.owner_id = ? ORDER BY b.created_at`, owner.ID)
}

func (s *Store) queryBridges(ctx context.Context, where string, args ...any) ([]chat.Bridge, error) {
	// A deactivated owner's bridges count as revoked, also in the moment
	// between the deactivation and the revocations that follow it.
	rows, err := s.db.r.QueryContext(ctx, `SELECT b.id, u.name, b.name, b.public_key, b.created_at, b.revoked OR u.deactivated FROM bridges b JOIN users u ON u.id = b.owner_id `+where, args...)
	return collect("bridges", rows, err, func(sc scanner) (chat.Bridge, error) {
		var b chat.Bridge
		var at string
		err := sc.Scan(&b.ID, &b.Owner, &b.Name, &b.PublicKey, &at, &b.Revoked)
		b.CreatedAt, _ = time.Parse(time.RFC3339Nano, at)
		return b, err
	})
}

func (s *Store) Invitation(ctx context.Context, id int64) (*chat.Invitation, error) {
	invs, err := s.queryInvitations(ctx, `WHERE i.id = ?`, id)
	if err != nil {
		return nil, err
	}
	if len(invs) == 0 {
		return nil, wh.Errorf(wh.ENotFound, "no invitation %d", id)
	}
	return &invs[0], nil
}

// Invitations lists invitations for the actor's agents and those the actor requested.
func (s *Store) Invitations(ctx context.Context, actor *chat.User) ([]chat.Invitation, error) {
	return s.queryInvitations(ctx, `WHERE a.owner_id = ? OR i.requested_by = ? ORDER BY i.id DESC`, actor.ID, actor.Name)
}

func (s *Store) queryInvitations(ctx context.Context, where string, args ...any) ([]chat.Invitation, error) {
	rows, err := s.db.r.QueryContext(ctx, `SELECT i.id, r.name, u.name || '/' || a.name, u.name, i.requested_by, i.status, i.created_at
		FROM invitations i JOIN rooms r ON r.id = i.room_id JOIN agents a ON a.id = i.agent_id JOIN users u ON u.id = a.owner_id `+where, args...)
	return collect("invitations", rows, err, func(sc scanner) (chat.Invitation, error) {
		var in chat.Invitation
		var at string
		err := sc.Scan(&in.ID, &in.Room, &in.Agent, &in.Owner, &in.RequestedBy, &in.Status, &at)
		in.At, _ = time.Parse(time.RFC3339Nano, at)
		return in, err
	})
}

func applyInvitationCreated(ctx context.Context, tx *sql.Tx, seq uint64, ev chat.Event) ([]chat.FeedItem, error) {
	var d chat.InvitationCreated
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
	if _, err := tx.ExecContext(ctx, `INSERT INTO invitations (id, room_id, agent_id, requested_by, status, created_at) VALUES (?, ?, ?, ?, 'pending', ?)`,
		seq, rid, a.ID, d.By, ts(ev.At)); err != nil {
		return nil, err
	}
	if err := timelineTx(ctx, tx, seq, a.ID, "consent.invited", "", d.By, map[string]string{"room": d.Room}, ev.At); err != nil {
		return nil, err
	}
	return invitationFeedTx(ctx, tx, seq, int64(seq), ev.At)
}

func applyInvitationDecided(ctx context.Context, tx *sql.Tx, seq uint64, ev chat.Event) ([]chat.FeedItem, error) {
	var d chat.InvitationDecided
	if err := decode(ev, &d); err != nil {
		return nil, err
	}
	var status string
	var roomID, agentID int64
	err := tx.QueryRowContext(ctx, `SELECT status, room_id, agent_id FROM invitations WHERE id = ?`, d.ID).Scan(&status, &roomID, &agentID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, wh.Errorf(wh.ENotFound, "no invitation %d", d.ID)
	}
	if err != nil {
		return nil, err
	}
	if status != "pending" {
		return nil, wh.Errorf(wh.EConflict, "this invitation was already %s", status)
	}
	newStatus := "declined"
	if d.Accept {
		newStatus = "accepted"
		if _, err := tx.ExecContext(ctx, `INSERT INTO room_agents (room_id, agent_id, added_by) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`, roomID, agentID, d.By); err != nil {
			return nil, err
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE invitations SET status = ?, decided_at = ? WHERE id = ?`, newStatus, ts(ev.At), d.ID); err != nil {
		return nil, err
	}
	if err := timelineTx(ctx, tx, seq, agentID, "consent."+newStatus, "", d.By, map[string]int64{"invitation": d.ID}, ev.At); err != nil {
		return nil, err
	}
	// Clients refresh the room's agents when an invitation is accepted.
	return invitationFeedTx(ctx, tx, seq, d.ID, ev.At)
}

func invitationFeedTx(ctx context.Context, tx *sql.Tx, seq uint64, id int64, at time.Time) ([]chat.FeedItem, error) {
	var in chat.Invitation
	var roomID, ownerID int64
	var created string
	err := tx.QueryRowContext(ctx, `SELECT i.id, r.name, u.name || '/' || a.name, u.name, i.requested_by, i.status, i.created_at, i.room_id, a.owner_id
		FROM invitations i JOIN rooms r ON r.id = i.room_id JOIN agents a ON a.id = i.agent_id JOIN users u ON u.id = a.owner_id WHERE i.id = ?`, id).
		Scan(&in.ID, &in.Room, &in.Agent, &in.Owner, &in.RequestedBy, &in.Status, &created, &roomID, &ownerID)
	if err != nil {
		return nil, err
	}
	in.At, _ = time.Parse(time.RFC3339Nano, created)
	ids, err := roomMembersTx(ctx, tx, roomID)
	if err != nil {
		return nil, err
	}
	ids = append(ids, ownerID)
	return feedTx(ctx, tx, seq, roomID, ownerID, ids, map[string]any{"id": seq, "type": "invitation", "room": in.Room, "at": at, "data": in})
}
