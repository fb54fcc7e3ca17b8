package eventlog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/chat"
)

// StreamName and SubjectPrefix name the JetStream stream that is the log.
const (
	StreamName    = "WHEELHOUSE"
	SubjectPrefix = "wh.log."
	// DedupWindow is how long the stream remembers event ids: an append
	// retried with the same id within it is stored once.
	DedupWindow = 10 * time.Minute
	// PlainSuffix ends the subject of a plain event (Plain).
	PlainSuffix = ".plain"
)

// An event is published on SubjectPrefix + its type; a plain one on that
// + PlainSuffix.
func subject(ev chat.Event, opts []AppendOption) string {
	s := SubjectPrefix + ev.Type
	for _, o := range opts {
		if o == Plain {
			s += PlainSuffix
		}
	}
	return s
}

// AppendOption changes how an event is appended.
type AppendOption int

// Plain marks an event that no consumer but the projections needs (a
// message that mentions no agent): consumers that filter on its type's
// subject, as the hub's router does, never receive it.
const Plain AppendOption = 1

// Entry is one event of the stream, as the projector receives it.
type Entry struct {
	Seq  uint64
	Data []byte // the JSON of a chat.Event
	// Subject and MsgID (Nats-Msg-Id) it was published with.
	Subject, MsgID string
	// Unauthentic is why this entry is not the hub's own event (Auth.Check:
	// no valid MAC): the projector must refuse it, never apply it.
	Unauthentic error
}

// Outcome is what applying one event came to: Err is nil, or the refusal
// (a *wh.Error decided the same way on every node).
type Outcome struct {
	ID  string
	Err error
}

// Projector applies the stream, in order, to a read model.
type Projector interface {
	// AppliedSeq is the last sequence applied.
	AppliedSeq(ctx context.Context) (uint64, error)
	// Apply applies a batch, together with its last sequence, atomically.
	// It returns every event's outcome and the items live clients receive.
	// An error means nothing of the batch was applied: the projector
	// stops and retries it; it never skips an event.
	Apply(ctx context.Context, batch []Entry) ([]Outcome, []chat.FeedItem, error)
	// Identity is the id of the stream's first event as this read model
	// recorded it ("" before the first event).
	Identity(ctx context.Context) (string, error)
	// Refusal returns how applying the event with this id was refused, or
	// nil if it was applied (for an append that JetStream found to be a
	// duplicate).
	Refusal(ctx context.Context, eventID string) (error, bool)
}

// Config configures a Log.
type Config struct {
	JS        jetstream.JetStream
	Projector Projector
	Logger    *slog.Logger
	Replicas  int
	// Retry is the first wait before re-applying a batch that failed
	// (doubled up to a minute); default one second.
	Retry time.Duration
	// Capacity reports the event store's use and limit in bytes when the
	// caller knows them (an embedded NATS server); ok is false otherwise.
	// Without it, a full store is known from the account's limits or from
	// a refused append, and known to have room again when an append
	// succeeds.
	Capacity func() (used, limit uint64, ok bool)
	// Admin creates and updates the stream (the hub's ops identity); the
	// log itself appends and reads with JS. Default JS.
	Admin jetstream.JetStream
	// Auth authenticates the events: every append carries a MAC, and an
	// entry without a valid one reaches the projector marked Unauthentic.
	// Nil only in tests of the log itself: every entry is taken.
	Auth *Auth
	// Hold, when set, keeps the projector from applying anything until it
	// is closed: tests hold it to watch a node that is catching up.
	Hold <-chan struct{}
}

