package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/chat"
	"github.com/wheelhouse-dev/wheelhouse/room"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// ownSteer checks that a receipt is for a steer sent to this bridge.
func (l *Link) ownSteer(ctx context.Context, b *chat.Bridge, steerID string) error {
	r, err := l.rooms.Receipt(ctx, steerID)
	if wh.ErrorCode(err) == wh.ENotFound && l.readAgain(ctx) {
		r, err = l.rooms.Receipt(ctx, steerID)
	}
	if wh.ErrorCode(err) == wh.ENotFound {
		return wh.Errorf(wh.ENotFound, "the hub never sent steer %s", steerID)
	}
	if err != nil {
		return err
	}
	a, err := l.rooms.AgentByHandle(ctx, r.Agent)
	if err != nil || a.Bridge != b.ID {
		return wh.Errorf(wh.EForbidden, "steer %s is not this bridge's", steerID)
	}
	return nil
}

// readAgain waits briefly until this node has applied all the stream holds
// now, and reports whether that brought anything new (so a read that found
// nothing is worth doing again): a bridge's messages may be handled by
// another hub node than the one that recorded what they refer to, so "the
// hub never heard of it" is judged only on a current projection.
func (l *Link) readAgain(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	advanced, err := l.rooms.Log.CatchUp(ctx)
	return err == nil && advanced
}

// ownAgent returns the agent a message is about, if this bridge runs it.
func (l *Link) ownAgent(ctx context.Context, b *chat.Bridge, name string) (*chat.Agent, error) {
	a, err := l.rooms.AgentByHandle(ctx, b.Owner+"/"+name)
	if err != nil || a.Bridge != b.ID {
		return nil, wh.Errorf(wh.EForbidden, "this bridge does not run @%s/%s", b.Owner, name)
	}
	return a, nil
}

// announce registers a bridge's agents. An agent name belongs to one
// bridge of its owner: another bridge announcing it is refused (both sides
// are told), and the agent stays with its bridge. Agents a bridge no longer
// announces are released, so another of the owner's bridges may take them.
func (l *Link) announce(ctx context.Context, b *chat.Bridge, a wire.Announce) wire.AnnounceAck {
	// The bridge holds its agents' policies (the owner's signed decisions
	// widen them, nothing else does): the ack names none.
	ack := wire.AnnounceAck{Ack: wire.Ack{OK: true}, Owner: b.Owner}
	announced := map[string]bool{}
	for _, info := range a.Agents {
		announced[info.Name] = true
		if err := room.ValidatePolicy(&info.Policy); err != nil {
			return wire.AnnounceAck{Ack: ackErr(err)}
		}
		handle := b.Owner + "/" + info.Name
		cur, err := l.rooms.AgentByHandle(ctx, handle)
		if err == nil && cur.Bridge != "" && cur.Bridge != b.ID {
			if other, err := l.rooms.BridgeByID(ctx, cur.Bridge); err == nil && !other.Revoked {
				why := fmt.Sprintf("@%s is already run by your bridge %q (%s); stop it there, remove it from that bridge's config, or revoke that bridge first", handle, other.Name, other.ID)
				l.log.Warn("refused a second bridge for an agent", "agent", handle, "bridge", b.ID, "runs_on", other.ID)
				ack.Refused = map[string]string{}
				ack.Refused[info.Name] = why
				l.noteOwner(ctx, b.Owner, handle, "A second bridge ("+b.Name+", "+b.ID+") tried to run @"+handle+"; it was refused and the agent stays on "+other.Name+" ("+other.ID+").")
				continue
			}
		}
		changed := err != nil || cur.Bridge != b.ID || cur.Harness != info.Harness || cur.CanSteer != info.CanSteer
		if err == nil && !changed {
			p1, _ := json.Marshal(cur.EffectivePolicy())
			p2, _ := json.Marshal(info.Policy)
			changed = string(p1) != string(p2)
		}
		if changed {
			if err := l.rooms.RegisterAgent(ctx, b.ID, info, info.Harness); err != nil {
				return wire.AnnounceAck{Ack: ackErr(err)}
			}
		}
		cur, err = l.rooms.AgentByHandle(ctx, handle)
		if err != nil {
			return wire.AnnounceAck{Ack: ackErr(err)}
		}
		// A turn the hub saw running that the (restarted) bridge does not
		// have any more ended without a word: it failed. Unless the bridge
		// says its end is on its way (in its outbox): that end stands.
		if cur.TurnID != "" && cur.TurnID != info.TurnID && !slices.Contains(info.Ending, cur.TurnID) {
			l.endLostTurn(ctx, cur, "the agent's bridge restarted; the turn did not survive it")
		}
		// What the hub ended while the bridge was away, it ends too.
		if ended, aps, sts, err := l.rooms.Reconcile(ctx, cur.ID, info.TurnID, info.Pending, info.Queued); err == nil && (ended || len(aps) > 0 || len(sts) > 0) {
			c := wire.Control{Agent: info.Name, Action: wire.ControlResync, Approvals: aps, Steers: sts}
			if ended {
				c.TurnID = info.TurnID
			}
			ack.Resync = append(ack.Resync, c)
		}
	}
	// Agents this bridge ran before and no longer announces are released.
	if mine, err := l.rooms.AgentsOfBridge(ctx, b.ID); err == nil {
		for _, x := range mine {
			if !announced[x.Name] {
				if err := l.rooms.ReleaseAgent(ctx, b.ID, x.Handle); err != nil {
					l.log.Warn("releasing an agent failed", "agent", x.Handle, "err", err)
				}
			}
		}
	}
	l.mu.Lock()
	p := l.presence[b.ID]
	if p == nil {
		p = &presence{agents: map[string]wire.AgentInfo{}}
		l.presence[b.ID] = p
	}
	p.lastSeen = time.Now()
	p.callTimeout = a.CallTimeout.D()
	for _, info := range a.Agents {
		p.agents[info.Name] = info
	}
	l.mu.Unlock()
	l.syncOwner(ctx, b, a)
	ack.HubTime = l.rooms.Now().UTC()
	return ack
}

