package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/chat"
	"github.com/wheelhouse-dev/wheelhouse/eventlog"
	"github.com/wheelhouse-dev/wheelhouse/store"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// The router is a consumer of the log: appending a message is the
// commitment, and routing its mentions follows from it — whether or not
// the poster is still there, on whichever hub node, after a crash too.
// All hub nodes share one durable JetStream consumer, so each event is
// handled by one node; an event a node took and did not finish (it died)
// is handed out again after routerAckWait, and a steer sent twice is
// answered once by the bridge (it remembers steer ids).
const (
	routerName     = "wheelhouse-router"
	routerAckWait  = 10 * time.Second
	routerMaxTries = 20
	agentQueue     = 256
)

// routedKinds are the events the router acts on.
var routedKinds = []string{chat.EvMessagePosted, chat.EvBridgeRevoked, chat.EvSteerForwarded}

// startRouter creates (once) and consumes the shared durable consumer.
func (l *Link) startRouter(ctx context.Context) error {
	js := l.h.js
	var subjects []string
	for _, k := range routedKinds {
		subjects = append(subjects, eventlog.SubjectPrefix+k)
	}
	cons, err := js.Consumer(ctx, eventlog.StreamName, routerName)
	if err == nil {
		// A consumer an older hub created may lack kinds routed since.
		if info := cons.CachedInfo(); info != nil && !sameSet(info.Config.FilterSubjects, subjects) {
			cfg := info.Config
			cfg.FilterSubjects, cfg.FilterSubject = subjects, ""
			if updated, uerr := js.UpdateConsumer(ctx, eventlog.StreamName, cfg); uerr == nil {
				cons = updated
			} else {
				l.log.Warn("could not update the router consumer's subjects", "err", uerr)
			}
		}
	}
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		st, err := js.Stream(ctx, eventlog.StreamName)
		if err != nil {
			return wh.Wrap(err, "read the event stream")
		}
		info, err := st.Info(ctx)
		if err != nil {
			return wh.Wrap(err, "read the event stream")
		}
		// New from here: mentions logged before there was a router were
		// routed when they were posted.
		cons, err = js.CreateConsumer(ctx, eventlog.StreamName, jetstream.ConsumerConfig{
			Durable:        routerName,
			Description:    "hub nodes route mentions and act on revocations",
			FilterSubjects: subjects,
			DeliverPolicy:  jetstream.DeliverByStartSequencePolicy,
			OptStartSeq:    info.State.LastSeq + 1,
			AckPolicy:      jetstream.AckExplicitPolicy,
			AckWait:        routerAckWait,
			MaxDeliver:     routerMaxTries,
			MaxAckPending:  1000,
		})
		if err != nil && !errors.Is(err, jetstream.ErrConsumerExists) {
			return wh.Wrap(err, "create the router consumer")
		}
		if err != nil {
			cons, err = js.Consumer(ctx, eventlog.StreamName, routerName)
		}
		if err != nil {
			return wh.Wrap(err, "open the router consumer")
		}
	} else if err != nil {
		return wh.Wrap(err, "open the router consumer")
	}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		if !routes(m.Data()) {
			m.Ack() // a message without an agent mention: nothing to deliver
			return
		}
		if !l.enter() {
			return // not acked: another node (or this one, restarted) takes it
		}
		go func() {
			defer l.wg.Done()
			l.safely("router", func() { l.route(m) })
		}()
	})
	if err != nil {
		return wh.Wrap(err, "consume the router's events")
	}
	l.router = cc
	return nil
}

// routes reports whether an event may need the router: a revocation, or a
// person's message that mentions an agent. Most messages mention none, and
// are acknowledged without a goroutine or a read.
func routes(data []byte) bool {
	var ev struct {
		Type string          `json:"type"`
		Data json.RawMessage `json:"data"`
	}
	if json.Unmarshal(data, &ev) != nil || ev.Type != chat.EvMessagePosted {
		return true // route decides (and terminates what it cannot read)
	}
	var d struct {
		AuthorKind string `json:"authorKind"`
		Route      bool   `json:"route"`
		Mentions   []struct {
			Kind string `json:"kind"`
		} `json:"mentions"`
	}
	if json.Unmarshal(ev.Data, &d) != nil {
		return true
	}
	if !d.Route || d.AuthorKind != chat.AuthorUser {
		return false
	}
	for _, mn := range d.Mentions {
		if mn.Kind == chat.MentionAgent {
			return true
		}
	}
	return false
}

