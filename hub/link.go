package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/room"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// Timeouts on the hub↔bridge path. A steer always ends in a receipt: a
// bridge that does not answer within Config.SteerTimeout yields "rejected: timeout".
const (
	DefaultSteerTimeout = 5 * time.Second
	ControlTimeout      = 5 * time.Second
	deliverWait         = 1500 * time.Millisecond
	// DefaultSteerBurst and DefaultSteerRefill bound how fast one sender
	// may mention one agent: a burst, then one per refill interval.
	DefaultSteerBurst  = 10
	DefaultSteerRefill = 2 * time.Second
)

// Link connects the hub to bridges over NATS: routing steers, receiving
// announcements, heartbeats, receipts, turn output and approval requests.
type Link struct {
	log   *slog.Logger
	h     *Hub
	rooms *room.Service
	nc    *nats.Conn

	mu       sync.Mutex
	presence map[string]*presence // by bridge id
	buckets  map[string]*bucket   // rate limits by sender→agent
	subs     []*nats.Subscription
	stopCh   chan struct{}
	stopped  bool
	wg       sync.WaitGroup // handlers and detached work in flight
}

// enter admits one unit of work unless the link is stopping; the caller
// must call l.wg.Done when it finishes.
func (l *Link) enter() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		return false
	}
	l.wg.Add(1)
	return true
}

type presence struct {
	lastSeen time.Time
	hbAt     time.Time // the bridge's own heartbeat time (dedupe key)
	agents   map[string]wire.AgentInfo
}

type bucket struct {
	tokens float64
	at     time.Time
}

func newLink(log *slog.Logger) *Link {
	return &Link{log: log.With("component", "link"), presence: map[string]*presence{}, buckets: map[string]*bucket{}, stopCh: make(chan struct{})}
}

func (l *Link) start(ctx context.Context, h *Hub) error {
	l.h, l.rooms, l.nc = h, h.rooms, h.nc
	// One node handles each bridge message (queue group); every node
	// tracks presence from heartbeats.
	qs, err := l.nc.QueueSubscribe(wire.HubWildcard, "wheelhouse-hubs", l.handle)
	if err != nil {
		return wh.Wrap(err, "subscribe to bridges")
	}
	hs, err := l.nc.Subscribe("wh.hub.*."+wire.KindHeartbeat, l.heartbeat)
	if err != nil {
		return wh.Wrap(err, "subscribe to heartbeats")
	}
	l.subs = append(l.subs, qs, hs)
	if l.enter() {
		go l.watchPresence()
	}
	return nil
}

// stop refuses new work, unsubscribes, and waits for handlers in flight,
// so nothing writes after the hub closes its log.
func (l *Link) stop() {
	l.mu.Lock()
	if l.stopped {
		l.mu.Unlock()
		return
	}
	l.stopped = true
	close(l.stopCh)
	l.mu.Unlock()
	for _, s := range l.subs {
		s.Unsubscribe()
	}
	l.wg.Wait()
}

// bridgeOf parses wh.hub.<bridgeID>.<kind>.
func bridgeOf(subject string) (id, kind string, ok bool) {
	p := strings.Split(subject, ".")
	if len(p) != 4 || p[0] != "wh" || p[1] != "hub" {
		return "", "", false
	}
	return p[2], p[3], true
}

func (l *Link) reply(m *nats.Msg, v any) {
	if m.Reply == "" {
		return
	}
	b, _ := json.Marshal(v)
	m.Respond(b)
}

func ackErr(err error) wire.Ack {
	return wire.Ack{OK: false, Code: wh.ErrorCode(err), Message: wh.ErrorMessage(err)}
}

