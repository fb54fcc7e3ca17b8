package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/authz"
	"github.com/wheelhouse-dev/wheelhouse/internal/termsafe"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// Factory builds a harness of one kind.
type Factory func(Deps) (Harness, error)

// Config configures a running bridge.
type Config struct {
	Creds     *Credentials
	Agents    []AgentConfig
	Harnesses map[string]Factory // by AgentConfig.Harness
	// Out receives the human-readable live log: accepted and rejected
	// steers, turns, approval requests.
	Out io.Writer
	// ControlSocket is the local socket for `wheelhouse approve` ("" = none).
	ControlSocket string
	// CallTimeout bounds every call into a harness (default
	// DefaultCallTimeout); the hub waits for a steer's answer this long
	// past its deadline.
	CallTimeout time.Duration
	Logger      *slog.Logger
	Now         func() time.Time

	// JournalDir holds each agent's append-only journal (JournalPath); ""
	// keeps none. `bridge run` uses DefaultJournalDir.
	JournalDir string
	// AttachmentsDir holds the files posted with messages, one folder per
	// message (AttachmentDir); "" makes a private temporary folder for the
	// bridge's run, removed when it stops.
	AttachmentsDir string
	// MaxFetch bounds one file the bridge fetches (default DefaultMaxFetch).
	MaxFetch int64

	// TrustFile is the trust store: the owner's enrolled devices, the rooms
	// each agent may act in, the effective policies (TrustPath beside the
	// credentials). "" keeps it in memory only.
	TrustFile string
}

// Bridge is the per-machine daemon.
type Bridge struct {
	cfg     Config
	log     *slog.Logger
	nc      *nats.Conn
	agents  map[string]*runner
	outMu   sync.Mutex
	subs    []*nats.Subscription
	stop    chan struct{}
	out     *outbox       // turn events and receipts until the hub has them
	outStop chan struct{} // stops the outbox's sender, after the agents
	wg      sync.WaitGroup
	control *controlServer
	watch   approvalWatch // the owner's `wheelhouse approvals --watch` clients
	trust   *trustStore
	enroll  enrollCode
	// offset is the hub's clock minus ours (nanoseconds), learned at each
	// announce: steer deadlines are judged on the hub's clock.
	offset atomic.Int64

	liveMu   sync.Mutex
	lastTick time.Time // the heartbeat loop's last run (wall clock)
	cutoff   bool      // a gap was seen; cleared by the next announce

	announcing, reannounceAgain atomic.Bool

	attachMu   sync.Mutex
	attachDir  string // AttachmentsDir, or the temporary one once made
	attachTemp bool   // attachDir is ours to remove
}

// hubNow is the hub's clock as this bridge best knows it.
func (b *Bridge) hubNow() time.Time { return b.cfg.Now().Add(time.Duration(b.offset.Load())) }

// New validates the config and builds the agents' harnesses (not started).
func New(cfg Config) (*Bridge, error) {
	if cfg.Creds == nil {
		return nil, wh.Errorf(wh.EInvalid, "the bridge has no credentials: pair it first")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = DefaultCallTimeout
	}
	b := &Bridge{cfg: cfg, log: cfg.Logger, agents: map[string]*runner{}, stop: make(chan struct{}), outStop: make(chan struct{})}
	for _, ac := range cfg.Agents {
		if err := checkRooms(ac.Rooms); err != nil {
			return nil, fmt.Errorf("agent %q: %w", ac.Name, err)
		}
	}
	var err error
	if b.trust, err = openTrust(cfg.TrustFile, cfg.Now, cfg.Agents); err != nil {
		return nil, err
	}
	b.trust.bridge = cfg.Creds.BridgeID
	outPath := ""
	if cfg.JournalDir != "" {
		outPath = OutboxPath(cfg.JournalDir, cfg.Creds.BridgeID)
	}
	if b.out, err = openOutbox(outPath, b.log.With("part", "outbox"), cfg.Now); err != nil {
		return nil, err
	}
	for _, ac := range cfg.Agents {
		f, ok := cfg.Harnesses[ac.Harness]
		if !ok {
			return nil, wh.Errorf(wh.EInvalid, "agent %q: unknown harness %q (known: %s)", ac.Name, ac.Harness, strings.Join(keys(cfg.Harnesses), ", "))
		}
		pol, err := ac.PolicyFile.Policy()
		if err != nil {
			return nil, err
		}
		ac.Policy = pol // the config's: the most the agent may ever do
		r := newRunner(b, ac, effectivePolicy(pol, b.trust.policy(ac.Name)))
		h, err := f(Deps{Agent: ac, Gate: r.gate, Events: r.onEvent, Log: b.log.With("agent", ac.Name)})
		if err != nil {
			b.closeJournals()
			return nil, fmt.Errorf("agent %q: %w", ac.Name, err)
		}
		r.h = h
		b.agents[ac.Name] = r
		if cfg.JournalDir != "" {
			if r.jr, err = openJournal(JournalPath(cfg.JournalDir, cfg.Creds.Owner, ac.Name), JournalKey(cfg.Creds.Seed), cfg.Now); err != nil {
				b.closeJournals()
				return nil, fmt.Errorf("agent %q: %w", ac.Name, err)
			}
		}
	}
	return b, nil
}