// route handles one routed event and acknowledges it when it is done.
func (l *Link) route(m jetstream.Msg) {
	md, err := m.Metadata()
	if err != nil {
		m.Term()
		return
	}
	var ev chat.Event
	if err := json.Unmarshal(m.Data(), &ev); err != nil || l.rooms.Log.Authentic(m) != nil {
		m.Term() // unreadable, or not the hub's own event (the projector refuses it too)
		return
	}
	seq := md.Sequence.Stream
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Keep the event ours while we work on it; a hub shutting down does not
	// wait for a stopped projection.
	go func() {
		t := time.NewTicker(routerAckWait / 3)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-l.stopCh:
				cancel()
				return
			case <-t.C:
				m.InProgress()
			}
		}
	}()
	switch ev.Type {
	case chat.EvMessagePosted:
		// The projection decides who may be reached; this node's decision
		// is enough, its commit need not be waited for.
		steers, mayHold, err := l.rooms.DecidedSteers(ctx, int64(seq), func() bool { return l.rooms.Log.Applied() >= seq }, l.rooms.Log.Changed)
		if err != nil {
			m.NakWithDelay(time.Second)
			return
		}
		delivered := l.routeSteers(steers)
		// Mentions the owner reads first (moderated): the owner hears of
		// them once the projection has committed them, while the others
		// are being delivered.
		if mayHold {
			if err = l.rooms.Log.WaitApplied(ctx, seq); err == nil {
				l.noteHeld(ctx, int64(seq))
			}
		}
		delivered()
		if err != nil {
			m.NakWithDelay(time.Second)
			return
		}
	case chat.EvSteerForwarded:
		if err := l.rooms.Log.WaitApplied(ctx, seq); err != nil {
			m.NakWithDelay(time.Second)
			return
		}
		var d chat.SteerForwarded
		if json.Unmarshal(ev.Data, &d) == nil && !d.Decline {
			l.routeForwarded(ctx, d.ID)
		}
	case chat.EvBridgeRevoked:
		if err := l.rooms.Log.WaitApplied(ctx, seq); err != nil {
			m.NakWithDelay(time.Second)
			return
		}
		var d chat.BridgeRevoked
		if json.Unmarshal(ev.Data, &d) == nil {
			l.disconnectBridge(ctx, d.ID)
		}
	}
	m.Ack()
}

// noteHeld tells owners of the moderated mentions a message holds for them.
func (l *Link) noteHeld(ctx context.Context, msgID int64) {
	held, err := l.rooms.HeldSteersOf(ctx, msgID)
	if err != nil {
		l.log.Warn("reading a message's held mentions failed", "message", msgID, "err", err)
		return
	}
	for _, q := range held {
		where := "#" + q.Room
		if chat.IsDM(q.Room) {
			where = "a DM"
		}
		l.noteOwnerIn(ctx, q.Owner, q.Agent, "", fmt.Sprintf("@%s asks @%s in %s: %s — forward it to the agent or decline it (Inbox)",
			q.Sender, q.Agent, where, oneLine(q.Text, 500)), "", "request")
	}
}

// routeSteers hands a message's pending steers to their agents' queues
// (steers to one agent keep their order); the function it returns waits
// until each has been delivered or refused.
func (l *Link) routeSteers(steers []store.Outbound) (wait func()) {
	var wg sync.WaitGroup
	for _, o := range steers {
		wg.Add(1)
		if !l.queueSteer(o, wg.Done) {
			wg.Done()
		}
	}
	return wg.Wait
}

// routeForwarded delivers a moderated mention its owner forwarded.
func (l *Link) routeForwarded(ctx context.Context, steerID string) {
	o, err := l.rooms.ForwardedSteer(ctx, steerID)
	if err != nil {
		return // answered meanwhile, or applied on another node's terms
	}
	done := make(chan struct{})
	if l.queueSteer(*o, func() { close(done) }) {
		select {
		case <-done:
		case <-ctx.Done():
		}
	}
}

// agentSender delivers one agent's steers in order.
type agentSender struct {
	ch chan func()
}