func (l *Link) handle(m *nats.Msg) {
	id, kind, ok := bridgeOf(m.Subject)
	if !ok || kind == wire.KindHeartbeat || !l.enter() {
		return
	}
	defer l.wg.Done()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := l.rooms.BridgeByID(ctx, id)
	if err != nil || b.Revoked {
		l.log.Warn("message from an unknown or revoked bridge", "bridge", id, "kind", kind)
		l.reply(m, wire.Ack{Code: wh.EForbidden, Message: "this bridge is not paired"})
		return
	}
	switch kind {
	case wire.KindAnnounce:
		var a wire.Announce
		if err := json.Unmarshal(m.Data, &a); err != nil {
			l.reply(m, wire.Ack{Code: wh.EInvalid, Message: "undecodable announce"})
			return
		}
		l.reply(m, l.announce(ctx, b, a))
	case wire.KindReceipt:
		var rc wire.Receipt
		if json.Unmarshal(m.Data, &rc) == nil {
			if err := l.ownSteer(ctx, b, rc.SteerID); err == nil {
				if err := l.rooms.UpdateSteer(ctx, rc); err != nil && wh.ErrorCode(err) != wh.EConflict {
					l.log.Warn("recording a receipt failed", "steer", rc.SteerID, "err", err)
				}
			}
		}
	case wire.KindTurn:
		var te wire.TurnEvent
		if json.Unmarshal(m.Data, &te) == nil {
			l.turn(ctx, b, te)
		}
	case wire.KindApproval:
		var req wire.ApprovalRequest
		if err := json.Unmarshal(m.Data, &req); err != nil {
			l.reply(m, wire.Ack{Code: wh.EInvalid, Message: "undecodable approval request"})
			return
		}
		a, err := l.rooms.AgentByHandle(ctx, b.Owner+"/"+req.Agent)
		if err != nil || a.Bridge != b.ID {
			l.log.Warn("an approval request for an agent this bridge does not run", "bridge", b.ID, "agent", req.Agent)
			l.reply(m, wire.Ack{Code: wh.EForbidden, Message: "this bridge does not run @" + b.Owner + "/" + req.Agent})
			return
		}
		if req.Room != "" {
			// The card goes to the room's members: only a room the agent is in.
			if in, _ := l.rooms.AgentInRoom(ctx, a.ID, req.Room); !in {
				req.Room = ""
			}
		}
		if err := l.rooms.RecordApproval(ctx, b.Owner+"/"+req.Agent, req); err != nil {
			l.reply(m, ackErr(err))
			return
		}
		l.reply(m, wire.Ack{OK: true})
		l.tellOwner(ctx, b, req)
	case wire.KindInvitations:
		var req wire.InvitationsRequest
		json.Unmarshal(m.Data, &req)
		l.reply(m, l.invitations(ctx, b, req))
	case wire.KindApprovalUpdate:
		var up wire.ApprovalUpdate
		if json.Unmarshal(m.Data, &up) == nil {
			l.approvalUpdate(ctx, b, up)
		}
	}
}

// ownSteer checks that a receipt is for a steer sent to this bridge.
func (l *Link) ownSteer(ctx context.Context, b *room.Bridge, steerID string) error {
	r, err := l.rooms.Receipt(ctx, steerID)
	if err != nil {
		return err
	}
	a, err := l.rooms.AgentByHandle(ctx, r.Agent)
	if err != nil || a.Bridge != b.ID {
		l.log.Warn("a bridge reported a receipt for another bridge's steer", "bridge", b.ID, "steer", steerID)
		return wh.Errorf(wh.EForbidden, "not this bridge's steer")
	}
	return nil
}

func (l *Link) announce(ctx context.Context, b *room.Bridge, a wire.Announce) wire.AnnounceAck {
	if a.Version != wire.Version {
		return wire.AnnounceAck{Ack: wire.Ack{Code: wh.EInvalid, Message: fmt.Sprintf("this hub speaks protocol %d, the bridge %d: upgrade the older one", wire.Version, a.Version)}}
	}
	ack := wire.AnnounceAck{Ack: wire.Ack{OK: true}, Owner: b.Owner, Policies: map[string]wire.Policy{}}
	for _, info := range a.Agents {
		if !room.ValidUserName(info.Name) {
			return wire.AnnounceAck{Ack: wire.Ack{Code: wh.EInvalid, Message: fmt.Sprintf("agent name %q is not valid: use lowercase letters, digits, '.', '_' or '-'", info.Name)}}
		}
		if err := room.ValidatePolicy(&info.Policy); err != nil {
			return wire.AnnounceAck{Ack: ackErr(err)}
		}
		cur, err := l.rooms.AgentByHandle(ctx, b.Owner+"/"+info.Name)
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
		cur, err = l.rooms.AgentByHandle(ctx, b.Owner+"/"+info.Name)
		if err != nil {
			return wire.AnnounceAck{Ack: ackErr(err)}
		}
		ack.Policies[info.Name] = cur.EffectivePolicy()
	}
	l.mu.Lock()
	p := l.presence[b.ID]
	if p == nil {
		p = &presence{agents: map[string]wire.AgentInfo{}}
		l.presence[b.ID] = p
	}
	p.lastSeen = time.Now()
	l.mu.Unlock()
	return ack
}

