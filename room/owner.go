package room

import (
	"context"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/authz"
	"github.com/wheelhouse-dev/wheelhouse/chat"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// The owner's authority as the hub records it. The hub decides none of it:
// a widening decision is recorded only after the agent's bridge verified
// the owner's signature and took it (hub.Link relays it first).

// RecordDevices records the owner devices a bridge reports it trusts.
func (s *Service) RecordDevices(ctx context.Context, bridgeID string, devices []wire.Device) error {
	if devices == nil {
		devices = []wire.Device{}
	}
	_, err := s.append(ctx, chat.EvBridgeDevices, chat.BridgeDevices{Bridge: bridgeID, Devices: devices})
	return err
}

// RecordForgery records a decision a bridge refused (in the agent's
// timeline as a forgery, and on the approval it concerned).
func (s *Service) RecordForgery(ctx context.Context, b *chat.Bridge, f wire.Forgery) error {
	handle := ""
	if f.Agent != "" {
		handle = b.Owner + "/" + f.Agent
	}
	_, err := s.append(ctx, chat.EvForgeryRefused, chat.ForgeryRefused{Bridge: b.ID, Handle: handle, Forgery: f})
	return err
}

// CheckOwner returns the agent if actor owns it.
func (s *Service) CheckOwner(ctx context.Context, actor *chat.User, handle string) (*chat.Agent, error) {
	a, err := s.AgentByHandle(ctx, handle)
	if err != nil {
		return nil, err
	}
	if actor.Name != a.Owner {
		return nil, &wh.Error{Code: wh.EForbidden, Reason: authz.ReasonForbidden, Message: "only @" + a.Owner + " decides for @" + a.Handle}
	}
	return a, nil
}

// SetCeiling records a room's ceiling for an agent (by names who set it:
// the owner, or "bridge" when the bridge reports its own).
func (s *Service) SetCeiling(ctx context.Context, by, roomName, handle, ceiling, device string) error {
	if !authz.ValidCeiling(ceiling) {
		return wh.Errorf(wh.EInvalid, "ceiling must be normal, ask or read-only, not %q", ceiling)
	}
	_, err := s.append(ctx, chat.EvAgentCeiling, chat.AgentCeiling{Room: roomName, Handle: handle, Ceiling: ceiling, By: by, Device: device})
	return err
}

// AddOwnAgent records the owner's agent in a room the owner's bridge
// accepted, with its ceiling and the device that signed the consent.
func (s *Service) AddOwnAgent(ctx context.Context, actor *chat.User, roomName, handle, ceiling, device string) error {
	a, err := s.CheckOwner(ctx, actor, handle)
	if err != nil {
		return err
	}
	r, err := s.RoomFor(ctx, actor, roomName)
	if err != nil {
		return err
	}
	if in, _ := s.AgentInRoom(ctx, a.ID, r.Name); in {
		if retried(ctx) {
			return nil
		}
		return wh.Errorf(wh.EConflict, "@%s is already in %s", a.Handle, r.Name)
	}
	_, err = s.append(ctx, chat.EvAgentAdded, chat.AgentRoomChange{Room: r.Name, Handle: a.Handle, By: actor.Name, Ceiling: ceiling, Device: device})
	return err
}

// SetPolicy changes an agent's policy; owner only (device: the one that
// signed a widening, "" for none).
func (s *Service) SetPolicy(ctx context.Context, actor *chat.User, handle string, p wire.Policy, device string) (*chat.Agent, error) {
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
	if _, err := s.append(ctx, chat.EvAgentPolicy, chat.AgentPolicy{Handle: a.Handle, Policy: p, By: actor.Name, Device: device}); err != nil {
		return nil, err
	}
	return s.AgentByHandle(ctx, handle)
}

// RecordSignedDecision stores an approval's outcome with the device whose
// signed decision the bridge accepted.
func (s *Service) RecordSignedDecision(ctx context.Context, id, status, by, hash, device string) error {
	return s.appendOnce(ctx, "", chat.EvApprovalDecided, chat.ApprovalDecided{ID: id, Status: status, By: by, Hash: hash, Device: device})
}

// AnswerRequest forwards (with the owner's signed forward, which the
// bridge verifies) or declines a held mention; the owner only.
func (s *Service) AnswerRequest(ctx context.Context, actor *chat.User, steerID string, forward bool, signed *wire.Signed) (chat.Request, error) {
	q, err := s.Request(ctx, steerID)
	if err != nil {
		return q, err
	}
	if q.Owner != actor.Name {
		return q, wh.Errorf(wh.EForbidden, "only @%s forwards or declines messages to @%s", q.Owner, q.Agent)
	}
	if q.Status != wire.StatusHeld {
		return q, wh.Errorf(wh.EConflict, "this message is no longer waiting for you (it is %s)", q.Status)
	}
	if forward && signed == nil {
		return q, &wh.Error{Code: wh.EForbidden, Reason: authz.ReasonSignatureRequired,
			Message: "forwarding lets @" + q.Sender + "'s words reach your agent: sign it with one of your enrolled devices"}
	}
	d := chat.SteerForwarded{ID: steerID, By: actor.Name, Decline: !forward}
	if forward {
		d.Signed = signed
	}
	if _, err := s.append(ctx, chat.EvSteerForwarded, d); err != nil {
		return q, err
	}
	return s.Request(ctx, steerID)
}