// endLostTurn records a turn the bridge lost as failed (once across nodes).
func (l *Link) endLostTurn(ctx context.Context, a *chat.Agent, why string) {
	te := wire.TurnEvent{Agent: a.Name, TurnID: a.TurnID, Kind: wire.TurnEnded, Status: wire.TurnFailed, Room: a.TurnRoom}
	if err := l.rooms.RecordTurnOnce(ctx, "lost:"+a.Handle+":"+a.TurnID, a.Handle, te, "", why); err != nil && wh.ErrorCode(err) != wh.EConflict {
		l.log.Warn("recording a lost turn failed", "agent", a.Handle, "turn", a.TurnID, "err", err)
	}
}

// turn records a turn's start or end, or posts its output; it refuses
// events about an agent this bridge does not run. An error it cannot
// record the event for (unavailable, storage full, internal) is not a
// refusal: the bridge sends the event again (its outbox), and an event
// with an id is recorded once however often it arrives.
func (l *Link) turn(ctx context.Context, b *chat.Bridge, te wire.TurnEvent) error {
	handle := b.Owner + "/" + te.Agent
	a, err := l.ownAgent(ctx, b, te.Agent)
	if err != nil {
		return err
	}
	if te.EventID != "" {
		te.EventID = b.ID + "/" + te.EventID // the bridge's ids are its own
		done, err := l.rooms.BridgeEventRecorded(ctx, te.EventID)
		if err != nil {
			return wh.Wrap(err, "read the bridge's recorded events")
		}
		if done {
			return nil // a retry of what is recorded: acknowledge it again
		}
	}
	if te.Kind == wire.TurnEnded && a.TurnID != te.TurnID && !l.sawTurn(b.ID, te.Agent, te.TurnID) {
		known, err := l.rooms.TurnKnown(ctx, a.ID, te.TurnID)
		if err == nil && !known && l.readAgain(ctx) {
			known, err = l.rooms.TurnKnown(ctx, a.ID, te.TurnID)
		}
		if err != nil {
			return wh.Wrap(err, "read the agent's turns") // not a refusal: the read failed
		}
		if !known {
			return wh.Errorf(wh.EConflict, "turn %s of @%s never started", te.TurnID, handle)
		}
	}
	// The turn lives in the thread under the message that started it: its
	// replies, tool activity and approval cards go there.
	te.Thread = l.turnThread(ctx, a, te.Room, te.Thread, te.TurnID)
	if te.Kind == wire.TurnTool { // into the audited timeline too: what ran, and what was refused
		tl := te
		if tl.EventID != "" {
			tl.EventID += "/timeline" // one bridge event, two records
		}
		if err := l.rooms.RecordTurn(ctx, handle, tl, "", ""); err != nil && wh.ErrorCode(err) != wh.EConflict {
			return err
		}
	}
	switch te.Kind {
	case wire.TurnStarted, wire.TurnEnded:
		reason := ""
		if te.Kind == wire.TurnEnded && te.Status == wire.TurnFailed {
			reason = te.Text
			if len(reason) > 500 {
				reason = strings.ToValidUTF8(reason[:500], "") + "…"
			}
		}
		if err := l.rooms.RecordTurn(ctx, handle, te, te.By, reason); err != nil && wh.ErrorCode(err) != wh.EConflict {
			return err
		}
	case wire.TurnMessage, wire.TurnTool, wire.TurnProgress:
		roomName := te.Room
		if roomName == "" {
			return nil
		}
		// Checked when the output is appended, however late a retry
		// brings it: an agent removed from the room says nothing there.
		in, err := l.rooms.AgentInRoom(ctx, a.ID, roomName)
		if err != nil {
			return wh.Wrap(err, "read the agent's rooms")
		}
		if !in {
			return nil
		}
		out := room.AgentOutput{AuthorKind: chat.AuthorAgent, Author: handle, Room: roomName, Text: te.Text, TurnID: te.TurnID, Thread: te.Thread, BridgeEvent: te.EventID}
		if te.Kind == wire.TurnMessage {
			// A streamed message (the same item, partial until its last
			// version) is one message whose text is updated in place.
			out.Item, out.Partial = te.ItemID, te.Partial
		} else {
			out.Kind = te.Kind
		}
		if err := l.rooms.PaceBridge(ctx, b.ID); err != nil { // the bridge's own budget
			return err
		}
		if _, err := l.rooms.PostAgentOutput(ctx, out); err != nil && wh.ErrorCode(err) != wh.EConflict {
			return err
		}
	}
	return nil
}

