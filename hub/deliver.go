package hub

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"sync"
	"time"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/authz"
	"github.com/wheelhouse-dev/wheelhouse/room"
	"github.com/wheelhouse-dev/wheelhouse/web"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

var _ web.AgentAPI = (*Link)(nil)

func (l *Link) api() web.AgentAPI { return l }

// Deliver routes every agent mention of m: the hub decides with authz,
// records the steer, sends it to the bridge with provenance, and records the
// bridge's receipt. It waits briefly so the poster usually gets final
// receipts in the answer; later ones arrive as events.
func (l *Link) Deliver(ctx context.Context, sender *room.User, m *room.Message, turns map[string]string) []room.Receipt {
	var handles []string
	for _, mn := range m.Mentions {
		if mn.Kind == room.MentionAgent {
			h := mn.Owner + "/" + mn.Agent
			if !slices.Contains(handles, h) {
				handles = append(handles, h)
			}
		}
	}
	out := make([]room.Receipt, len(handles))
	var wg sync.WaitGroup
	for i, h := range handles {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = l.deliverOne(ctx, sender, m, h, turns[h])
		}()
	}
	wg.Wait()
	return out
}

func newSteerID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return "s" + hex.EncodeToString(b)
}

func (l *Link) reject(ctx context.Context, r room.Receipt, reason, detail string) room.Receipt {
	r.Status, r.Reason, r.Detail = wire.StatusRejected, reason, detail
	if err := l.rooms.RecordSteer(ctx, r); err != nil {
		l.log.Warn("recording a rejected steer failed", "err", err)
	}
	return r
}

func (l *Link) deliverOne(ctx context.Context, sender *room.User, m *room.Message, handle, expectTurn string) room.Receipt {
	r := room.Receipt{SteerID: newSteerID(), MessageID: m.ID, Room: m.Room, Agent: handle, Sender: sender.Name, At: l.rooms.Now()}
	a, err := l.rooms.AgentByHandle(ctx, handle)
	if err != nil {
		return l.reject(ctx, r, wire.ReasonUnknownAgent, "there is no agent @"+handle)
	}
	inRoom, err := l.rooms.AgentInRoom(ctx, a.ID, m.Room)
	if err != nil {
		return l.reject(ctx, r, wire.ReasonTimeout, "the hub could not check the room; try again")
	}
	member, _ := l.rooms.IsMember(ctx, m.Room, sender.Name)
	pol := a.EffectivePolicy()
	stop := room.IsStopCommand(m.Text, a.Owner, a.Name)
	d := authz.MayAddress(authz.AddressCheck{Sender: sender.Name, SenderIsMember: member, AgentInRoom: inRoom,
		Owner: a.Owner, Address: pol.Address, Allowed: pol.Allowed, Stop: stop})
	if !d.Allow {
		return l.reject(ctx, r, d.Reason, d.Message)
	}
	if !l.online(a.Bridge) {
		return l.reject(ctx, r, wire.ReasonAgentOffline, "@"+handle+"'s bridge is offline; the owner's machine is not connected")
	}
	if !l.allow(sender.Name, handle) {
		return l.reject(ctx, r, wire.ReasonRateLimited, fmt.Sprintf("too many messages to @%s; wait a few seconds", handle))
	}
	r.Status = room.StatusPending
	if err := l.rooms.RecordSteer(ctx, r); err != nil {
		l.log.Warn("recording a steer failed", "err", err)
		r.Status, r.Reason, r.Detail = wire.StatusRejected, wire.ReasonTimeout, "the hub could not record the message for the agent; try again"
		return r
	}
	if expectTurn == "" && (a.Status == wire.AgentWorking || a.Status == wire.AgentNeedsApproval) {
		expectTurn = a.TurnID
	}
	st := wire.Steer{ID: r.SteerID, Agent: a.Name, Owner: a.Owner, Room: m.Room, RoomKind: roomKind(m.Room), MessageID: m.ID,
		Sender: sender.Name, SenderIsOwner: sender.Name == a.Owner, SentAt: m.CreatedAt, Text: m.Text, Stop: stop, ExpectedTurn: expectTurn}
	for _, p := range m.Parts {
		st.Parts = append(st.Parts, wire.Part{Kind: p.Kind, Start: p.Start, End: p.End})
	}
	done := make(chan room.Receipt, 1)
	if !l.enter() {
		r.Status, r.Reason, r.Detail = wire.StatusRejected, wire.ReasonTimeout, "the hub is shutting down"
		return r
	}
	go func() { // detached: the receipt is recorded even if the poster goes away
		defer l.wg.Done()
		bctx, cancel := context.WithTimeout(context.Background(), 2*l.h.cfg.SteerTimeout)
		defer cancel()
		var rc wire.Receipt
		if err := l.request(bctx, a.Bridge, wire.KindSteer, st, &rc, l.h.cfg.SteerTimeout); err != nil {
			rc = wire.Receipt{SteerID: r.SteerID, Status: wire.StatusRejected, Reason: wh.ErrorReason(err), Detail: wh.ErrorMessage(err)}
		}
		rc.SteerID = r.SteerID
		if !validStatus(rc.Status) {
			rc = wire.Receipt{SteerID: r.SteerID, Status: wire.StatusRejected, Reason: wire.ReasonTimeout, Detail: "the bridge answered with an unknown status"}
		}
		if err := l.rooms.UpdateSteer(bctx, rc); err != nil && wh.ErrorCode(err) != wh.EConflict {
			l.log.Warn("recording a receipt failed", "steer", r.SteerID, "err", err)
		}
		got, err := l.rooms.Receipt(bctx, r.SteerID)
		if err != nil {
			got = r
		}
		done <- got
	}()
	select {
	case got := <-done:
		return got
	case <-time.After(deliverWait):
		return r // still pending: the final receipt follows as an event
	case <-ctx.Done():
		return r
	}
}