// Log appends events to the stream and projects them, in order.
type Log struct {
	js       jetstream.JetStream
	admin    jetstream.JetStream
	auth     *Auth
	forged   atomic.Uint64 // entries that were not the hub's own
	p        Projector
	log      *slog.Logger
	replicas int
	retry    time.Duration
	capacity func() (used, limit uint64, ok bool)
	hold     <-chan struct{}

	capMu sync.Mutex                 // held by the one appender taking a new reading
	cap   atomic.Pointer[capReading] // the last reading of capacity

	mu      sync.Mutex
	waiters map[string]chan error
	onFeed  []func([]chat.FeedItem)
	notify  chan struct{} // closed and replaced on every applied batch

	applied  atomic.Uint64
	acked    atomic.Uint64 // the highest sequence an append of this node was acknowledged with
	inflight atomic.Int64  // appends of this node published and not yet acknowledged
	batches  atomic.Uint64 // transactions the projector committed
	events   atomic.Uint64 // events in them
	startSeq uint64        // stream's last seq when we started: ready once applied
	failed   atomic.Pointer[Failure]
	health   atomic.Pointer[Failure] // the stream itself: full, no quorum
	stream   jetstream.Stream
	cons     jetstream.ConsumeContext
	in       chan jetstream.Msg
	local    localEntries // events this node appended, for the projector before the consumer brings them
	stop     chan struct{}
	done     chan struct{}
	started  bool

	// lastPub is the failure of this node's last append, nil once one
	// succeeds (or the stream answers the probe): readiness follows it at
	// once, where the probe takes up to two periods to notice.
	lastPub atomic.Pointer[Failure]
}

// Failure is why the log cannot take writes now: Reason is a short code
// for the world (readyz), Err the detail for the log.
type Failure struct {
	Reason string
	Err    error
	// Applied and Of are a catching-up node's progress: the events it
	// has applied, of those the stream held when it started.
	Applied, Of uint64
}

func (f *Failure) Error() string { return f.Reason + ": " + f.Err.Error() }

// Reasons of a Failure.
const (
	ReasonProjection  = "projection-stopped"
	ReasonCatchingUp  = "catching-up"
	ReasonLogFull     = "event-log-full"
	ReasonUnavailable = "event-log-unavailable"
)

// New returns a log; call Start to create the stream and project it.
func New(cfg Config) *Log {
	if cfg.Replicas < 1 {
		cfg.Replicas = 1
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Retry <= 0 {
		cfg.Retry = time.Second
	}
	if cfg.Admin == nil {
		cfg.Admin = cfg.JS
	}
	return &Log{js: cfg.JS, admin: cfg.Admin, auth: cfg.Auth, p: cfg.Projector, log: cfg.Logger, replicas: cfg.Replicas, retry: cfg.Retry, capacity: cfg.Capacity, hold: cfg.Hold,
		waiters: map[string]chan error{}, notify: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{}),
		local: localEntries{wake: make(chan struct{}, 1)}}
}

// OnFeed registers f to receive feed items after each applied batch, in
// order. Register before Start.
func (l *Log) OnFeed(f func([]chat.FeedItem)) {
	l.mu.Lock()
	l.onFeed = append(l.onFeed, f)
	l.mu.Unlock()
}

// Auth is how the log authenticates events (nil in tests of the log).
func (l *Log) Auth() *Auth { return l.auth }

// Stream is the JetStream stream (valid after Start).
func (l *Log) Stream() jetstream.Stream { return l.stream }

// Start ensures the stream exists, checks that the read model belongs to
// it, and begins projecting from the last applied sequence.
func (l *Log) Start(ctx context.Context) error {
	if err := l.ensureStream(ctx); err != nil {
		return err
	}
	st, err := l.js.Stream(ctx, StreamName)
	if err != nil {
		return wh.Wrap(err, "open the event stream")
	}
	l.stream = st
	info, err := st.Info(ctx)
	if err != nil {
		return wh.Wrap(err, "read the event stream")
	}
	l.startSeq = info.State.LastSeq
	applied, err := l.p.AppliedSeq(ctx)
	if err != nil {
		return wh.Wrap(err, "read the projection position")
	}
	if applied > info.State.LastSeq {
		if err := l.checkIdentity(ctx, st); err != nil {
			return err // another deployment's database
		}
		return wh.Errorf(wh.EInvalid, "the database is ahead of the event stream: it has applied event %d but the stream ends at %d. Either the SQLite file was copied after the stream's files (a copy of the data directory made while the hub ran), or the stream lost its last events (a power loss with --sync interval), or the file belongs to another stream whose identity it never recorded. The stream is the record: move wheelhouse.db (and its -wal and -shm files) away and restart, and the hub rebuilds it from the stream and its newest snapshot; or point --data at the right data", applied, info.State.LastSeq)
	}
	if applied > 0 {
		if err := l.checkIdentity(ctx, st); err != nil {
			return err
		}
	}
	l.applied.Store(applied)
	cons, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		DeliverPolicy: jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:   applied + 1,
	})
	if err != nil {
		return wh.Wrap(err, "create the projection consumer")
	}
	l.in = make(chan jetstream.Msg, 4096)
	l.local.init()
	cc, err := cons.Consume(func(m jetstream.Msg) {
		select {
		case l.in <- m:
		case <-l.stop:
		}
	})
	if err != nil {
		return wh.Wrap(err, "consume the event stream")
	}
	l.cons = cc
	l.started = true
	go l.project()
	go l.watchStream()
	return nil
}