// heartbeat records presence (every node) and status changes (deduplicated
// across nodes by the heartbeat's own time).
func (l *Link) heartbeat(m *nats.Msg) {
	id, _, ok := bridgeOf(m.Subject)
	if !ok || !l.enter() {
		return
	}
	defer l.wg.Done()
	var hb wire.Heartbeat
	if json.Unmarshal(m.Data, &hb) != nil {
		return
	}
	l.mu.Lock()
	p := l.presence[id]
	if p == nil {
		p = &presence{agents: map[string]wire.AgentInfo{}}
		l.presence[id] = p
	}
	p.lastSeen = time.Now()
	p.hbAt = hb.At
	for _, a := range hb.Agents {
		p.agents[a.Name] = a
	}
	l.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	b, err := l.rooms.BridgeByID(ctx, id)
	if err != nil || b.Revoked {
		return
	}
	for _, a := range hb.Agents {
		handle := b.Owner + "/" + a.Name
		cur, err := l.rooms.AgentByHandle(ctx, handle)
		if err != nil || cur.Bridge != id {
			continue
		}
		if cur.Status == a.Status && cur.TurnID == a.TurnID && cur.TurnRoom == a.TurnRoom && strings.Join(cur.SteeredBy, ",") == strings.Join(a.SteeredBy, ",") {
			continue
		}
		key := fmt.Sprintf("status:%s:%d", handle, hb.At.UnixNano())
		if err := l.rooms.SetAgentStatusOnce(ctx, key, handle, a.Status, a.TurnID, a.TurnRoom, a.SteeredBy); err != nil {
			l.log.Warn("recording agent status failed", "agent", handle, "err", err)
		}
	}
}

// watchPresence turns the agents of a silent bridge offline.
func (l *Link) watchPresence() {
	defer l.wg.Done()
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-l.stopCh:
			return
		case <-t.C:
		}
		l.mu.Lock()
		var gone []string
		var keys []time.Time
		for id, p := range l.presence {
			if time.Since(p.lastSeen) > wire.OfflineAfter {
				gone = append(gone, id)
				keys = append(keys, p.hbAt)
				delete(l.presence, id)
			}
		}
		l.mu.Unlock()
		for i, id := range gone {
			l.markOffline(id, keys[i])
		}
		l.expireUnanswered()
	}
}

// expireUnanswered ends steers that never got an answer — the node that sent
// them stopped before the bridge replied — so none stays pending forever.
func (l *Link) expireUnanswered() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	stale, err := l.rooms.StalePendingSteers(ctx, l.rooms.Now().Add(-2*l.h.cfg.SteerTimeout))
	if err != nil {
		return
	}
	for _, r := range stale {
		err := l.rooms.UpdateSteer(ctx, wire.Receipt{SteerID: r.SteerID, Status: wire.StatusRejected, Reason: wire.ReasonTimeout,
			Detail: "no answer from the agent's bridge: the hub was restarted or lost it mid-delivery; send again"})
		if err != nil && wh.ErrorCode(err) != wh.EConflict {
			l.log.Warn("expiring an unanswered steer failed", "steer", r.SteerID, "err", err)
		}
	}
}

func (l *Link) markOffline(bridgeID string, lastHB time.Time) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	agents, err := l.rooms.AgentsOfBridge(ctx, bridgeID)
	if err != nil {
		return
	}
	for _, a := range agents {
		if a.Status == wire.AgentOffline {
			continue
		}
		key := fmt.Sprintf("offline:%s:%d", a.Handle, lastHB.UnixNano())
		if err := l.rooms.SetAgentStatusOnce(ctx, key, a.Handle, wire.AgentOffline, "", "", nil); err != nil {
			l.log.Warn("marking agent offline failed", "agent", a.Handle, "err", err)
		}
		// Steers still waiting on this bridge end now, with a reason.
		pending, _ := l.rooms.PendingSteers(ctx, a.Handle)
		for _, p := range pending {
			l.rooms.UpdateSteer(ctx, wire.Receipt{SteerID: p.SteerID, Status: wire.StatusRejected, Reason: wire.ReasonAgentOffline,
				Detail: "the agent's bridge went offline before delivering it"})
		}
	}
}

// online reports whether a bridge has been heard from recently.
func (l *Link) online(bridgeID string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.presence[bridgeID]
	return p != nil && time.Since(p.lastSeen) <= wire.OfflineAfter
}

func (l *Link) turn(ctx context.Context, b *room.Bridge, te wire.TurnEvent) {
	handle := b.Owner + "/" + te.Agent
	a, err := l.rooms.AgentByHandle(ctx, handle)
	if err != nil || a.Bridge != b.ID {
		return
	}
	switch te.Kind {
	case wire.TurnStarted, wire.TurnEnded:
		if err := l.rooms.RecordTurn(ctx, handle, te, ""); err != nil {
			l.log.Warn("recording a turn failed", "agent", handle, "err", err)
		}
	case wire.TurnMessage, wire.TurnTool, wire.TurnProgress:
		roomName := te.Room
		if roomName == "" {
			return
		}
		if in, _ := l.rooms.AgentInRoom(ctx, a.ID, roomName); !in {
			return // removed from the room meanwhile: say nothing there
		}
		kind := ""
		if te.Kind != wire.TurnMessage {
			kind = te.Kind
		}
		if _, err := l.rooms.PostAs(ctx, room.AuthorAgent, handle, roomName, te.Text, te.TurnID, kind); err != nil {
			l.log.Warn("posting agent output failed", "agent", handle, "err", err)
		}
	}
}