func (b *Bridge) closeJournals() {
	for _, r := range b.agents {
		r.jr.close()
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// printf writes one line to the live log. Its arguments carry names, turn
// ids, summaries and errors that came from the hub, teammates or a model, so
// the line goes through termsafe: no argument can end the line, move the
// cursor or hide text.
func (b *Bridge) printf(format string, args ...any) {
	line := termsafe.Sprintf(format, args...)
	b.outMu.Lock()
	defer b.outMu.Unlock()
	fmt.Fprintf(b.cfg.Out, "%s  %s\n", b.cfg.Now().Format("15:04:05"), line)
}

// HubConnected reports whether the bridge is connected to the hub right
// now. A harness whose side channel would otherwise wait for a decision the
// owner cannot see (the hub is gone) uses it to fall back at once.
func (g *gate) HubConnected() bool {
	nc := g.r.b.nc
	return nc != nil && nc.IsConnected()
}

// Run connects to the hub, starts the agents and serves until ctx ends.
func (b *Bridge) Run(ctx context.Context) error {
	id := b.cfg.Creds.BridgeID
	connected := make(chan struct{}, 1)
	closed := make(chan struct{})
	var err error
	b.nc, err = b.cfg.Creds.Dial("wheelhouse-bridge-"+id,
		nats.MaxReconnects(-1),
		// A refused login (revoked, or the hubs are restarting) is retried
		// with a growing delay instead of giving up for good.
		nats.IgnoreAuthErrorAbort(),
		nats.CustomReconnectDelay(reconnectDelay),
		nats.ReconnectHandler(func(*nats.Conn) {
			b.printf("reconnected to the hub")
			b.out.poke()
			select {
			case connected <- struct{}{}:
			default:
			}
		}),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			select {
			case <-b.stop:
				return // our own shutdown
			default:
			}
			if err == nil {
				err = errors.New("closed by the hub")
			}
			b.printf("lost the hub connection: %v (retrying)", err)
		}),
		nats.ClosedHandler(func(*nats.Conn) { close(closed) }),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			if isAuthError(err) {
				b.printf("the hub refuses this bridge's key: if it was revoked, pair again (wheelhouse bridge pair)")
				return
			}
			b.log.Warn("NATS error", "err", err)
		}),
	)
	if err != nil {
		return err
	}
	defer b.nc.Close()
	for kind, h := range map[string]nats.MsgHandler{wire.KindSteer: b.onSteer, wire.KindControl: b.onControl, wire.KindDecision: b.onDecision,
		wire.KindConsent: b.onConsent, wire.KindDevice: b.onDevice} {
		s, err := b.nc.Subscribe(wire.ToBridge(id, kind), h)
		if err != nil {
			return wh.Wrap(err, "subscribe")
		}
		b.subs = append(b.subs, s)
	}
	for _, r := range b.agents {
		if err := r.h.Start(ctx); err != nil {
			r.setFailed(err.Error())
			b.printf("@%s/%s failed to start: %v", b.cfg.Creds.Owner, r.cfg.Name, err)
		} else {
			b.printf("@%s/%s ready (%s)", b.cfg.Creds.Owner, r.cfg.Name, r.h.Kind())
		}
		for _, note := range GatingNotes(r.h, r.getPolicy()) {
			b.printf("@%s/%s: %s", b.cfg.Creds.Owner, r.cfg.Name, note)
		}
	}
	if err := b.announce(ctx); err != nil {
		b.closeAgents()
		return err
	}
	b.wg.Add(1)
	go func() { defer b.wg.Done(); b.out.run(b.nc, id, b.outStop) }()
	for _, r := range b.agents {
		b.wg.Add(1)
		go func() { defer b.wg.Done(); r.serve(b.stop) }()
	}
	if b.cfg.ControlSocket != "" {
		b.control, err = startControl(b, b.cfg.ControlSocket)
		if err != nil {
			b.closeAgents()
			return err
		}
		defer b.control.Close()
	}
	b.printf("connected to %s as bridge %s (owner @%s), %d agent(s)", b.cfg.Creds.Hub, id, b.cfg.Creds.Owner, len(b.agents))
	if len(b.trust.devices()) == 0 {
		b.printf("no device of yours is enrolled yet: approve here (wheelhouse approvals), or enroll your browser with the code wheelhouse bridge devices add shows")
	}
	t := time.NewTicker(wire.HeartbeatInterval)
	defer t.Stop()
	b.tick()
	for {
		b.heartbeat()
		select {
		case <-ctx.Done():
			b.shutdown()
			return nil
		case <-closed:
			b.shutdown()
			return wh.Errorf(wh.EUnavailable, "the connection to the hub closed: %v", b.nc.LastError())
		case <-connected:
			b.reannounceAsync(ctx)
		case <-t.C:
			if b.tick() {
				// This process did not run for a while (stopped, asleep):
				// the hub may have declared it offline and ended its work.
				b.printf("this bridge was not running for a while; checking with the hub before delivering anything queued")
				b.reannounceAsync(ctx)
			}
		}
	}
}