// ensureStream creates the stream, or updates the fields the hub owns on
// the one there and keeps every other setting as it is: limits an
// operator set (max_age, max_bytes, max_msgs…) are theirs, never reset.
func (l *Log) ensureStream(ctx context.Context) error {
	want := jetstream.StreamConfig{
		Name:       StreamName,
		Subjects:   []string{SubjectPrefix + ">"},
		Storage:    jetstream.FileStorage,
		Replicas:   l.replicas,
		Duplicates: DedupWindow,
		MaxMsgSize: 1 << 20,
	}
	st, err := l.admin.Stream(ctx, StreamName)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		if _, err := l.admin.CreateStream(ctx, want); err != nil {
			return wh.Wrap(err, "create the event stream")
		}
		return nil
	}
	if err != nil {
		return wh.Wrap(err, "read the event stream")
	}
	cfg := HubOwned(st.CachedInfo().Config, want)
	if lim := OperatorLimits(cfg); lim != "" {
		l.log.Warn("the event stream has limits the hub did not set; they are kept, but JetStream drops events past them whether or not a snapshot covers them (use the hub's --retain-* settings instead)", "limits", lim)
	}
	if _, err := l.admin.UpdateStream(ctx, cfg); err != nil {
		return wh.Wrap(err, "update the event stream")
	}
	return nil
}

// HubOwned is have with the fields the hub sets taken from want: the rest
// (an operator's limits, description, placement…) stays as it is.
func HubOwned(have, want jetstream.StreamConfig) jetstream.StreamConfig {
	have.Subjects = want.Subjects
	have.Replicas = want.Replicas
	have.Duplicates = want.Duplicates
	have.MaxMsgSize = want.MaxMsgSize
	return have
}

// OperatorLimits describes the limits on a stream that drop events ("" if
// none).
func OperatorLimits(c jetstream.StreamConfig) string {
	var out []string
	if c.MaxAge > 0 {
		out = append(out, "max_age="+c.MaxAge.String())
	}
	if c.MaxBytes > 0 {
		out = append(out, fmt.Sprintf("max_bytes=%d", c.MaxBytes))
	}
	if c.MaxMsgs > 0 {
		out = append(out, fmt.Sprintf("max_msgs=%d", c.MaxMsgs))
	}
	if c.MaxMsgsPerSubject > 0 {
		out = append(out, fmt.Sprintf("max_msgs_per_subject=%d", c.MaxMsgsPerSubject))
	}
	return strings.Join(out, " ")
}

// checkIdentity refuses a read model built from another deployment's
// stream: the first event's id is unique to a stream.
func (l *Log) checkIdentity(ctx context.Context, st jetstream.Stream) error {
	have, err := l.p.Identity(ctx)
	if err != nil {
		return wh.Wrap(err, "read the projection's stream identity")
	}
	if have == "" {
		return nil // recorded when event 1 is applied (older databases: from now on)
	}
	m, err := st.GetMsg(ctx, 1)
	if err != nil {
		return wh.Errorf(wh.EInvalid, "the database was built from a stream whose first event is %s, but this stream has no first event (%v): move the SQLite file away and restart to rebuild it from this stream, or point --data at the right data", have, err)
	}
	var ev chat.Event
	if json.Unmarshal(m.Data, &ev) != nil || ev.ID != have {
		return wh.Errorf(wh.EInvalid, "the database belongs to another deployment: it was built from a stream whose first event is %s, and this stream's first event is %s. Move the SQLite file away and restart to rebuild it from this stream, or point --data at the right data", have, ev.ID)
	}
	return nil
}

// Stop stops projecting and waits for the projector to finish its batch.
func (l *Log) Stop() {
	l.mu.Lock()
	select {
	case <-l.stop:
		l.mu.Unlock()
		return
	default:
		close(l.stop)
	}
	started := l.started
	l.mu.Unlock()
	if !started {
		return
	}
	if l.cons != nil {
		l.cons.Stop()
	}
	<-l.done
}

