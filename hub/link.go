package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/room"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// Timeouts on the hub↔bridge path.
const (
	// DefaultSteerTimeout is how long a bridge has to begin acting on a
	// steer (its deadline); after it the bridge refuses the steer.
	DefaultSteerTimeout = 5 * time.Second
	// bridgeCallTimeout is how long a bridge may take in the harness call
	// after it began, unless it announced its own bound.
	bridgeCallTimeout = 10 * time.Second
	ControlTimeout    = 5 * time.Second
	deliverWait       = 1500 * time.Millisecond
	// DefaultSteerBurst and DefaultSteerRefill bound how fast one sender
	// may mention one agent: a burst, then one per refill interval.
	DefaultSteerBurst  = 10
	DefaultSteerRefill = 2 * time.Second
	// bridgeQueue bounds the messages of one bridge waiting to be handled.
	bridgeQueue = 256
	// handleTimeout bounds the handling of one bridge message.
	handleTimeout = 10 * time.Second
)

// Link connects the hub to bridges over NATS: routing steers, receiving
// announcements, heartbeats, receipts, turn output and approval requests.
// Every bridge's messages are handled in order by a worker of its own, so
// one chatty or hostile bridge never holds up another.
type Link struct {
	log   *slog.Logger
	h     *Hub
	rooms *room.Service
	nc    *nats.Conn
	m     *linkMetrics

	mu       sync.Mutex
	presence map[string]*presence     // by bridge id
	buckets  map[string]*bucket       // rate limits by sender→agent
	workers  map[string]*bridgeWorker // by bridge id
	synced   map[string]time.Time     // last resync sent, by what it said
	hbSlots  map[string]*hbSlot       // newest heartbeat waiting, by bridge
	senders  map[string]*agentSender  // steer delivery, by agent handle
	// replyLogged are the bridges whose foreign reply subject was logged.
	replyLogged map[string]bool
	subs        []*nats.Subscription
	router      jetstream.ConsumeContext
	stopCh      chan struct{}
	stopped     bool
	started     time.Time      // when this node began to hear bridges
	wg          sync.WaitGroup // handlers and detached work in flight
}

type linkMetrics struct {
	invalid  *prometheus.CounterVec
	panics   *prometheus.CounterVec
	dropped  prometheus.Counter
	mentions *prometheus.CounterVec
	// repliesRefused counts bridge messages dropped for a reply subject
	// outside the bridge's inbox.
	repliesRefused prometheus.Counter
}

func newLinkMetrics(reg *prometheus.Registry) *linkMetrics {
	m := &linkMetrics{
		invalid: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "wheelhouse_bridge_messages_invalid_total",
			Help: "Messages from bridges refused at the boundary, by kind."}, []string{"kind"}),
		panics: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "wheelhouse_handler_panics_total",
			Help: "Handlers that panicked and were recovered, by handler."}, []string{"handler"}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{Name: "wheelhouse_bridge_messages_dropped_total",
			Help: "Messages from bridges dropped because the bridge's queue was full."}),
		mentions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "wheelhouse_mentions_total",
			Help: "Agent mentions routed by this node, by outcome."}, []string{"status"}),
		repliesRefused: prometheus.NewCounter(prometheus.CounterOpts{Name: "wheelhouse_bridge_replies_refused_total",
			Help: "Bridge messages dropped unanswered because their reply subject was not the bridge's own inbox."}),
	}
	if reg != nil {
		reg.MustRegister(m.invalid, m.panics, m.dropped, m.mentions, m.repliesRefused)
	}
	return m
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
	lastSeen    time.Time
	hbAt        time.Time // the bridge's own heartbeat time (dedupe key)
	agents      map[string]wire.AgentInfo
	callTimeout time.Duration // the bridge's bound on a harness call
	// turns the bridge's heartbeats named lately (agent + turn id), so a
	// turn the harness started by itself may end.
	turns map[string]time.Time
	// anchored is each agent's journal head this node last recorded.
	anchored map[string]wire.JournalHead
}

