package room

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"time"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/authz"
	"github.com/wheelhouse-dev/wheelhouse/chat"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// PairingTTL bounds how long a pairing token is valid.
const PairingTTL = 15 * time.Minute

// CreatePairingToken returns a one-time token the owner's bridge pairs with.
func (s *Service) CreatePairingToken(ctx context.Context, owner *chat.User) (string, time.Time, error) {
	tok := NewSecret("whp_")
	exp := s.now().Add(PairingTTL).UTC()
	_, err := s.append(ctx, chat.EvPairingCreated, chat.PairingCreated{TokenHash: HashSecret(tok), Owner: owner.Name, ExpiresAt: exp})
	return tok, exp, err
}

// Pair redeems a pairing token for a bridge's public key.
func (s *Service) Pair(ctx context.Context, token, publicKey, name string) (*chat.Bridge, error) {
	if len(name) > 64 {
		return nil, wh.Errorf(wh.EInvalid, "the bridge name is too long (at most 64 bytes)")
	}
	if name == "" {
		name = "bridge"
	}
	b := make([]byte, 6)
	rand.Read(b)
	id := "b" + hex.EncodeToString(b)
	if _, err := s.append(ctx, chat.EvBridgePaired, chat.BridgePaired{ID: id, TokenHash: HashSecret(token), PublicKey: publicKey, Name: name}); err != nil {
		return nil, err
	}
	return s.BridgeByID(ctx, id)
}

// RevokeBridge revokes a bridge: it can no longer connect.
func (s *Service) RevokeBridge(ctx context.Context, actor *chat.User, id string) error {
	b, err := s.BridgeByID(ctx, id)
	if err != nil {
		return err
	}
	if b.Owner != actor.Name {
		return wh.Errorf(wh.EForbidden, "only the bridge's owner can revoke it")
	}
	_, err = s.append(ctx, chat.EvBridgeRevoked, chat.BridgeRevoked{ID: id, By: actor.Name})
	return err
}

// RegisterAgent records an agent a bridge announced (when it changed).
func (s *Service) RegisterAgent(ctx context.Context, bridgeID string, info wire.AgentInfo, harness string) error {
	_, err := s.append(ctx, chat.EvAgentRegistered, chat.AgentRegistered{Bridge: bridgeID, Name: info.Name, Harness: harness, CanSteer: info.CanSteer, Policy: info.Policy})
	return err
}

// ReleaseAgent records that a bridge no longer runs an agent.
func (s *Service) ReleaseAgent(ctx context.Context, bridgeID, handle string) error {
	_, err := s.append(ctx, chat.EvAgentReleased, chat.AgentReleased{Bridge: bridgeID, Handle: handle})
	return err
}

// ValidatePolicy checks a policy and fills zero durations with defaults.
func ValidatePolicy(p *wire.Policy) error {
	d := wire.DefaultPolicy()
	switch p.Address {
	case "":
		p.Address = d.Address
	case wire.AddressOwner, wire.AddressUsers, wire.AddressMembers, wire.AddressModerate:
	default:
		return wh.Errorf(wh.EInvalid, "policy.address must be owner, users, moderate or members, not %q", p.Address)
	}
	for _, u := range p.Allowed {
		if !chat.ValidUserName(u) {
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

// AddAgent adds an agent to a room: directly for its owner, as an invitation
// the owner must accept for anyone else.
func (s *Service) AddAgent(ctx context.Context, actor *chat.User, roomName, handle string) (string, *chat.Invitation, error) {
	r, err := s.RoomFor(ctx, actor, roomName)
	if err != nil {
		return "", nil, err
	}
	a, err := s.AgentByHandle(ctx, handle)
	if err != nil {
		return "", nil, err
	}
	if in, _ := s.AgentInRoom(ctx, a.ID, r.Name); in && !retried(ctx) {
		return "", nil, wh.Errorf(wh.EConflict, "@%s is already in %s", a.Handle, r.Name)
	}
	switch authz.AddAgentToRoom(actor.Name, a.Owner, r.Role != "") {
	case authz.AddDirect:
		_, err := s.append(ctx, chat.EvAgentAdded, chat.AgentRoomChange{Room: r.Name, Handle: a.Handle, By: actor.Name})
		return "added", nil, err
	case authz.AddInvite:
		seq, err := s.append(ctx, chat.EvInvitationCreated, chat.InvitationCreated{Room: r.Name, Handle: a.Handle, By: actor.Name})
		if err != nil {
			return "", nil, err
		}
		inv, err := s.Invitation(ctx, int64(seq))
		return "invited", inv, err
	default:
		return "", nil, wh.Errorf(wh.EForbidden, "join %s before adding agents to it", r.Name)
	}
}

// RemoveAgent removes an agent from a room; its owner only.
func (s *Service) RemoveAgent(ctx context.Context, actor *chat.User, roomName, handle string) error {
	a, err := s.AgentByHandle(ctx, handle)
	if err != nil {
		return err
	}
	if actor.Name != a.Owner {
		return wh.Errorf(wh.EForbidden, "only @%s can remove @%s from a room", a.Owner, a.Handle)
	}
	_, err = s.append(ctx, chat.EvAgentRemoved, chat.AgentRoomChange{Room: roomName, Handle: a.Handle, By: actor.Name})
	return err
}

// DecideInvitation accepts or declines an invitation; the agent's owner only.
func (s *Service) DecideInvitation(ctx context.Context, actor *chat.User, id int64, accept bool, device string) (*chat.Invitation, error) {
	inv, err := s.Invitation(ctx, id)
	if err != nil {
		return nil, err
	}
	if inv.Owner != actor.Name {
		return nil, wh.Errorf(wh.EForbidden, "only @%s can answer invitations for @%s", inv.Owner, inv.Agent)
	}
	if _, err := s.append(ctx, chat.EvInvitationDecided, chat.InvitationDecided{ID: id, Accept: accept, By: actor.Name, Device: device}); err != nil {
		return nil, err
	}
	return s.Invitation(ctx, id)
}

// OpenAgentDM returns the actor's DM with an agent, creating it once. The
// agent joins it only with its owner's consent: directly when the actor is
// the owner, otherwise through an invitation the owner answers.
func (s *Service) OpenAgentDM(ctx context.Context, actor *chat.User, handle string) (*chat.Room, error) {
	a, err := s.AgentByHandle(ctx, handle)
	if err != nil {
		return nil, err
	}
	name := chat.AgentDMName(actor.Name, a.Handle)
	if r, err := s.RoomFor(ctx, actor, name); err == nil {
		return r, nil
	}
	if _, err := s.append(ctx, chat.EvRoomCreated, chat.RoomCreated{Name: name, Kind: chat.KindDM, Private: true, Creator: actor.Name, Members: []string{actor.Name}}); err != nil && wh.ErrorCode(err) != wh.EConflict {
		return nil, err
	}
	if _, _, err := s.AddAgent(ctx, actor, name, a.Handle); err != nil && wh.ErrorCode(err) != wh.EConflict {
		return nil, err
	}
	return s.RoomFor(ctx, actor, name)
}