func (l *Link) queueSteer(o store.Outbound, done func()) bool {
	l.mu.Lock()
	if l.stopped {
		l.mu.Unlock()
		return false
	}
	if l.senders == nil {
		l.senders = map[string]*agentSender{}
	}
	s := l.senders[o.Agent]
	if s == nil {
		s = &agentSender{ch: make(chan func(), agentQueue)}
		l.senders[o.Agent] = s
		l.wg.Add(1)
		go l.send(o.Agent, s)
	}
	l.mu.Unlock()
	job := func() {
		defer done()
		l.safely("deliver", func() { l.deliverSteer(o) })
	}
	select {
	case s.ch <- job:
		return true
	default:
		// The agent has a full queue: this steer is refused now rather than
		// holding up the others.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		l.finish(ctx, o, wire.Receipt{Status: wire.StatusRejected, Reason: wire.ReasonAgentBusy, Detail: "too many messages are waiting for @" + o.Agent + "; send again later"})
		return false
	}
}

func (l *Link) send(handle string, s *agentSender) {
	defer l.wg.Done()
	idle := time.NewTimer(time.Minute)
	defer idle.Stop()
	for {
		select {
		case job := <-s.ch:
			job()
			idle.Reset(time.Minute)
		case <-idle.C:
			l.mu.Lock()
			if len(s.ch) == 0 {
				delete(l.senders, handle)
				l.mu.Unlock()
				return
			}
			l.mu.Unlock()
			idle.Reset(time.Minute)
		case <-l.stopCh:
			return
		}
	}
}

// deliverSteer sends one steer to its bridge with a deadline and records
// the bridge's answer — or, when none came by the deadline, that it was
// not delivered (the bridge never acts on it after the deadline).
func (l *Link) deliverSteer(o store.Outbound) {
	a, head, err := l.steerTarget(o)
	wait := l.h.cfg.SteerTimeout + bridgeCallTimeout + 2*time.Second
	if err == nil {
		wait = l.h.cfg.SteerTimeout + l.callTimeout(a.Bridge) + 2*time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait+5*time.Second)
	defer cancel()
	if err != nil {
		l.finish(ctx, o, wire.Receipt{Status: wire.StatusRejected, Reason: wire.ReasonUnknownAgent, Detail: "there is no agent @" + o.Agent})
		return
	}
	if head != nil && !l.online(a.Bridge) {
		// The agent may have moved to another bridge since: look again.
		if a, err = l.rooms.AgentByHandle(ctx, o.Agent); err != nil {
			l.finish(ctx, o, wire.Receipt{Status: wire.StatusRejected, Reason: wire.ReasonUnknownAgent, Detail: "there is no agent @" + o.Agent})
			return
		}
		head = nil
	}
	if a.Bridge != "" && !l.online(a.Bridge) {
		l.awaitPresence(ctx, a.Bridge)
	}
	if a.Bridge == "" || !l.online(a.Bridge) {
		l.finish(ctx, o, wire.Receipt{Status: wire.StatusRejected, Reason: wire.ReasonAgentOffline,
			Detail: "@" + o.Agent + "'s bridge is offline; the owner's machine is not connected"})
		return
	}
	if !l.allow(o.Sender, o.Agent) {
		l.finish(ctx, o, wire.Receipt{Status: wire.StatusRejected, Reason: wire.ReasonRateLimited,
			Detail: fmt.Sprintf("too many messages to @%s; wait a few seconds", o.Agent)})
		return
	}
	now := l.rooms.Now()
	st := wire.Steer{ID: o.SteerID, Agent: a.Name, Owner: a.Owner, Room: o.Room, RoomKind: roomKind(o.Room), MessageID: o.MessageID,
		Sender: o.Sender, SenderIsOwner: o.Sender == a.Owner, SentAt: o.SentAt, Text: o.Text, Stop: o.Stop, ExpectedTurn: o.ExpectedTurn,
		Deadline: now.Add(l.h.cfg.SteerTimeout).UTC(), TimelineHead: head,
		Thread: o.Thread, NewTurn: o.NewTurn, Follows: o.Follows, Files: l.steerFiles(ctx, o.Files), ForwardedBy: o.ForwardedBy, Forward: o.Forward, Words: o.Words}
	if head == nil {
		st.TimelineHead = l.timelineHead(ctx, a.ID)
	}
	for _, p := range o.Parts {
		st.Parts = append(st.Parts, wire.Part{Kind: p.Kind, Start: p.Start, End: p.End})
	}
	var rc wire.Receipt
	// A bridge declared offline while it has the steer (frozen, asleep,
	// cut off) ends the wait at that moment, not at the deadline: it will
	// refuse the steer when it wakes (it holds what arrived while it was
	// cut off until the hub has told it what ended).
	rctx, stop := l.untilOffline(ctx, a.Bridge)
	err = l.request(rctx, a.Bridge, wire.KindSteer, st, &rc, wait)
	stop()
	if err != nil {
		l.log.Info("a steer was not delivered", "steer", st.ID, "agent", o.Agent, "err", err)
		reason := wh.ErrorReason(err)
		detail := "the agent's machine did not answer in time; it will not act on the message — send again"
		if !l.online(a.Bridge) {
			reason = wire.ReasonAgentOffline
		}
		if reason == wire.ReasonAgentOffline {
			detail = "@" + o.Agent + "'s bridge is offline; the owner's machine is not connected"
		}
		l.finish(ctx, o, wire.Receipt{Status: wire.StatusRejected, Reason: reason, Detail: detail})
		return
	}
	if err := rc.Validate(l.rooms.Now()); err != nil || rc.SteerID != st.ID {
		l.m.invalid.WithLabelValues(wire.KindSteer).Inc()
		l.log.Warn("a bridge answered a steer with an invalid receipt", "steer", st.ID, "err", err)
		rc = wire.Receipt{Status: wire.StatusRejected, Reason: wire.ReasonAgentFailed, Detail: "the agent's bridge answered with something the hub cannot read"}
	}
	l.finish(ctx, o, rc)
}