// turnThread is the thread a turn's output goes to: the one the bridge
// names when it is a thread of the room holding a mention of this agent,
// else the one the hub recorded for the turn, else none (the channel). In
// a person's DM with the agent there are no threads: it is one conversation.
func (l *Link) turnThread(ctx context.Context, a *chat.Agent, roomName string, claimed int64, turn string) int64 {
	if _, _, _, dm := chat.AgentDMParts(roomName); dm || roomName == "" {
		return 0
	}
	if claimed > 0 {
		t, err := l.rooms.ThreadOfAgent(ctx, a.ID, roomName, claimed)
		if err == nil && t == 0 && l.readAgain(ctx) {
			// The router hands a steer over before the projection's commit
			// is visible: the agent's first words can come before it.
			t, err = l.rooms.ThreadOfAgent(ctx, a.ID, roomName, claimed)
		}
		if err == nil && t > 0 {
			return t
		}
		l.log.Warn("a bridge named a thread its agent was not mentioned in", "agent", a.Handle, "thread", claimed)
	}
	t, _ := l.rooms.TurnThread(ctx, a.ID, turn)
	return t
}

// approval records a bridge's approval request (already checked at the
// boundary, its hash recomputed from its payload).
func (l *Link) approval(ctx context.Context, b *chat.Bridge, a *chat.Agent, req wire.ApprovalRequest) wire.Ack {
	if req.Room != "" {
		// The card goes to the room's members: only a room the agent is in.
		if in, _ := l.rooms.AgentInRoom(ctx, a.ID, req.Room); !in {
			req.Room = ""
		}
	}
	req.Thread = l.turnThread(ctx, a, req.Room, req.Thread, req.TurnID)
	if err := l.rooms.RecordApproval(ctx, b.Owner+"/"+req.Agent, req); err != nil {
		return ackErr(err)
	}
	l.tellOwner(ctx, b, req)
	return wire.Ack{OK: true}
}