// Ready reports whether the projection has caught up with the stream as it
// was at start, has not failed, and the stream takes writes.
func (l *Log) Ready() error {
	if f := l.failed.Load(); f != nil {
		return f
	}
	if f := l.health.Load(); f != nil {
		return f
	}
	if f := l.lastPub.Load(); f != nil {
		return f
	}
	if a := l.applied.Load(); a < l.startSeq {
		return &Failure{Reason: ReasonCatchingUp, Applied: a, Of: l.startSeq, Err: fmt.Errorf("projection catching up: %d of %d", a, l.startSeq)}
	}
	return nil
}

// Batches reports how many transactions the projector committed and how
// many events they held: every event waiting when one starts joins it.
func (l *Log) Batches() (batches, events uint64) { return l.batches.Load(), l.events.Load() }

// Applied is the last projected sequence.
func (l *Log) Applied() uint64 { return l.applied.Load() }

// Changed returns a channel closed when the next batch is applied.
func (l *Log) Changed() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.notify
}

// CatchUp waits until this node has applied all the stream holds now;
// advanced is false when it had already.
func (l *Log) CatchUp(ctx context.Context) (advanced bool, err error) {
	info, err := l.stream.Info(ctx)
	if err != nil {
		return false, err
	}
	if l.applied.Load() >= info.State.LastSeq {
		return false, nil
	}
	return true, l.WaitApplied(ctx, info.State.LastSeq)
}

// WaitApplied blocks until seq is projected or ctx ends.
func (l *Log) WaitApplied(ctx context.Context, seq uint64) error {
	for {
		l.mu.Lock()
		ch := l.notify
		l.mu.Unlock()
		if l.applied.Load() >= seq {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return wh.Errorf(wh.EUnavailable, "timed out waiting for the hub to apply the change; try again")
		}
	}
}

// writeErr is the error a write gets while the log cannot take it. A store
// known to be full only because it refused an append (its limit is not
// visible) does not refuse here: JetStream answers an append at once, and
// the first one that fits again shows there is room.
func (l *Log) writeErr() error {
	if f := l.failed.Load(); f != nil {
		return &wh.Error{Code: wh.EUnavailable, Reason: f.Reason, Message: "the hub cannot apply changes right now (its database refused a write; it retries on its own): try again shortly", Err: f.Err}
	}
	if full, _, detail := l.capacityFull(); full {
		// Refused before the store is asked: a store that runs into a full
		// disk stops taking writes until it restarts (nats-server 2.x).
		f := &Failure{Reason: ReasonLogFull, Err: detail}
		l.setHealth(f)
		return healthErr(f)
	}
	if f := l.health.Load(); f != nil && f.Reason != ReasonLogFull {
		return healthErr(f)
	}
	return nil
}

// capacityTTL is how long one reading of Capacity serves appends.
const capacityTTL = 250 * time.Millisecond

// capReading is one reading of the store's capacity.
type capReading struct {
	at          time.Time
	full, known bool
	detail      error
}

// capacityFull reports whether the caller's view of the store (Capacity)
// says it is full, and whether it has one. A reading older than
// capacityTTL is taken again by one appender; the others go on with the
// last one meanwhile (a reading asks the server and the file system).
func (l *Log) capacityFull() (full, known bool, detail error) {
	if l.capacity == nil {
		return false, false, nil
	}
	r := l.cap.Load()
	if r == nil || time.Since(r.at) >= capacityTTL {
		if r == nil {
			l.capMu.Lock() // the first reading: everyone waits for it
		} else if !l.capMu.TryLock() {
			return r.full, r.known, r.detail
		}
		if r = l.cap.Load(); r == nil || time.Since(r.at) >= capacityTTL {
			used, limit, ok := l.capacity()
			known := ok && limit > 0
			r = &capReading{at: time.Now(), known: known, full: known && used >= limit,
				detail: fmt.Errorf("store %d of %d bytes (its limit, or what its disk has left)", used, limit)}
			l.cap.Store(r)
		}
		l.capMu.Unlock()
	}
	return r.full, r.known, r.detail
}

