package hub

import (
	"context"
	"fmt"
	"slices"
	"strings"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/authz"
	"github.com/wheelhouse-dev/wheelhouse/chat"
	"github.com/wheelhouse-dev/wheelhouse/room"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// The hub relays the owner's decisions; it cannot make them. A decision
// that lets an agent do more reaches the agent's bridge with the owner's
// signed statement, the bridge verifies it against the devices it enrolled
// itself, and only then does the hub record it. The hub checks that a
// signature is there at all first, so an honest hub never sends the bridge
// something it must refuse as a forgery.

// signatureRequired is the answer to a widening decision sent unsigned.
func signatureRequired(what string) error {
	return &wh.Error{Code: wh.EForbidden, Reason: authz.ReasonSignatureRequired,
		Message: what + " lets the agent do more, so it must be signed by one of your enrolled devices (your name → Devices); the hub cannot make that decision for you"}
}

// bridgeOnline fails when the agent's bridge is not connected: the owner's
// authority lives there.
func (l *Link) bridgeOnline(a *chat.Agent) error {
	if a.Bridge == "" || !l.online(a.Bridge) {
		return &wh.Error{Code: wh.EUnavailable, Reason: wire.ReasonAgentOffline,
			Message: "@" + a.Handle + "'s bridge is offline; the owner's decisions are kept on the owner's machine, so make this one while the bridge is connected"}
	}
	return nil
}

// relayErr turns a bridge's refusal into the API's error.
func relayErr(ack wire.Ack) error {
	code := ack.Code
	if code == "" {
		code = wh.EConflict
	}
	msg := ack.Message
	if !strings.HasPrefix(msg, "the agent's bridge") {
		msg = "the agent's bridge refused: " + msg
	}
	return &wh.Error{Code: code, Message: msg, Reason: ack.Reason}
}

// relay sends an owner's change to a bridge: an error if the bridge cannot
// be reached or refuses it.
func (l *Link) relay(ctx context.Context, bridgeID, kind string, v any) error {
	var ack wire.Ack
	if err := l.request(ctx, bridgeID, kind, v, &ack, ControlTimeout); err != nil {
		return err
	}
	if !ack.OK {
		return relayErr(ack)
	}
	return nil
}

// grant is what this node last heard the bridge hold for agent in room:
// its ceiling, and whether it lets the agent act there.
func (l *Link) grant(a *chat.Agent, room string) (string, bool) {
	if room == chat.AgentDMName(a.Owner, a.Handle) {
		return authz.CeilingNormal, true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.presence[a.Bridge]
	if p == nil {
		return "", false
	}
	for _, g := range p.agents[a.Name].Rooms {
		if g.Room == room {
			return g.Ceiling, true
		}
	}
	return "", false
}

// statementCeiling reads the ceiling a signed consent names (normal when
// it names none).
func statementCeiling(s *wire.Signed) string {
	if s == nil {
		return ""
	}
	st, err := authz.ParseStatement([]byte(s.Statement))
	if err != nil || st.Ceiling == "" {
		return authz.CeilingNormal
	}
	return st.Ceiling
}

func deviceOf(s *wire.Signed) string {
	if s == nil {
		return ""
	}
	return s.Device
}

// SetPolicy relays the owner's new policy to the bridge and records it
// once the bridge took it: a policy that widens needs the owner's signed
// statement, and nothing goes beyond the bridge's own config.
func (l *Link) SetPolicy(ctx context.Context, actor *chat.User, handle string, p wire.Policy, signed *wire.Signed) (*chat.Agent, error) {
	a, err := l.rooms.CheckOwner(ctx, actor, handle)
	if err != nil {
		return nil, err
	}
	if err := room.ValidatePolicy(&p); err != nil {
		return nil, err
	}
	if wider := authz.Beyond(a.EffectivePolicy().Limits(), p.Limits()); len(wider) > 0 && signed == nil {
		return nil, signatureRequired("This policy (" + strings.Join(wider, ", ") + ")")
	}
	if err := l.bridgeOnline(a); err != nil {
		return nil, err
	}
	c := wire.Control{Agent: a.Name, Action: wire.ControlPolicy, Policy: &p, By: actor.Name, Signed: signed}
	if err := l.relay(ctx, a.Bridge, wire.KindControl, c); err != nil {
		return nil, err
	}
	return l.rooms.SetPolicy(ctx, actor, handle, p, deviceOf(signed))
}

// AddAgent adds an agent to a room: the owner's own agent once its bridge
// took the owner's consent (signed, unless the bridge already lets the
// agent act there); anyone else's as an invitation the owner answers.
func (l *Link) AddAgent(ctx context.Context, actor *chat.User, roomName, handle, ceiling string, signed *wire.Signed) (string, *chat.Invitation, error) {
	a, err := l.rooms.AgentByHandle(ctx, handle)
	if err != nil {
		return "", nil, err
	}
	if actor.Name != a.Owner {
		return l.rooms.AddAgent(ctx, actor, roomName, handle)
	}
	r, err := l.rooms.RoomFor(ctx, actor, roomName)
	if err != nil {
		return "", nil, err
	}
	if in, _ := l.rooms.AgentInRoom(ctx, a.ID, r.Name); in && !room.Retried(ctx) {
		return "", nil, wh.Errorf(wh.EConflict, "@%s is already in %s", a.Handle, r.Name)
	}
	device, granted, err := l.consent(ctx, actor, a, r.Name, ceiling, signed)
	if err != nil {
		return "", nil, err
	}
	if granted == "" {
		granted = statementCeiling(signed)
	}
	if err := l.rooms.AddOwnAgent(ctx, actor, r.Name, a.Handle, granted, device); err != nil {
		return "", nil, err
	}
	return "added", nil, nil
}

// consent relays the owner's consent to a room to the agent's bridge and
// returns the device that signed it and the ceiling the bridge now holds
// for the room.
func (l *Link) consent(ctx context.Context, actor *chat.User, a *chat.Agent, room, ceiling string, signed *wire.Signed) (device, granted string, err error) {
	granted, held := l.grant(a, room)
	if !held && signed == nil {
		return "", "", signatureRequired("Letting @" + a.Handle + " act in " + room)
	}
	if err := l.bridgeOnline(a); err != nil {
		return "", "", err
	}
	c := wire.Consent{Agent: a.Name, Room: room, Action: wire.ConsentAdd, Ceiling: ceiling, By: actor.Name, Signed: signed}
	if err := l.relay(ctx, a.Bridge, wire.KindConsent, c); err != nil {
		return "", "", err
	}
	if held {
		return "", granted, nil // the bridge already let it act there: no signature was needed or checked
	}
	// The next heartbeat would tell; this node needs to know now.
	granted = statementCeiling(signed)
	l.noteGrant(a, room, granted)
	return deviceOf(signed), granted, nil
}

// noteGrant records in this node's presence that the bridge now lets the
// agent act in room at ceiling.
func (l *Link) noteGrant(a *chat.Agent, room, ceiling string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.presence[a.Bridge]
	if p == nil {
		return
	}
	info := p.agents[a.Name]
	i := slices.IndexFunc(info.Rooms, func(g wire.RoomGrant) bool { return g.Room == room })
	if ceiling == "" {
		if i >= 0 {
			info.Rooms = slices.Delete(slices.Clone(info.Rooms), i, i+1)
		}
	} else if i >= 0 {
		info.Rooms = slices.Clone(info.Rooms)
		info.Rooms[i].Ceiling = ceiling
	} else {
		info.Rooms = append(slices.Clone(info.Rooms), wire.RoomGrant{Room: room, Ceiling: ceiling})
	}
	p.agents[a.Name] = info
}

// AnswerInvitation accepts (relaying the owner's signed consent to the
// bridge first) or declines an invitation.
func (l *Link) AnswerInvitation(ctx context.Context, actor *chat.User, id int64, accept bool, signed *wire.Signed) (*chat.Invitation, error) {
	inv, err := l.rooms.Invitation(ctx, id)
	if err != nil {
		return nil, err
	}
	if !accept {
		return l.rooms.DecideInvitation(ctx, actor, id, false, "")
	}
	a, err := l.rooms.CheckOwner(ctx, actor, inv.Agent)
	if err != nil {
		return nil, err
	}
	if inv.Status != "pending" {
		return nil, wh.Errorf(wh.EConflict, "this invitation was already %s", inv.Status)
	}
	device, _, err := l.consent(ctx, actor, a, inv.Room, "", signed)
	if err != nil {
		return nil, err
	}
	return l.rooms.DecideInvitation(ctx, actor, id, true, device)
}

// RemoveAgent removes the owner's agent from a room: recorded first (the
// hub stops routing), then the bridge forgets the room — removing needs no
// signature.
func (l *Link) RemoveAgent(ctx context.Context, actor *chat.User, roomName, handle string) error {
	if err := l.rooms.RemoveAgent(ctx, actor, roomName, handle); err != nil {
		return err
	}
	if a, err := l.rooms.AgentByHandle(ctx, handle); err == nil && a.Bridge != "" && l.online(a.Bridge) {
		var ack wire.Ack
		c := wire.Consent{Agent: a.Name, Room: roomName, Action: wire.ConsentRemove, By: actor.Name}
		if err := l.request(ctx, a.Bridge, wire.KindConsent, c, &ack, ControlTimeout); err != nil || !ack.OK {
			l.log.Info("the bridge did not take the removal now", "agent", handle, "room", roomName, "err", err, "answer", ack.Message)
		}
		l.noteGrant(a, roomName, "")
	}
	return nil
}

// SetCeiling sets what turns from a room may do for the owner's agent: a
// stricter ceiling as asked, a looser one only with the owner's signature.
func (l *Link) SetCeiling(ctx context.Context, actor *chat.User, roomName, handle, ceiling string, signed *wire.Signed) error {
	if !authz.ValidCeiling(ceiling) {
		return wh.Errorf(wh.EInvalid, "ceiling must be normal, ask or read-only, not %q", ceiling)
	}
	a, err := l.rooms.CheckOwner(ctx, actor, handle)
	if err != nil {
		return err
	}
	cur, err := l.rooms.Ceiling(ctx, a.ID, roomName)
	if err != nil {
		return err
	}
	if cur == "" {
		return wh.Errorf(wh.ENotFound, "@%s is not in %s", a.Handle, roomName)
	}
	if held, ok := l.grant(a, roomName); ok {
		cur = held
	}
	if cur == ceiling {
		return nil
	}
	if authz.CeilingWidens(cur, ceiling) && signed == nil {
		return signatureRequired("Making " + roomName + " " + ceiling + " for @" + a.Handle)
	}
	if err := l.bridgeOnline(a); err != nil {
		return err
	}
	c := wire.Consent{Agent: a.Name, Room: roomName, Action: wire.ConsentCeiling, Ceiling: ceiling, By: actor.Name, Signed: signed}
	if err := l.relay(ctx, a.Bridge, wire.KindConsent, c); err != nil {
		return err
	}
	l.noteGrant(a, roomName, ceiling)
	if err := l.rooms.SetCeiling(ctx, actor.Name, roomName, a.Handle, ceiling, deviceOf(signed)); err != nil && wh.ErrorCode(err) != wh.EConflict {
		return err
	}
	return nil
}

// Enroll relays a device's enrollment to one of the owner's bridges, which
// checks it against the code it showed the owner.
func (l *Link) Enroll(ctx context.Context, actor *chat.User, bridgeID string, e wire.Enrollment) (*wire.Device, error) {
	req := wire.DeviceRequest{Op: wire.DeviceEnroll, Enroll: &e, By: actor.Name}
	if err := req.Validate(); err != nil {
		return nil, err
	}
	b, err := l.rooms.BridgeByID(ctx, bridgeID)
	if err != nil || b.Owner != actor.Name || b.Revoked {
		return nil, wh.Errorf(wh.ENotFound, "you have no bridge %s", bridgeID)
	}
	if !l.online(b.ID) {
		return nil, &wh.Error{Code: wh.EUnavailable, Reason: wire.ReasonAgentOffline, Message: "the bridge " + b.Name + " is offline: start it, then enroll with the code it shows"}
	}
	var rep wire.DeviceReply
	if err := l.request(ctx, b.ID, wire.KindDevice, req, &rep, ControlTimeout); err != nil {
		return nil, err
	}
	if rep.Devices != nil {
		if err := l.rooms.RecordDevices(ctx, b.ID, rep.Devices); err != nil {
			l.log.Warn("recording a bridge's devices failed", "bridge", b.ID, "err", err)
		}
	}
	if !rep.OK {
		return nil, relayErr(rep.Ack)
	}
	return rep.Device, nil
}

// RevokeDevice revokes a device on every bridge of the owner that trusts
// it. A bridge that is offline keeps trusting it until it is told: the
// answer names it.
func (l *Link) RevokeDevice(ctx context.Context, actor *chat.User, id string) error {
	devs, err := l.rooms.Devices(ctx, actor)
	if err != nil {
		return err
	}
	var offline []string
	found := false
	for _, d := range devs {
		if d.ID != id || d.Revoked {
			continue
		}
		found = true
		if !l.online(d.Bridge) {
			offline = append(offline, d.BridgeName)
			continue
		}
		var rep wire.DeviceReply
		if err := l.request(ctx, d.Bridge, wire.KindDevice, wire.DeviceRequest{Op: wire.DeviceRevoke, ID: id, By: actor.Name}, &rep, ControlTimeout); err != nil {
			offline = append(offline, d.BridgeName)
			continue
		}
		if !rep.OK {
			return relayErr(rep.Ack)
		}
		if err := l.rooms.RecordDevices(ctx, d.Bridge, rep.Devices); err != nil {
			l.log.Warn("recording a bridge's devices failed", "bridge", d.Bridge, "err", err)
		}
	}
	if !found {
		return wh.Errorf(wh.ENotFound, "none of your bridges trusts a device %s", id)
	}
	if len(offline) > 0 {
		return &wh.Error{Code: wh.EUnavailable, Reason: wire.ReasonAgentOffline, Message: fmt.Sprintf(
			"revoked where the bridge is connected; %s is offline and still trusts the device — run wheelhouse bridge devices revoke %s on that machine, or retry when it is connected",
			strings.Join(offline, ", "), id)}
	}
	return nil
}

// forgery records a decision a bridge refused and tells the owner.
func (l *Link) forgery(ctx context.Context, b *chat.Bridge, f wire.Forgery) {
	if f.Agent != "" {
		if _, err := l.ownAgent(ctx, b, f.Agent); err != nil {
			l.log.Warn("a bridge reported a refused decision for an agent it does not run", "bridge", b.ID, "agent", f.Agent)
			return
		}
	}
	if err := l.rooms.RecordForgery(ctx, b, f); err != nil {
		l.log.Warn("recording a refused decision failed", "bridge", b.ID, "err", err)
	}
	l.log.Warn("a bridge refused a decision not signed by its owner's device", "bridge", b.ID, "agent", f.Agent, "kind", f.Kind, "reason", f.Reason)
	if f.Agent != "" {
		l.noteOwner(ctx, b.Owner, b.Owner+"/"+f.Agent, fmt.Sprintf("Your bridge %s refused a %s decision for @%s/%s: %s Nothing was done. If you did not just try this from a device, someone with access to the hub did.",
			b.Name, f.Kind, b.Owner, f.Agent, oneLine(f.Detail, 300)))
	}
}

// syncOwner records what a bridge announced about its owner's authority:
// its devices, and the ceilings it holds for rooms its agents are in.
func (l *Link) syncOwner(ctx context.Context, b *chat.Bridge, a wire.Announce) {
	if err := l.syncDevices(ctx, b, a.Devices); err != nil {
		l.log.Warn("recording a bridge's devices failed", "bridge", b.ID, "err", err)
	}
	for _, info := range a.Agents {
		handle := b.Owner + "/" + info.Name
		ag, err := l.rooms.AgentByHandle(ctx, handle)
		if err != nil || ag.Bridge != b.ID {
			continue
		}
		for _, g := range info.Rooms {
			cur, err := l.rooms.Ceiling(ctx, ag.ID, g.Room)
			if err != nil || cur == "" || cur == g.Ceiling {
				continue
			}
			if err := l.rooms.SetCeiling(ctx, "bridge", g.Room, handle, g.Ceiling, ""); err != nil && wh.ErrorCode(err) != wh.EConflict {
				l.log.Warn("recording a ceiling failed", "agent", handle, "room", g.Room, "err", err)
			}
		}
	}
}

// syncDevices records a bridge's devices unless the hub has them already.
func (l *Link) syncDevices(ctx context.Context, b *chat.Bridge, devices []wire.Device) error {
	owner, err := l.rooms.UserByName(ctx, b.Owner)
	if err != nil {
		return err
	}
	all, err := l.rooms.Devices(ctx, owner)
	if err != nil {
		return err
	}
	var have []string
	for _, d := range all {
		if d.Bridge == b.ID {
			have = append(have, fmt.Sprintf("%s|%s|%v", d.ID, d.Name, d.Revoked))
		}
	}
	var got []string
	for _, d := range devices {
		got = append(got, fmt.Sprintf("%s|%s|%v", d.ID, d.Name, d.Revoked))
	}
	slices.Sort(have)
	slices.Sort(got)
	if slices.Equal(have, got) {
		return nil
	}
	return l.rooms.RecordDevices(ctx, b.ID, devices)
}