// tick records that the heartbeat loop ran; it reports a gap long enough
// that the hub may have declared this bridge offline (and then marks the
// bridge cut off until the next announce).
func (b *Bridge) tick() bool {
	b.liveMu.Lock()
	defer b.liveMu.Unlock()
	now := time.Now().Round(0) // wall clock: it also moves while the machine sleeps
	gap := !b.lastTick.IsZero() && now.Sub(b.lastTick) > wire.OfflineAfter/2
	b.lastTick = now
	if gap {
		b.cutoff = true
	}
	return gap
}

// cutOff reports whether the bridge may have been declared offline and has
// not yet re-announced: queued work waits.
func (b *Bridge) cutOff() bool {
	b.liveMu.Lock()
	defer b.liveMu.Unlock()
	return b.cutoff || (!b.lastTick.IsZero() && time.Now().Round(0).Sub(b.lastTick) > wire.OfflineAfter/2)
}

// reannounceAsync re-announces off the heartbeat loop (heartbeats must go
// on while the hub is slow to answer), one at a time, retrying until it
// succeeds or a newer one takes over.
func (b *Bridge) reannounceAsync(ctx context.Context) {
	if !b.announcing.CompareAndSwap(false, true) {
		b.reannounceAgain.Store(true)
		return
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		defer b.announcing.Store(false)
		for {
			b.reannounceAgain.Store(false)
			if b.reannounce(ctx) && !b.reannounceAgain.Load() {
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-b.stop:
				return
			case <-time.After(time.Second):
			}
		}
	}()
}

// reannounce tells the hub this bridge's agents again (after a reconnect
// or a gap), then lets queued work go on. It reports success.
func (b *Bridge) reannounce(ctx context.Context) bool {
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := b.announce(actx); err != nil {
		b.log.Warn("announce failed; retrying", "err", err)
		return false
	}
	b.liveMu.Lock()
	was := b.cutoff
	b.cutoff = false
	b.liveMu.Unlock()
	if was {
		b.printf("back in touch with the hub; taking messages again")
	}
	for _, r := range b.agents {
		b.wg.Add(1)
		go func() { defer b.wg.Done(); r.deliverQueued() }()
	}
	return true
}

func (b *Bridge) shutdown() {
	for _, s := range b.subs {
		s.Unsubscribe()
	}
	close(b.stop)
	b.closeAgents()
	b.heartbeat()
	if b.nc.IsConnected() { // not while reconnecting: nothing would flush
		// What the agents' ends said goes to the hub now if it can;
		// what it cannot take stays in the outbox for the next run.
		deadline := time.Now().Add(3 * time.Second)
		for b.out.pending() > 0 && time.Now().Before(deadline) && b.nc.IsConnected() {
			time.Sleep(10 * time.Millisecond)
		}
		b.nc.FlushTimeout(2 * time.Second)
	}
	close(b.outStop)
	b.wg.Wait()
	b.out.close()
	b.removeTempAttachments()
}