// appended notes an append the stream took: it is not full, and it takes
// writes.
func (l *Log) appended() {
	if f := l.lastPub.Load(); f != nil && l.lastPub.CompareAndSwap(f, nil) {
		l.log.Info("the event log takes writes again", "was", f.Reason)
	}
	if f := l.health.Load(); f != nil && f.Reason == ReasonLogFull {
		l.clearHealth(f)
	}
}

func healthErr(f *Failure) error {
	if f.Reason == ReasonLogFull {
		return &wh.Error{Code: wh.EStorageFull, Reason: f.Reason, Message: "the event log's storage is full: nothing can be saved until an operator frees space", Err: f.Err}
	}
	return &wh.Error{Code: wh.EUnavailable, Reason: f.Reason, Message: "the event log is unavailable (a NATS cluster without quorum, or NATS down): try again when it is back", Err: f.Err}
}

// Append publishes ev, waits for the stream's ack and for the local
// projection to apply it, and returns its sequence and the apply outcome.
// Appending an event whose id the stream saw within DedupWindow returns the
// first append's sequence and outcome.
func (l *Log) Append(ctx context.Context, ev chat.Event, opts ...AppendOption) (uint64, error) {
	if err := l.writeErr(); err != nil {
		return 0, err
	}
	data, err := json.Marshal(ev)
	if err != nil {
		return 0, wh.Wrap(err, "encode event")
	}
	ch := make(chan error, 1)
	l.mu.Lock()
	l.waiters[ev.ID] = ch
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		if l.waiters[ev.ID] == ch {
			delete(l.waiters, ev.ID)
		}
		l.mu.Unlock()
	}()
	l.inflight.Add(1)
	ack, err := l.publish(ctx, subject(ev, opts), ev, data)
	if err != nil {
		l.inflight.Add(-1)
		return 0, l.publishErr(err)
	}
	l.appended()
	// In this order, a projector looking for it sees the append in flight,
	// or acknowledged (and waits for its entry), or its entry.
	l.noteAcked(ack.Sequence)
	l.inflight.Add(-1)
	if !ack.Duplicate {
		l.local.put(Entry{Seq: ack.Sequence, Data: data, Subject: subject(ev, opts), MsgID: ev.ID})
	}
	if ack.Duplicate {
		// Appended before under the same id: answer as the first time.
		if err := l.WaitApplied(ctx, ack.Sequence); err != nil {
			return ack.Sequence, err
		}
		if rerr, ok := l.p.Refusal(ctx, ev.ID); ok {
			return ack.Sequence, rerr
		}
		return ack.Sequence, nil
	}
	select {
	case err := <-ch:
		return ack.Sequence, err
	case <-ctx.Done():
		return ack.Sequence, wh.Errorf(wh.EUnavailable, "the change was recorded but not yet applied; reload to see it")
	}
}

// noteAcked raises acked to seq.
func (l *Log) noteAcked(seq uint64) {
	for {
		cur := l.acked.Load()
		if seq <= cur || l.acked.CompareAndSwap(cur, seq) {
			return
		}
	}
}

// Record publishes ev and waits only for the stream's ack: the change is
// durable and ordered before anything appended after it, but the caller
// does not wait for the projection (nor learn whether apply refused it).
func (l *Log) Record(ctx context.Context, ev chat.Event) (uint64, error) {
	if err := l.writeErr(); err != nil {
		return 0, err
	}
	data, err := json.Marshal(ev)
	if err != nil {
		return 0, wh.Wrap(err, "encode event")
	}
	ack, err := l.publish(ctx, SubjectPrefix+ev.Type, ev, data)
	if err != nil {
		return 0, l.publishErr(err)
	}
	l.appended()
	l.noteAcked(ack.Sequence)
	return ack.Sequence, nil
}

// errDuplicateInProcess: another publisher (another hub node noticing the
// same thing) is storing an event with this id right now.
const errDuplicateInProcess jetstream.ErrorCode = 10158

// publish publishes ev. When another node is storing the same event id at
// that moment, it asks again shortly: the answer is then the duplicate's
// ack, as for any retry.
func (l *Log) publish(ctx context.Context, subject string, ev chat.Event, data []byte) (*jetstream.PubAck, error) {
	for wait := 20 * time.Millisecond; ; wait *= 2 {
		msg := &nats.Msg{Subject: subject, Data: data, Header: nats.Header{}}
		if l.auth != nil {
			msg.Header.Set(MACHeader, l.auth.MAC(subject, ev.ID, data))
		}
		ack, err := l.js.PublishMsg(ctx, msg, jetstream.WithMsgID(ev.ID))
		var apiErr *jetstream.APIError
		if err == nil || !errors.As(err, &apiErr) || apiErr.ErrorCode != errDuplicateInProcess || wait > time.Second {
			return ack, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(wait):
		}
	}
}

