package room

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"time"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/authz"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// PairingTTL bounds how long a pairing token is valid.
const PairingTTL = 15 * time.Minute

// Bridge is a paired machine.
type Bridge struct {
	ID        string    `json:"id"`
	Owner     string    `json:"owner"`
	Name      string    `json:"name"`
	PublicKey string    `json:"publicKey"`
	CreatedAt time.Time `json:"createdAt"`
	Revoked   bool      `json:"revoked"`
}

// CreatePairingToken returns a one-time token the owner's bridge pairs with.
func (s *Service) CreatePairingToken(ctx context.Context, owner *User) (string, time.Time, error) {
	tok := NewSecret("whp_")
	exp := s.now().Add(PairingTTL).UTC()
	_, err := s.append(ctx, EvPairingCreated, pairingCreated{TokenHash: HashSecret(tok), Owner: owner.Name, ExpiresAt: exp})
	return tok, exp, err
}

// Pair redeems a pairing token for a bridge's public key.
func (s *Service) Pair(ctx context.Context, token, publicKey, name string) (*Bridge, error) {
	if len(name) > 64 {
		return nil, wh.Errorf(wh.EInvalid, "the bridge name is too long (at most 64 bytes)")
	}
	if name == "" {
		name = "bridge"
	}
	b := make([]byte, 6)
	rand.Read(b)
	id := "b" + hex.EncodeToString(b)
	if _, err := s.append(ctx, EvBridgePaired, bridgePaired{ID: id, TokenHash: HashSecret(token), PublicKey: publicKey, Name: name}); err != nil {
		return nil, err
	}
	return s.BridgeByID(ctx, id)
}