func (l *Link) approvalUpdate(ctx context.Context, b *room.Bridge, up wire.ApprovalUpdate) {
	p, err := l.rooms.ApprovalByID(ctx, up.ApprovalID)
	if err != nil {
		return
	}
	a, err := l.rooms.AgentByHandle(ctx, p.Agent)
	if err != nil || a.Bridge != b.ID {
		l.log.Warn("a bridge reported on another bridge's approval", "bridge", b.ID, "approval", up.ApprovalID)
		return
	}
	if up.By != "" && up.By != a.Owner && (up.Status == wire.ApprovalApproved || up.Status == wire.ApprovalDenied) {
		l.log.Warn("a bridge reported a decision by someone other than the owner", "approval", up.ApprovalID, "by", up.By)
		return
	}
	if err := l.rooms.RecordDecision(ctx, up.ApprovalID, up.Status, up.By, up.PayloadHash, up.Reason); err != nil && wh.ErrorCode(err) != wh.EConflict {
		l.log.Warn("recording an approval update failed", "approval", up.ApprovalID, "err", err)
	}
}

// request sends v to a bridge and decodes its answer into out.
func (l *Link) request(ctx context.Context, bridgeID, kind string, v, out any, timeout time.Duration) error {
	b, err := json.Marshal(v)
	if err != nil {
		return wh.Wrap(err, "encode %s", kind)
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	m, err := l.nc.RequestWithContext(rctx, wire.ToBridge(bridgeID, kind), b)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return &wh.Error{Code: wh.EUnavailable, Message: "the agent's bridge is offline", Reason: wire.ReasonAgentOffline}
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout):
		return &wh.Error{Code: wh.EUnavailable, Message: fmt.Sprintf("the agent's bridge did not answer within %s", timeout), Reason: wire.ReasonTimeout}
	case err != nil:
		return &wh.Error{Code: wh.EUnavailable, Message: "could not reach the agent's bridge", Reason: wire.ReasonAgentOffline, Err: err}
	}
	if err := json.Unmarshal(m.Data, out); err != nil {
		return wh.Wrap(err, "decode the bridge's answer")
	}
	return nil
}

// allow takes a token from the sender→agent bucket.
func (l *Link) allow(sender, handle string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := sender + "→" + handle
	b := l.buckets[k]
	now := time.Now()
	if b == nil {
		b = &bucket{tokens: float64(l.h.cfg.SteerBurst), at: now}
		l.buckets[k] = b
	}
	burst, refill := float64(l.h.cfg.SteerBurst), l.h.cfg.SteerRefill
	b.tokens = min(burst, b.tokens+now.Sub(b.at).Seconds()/refill.Seconds())
	b.at = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// invitations lets the owner answer invitations from the bridge machine:
// the bridge's key proves it is the owner's.
func (l *Link) invitations(ctx context.Context, b *room.Bridge, req wire.InvitationsRequest) wire.InvitationsReply {
	owner, err := l.rooms.UserByName(ctx, b.Owner)
	if err != nil {
		return wire.InvitationsReply{Ack: ackErr(err)}
	}
	if req.Decide != "" {
		if req.Decide != "accept" && req.Decide != "decline" {
			return wire.InvitationsReply{Ack: wire.Ack{Code: wh.EInvalid, Message: "decide must be accept or decline"}}
		}
		if _, err := l.rooms.DecideInvitation(ctx, owner, req.ID, req.Decide == "accept"); err != nil {
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
func (l *Link) tellOwner(ctx context.Context, b *room.Bridge, req wire.ApprovalRequest) {
	owner, err := l.rooms.UserByName(ctx, b.Owner)
	if err != nil {
		return
	}
	handle := b.Owner + "/" + req.Agent
	dm, err := l.rooms.OpenAgentDM(ctx, owner, handle)
	if err != nil || dm.Name == req.Room {
		return
	}
	where := "a DM"
	if req.Room != "" {
		where = "#" + req.Room
	}
	taint := ""
	if req.Tainted {
		taint = " It is tainted: steered by @" + strings.Join(req.SteeredBy, ", @") + "."
	}
	text := fmt.Sprintf("Approval needed in %s: %s (%s, hash %s…).%s Decide on the card in %s, or on your bridge: wheelhouse approve %s --hash %s",
		where, req.Summary, req.Tool, req.PayloadHash[:12], taint, where, req.ID, req.PayloadHash)
	if _, err := l.rooms.PostAs(ctx, room.AuthorSystem, "wheelhouse", dm.Name, text, req.TurnID, "approval"); err != nil {
		l.log.Warn("telling the owner about an approval failed", "approval", req.ID, "err", err)
	}
}