// publishErr says which: storage full (507) or the log unavailable (503).
func (l *Log) publishErr(err error) error {
	f := classify(err)
	if f.Reason == ReasonLogFull {
		l.setHealth(f)
	} else if old := l.lastPub.Swap(f); old == nil {
		// Not ready from this moment; writes are still tried (the next
		// one that succeeds makes the node ready again).
		l.log.Error("an append failed: the event log cannot take writes", "reason", f.Reason, "err", err)
	}
	return healthErr(f)
}

// JetStream error codes (nats-server's jetstream_errors_generated.go) that
// mean the store cannot take more.
const (
	errInsufficientResources jetstream.ErrorCode = 10023
	errMemoryExceeded        jetstream.ErrorCode = 10028
	errStorageExceeded       jetstream.ErrorCode = 10047
	errStoreFailed           jetstream.ErrorCode = 10077
)

// classify maps a JetStream error to a Failure.
func classify(err error) *Failure {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode {
		case errInsufficientResources, errMemoryExceeded, errStorageExceeded, errStoreFailed:
			return &Failure{Reason: ReasonLogFull, Err: err}
		}
	}
	if errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount) || errors.Is(err, jetstream.ErrJetStreamNotEnabled) {
		// The server turns JetStream off when its store hits its limits.
		return &Failure{Reason: ReasonLogFull, Err: err}
	}
	return &Failure{Reason: ReasonUnavailable, Err: err}
}

// watchStream keeps health current: a store that cannot take writes, or a
// cluster without quorum, makes the hub not ready with the reason.
func (l *Log) watchStream() {
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		l.checkStream(ctx)
		cancel()
	}
}

func (l *Log) checkStream(ctx context.Context) {
	pre := l.lastPub.Load()
	info, err := l.stream.Info(ctx)
	if err == nil {
		err = quorumErr(info.Cluster)
	}
	if err != nil {
		l.setHealth(classify(err))
		return
	}
	if pre != nil {
		// The stream answered after that append failed: it was passing.
		// (A failure during the probe is another one, and stands.)
		l.lastPub.CompareAndSwap(pre, nil)
	}
	full, known, detail := l.storeFull(ctx)
	old := l.health.Load()
	switch {
	case full:
		l.setHealth(&Failure{Reason: ReasonLogFull, Err: detail})
	case old == nil:
	case old.Reason == ReasonLogFull && !known:
		// Nothing here can tell whether there is room again; the next
		// append that succeeds does.
	default:
		l.clearHealth(old)
	}
}

// setHealth records why the stream cannot take writes, and says so when
// the reason changes.
func (l *Log) setHealth(f *Failure) {
	if old := l.health.Swap(f); old == nil || old.Reason != f.Reason {
		l.log.Error("the event log cannot take writes", "reason", f.Reason, "err", f.Err)
	}
}

// clearHealth ends the failure old, unless another has replaced it.
func (l *Log) clearHealth(old *Failure) {
	if l.health.CompareAndSwap(old, nil) {
		l.log.Info("the event log takes writes again", "was", old.Reason)
	}
}

// quorumErr says why a replicated stream cannot take writes: no leader, or
// fewer than a majority of its replicas online. (A replica of a stream
// without a leader answers stream info itself, so an answer alone does
// not mean the stream takes writes.)
func quorumErr(ci *jetstream.ClusterInfo) error {
	if ci == nil || len(ci.Replicas) == 0 {
		return nil // one replica
	}
	if ci.Leader == "" {
		return errors.New("the event stream has no leader: the NATS cluster lost quorum")
	}
	up, all := 1, 1+len(ci.Replicas)
	for _, r := range ci.Replicas {
		if !r.Offline {
			up++
		}
	}
	if up <= all/2 {
		return fmt.Errorf("only %d of the event stream's %d replicas are online", up, all)
	}
	return nil
}