func (b *Bridge) closeAgents() {
	var wg sync.WaitGroup
	for _, r := range b.agents {
		wg.Add(1)
		go func() { defer wg.Done(); r.close() }()
	}
	wg.Wait()
}

func (b *Bridge) announce(ctx context.Context) error {
	a := wire.Announce{Version: wire.Version, CallTimeout: wire.Duration(b.cfg.CallTimeout), Devices: b.trust.devices()}
	for _, r := range b.agents {
		a.Agents = append(a.Agents, r.info())
	}
	data, _ := json.Marshal(a)
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	sent := b.cfg.Now()
	m, err := b.nc.RequestWithContext(rctx, wire.FromBridge(b.cfg.Creds.BridgeID, wire.KindAnnounce), data)
	if err != nil {
		return wh.Errorf(wh.EUnavailable, "the hub did not answer the announcement: %v", err)
	}
	got := b.cfg.Now()
	var ack wire.AnnounceAck
	if err := json.Unmarshal(m.Data, &ack); err != nil || !ack.OK {
		return wh.Errorf(wh.EInvalid, "the hub refused this bridge's agents: %s", ack.Message)
	}
	if ack.Owner != b.cfg.Creds.Owner {
		return wh.Errorf(wh.EInvalid, "the hub says this bridge belongs to @%s, the credentials say @%s: pair again", ack.Owner, b.cfg.Creds.Owner)
	}
	if !ack.HubTime.IsZero() {
		// The hub read its clock about halfway through the round trip.
		mid := sent.Add(got.Sub(sent) / 2)
		b.offset.Store(int64(ack.HubTime.Sub(mid)))
	}
	// What the hub ended while this bridge was away ends here too, before
	// anything queued is delivered.
	for _, c := range ack.Resync {
		if r := b.agents[c.Agent]; r != nil {
			r.resync(c)
		}
	}
	for name, why := range ack.Refused {
		if r := b.agents[name]; r != nil {
			r.setFailed(why)
			b.printf("@%s/%s is not running here: %s", b.cfg.Creds.Owner, name, why)
		}
	}
	// The bridge holds each agent's policy; what the hub has on record may
	// narrow it (never widen: that takes the owner's signature).
	for name, p := range ack.Policies {
		if r := b.agents[name]; r != nil && p.Validate() == nil {
			normalizePolicy(&p)
			if len(authz.Beyond(limitsOf(r.getPolicy()), limitsOf(p))) == 0 && !policyEqual(r.getPolicy(), p) {
				if err := b.trust.setPolicy(name, p); err == nil {
					r.setPolicy(p)
					b.printf("@%s/%s: took the narrower policy the hub has on record", b.cfg.Creds.Owner, name)
				}
			}
		}
	}
	return nil
}

// heartbeat publishes every agent's state (also right after a change).
func (b *Bridge) heartbeat() {
	hb := wire.Heartbeat{At: b.cfg.Now().UTC()}
	for _, r := range b.agents {
		hb.Agents = append(hb.Agents, r.info())
	}
	b.publish(wire.KindHeartbeat, hb)
}

// publish sends v to the hub: turn events and receipts through the
// outbox (acknowledged, sent again until the hub has them), the rest
// (heartbeats, notes the next one repeats) fire-and-forget.
func (b *Bridge) publish(kind string, v any) {
	if kind == wire.KindTurn || kind == wire.KindReceipt {
		b.out.add(kind, v)
		return
	}
	data, _ := json.Marshal(v)
	if err := b.nc.Publish(wire.FromBridge(b.cfg.Creds.BridgeID, kind), data); err != nil {
		b.log.Warn("publish failed", "kind", kind, "err", err)
	}
}

func respond(m *nats.Msg, v any) {
	data, _ := json.Marshal(v)
	m.Respond(data)
}

