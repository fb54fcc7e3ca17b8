package hub

import (
	"context"
	"fmt"
	"strings"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/authz"
	"github.com/wheelhouse-dev/wheelhouse/chat"
	"github.com/wheelhouse-dev/wheelhouse/room"
	"github.com/wheelhouse-dev/wheelhouse/web"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

var _ web.AgentAPI = (*Link)(nil)

func (l *Link) api() web.AgentAPI { return l }

// Annotate sets live status and, in a room, what a mention would do now.
func (l *Link) Annotate(ctx context.Context, viewer *chat.User, roomName string, agents []*chat.Agent) {
	for _, a := range agents {
		if !l.online(a.Bridge) {
			a.Status = wire.AgentOffline
		}
		if roomName == "" {
			continue
		}
		pol := a.EffectivePolicy()
		d := authz.MayAddress(authz.AddressCheck{Sender: viewer.Name, SenderIsMember: true, AgentInRoom: true, Owner: a.Owner, Address: pol.Address, Allowed: pol.Allowed})
		switch {
		case d.Reason == authz.ReasonModerated:
			a.Mode, a.ModeText = "moderated", "goes to @"+a.Owner+" first, who forwards it or not"
		case !d.Allow:
			a.Mode, a.ModeText = "not-allowed", "you may not address this agent"
		case a.Status == wire.AgentOffline:
			a.Mode, a.ModeText = "offline", "offline — the owner's bridge is not connected"
		case a.Status == wire.AgentFailed:
			a.Mode, a.ModeText = "offline", "failed — the agent is not running"
		default:
			busy := a.Status == wire.AgentWorking || a.Status == wire.AgentNeedsApproval
			md := authz.SteerMode(authz.ModeCheck{Busy: busy, CanSteer: a.CanSteer, SteeringEnabled: pol.Steering, SteersThisTurn: len(a.SteeredBy), MaxSteers: pol.MaxSteers})
			switch md.Action {
			case authz.ActionStart:
				a.Mode, a.ModeText = "start", "idle — will start a turn"
			case authz.ActionSteer:
				a.Mode, a.ModeText = "steer", "working — will steer the current turn"
			case authz.ActionQueue:
				a.Mode, a.ModeText = "queue", "working — can only queue your message for after this turn"
			default:
				a.Mode, a.ModeText = "not-allowed", md.Message
			}
		}
	}
}

// Interrupt stops the agent's running turn; owner only.
func (l *Link) Interrupt(ctx context.Context, actor *chat.User, handle string) error {
	a, err := l.rooms.AgentByHandle(ctx, handle)
	if err != nil {
		return err
	}
	if d := authz.MayInterrupt(actor.Name, a.Owner); !d.Allow {
		return &wh.Error{Code: wh.EForbidden, Message: "only @" + a.Owner + " can stop @" + a.Handle, Reason: d.Reason}
	}
	var ack wire.Ack
	if err := l.request(ctx, a.Bridge, wire.KindControl, wire.Control{Agent: a.Name, Action: wire.ControlInterrupt, By: actor.Name}, &ack, ControlTimeout); err != nil {
		return err
	}
	if !ack.OK {
		return &wh.Error{Code: wh.EConflict, Message: ack.Message}
	}
	// Who stopped which turn goes into the agent's timeline.
	if err := l.rooms.RecordTurn(ctx, a.Handle, wire.TurnEvent{TurnID: a.TurnID, Kind: "interrupt", Room: a.TurnRoom}, actor.Name, ""); err != nil {
		l.log.Warn("recording an interrupt failed", "agent", a.Handle, "err", err)
	}
	return nil
}

// Decide checks the owner's decision, has the bridge (the gate) accept it
// — an approval only with the owner's signed statement, which the bridge
// verifies — then records it.
func (l *Link) Decide(ctx context.Context, actor *chat.User, id, decision, hash string, signed *wire.Signed) (*chat.Approval, error) {
	p, err := l.rooms.CheckDecision(ctx, actor, id, hash)
	if wh.ErrorReason(err) == authz.ReasonAlreadyDecided && room.Retried(ctx) && p != nil && p.DecidedBy == actor.Name &&
		p.Status == decisionState(decision) && strings.EqualFold(p.PayloadHash, hash) {
		return p, nil // a retry (same Idempotency-Key) of the decision: the first answer
	}
	if err != nil {
		return nil, err
	}
	a, err := l.rooms.AgentByHandle(ctx, p.Agent)
	if err != nil {
		return nil, err
	}
	if decision == "approve" && signed == nil {
		return nil, signatureRequired("Approving " + p.Tool)
	}
	if decision != "approve" {
		signed = nil // a denial needs no signature
	}
	d := wire.Decision{ApprovalID: id, Agent: a.Name, Decision: decision, PayloadHash: hash, By: actor.Name, TimelineHead: l.timelineHead(ctx, a.ID), Signed: signed}
	var ack wire.Ack
	if err := l.request(ctx, a.Bridge, wire.KindDecision, d, &ack, ControlTimeout); err != nil {
		return nil, err
	}
	if !ack.OK {
		if ack.Code != wh.EForbidden {
			ack.Code, ack.Reason = wh.EConflict, ack.Code
		}
		return nil, relayErr(ack)
	}
	status := wire.ApprovalApproved
	if decision == "deny" {
		status = wire.ApprovalDenied
	}
	if err := l.rooms.RecordSignedDecision(ctx, id, status, actor.Name, hash, deviceOf(signed)); err != nil && wh.ErrorCode(err) != wh.EConflict {
		return nil, err
	}
	return l.rooms.ApprovalByID(ctx, id)
}

// PairCommand is the command an owner runs on the bridge machine.
func (l *Link) PairCommand(token string) string {
	return fmt.Sprintf("wheelhouse bridge pair --hub %s --token %s", l.h.URL(), token)
}

// NATSURL is where bridges connect.
func (l *Link) NATSURL() string { return l.h.NATSURL() }

// disconnectBridge closes a revoked bridge's live NATS connections on
// every server. The projection already turned its agents offline and ended
// their work.
func (l *Link) disconnectBridge(ctx context.Context, bridgeID string) {
	l.h.DisconnectBridge(ctx, bridgeID)
	l.mu.Lock()
	delete(l.presence, bridgeID)
	l.mu.Unlock()
}

func decisionState(decision string) string {
	if decision == "approve" {
		return wire.ApprovalApproved
	}
	return wire.ApprovalDenied
}

// timelineHead is the agent's newest timeline entry on this node, for the
// bridge's journal; nil when there is none or it cannot be read.
func (l *Link) timelineHead(ctx context.Context, agentID int64) *wire.ChainHead {
	seq, idx, hash, err := l.rooms.TimelineHead(ctx, agentID)
	if err != nil || hash == "" {
		return nil
	}
	return &wire.ChainHead{Seq: seq, Idx: idx, Hash: hash}
}