// BridgeByID reads a bridge.
func (s *Service) BridgeByID(ctx context.Context, id string) (*Bridge, error) {
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
func (s *Service) BridgeByKey(ctx context.Context, key string) (*Bridge, error) {
	bs, err := s.queryBridges(ctx, `WHERE b.public_key = ? AND b.revoked = 0`, key)
	if err != nil {
		return nil, err
	}
	if len(bs) == 0 {
		return nil, wh.Errorf(wh.ENotFound, "no paired bridge with this key")
	}
	return &bs[0], nil
}

// Bridges lists the owner's bridges.
func (s *Service) Bridges(ctx context.Context, owner *User) ([]Bridge, error) {
	return s.queryBridges(ctx, `WHERE b.owner_id = ? ORDER BY b.created_at`, owner.ID)
}

func (s *Service) queryBridges(ctx context.Context, where string, args ...any) ([]Bridge, error) {
	rows, err := s.db.r.QueryContext(ctx, `SELECT b.id, u.name, b.name, b.public_key, b.created_at, b.revoked FROM bridges b JOIN users u ON u.id = b.owner_id `+where, args...)
	if err != nil {
		return nil, wh.Wrap(err, "read bridges")
	}
	defer rows.Close()
	out := []Bridge{}
	for rows.Next() {
		var b Bridge
		var at string
		if err := rows.Scan(&b.ID, &b.Owner, &b.Name, &b.PublicKey, &at, &b.Revoked); err != nil {
			return nil, wh.Wrap(err, "read bridges")
		}
		b.CreatedAt, _ = time.Parse(time.RFC3339Nano, at)
		out = append(out, b)
	}
	return out, rows.Err()
}

// RevokeBridge revokes a bridge: it can no longer connect.
func (s *Service) RevokeBridge(ctx context.Context, actor *User, id string) error {
	b, err := s.BridgeByID(ctx, id)
	if err != nil {
		return err
	}
	if b.Owner != actor.Name {
		return wh.Errorf(wh.EForbidden, "only the bridge's owner can revoke it")
	}
	_, err = s.append(ctx, EvBridgeRevoked, bridgeRevoked{ID: id, By: actor.Name})
	return err
}

// RegisterAgent records an agent a bridge announced (when it changed).
func (s *Service) RegisterAgent(ctx context.Context, bridgeID string, info wire.AgentInfo, harness string) error {
	_, err := s.append(ctx, EvAgentRegistered, agentRegistered{Bridge: bridgeID, Name: info.Name, Harness: harness, CanSteer: info.CanSteer, Policy: info.Policy})
	return err
}

// SetPolicy changes an agent's policy; owner only.
func (s *Service) SetPolicy(ctx context.Context, actor *User, handle string, p wire.Policy) (*Agent, error) {
	a, err := s.AgentByHandle(ctx, handle)
	if err != nil {
		return nil, err
	}
	if d := authz.MayChangePolicy(actor.Name, a.Owner); !d.Allow {
		return nil, &wh.Error{Code: wh.EForbidden, Message: "only @" + a.Owner + " can change @" + a.Handle + "'s policy", Reason: d.Reason}
	}
	if err := ValidatePolicy(&p); err != nil {
		return nil, err
	}
	if _, err := s.append(ctx, EvAgentPolicy, agentPolicy{Handle: a.Handle, Policy: p, By: actor.Name}); err != nil {
		return nil, err
	}
	return s.AgentByHandle(ctx, handle)
}

// ValidatePolicy checks a policy and fills zero durations with defaults.
func ValidatePolicy(p *wire.Policy) error {
	d := wire.DefaultPolicy()
	switch p.Address {
	case "":
		p.Address = d.Address
	case wire.AddressOwner, wire.AddressUsers, wire.AddressMembers:
	default:
		return wh.Errorf(wh.EInvalid, "policy.address must be owner, users or members, not %q", p.Address)
	}
	for _, u := range p.Allowed {
		if !ValidUserName(u) {
			return wh.Errorf(wh.EInvalid, "policy.allowed: %q is not a user name", u)
		}
	}
	if p.MaxSteers < 0 || p.MaxSteers > 1000 {
		return wh.Errorf(wh.EInvalid, "policy.maxSteers must be between 0 (unlimited) and 1000")
	}
	if p.Grace < 0 || p.MaxAge < 0 || p.ApprovalTTL < 0 {
		return wh.Errorf(wh.EInvalid, "policy durations must not be negative")
	}
	if p.MaxAge == 0 {
		p.MaxAge = d.MaxAge
	}
	if p.ApprovalTTL == 0 {
		p.ApprovalTTL = d.ApprovalTTL
	}
	return nil
}

// Invitation is a request to add an agent to a room, awaiting its owner.
type Invitation struct {
	ID          int64     `json:"id"`
	Room        string    `json:"room"`
	Agent       string    `json:"agent"`
	Owner       string    `json:"owner"`
	RequestedBy string    `json:"requestedBy"`
	Status      string    `json:"status"`
	At          time.Time `json:"at"`
}

// AddAgent adds an agent to a room: directly for its owner, as an invitation
// the owner must accept for anyone else.
func (s *Service) AddAgent(ctx context.Context, actor *User, roomName, handle string) (string, *Invitation, error) {
	r, err := s.RoomFor(ctx, actor, roomName)
	if err != nil {
		return "", nil, err
	}
	a, err := s.AgentByHandle(ctx, handle)
	if err != nil {
		return "", nil, err
	}
	if in, _ := s.AgentInRoom(ctx, a.ID, r.Name); in {
		return "", nil, wh.Errorf(wh.EConflict, "@%s is already in %s", a.Handle, r.Name)
	}
	switch authz.AddAgentToRoom(actor.Name, a.Owner, r.Role != "") {
	case authz.AddDirect:
		_, err := s.append(ctx, EvAgentAdded, agentRoomChange{Room: r.Name, Handle: a.Handle, By: actor.Name})
		return "added", nil, err
	case authz.AddInvite:
		seq, err := s.append(ctx, EvInvitationCreated, invitationCreated{Room: r.Name, Handle: a.Handle, By: actor.Name})
		if err != nil {
			return "", nil, err
		}
		inv, err := s.invitation(ctx, int64(seq))
		return "invited", inv, err
	default:
		return "", nil, wh.Errorf(wh.EForbidden, "join %s before adding agents to it", r.Name)
	}
}

// RemoveAgent removes an agent from a room; its owner only.
func (s *Service) RemoveAgent(ctx context.Context, actor *User, roomName, handle string) error {
	a, err := s.AgentByHandle(ctx, handle)
	if err != nil {
		return err
	}
	if actor.Name != a.Owner {
		return wh.Errorf(wh.EForbidden, "only @%s can remove @%s from a room", a.Owner, a.Handle)
	}
	_, err = s.append(ctx, EvAgentRemoved, agentRoomChange{Room: roomName, Handle: a.Handle, By: actor.Name})
	return err
}

func (s *Service) invitation(ctx context.Context, id int64) (*Invitation, error) {
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
func (s *Service) Invitations(ctx context.Context, actor *User) ([]Invitation, error) {
	return s.queryInvitations(ctx, `WHERE a.owner_id = ? OR i.requested_by = ? ORDER BY i.id DESC`, actor.ID, actor.Name)
}

func (s *Service) queryInvitations(ctx context.Context, where string, args ...any) ([]Invitation, error) {
	rows, err := s.db.r.QueryContext(ctx, `SELECT i.id, r.name, u.name || '/' || a.name, u.name, i.requested_by, i.status, i.created_at
		FROM invitations i JOIN rooms r ON r.id = i.room_id JOIN agents a ON a.id = i.agent_id JOIN users u ON u.id = a.owner_id `+where, args...)
	if err != nil {
		return nil, wh.Wrap(err, "read invitations")
	}
	defer rows.Close()
	out := []Invitation{}
	for rows.Next() {
		var in Invitation
		var at string
		if err := rows.Scan(&in.ID, &in.Room, &in.Agent, &in.Owner, &in.RequestedBy, &in.Status, &at); err != nil {
			return nil, wh.Wrap(err, "read invitations")
		}
		in.At, _ = time.Parse(time.RFC3339Nano, at)
		out = append(out, in)
	}
	return out, rows.Err()
}

// DecideInvitation accepts or declines an invitation; the agent's owner only.
func (s *Service) DecideInvitation(ctx context.Context, actor *User, id int64, accept bool) (*Invitation, error) {
	inv, err := s.invitation(ctx, id)
	if err != nil {
		return nil, err
	}
	if inv.Owner != actor.Name {
		return nil, wh.Errorf(wh.EForbidden, "only @%s can answer invitations for @%s", inv.Owner, inv.Agent)
	}
	if _, err := s.append(ctx, EvInvitationDecided, invitationDecided{ID: id, Accept: accept, By: actor.Name}); err != nil {
		return nil, err
	}
	return s.invitation(ctx, id)
}

func applyInvitationCreated(ctx context.Context, tx *sql.Tx, seq uint64, ev Event) ([]FeedItem, error) {
	var d invitationCreated
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

func applyInvitationDecided(ctx context.Context, tx *sql.Tx, seq uint64, ev Event) ([]FeedItem, error) {
	var d invitationDecided
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

func invitationFeedTx(ctx context.Context, tx *sql.Tx, seq uint64, id int64, at time.Time) ([]FeedItem, error) {
	var in Invitation
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

// AgentDMName is the room name of a user's DM with an agent.
func AgentDMName(user, handle string) string {
	owner, name, _ := SplitHandle(handle)
	return "dm:" + user + ":" + owner + "+" + name
}

// OpenAgentDM returns the actor's DM with an agent, creating it once. The
// agent joins it only with its owner's consent: directly when the actor is
// the owner, otherwise through an invitation the owner answers.
func (s *Service) OpenAgentDM(ctx context.Context, actor *User, handle string) (*Room, error) {
	a, err := s.AgentByHandle(ctx, handle)
	if err != nil {
		return nil, err
	}
	name := AgentDMName(actor.Name, a.Handle)
	if r, err := s.RoomFor(ctx, actor, name); err == nil {
		return r, nil
	}
	if _, err := s.append(ctx, EvRoomCreated, roomCreated{Name: name, Kind: KindDM, Private: true, Creator: actor.Name, Members: []string{actor.Name}}); err != nil && wh.ErrorCode(err) != wh.EConflict {
		return nil, err
	}
	if _, _, err := s.AddAgent(ctx, actor, name, a.Handle); err != nil && wh.ErrorCode(err) != wh.EConflict {
		return nil, err
	}
	return s.RoomFor(ctx, actor, name)
}