func validStatus(s string) bool {
	switch s {
	case wire.StatusStarted, wire.StatusSteered, wire.StatusQueued, wire.StatusDelivered, wire.StatusExpired, wire.StatusRejected:
		return true
	}
	return false
}

func roomKind(name string) string {
	if len(name) > 3 && name[:3] == "dm:" {
		return room.KindDM
	}
	return room.KindRoom
}

// Annotate sets live status and, in a room, what a mention would do now.
func (l *Link) Annotate(ctx context.Context, viewer *room.User, roomName string, agents []*room.Agent) {
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
func (l *Link) Interrupt(ctx context.Context, actor *room.User, handle string) error {
	a, err := l.rooms.AgentByHandle(ctx, handle)
	if err != nil {
		return err
	}
	if d := authz.MayInterrupt(actor.Name, a.Owner); !d.Allow {
		return &wh.Error{Code: wh.EForbidden, Message: "only @" + a.Owner + " can stop @" + a.Handle, Reason: d.Reason}
	}
	var ack wire.Ack
	if err := l.request(ctx, a.Bridge, wire.KindControl, wire.Control{Agent: a.Name, Action: "interrupt", By: actor.Name}, &ack, ControlTimeout); err != nil {
		return err
	}
	if !ack.OK {
		return &wh.Error{Code: wh.EConflict, Message: ack.Message}
	}
	// Who stopped which turn goes into the agent's timeline.
	if err := l.rooms.RecordTurn(ctx, a.Handle, wire.TurnEvent{TurnID: a.TurnID, Kind: "interrupt", Room: a.TurnRoom}, actor.Name); err != nil {
		l.log.Warn("recording an interrupt failed", "agent", a.Handle, "err", err)
	}
	return nil
}

// PolicyChanged tells the bridge (best effort; it also gets the policy on
// its next announce).
func (l *Link) PolicyChanged(ctx context.Context, a *room.Agent) {
	p := a.EffectivePolicy()
	var ack wire.Ack
	if err := l.request(ctx, a.Bridge, wire.KindControl, wire.Control{Agent: a.Name, Action: "policy", Policy: &p, By: a.Owner}, &ack, ControlTimeout); err != nil {
		l.log.Info("policy change not delivered now; the bridge gets it when it reconnects", "agent", a.Handle, "err", err)
	}
}

// Decide checks the owner's decision, has the bridge (the gate) accept it,
// then records it.
func (l *Link) Decide(ctx context.Context, actor *room.User, id, decision, hash string) (*room.Approval, error) {
	p, err := l.rooms.CheckDecision(ctx, actor, id, hash)
	if err != nil {
		return nil, err
	}
	a, err := l.rooms.AgentByHandle(ctx, p.Agent)
	if err != nil {
		return nil, err
	}
	d := wire.Decision{ApprovalID: id, Agent: a.Name, Decision: decision, PayloadHash: hash, By: actor.Name}
	var ack wire.Ack
	if err := l.request(ctx, a.Bridge, wire.KindDecision, d, &ack, ControlTimeout); err != nil {
		return nil, err
	}
	if !ack.OK {
		return nil, &wh.Error{Code: wh.EConflict, Message: "the agent's bridge refused the decision: " + ack.Message, Reason: ack.Code}
	}
	status := wire.ApprovalApproved
	if decision == "deny" {
		status = wire.ApprovalDenied
	}
	if err := l.rooms.RecordDecision(ctx, id, status, actor.Name, hash, ""); err != nil && wh.ErrorCode(err) != wh.EConflict {
		return nil, err
	}
	return l.rooms.ApprovalByID(ctx, id)
}

// void denies the pending approvals of turns in roomName that match,
// telling the bridge (the gate) first, then recording it.
func (l *Link) void(ctx context.Context, roomName, reason string, match func(p *room.Approval) bool) {
	ps, err := l.rooms.PendingApprovalsInRoom(ctx, roomName)
	if err != nil {
		l.log.Warn("voiding approvals: cannot read them", "room", roomName, "err", err)
		return
	}
	for _, p := range ps {
		if !match(p) {
			continue
		}
		a, err := l.rooms.AgentByHandle(ctx, p.Agent)
		if err != nil {
			continue
		}
		var ack wire.Ack
		d := wire.Decision{ApprovalID: p.ID, Agent: a.Name, Decision: "deny", PayloadHash: p.PayloadHash, By: "wheelhouse", Reason: reason}
		if err := l.request(ctx, a.Bridge, wire.KindDecision, d, &ack, ControlTimeout); err != nil {
			l.log.Info("voiding: the bridge did not answer; its own expiry will deny", "approval", p.ID, "err", err)
		}
		l.rooms.RecordDecision(ctx, p.ID, wire.ApprovalVoided, "", "", reason)
	}
}

// MemberLeft voids pending approvals of turns the departed member steered.
func (l *Link) MemberLeft(ctx context.Context, roomName, user string) {
	l.void(ctx, roomName, "@"+user+", who steered this turn, left "+roomName, func(p *room.Approval) bool {
		return authz.VoidOnDeparture(p.SteeredBy, user, false)
	})
}

// AgentRemoved voids pending approvals of the agent's turns in the room.
func (l *Link) AgentRemoved(ctx context.Context, roomName, handle string) {
	l.void(ctx, roomName, "@"+handle+" was removed from "+roomName, func(p *room.Approval) bool {
		return p.Agent == handle
	})
}

// PairCommand is the command an owner runs on the bridge machine.
func (l *Link) PairCommand(token string) string {
	return fmt.Sprintf("wheelhouse bridge pair --hub %s --token %s", l.h.URL(), token)
}

// NATSURL is where bridges connect.
func (l *Link) NATSURL() string { return l.h.NATSURL() }

// BridgeRevoked closes a revoked bridge's live NATS connections on every
// server and turns its agents offline at once.
func (l *Link) BridgeRevoked(ctx context.Context, bridgeID string) {
	l.h.DisconnectBridge(bridgeID)
	l.mu.Lock()
	p := l.presence[bridgeID]
	delete(l.presence, bridgeID)
	l.mu.Unlock()
	if p != nil {
		l.markOffline(bridgeID, p.hbAt)
	}
}