// onSteer hands a steer to its agent's worker: one slow or hung agent
// never holds up steers for the others.
func (b *Bridge) onSteer(m *nats.Msg) {
	var st wire.Steer
	if err := json.Unmarshal(m.Data, &st); err != nil {
		b.log.Warn("refused an undecodable steer", "err", err)
		respond(m, wire.Receipt{Status: wire.StatusRejected, Reason: wire.ReasonNotAllowed, Detail: "the bridge could not read the steer"})
		return
	}
	if err := st.Validate(); err != nil {
		b.log.Warn("refused an invalid steer", "err", err)
		respond(m, wire.Receipt{SteerID: st.ID, Agent: st.Agent, Status: wire.StatusRejected, Reason: wire.ReasonNotAllowed, Detail: "the bridge refused the steer: " + wh.ErrorMessage(err), At: b.cfg.Now().UTC()})
		return
	}
	r := b.agents[st.Agent]
	if r == nil {
		respond(m, wire.Receipt{SteerID: st.ID, Agent: st.Agent, Status: wire.StatusRejected, Reason: wire.ReasonUnknownAgent, Detail: "this bridge has no agent " + st.Agent, At: b.cfg.Now().UTC()})
		return
	}
	ok := r.submit(func() {
		rc := r.steer(st)
		rc.SteerID, rc.Agent, rc.At = st.ID, st.Agent, b.cfg.Now().UTC()
		r.journalSteer(st, rc)
		respond(m, rc)
		b.heartbeat()
	})
	if !ok {
		rc := wire.Receipt{SteerID: st.ID, Agent: st.Agent, Status: wire.StatusRejected, Reason: wire.ReasonAgentBusy,
			Detail: fmt.Sprintf("@%s has %d messages waiting to be handed to it; send again later", st.Agent, workQueue), At: b.cfg.Now().UTC()}
		r.journalSteer(st, rc)
		respond(m, rc)
	}
}

func (b *Bridge) onControl(m *nats.Msg) {
	var c wire.Control
	if err := json.Unmarshal(m.Data, &c); err != nil {
		respond(m, wire.Ack{Code: wh.EInvalid, Message: "undecodable control"})
		return
	}
	if err := c.Validate(); err != nil {
		respond(m, wire.Ack{Code: wh.EInvalid, Message: wh.ErrorMessage(err)})
		return
	}
	r := b.agents[c.Agent]
	if r == nil {
		respond(m, wire.Ack{Code: wh.ENotFound, Message: "no agent " + c.Agent})
		return
	}
	if c.By != b.cfg.Creds.Owner && c.Action != wire.ControlResync {
		respond(m, wire.Ack{Code: wh.EForbidden, Message: "only the owner controls this agent"})
		return
	}
	switch c.Action {
	case wire.ControlInterrupt:
		if err := r.interrupt(c.By); err != nil {
			respond(m, wire.Ack{Code: wh.EConflict, Message: err.Error()})
			return
		}
	case wire.ControlResync:
		respond(m, wire.Ack{OK: true})
		b.wg.Add(1)
		go func() { defer b.wg.Done(); r.resync(c); b.heartbeat() }()
		return
	case wire.ControlPolicy:
		if c.Policy == nil {
			respond(m, wire.Ack{Code: wh.EInvalid, Message: "a policy change names the policy"})
			return
		}
		if err := r.changePolicy(c); err != nil {
			respond(m, wire.Ack{Code: wh.ErrorCode(err), Message: wh.ErrorMessage(err), Reason: wh.ErrorReason(err)})
			return
		}
		b.heartbeat()
	default:
		respond(m, wire.Ack{Code: wh.EInvalid, Message: "unknown action " + c.Action})
		return
	}
	respond(m, wire.Ack{OK: true})
}

func (b *Bridge) onDecision(m *nats.Msg) {
	var d wire.Decision
	if err := json.Unmarshal(m.Data, &d); err != nil {
		respond(m, wire.Ack{Code: wh.EInvalid, Message: "undecodable decision"})
		return
	}
	if err := d.Validate(); err != nil {
		b.log.Warn("refused an invalid decision", "err", err)
		respond(m, wire.Ack{Code: wh.EInvalid, Message: wh.ErrorMessage(err)})
		return
	}
	r := b.agents[d.Agent]
	if r == nil {
		b.log.Warn("decision for an unknown agent refused", "agent", d.Agent, "approval", d.ApprovalID)
		respond(m, wire.Ack{Code: wh.ENotFound, Message: "no agent " + d.Agent})
		return
	}
	if err := r.gate.decide(d, false); err != nil {
		respond(m, wire.Ack{Code: wh.ErrorCode(err), Message: wh.ErrorMessage(err), Reason: wh.ErrorReason(err)})
		return
	}
	respond(m, wire.Ack{OK: true})
}