// callTimeout is how long past a steer's deadline the hub waits for a
// bridge's answer.
func (l *Link) callTimeout(bridgeID string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if p := l.presence[bridgeID]; p != nil && p.callTimeout > 0 {
		return p.callTimeout
	}
	return bridgeCallTimeout
}

type bucket struct {
	tokens float64
	at     time.Time
}

func newLink(log *slog.Logger, reg *prometheus.Registry) *Link {
	return &Link{log: log.With("component", "link"), m: newLinkMetrics(reg), presence: map[string]*presence{}, buckets: map[string]*bucket{},
		workers: map[string]*bridgeWorker{}, replyLogged: map[string]bool{}, synced: map[string]time.Time{}, hbSlots: map[string]*hbSlot{}, stopCh: make(chan struct{})}
}

func (l *Link) start(ctx context.Context, h *Hub) error {
	l.h, l.rooms, l.nc = h, h.rooms, h.nc
	l.started = time.Now()
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
	for _, s := range []*nats.Subscription{qs, hs} {
		// A burst from many bridges waits in the client, not on the server.
		s.SetPendingLimits(64<<10, 256<<20)
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
	if l.router != nil {
		l.router.Stop()
	}
	l.wg.Wait()
}

// safely runs f, turning a panic into a logged, counted failure: a bug or
// hostile input in one handler never takes the hub down.
func (l *Link) safely(handler string, f func()) {
	defer func() {
		if v := recover(); v != nil {
			l.m.panics.WithLabelValues(handler).Inc()
			l.log.Error("handler panicked; recovered", "handler", handler, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
		}
	}()
	f()
}

// bridgeOf parses wh.hub.<bridgeID>.<kind>.
func bridgeOf(subject string) (id, kind string, ok bool) {
	p := strings.Split(subject, ".")
	if len(p) != 4 || p[0] != "wh" || p[1] != "hub" || !validBridgeID(p[2]) {
		return "", "", false
	}
	return p[2], p[3], true
}

// validBridgeID: "b" and 12 hex digits.
func validBridgeID(id string) bool {
	if len(id) != 13 || id[0] != 'b' {
		return false
	}
	for _, c := range id[1:] {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// reply answers bridge id's message m with v, on the bridge's own inbox
// only (replyTo).
func (l *Link) reply(id string, m *nats.Msg, v any) {
	to := l.replyTo(id, m)
	if to == "" {
		return
	}
	b, _ := json.Marshal(v)
	l.nc.Publish(to, b)
}

func ackErr(err error) wire.Ack {
	return wire.Ack{OK: false, Code: wh.ErrorCode(err), Message: wh.ErrorMessage(err)}
}

// bridgeWorker handles one bridge's messages in order.
type bridgeWorker struct {
	ch   chan *nats.Msg
	last time.Time
}

// handle is the NATS callback for every bridge message but heartbeats: it
// queues the message for its bridge's worker and returns at once.
func (l *Link) handle(m *nats.Msg) {
	l.safely("dispatch", func() {
		id, kind, ok := bridgeOf(m.Subject)
		if !ok || kind == wire.KindHeartbeat {
			return
		}
		if !l.replyAllowed(id, m) {
			return // not handled at all: a bridge that names another's subject is hostile or broken
		}
		l.dispatch(id, m)
	})
}

func (l *Link) dispatch(id string, m *nats.Msg) {
	l.mu.Lock()
	if l.stopped {
		l.mu.Unlock()
		return
	}
	w := l.workers[id]
	if w == nil {
		w = &bridgeWorker{ch: make(chan *nats.Msg, bridgeQueue)}
		l.workers[id] = w
		l.wg.Add(1)
		go l.work(id, w)
	}
	w.last = time.Now()
	l.mu.Unlock()
	select {
	case w.ch <- m:
	default:
		l.m.dropped.Inc()
		l.log.Warn("a bridge sends faster than it can be handled; dropped a message", "bridge", id, "subject", m.Subject)
		l.reply(id, m, wire.Ack{Code: wh.ERateLimited, Message: "the hub is behind on this bridge's messages; try again"})
	}
}

// work runs one bridge's worker until it has been idle for a while.
func (l *Link) work(id string, w *bridgeWorker) {
	defer l.wg.Done()
	idle := time.NewTimer(time.Minute)
	defer idle.Stop()
	for {
		select {
		case m := <-w.ch:
			l.safely("bridge message", func() { l.process(id, m) })
			idle.Reset(time.Minute)
		case <-idle.C:
			l.mu.Lock()
			if len(w.ch) == 0 && time.Since(w.last) >= time.Minute {
				delete(l.workers, id)
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

// refuse answers (and counts) a message that failed the boundary checks:
// malformed, out of bounds, or about something that is not this bridge's.
func (l *Link) refuse(m *nats.Msg, bridgeID, kind string, err error) {
	l.refused(bridgeID, kind, err)
	code := wh.ErrorCode(err)
	if code == wh.EInternal {
		code = wh.EInvalid
	}
	l.reply(bridgeID, m, wire.Ack{Code: code, Message: "the hub refused this " + kindLabel(kind) + " message: " + wh.ErrorMessage(err)})
}

// answer acknowledges a bridge's turn event or receipt once it is
// recorded: a bridge sends them from its outbox until then. A failure to
// record (the log unavailable or full, the projection stopped) is said
// as such, and the bridge tries again; anything else is a refusal.
func (l *Link) answer(m *nats.Msg, bridgeID, kind string, err error) {
	switch wh.ErrorCode(err) {
	case "":
		l.reply(bridgeID, m, wire.Ack{OK: true})
	case wh.EUnavailable, wh.EStorageFull, wh.EInternal:
		l.log.Warn("recording a bridge message failed", "bridge", bridgeID, "kind", kindLabel(kind), "retried", m.Reply != "", "err", err)
		l.reply(bridgeID, m, ackErr(err))
	default:
		l.refuse(m, bridgeID, kind, err)
	}
}

// refused counts and logs a refused bridge message.
func (l *Link) refused(bridgeID, kind string, err error) {
	l.m.invalid.WithLabelValues(kindLabel(kind)).Inc()
	l.log.Warn("refused a bridge message", "bridge", bridgeID, "kind", kindLabel(kind), "err", err)
}

// kindLabel is a message kind as the metrics and logs name it: a bridge
// chooses the last token of its subjects, so kinds the hub does not know
// are all "unknown" (one time series, however many a bridge invents).
func kindLabel(kind string) string {
	if _, ok := bridgeMessages[kind]; ok {
		return kind
	}
	return "unknown"
}

// bridgeMessages reads each kind of message a bridge sends: decoded
// strictly and validated on its own (what the hub's state says of it is
// the handlers' business). It is the one list of kinds: process handles
// these, the metrics name them, the fuzz tests check them.
var bridgeMessages = map[string]func(data []byte, now time.Time) (any, error){
	wire.KindAnnounce: readMsg(func(a *wire.Announce, _ time.Time) error {
		if err := a.Validate(); err != nil {
			return err
		}
		if a.Version != wire.Version {
			return wh.Errorf(wh.EInvalid, "this hub speaks protocol %d, the bridge %d: upgrade the older one", wire.Version, a.Version)
		}
		return nil
	}),
	wire.KindHeartbeat:      readMsg((*wire.Heartbeat).Validate),
	wire.KindReceipt:        readMsg((*wire.Receipt).Validate),
	wire.KindTurn:           readMsg((*wire.TurnEvent).Validate),
	wire.KindApproval:       readMsg((*wire.ApprovalRequest).Validate),
	wire.KindApprovalUpdate: readMsg(anyTime((*wire.ApprovalUpdate).Validate)),
	wire.KindInvitations:    readMsg(anyTime((*wire.InvitationsRequest).Validate)),
	wire.KindDevices:        readMsg(anyTime((*wire.DeviceList).Validate)),
	wire.KindForgery:        readMsg((*wire.Forgery).Validate),
	wire.KindFile:           readMsg(anyTime((*wire.FileRequest).Validate)),
}

// readMsg decodes a *T and validates it.
func readMsg[T any](validate func(*T, time.Time) error) func([]byte, time.Time) (any, error) {
	return func(data []byte, now time.Time) (any, error) {
		v := new(T)
		if err := wire.Decode(data, v); err != nil {
			return nil, err
		}
		if err := validate(v, now); err != nil {
			return nil, err
		}
		return v, nil
	}
}

// anyTime adapts a check that needs no clock.
func anyTime[T any](validate func(*T) error) func(*T, time.Time) error {
	return func(v *T, _ time.Time) error { return validate(v) }
}

// process handles one message of a paired bridge.
func (l *Link) process(id string, m *nats.Msg) {
	_, kind, _ := bridgeOf(m.Subject)
	ctx, cancel := context.WithTimeout(context.Background(), handleTimeout)
	defer cancel()
	b, err := l.rooms.BridgeByID(ctx, id)
	if err != nil && wh.ErrorCode(err) != wh.ENotFound {
		// A read that failed is no refusal: a bridge sends its outbox again.
		l.log.Warn("reading a bridge failed", "bridge", id, "kind", kind, "err", err)
		l.reply(id, m, wire.Ack{Code: wh.EUnavailable, Message: "the hub could not read this bridge's record; try again"})
		return
	}
	if err != nil || b.Revoked {
		l.log.Warn("message from an unknown or revoked bridge", "bridge", id, "kind", kind)
		l.reply(id, m, wire.Ack{Code: wh.EForbidden, Message: "this bridge is not paired"})
		return
	}
	read, known := bridgeMessages[kind]
	if !known || kind == wire.KindHeartbeat { // heartbeats have a subscription of their own
		l.refuse(m, id, kind, wh.Errorf(wh.EInvalid, "unknown message kind %q", kind))
		return
	}
	v, err := read(m.Data, l.rooms.Now())
	if err != nil {
		if kind == wire.KindFile {
			l.refused(id, kind, err)
			l.fileError(id, m, err)
			return
		}
		l.refuse(m, id, kind, err)
		return
	}
	switch msg := v.(type) {
	case *wire.Announce:
		l.reply(id, m, l.announce(ctx, b, *msg))
	case *wire.Receipt:
		err := l.ownSteer(ctx, b, msg.SteerID)
		if err == nil {
			if err = l.rooms.UpdateSteer(ctx, *msg); wh.ErrorCode(err) == wh.EConflict {
				err = nil // the steer had ended: this one changes nothing
			}
		}
		l.answer(m, id, kind, err)
	case *wire.TurnEvent:
		l.answer(m, id, kind, l.turn(ctx, b, *msg))
	case *wire.ApprovalRequest:
		a, err := l.ownAgent(ctx, b, msg.Agent)
		if err != nil {
			l.refuse(m, id, kind, err)
			return
		}
		l.reply(id, m, l.approval(ctx, b, a, *msg))
	case *wire.InvitationsRequest:
		l.reply(id, m, l.invitations(ctx, b, *msg))
	case *wire.DeviceList:
		if err := l.syncDevices(ctx, b, msg.Devices); err != nil {
			l.log.Warn("recording a bridge's devices failed", "bridge", id, "err", err)
		}
	case *wire.Forgery:
		l.forgery(ctx, b, *msg)
	case *wire.FileRequest:
		// Streamed off the bridge's worker: a big file never holds up its
		// receipts and turn events.
		if l.enter() {
			go func() {
				defer l.wg.Done()
				l.safely("file", func() { l.serveFile(b, m, *msg) })
			}()
		}
	case *wire.ApprovalUpdate:
		if err := l.approvalUpdate(ctx, b, *msg); err != nil {
			l.refuse(m, id, kind, err)
		}
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
		return wh.Errorf(wh.EUnavailable, "the agent's bridge answered with something unreadable")
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
		if len(l.buckets) > 10_000 { // forget full buckets: they hold nothing
			for k, b := range l.buckets {
				if now.Sub(b.at) > time.Duration(l.h.cfg.SteerBurst)*l.h.cfg.SteerRefill {
					delete(l.buckets, k)
				}
			}
		}
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