// untilOffline is ctx, cancelled as well once this node declares the
// bridge offline (its presence watch looks twice a second).
func (l *Link) untilOffline(ctx context.Context, bridgeID string) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if !l.online(bridgeID) {
					cancel()
					return
				}
			}
		}
	}()
	return ctx, cancel
}

// steerTarget is the agent a steer goes to: as the projection saw it when
// it recorded the steer (with its timeline's head then), or read now.
func (l *Link) steerTarget(o store.Outbound) (*chat.Agent, *wire.ChainHead, error) {
	if t := o.Target; t != nil {
		return &chat.Agent{ID: t.AgentID, Name: t.Name, Owner: t.Owner, Bridge: t.Bridge},
			&wire.ChainHead{Seq: t.HeadSeq, Idx: t.HeadIdx, Hash: t.HeadHash}, nil
	}
	a, err := l.rooms.AgentByHandle(context.Background(), o.Agent)
	return a, nil, err
}

// awaitPresence gives a bridge one heartbeat's chance to be heard from
// when this node has just started (it knows no one's presence yet).
func (l *Link) awaitPresence(ctx context.Context, bridgeID string) {
	until := l.started.Add(wire.OfflineAfter + time.Second)
	for time.Now().Before(until) && !l.online(bridgeID) {
		select {
		case <-ctx.Done():
			return
		case <-l.stopCh:
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// finish records a steer's receipt.
func (l *Link) finish(ctx context.Context, o store.Outbound, rc wire.Receipt) {
	rc.SteerID = o.SteerID
	l.m.mentions.WithLabelValues(rc.Status).Inc()
	// The receipt need not be applied here before the agent's next steer
	// goes out: the stream's ack makes it durable and keeps its order.
	if err := l.rooms.RecordReceipt(ctx, rc); err != nil {
		l.log.Warn("recording a receipt failed", "steer", o.SteerID, "err", err)
	}
}

func roomKind(name string) string {
	if chat.IsDM(name) {
		return chat.KindDM
	}
	return chat.KindRoom
}

// AwaitReceipts returns the receipts of m's agent mentions, waiting up to
// deliverWait for the bridges' first answers (later ones arrive as events).
// The poster leaving early changes nothing: delivery follows from the log.
func (l *Link) AwaitReceipts(ctx context.Context, m *chat.Message) []chat.Receipt {
	read, cancelRead := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancelRead()
	ctx, cancel := context.WithTimeout(ctx, deliverWait)
	defer cancel()
	for {
		applied := l.rooms.Log.Applied() // before the read: a receipt applied after it wakes the wait below
		rs, err := l.rooms.ReceiptsFor(read, []int64{m.ID})
		if err != nil {
			return []chat.Receipt{}
		}
		waiting := false
		for _, r := range rs {
			waiting = waiting || r.Status == chat.StatusPending
		}
		if !waiting || ctx.Err() != nil {
			return rs
		}
		if l.rooms.Log.WaitApplied(ctx, applied+1) != nil {
			return rs
		}
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