// approvalUpdate records an approval decided or ended on the bridge; it
// refuses an update about an approval that is not this bridge's, or a
// decision by anyone but the owner.
func (l *Link) approvalUpdate(ctx context.Context, b *chat.Bridge, up wire.ApprovalUpdate) error {
	p, err := l.rooms.ApprovalByID(ctx, up.ApprovalID)
	if wh.ErrorCode(err) == wh.ENotFound && l.readAgain(ctx) {
		p, err = l.rooms.ApprovalByID(ctx, up.ApprovalID)
	}
	if wh.ErrorCode(err) == wh.ENotFound {
		return wh.Errorf(wh.ENotFound, "the hub has no approval %s", up.ApprovalID)
	}
	if err != nil {
		l.log.Warn("reading an approval failed", "approval", up.ApprovalID, "err", err)
		return nil
	}
	a, err := l.rooms.AgentByHandle(ctx, p.Agent)
	if err != nil || a.Bridge != b.ID {
		return wh.Errorf(wh.EForbidden, "approval %s is not this bridge's", up.ApprovalID)
	}
	if up.By != "" && up.By != a.Owner && (up.Status == wire.ApprovalApproved || up.Status == wire.ApprovalDenied) {
		return wh.Errorf(wh.EForbidden, "only @%s decides approval %s, not @%s", a.Owner, up.ApprovalID, up.By)
	}
	if err := l.rooms.RecordDecision(ctx, up.ApprovalID, up.Status, up.By, up.PayloadHash, up.Reason); err != nil && wh.ErrorCode(err) != wh.EConflict {
		l.log.Warn("recording an approval update failed", "approval", up.ApprovalID, "err", err)
	}
	return nil
}

// invitations lets the owner answer invitations from the bridge machine:
// the bridge's key proves it is the owner's.
func (l *Link) invitations(ctx context.Context, b *chat.Bridge, req wire.InvitationsRequest) wire.InvitationsReply {
	owner, err := l.rooms.UserByName(ctx, b.Owner)
	if err != nil {
		return wire.InvitationsReply{Ack: ackErr(err)}
	}
	if req.Decide != "" {
		if _, err := l.rooms.DecideInvitation(ctx, owner, req.ID, req.Decide == "accept", ""); err != nil {
			return wire.InvitationsReply{Ack: ackErr(err)}
		}
	}
	invs, err := l.rooms.Invitations(ctx, owner)
	if err != nil {
		return wire.InvitationsReply{Ack: ackErr(err)}
	}
	out := wire.InvitationsReply{Ack: wire.Ack{OK: true}}
	for _, in := range invs {
		if in.Owner == b.Owner {
			out.Invitations = append(out.Invitations, wire.Invitation{ID: in.ID, Room: in.Room, Agent: in.Agent, RequestedBy: in.RequestedBy, Status: in.Status})
		}
	}
	return out
}

// tellOwner puts a note about an approval request into the owner's DM with
// the agent (created on first use), so the owner finds it even when the
// turn runs in a room they are not watching.
func (l *Link) tellOwner(ctx context.Context, b *chat.Bridge, req wire.ApprovalRequest) {
	where := "a DM"
	if req.Room != "" {
		where = "#" + req.Room
	}
	taint := ""
	if req.Tainted {
		taint = " It is tainted: steered by @" + strings.Join(req.SteeredBy, ", @") + "."
	}
	text := fmt.Sprintf("Approval needed in %s: %s (%s, hash %s…).%s Decide on the card in %s, or on your bridge machine: wheelhouse approve %s --hash %s",
		where, oneLine(req.Summary, 200), req.Tool, prefix(req.PayloadHash, 12), taint, where, req.ID, req.PayloadHash)
	l.noteOwnerIn(ctx, b.Owner, b.Owner+"/"+req.Agent, req.Room, text, req.TurnID, "approval")
}

// noteOwner posts a system note into the owner's DM with an agent.
func (l *Link) noteOwner(ctx context.Context, owner, handle, text string) {
	l.noteOwnerIn(ctx, owner, handle, "", text, "", "")
}

func (l *Link) noteOwnerIn(ctx context.Context, ownerName, handle, skipRoom, text, turnID, kind string) {
	owner, err := l.rooms.UserByName(ctx, ownerName)
	if err != nil {
		return
	}
	dm, err := l.rooms.OpenAgentDM(ctx, owner, handle)
	if err != nil || dm.Name == skipRoom {
		return
	}
	if _, err := l.rooms.PostAs(ctx, chat.AuthorSystem, "wheelhouse", dm.Name, text, turnID, kind); err != nil {
		l.log.Warn("telling the owner failed", "agent", handle, "err", err)
	}
}

// prefix returns at most n bytes of s.
func prefix(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// oneLine flattens and shortens model-written text for a note.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return strings.ToValidUTF8(s, "")
}