// storeFull reports whether the event store is at its limit, and whether
// that is known (a limit the hub can see: the embedded server's, or the
// account's).
func (l *Log) storeFull(ctx context.Context) (full, known bool, detail error) {
	if full, known, detail := l.capacityFull(); known {
		return full, true, detail
	}
	ai, err := l.js.AccountInfo(ctx)
	if err == nil && ai.Limits.MaxStore > 0 {
		return ai.Store >= uint64(ai.Limits.MaxStore), true, fmt.Errorf("store %d of %d bytes (account limit)", ai.Store, ai.Limits.MaxStore)
	}
	return false, false, nil
}

// Group commit: the projector applies every event waiting for it in one
// transaction (a commit costs more than several events). It also waits a
// moment (batchLinger at most) while this node has appends on their way:
// published and not yet acknowledged, or acknowledged and not yet here.
// Under load that keeps batches large; alone, an append's event is there
// before the projector looks, and nothing waits.
const (
	maxBatch    = 512
	batchLinger = 300 * time.Microsecond
)

// localEntries are events this node appended, handed to the projector as
// soon as the stream acknowledged them, so it need not wait for the
// consumer to bring them (a hop after the acknowledgement). The consumer
// stays the truth: it brings every event, in order, and the projector
// takes an event from here only when it is the very next sequence, so
// what is applied and its order do not change. Bounded: past localMax
// events (a stalled projector), appends leave it to the consumer.
type localEntries struct {
	mu      sync.Mutex
	m       map[uint64]Entry
	next    uint64        // the sequence the projector asked for last
	sweepAt int           // size at which put drops entries older than next
	wake    chan struct{} // a token when an entry arrives
}

const localMax = 4096

// init starts taking entries (before the projector runs); until then put
// drops them.
func (q *localEntries) init() {
	q.mu.Lock()
	q.m, q.sweepAt = map[uint64]Entry{}, 64
	q.mu.Unlock()
}

func (q *localEntries) put(e Entry) {
	seq := e.Seq
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.m == nil {
		return
	}
	if len(q.m) >= q.sweepAt {
		// Entries the consumer brought first stay until a sweep; sweeping
		// when the map has doubled keeps it amortized O(1) per append.
		for s := range q.m {
			if s < q.next {
				delete(q.m, s)
			}
		}
		q.sweepAt = max(64, 2*len(q.m))
	}
	if len(q.m) >= localMax || seq < q.next {
		return
	}
	q.m[seq] = e
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// take removes and returns the entry for seq, the projector's next.
func (q *localEntries) take(seq uint64) (Entry, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.next = seq
	e, ok := q.m[seq]
	if ok {
		delete(q.m, seq)
	}
	return e, ok
}

func (l *Log) project() {
	defer close(l.done)
	if l.hold != nil {
		select {
		case <-l.hold:
		case <-l.stop:
			return
		}
	}
	batch := make([]Entry, 0, maxBatch)
	linger := time.NewTimer(time.Hour)
	linger.Stop()
	next := l.applied.Load() + 1 // the sequence the projector needs next
	// add appends e if it is the next event (the consumer's order decides
	// what is next: it delivers every event of the stream in order, so one
	// past next means the sequences between do not exist).
	add := func(e Entry) {
		if e.Seq >= next {
			batch = append(batch, e)
			next = e.Seq + 1
		}
	}
	// poll adds what is waiting, without blocking.
	poll := func() bool {
		if e, ok := l.local.take(next); ok {
			add(e)
			return true
		}
		select {
		case m := <-l.in:
			add(l.entry(m))
			return true
		default:
			return false
		}
	}
	for {
		for len(batch) == 0 {
			if poll() {
				continue
			}
			select {
			case m := <-l.in:
				add(l.entry(m))
			case <-l.local.wake:
			case <-l.stop:
				return
			}
		}
		lingering := false
	fill:
		for len(batch) < maxBatch {
			if poll() {
				continue
			}
			if l.acked.Load() < next && l.inflight.Load() == 0 {
				break // nothing this node appended is on its way
			}
			if !lingering {
				lingering = true
				linger.Reset(batchLinger)
			}
			select {
			case m := <-l.in:
				add(l.entry(m))
			case <-l.local.wake:
			case <-linger.C:
				lingering = false
				break fill
			case <-l.stop:
				return
			}
		}
		if lingering && !linger.Stop() {
			<-linger.C
		}
		if !l.applyRetrying(batch) {
			return
		}
		batch = batch[:0]
	}
}

// entry is a message of the stream as the projector takes it, checked
// against the hub's event key. (An entry this node appended, which the
// projector may take before the consumer brings it, was made here: it is
// the one the stream holds at its sequence.)
func (l *Log) entry(m jetstream.Msg) Entry {
	var seq uint64
	if md, err := m.Metadata(); err == nil {
		seq = md.Sequence.Stream
	}
	e, mac := entryOf(m, seq)
	if l.auth != nil {
		if e.Unauthentic = l.auth.Check(e, mac); e.Unauthentic != nil {
			l.forged.Add(1)
			l.log.Error("an entry of the event log is not the hub's own event: refused", "seq", seq, "subject", e.Subject, "err", e.Unauthentic)
		}
	}
	return e
}

func entryOf(m jetstream.Msg, seq uint64) (Entry, string) {
	e := Entry{Seq: seq, Data: m.Data(), Subject: m.Subject()}
	var mac string
	if h := m.Headers(); h != nil {
		e.MsgID, mac = h.Get(nats.MsgIdHdr), h.Get(MACHeader)
	}
	return e, mac
}

// Authentic says whether m, a message of the stream another consumer
// received (the hub's router), is the hub's own event: nil, or why not.
func (l *Log) Authentic(m jetstream.Msg) error {
	if l.auth == nil {
		return nil
	}
	md, err := m.Metadata()
	if err != nil {
		return err
	}
	e, mac := entryOf(m, md.Sequence.Stream)
	return l.auth.Check(e, mac)
}

// Forged is how many entries this node found not to be the hub's own
// (refused by the projector, never applied).
func (l *Log) Forged() uint64 { return l.forged.Load() }

// applyRetrying applies a batch, retrying with backoff while it fails: the
// projector never skips an event. It returns false when the log stops.
func (l *Log) applyRetrying(batch []Entry) bool {
	// Drop redeliveries after a consumer reset.
	cur := l.applied.Load()
	keep := batch[:0]
	for _, e := range batch {
		if e.Seq > cur {
			keep = append(keep, e)
			cur = e.Seq
		}
	}
	if len(keep) == 0 {
		return true
	}
	wait := l.retry
	for {
		outs, feed, err := l.p.Apply(context.Background(), keep)
		if err == nil {
			if l.failed.Swap(nil) != nil {
				l.log.Info("projection resumed", "seq", keep[len(keep)-1].Seq)
			}
			l.batches.Add(1)
			l.events.Add(uint64(len(keep)))
			l.deliver(keep[len(keep)-1].Seq, outs, feed)
			return true
		}
		f := &Failure{Reason: ReasonProjection, Err: err}
		if l.failed.Swap(f) == nil {
			l.log.Error("projection stopped; retrying", "seq", keep[0].Seq, "err", err)
		}
		// Changes already in the stream will be applied once the projector
		// recovers: their writers learn that, not "try again" (a retry
		// would record them twice).
		l.mu.Lock()
		for id, w := range l.waiters {
			w <- &wh.Error{Code: wh.EUnavailable, Reason: ReasonProjection, Message: "the change was recorded, but this hub cannot apply changes right now (its database refused a write; it retries on its own): it appears once the hub recovers, so do not send it again", Err: err}
			delete(l.waiters, id)
		}
		l.mu.Unlock()
		select {
		case <-l.stop:
			return false
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Minute)
	}
}

// deliver hands the batch's feed to the subscribers (the node's caches and
// live clients) first, and only then counts the batch applied and answers
// the writers waiting for it: a writer that learns its change was applied
// finds this node's caches current (a logout that returned is a session
// this node no longer accepts).
func (l *Log) deliver(seq uint64, outs []Outcome, feed []chat.FeedItem) {
	l.mu.Lock()
	subs := l.onFeed
	l.mu.Unlock()
	if len(feed) > 0 {
		for _, f := range subs {
			f(feed)
		}
	}
	l.applied.Store(seq)
	l.mu.Lock()
	for _, o := range outs {
		if w, ok := l.waiters[o.ID]; ok {
			w <- o.Err
			delete(l.waiters, o.ID)
		}
	}
	close(l.notify)
	l.notify = make(chan struct{})
	l.mu.Unlock()
}
