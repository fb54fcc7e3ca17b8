package room

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	wh "github.com/wheelhouse-dev/wheelhouse"
)

// StreamName and SubjectPrefix name the JetStream stream that is the log.
const (
	StreamName    = "WHEELHOUSE"
	SubjectPrefix = "wh.log."
)

// FeedItem is a projected change that live clients receive. Body is the
// JSON sent to WebSocket clients, serialized once at apply time.
type FeedItem struct {
	Seq        uint64
	Kind       string // the event type ("message", "member.added", …)
	RoomID     int64
	Recipients []int64 // user ids that receive it
	Body       []byte
}

// applyFunc projects one event inside tx. A *wh.Error return means the event
// is refused (a conflict decided the same way on every node) and leaves no
// trace; any other error stops the projector.
type applyFunc func(ctx context.Context, tx *sql.Tx, seq uint64, ev Event) ([]FeedItem, error)

// Log appends events to the stream and projects them, in order, into the DB.
type Log struct {
	js       jetstream.JetStream
	db       *DB
	apply    applyFunc
	log      *slog.Logger
	replicas int

	mu      sync.Mutex
	waiters map[string]chan error
	onFeed  []func([]FeedItem)

	applied  atomic.Uint64
	startSeq uint64 // stream's last seq when we started: ready once applied
	failed   atomic.Pointer[error]
	notify   chan struct{} // closed and replaced on every applied batch
	cons     jetstream.ConsumeContext
	done     chan struct{}
}

// OnFeed registers f to receive feed items after each applied batch, in order.
// Register before Start.
func (l *Log) OnFeed(f func([]FeedItem)) {
	l.mu.Lock()
	l.onFeed = append(l.onFeed, f)
	l.mu.Unlock()
}

func newLog(js jetstream.JetStream, db *DB, apply applyFunc, log *slog.Logger, replicas int) *Log {
	if replicas < 1 {
		replicas = 1
	}
	return &Log{js: js, db: db, apply: apply, log: log, replicas: replicas,
		waiters: map[string]chan error{}, notify: make(chan struct{}), done: make(chan struct{})}
}

// Start ensures the stream exists and begins projecting from the last
// applied sequence.
func (l *Log) Start(ctx context.Context) error {
	st, err := l.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:       StreamName,
		Subjects:   []string{SubjectPrefix + ">"},
		Storage:    jetstream.FileStorage,
		Replicas:   l.replicas,
		Duplicates: 2 * time.Minute,
		MaxMsgSize: 1 << 20,
	})
	if err != nil {
		return wh.Wrap(err, "create the event stream")
	}
	info, err := st.Info(ctx)
	if err != nil {
		return wh.Wrap(err, "read the event stream")
	}
	l.startSeq = info.State.LastSeq
	applied, err := l.db.AppliedSeq(ctx)
	if err != nil {
		return wh.Wrap(err, "read the projection position")
	}
	if applied > info.State.LastSeq {
		return wh.Errorf(wh.EInvalid, "the database has applied event %d but the stream ends at %d: this SQLite file belongs to another stream; move it away and restart to rebuild it", applied, info.State.LastSeq)
	}
	l.applied.Store(applied)
	cons, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		DeliverPolicy: jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:   applied + 1,
	})
	if err != nil {
		return wh.Wrap(err, "create the projection consumer")
	}
	in := make(chan jetstream.Msg, 4096)
	cc, err := cons.Consume(func(m jetstream.Msg) { in <- m })
	if err != nil {
		return wh.Wrap(err, "consume the event stream")
	}
	l.cons = cc
	go l.project(in)
	return nil
}

// Stop stops projecting.
func (l *Log) Stop() {
	if l.cons != nil {
		l.cons.Stop()
	}
}

// Ready reports whether the projection has caught up with the stream as it
// was at start and has not failed.
func (l *Log) Ready() error {
	if p := l.failed.Load(); p != nil {
		return *p
	}
	if l.applied.Load() < l.startSeq {
		return fmt.Errorf("projection catching up: %d of %d", l.applied.Load(), l.startSeq)
	}
	return nil
}

// Applied is the last projected sequence.
func (l *Log) Applied() uint64 { return l.applied.Load() }

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

// Append publishes ev, waits for the stream's ack and for the local
// projection to apply it, and returns its sequence and the apply outcome.
func (l *Log) Append(ctx context.Context, ev Event) (uint64, error) {
	if p := l.failed.Load(); p != nil {
		return 0, wh.Errorf(wh.EUnavailable, "the hub cannot apply changes right now; see its log")
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
		delete(l.waiters, ev.ID)
		l.mu.Unlock()
	}()
	ack, err := l.js.Publish(ctx, SubjectPrefix+ev.Type, data, jetstream.WithMsgID(ev.ID))
	if err != nil {
		return 0, &wh.Error{Code: wh.EUnavailable, Message: "the event log is unavailable; try again", Err: err}
	}
	if ack.Duplicate {
		// Applied before under the same key; its outcome is not known here.
		return ack.Sequence, nil
	}
	select {
	case err := <-ch:
		return ack.Sequence, err
	case <-ctx.Done():
		return ack.Sequence, wh.Errorf(wh.EUnavailable, "the change was recorded but not yet applied; reload to see it")
	}
}

// Record publishes ev and waits only for the stream's ack: the change is
// durable and ordered before anything appended after it, but the caller
// does not wait for the projection (nor learn whether apply refused it).
// For the steer record on the mention path, whose receipt follows it in
// the stream anyway.
func (l *Log) Record(ctx context.Context, ev Event) (uint64, error) {
	if p := l.failed.Load(); p != nil {
		return 0, wh.Errorf(wh.EUnavailable, "the hub cannot apply changes right now; see its log")
	}
	data, err := json.Marshal(ev)
	if err != nil {
		return 0, wh.Wrap(err, "encode event")
	}
	ack, err := l.js.Publish(ctx, SubjectPrefix+ev.Type, data, jetstream.WithMsgID(ev.ID))
	if err != nil {
		return 0, &wh.Error{Code: wh.EUnavailable, Message: "the event log is unavailable; try again", Err: err}
	}
	return ack.Sequence, nil
}

func (l *Log) project(in chan jetstream.Msg) {
	defer close(l.done)
	batch := make([]jetstream.Msg, 0, 512)
	for m := range in {
		batch = append(batch[:0], m)
	drain:
		for len(batch) < cap(batch) {
			select {
			case m2 := <-in:
				batch = append(batch, m2)
			default:
				break drain
			}
		}
		if err := l.applyBatch(batch); err != nil {
			l.log.Error("projection stopped", "err", err)
			e := fmt.Errorf("projection stopped: %w", err)
			l.failed.Store(&e)
			l.mu.Lock()
			for id, w := range l.waiters {
				w <- wh.Errorf(wh.EUnavailable, "the hub cannot apply changes right now; see its log")
				delete(l.waiters, id)
			}
			l.mu.Unlock()
			l.cons.Stop()
			return
		}
	}
}

type outcome struct {
	id  string
	err error
}

func (l *Log) applyBatch(batch []jetstream.Msg) error {
	ctx := context.Background()
	tx, err := l.db.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var feed []FeedItem
	var outs []outcome
	var last uint64
	for _, m := range batch {
		md, err := m.Metadata()
		if err != nil {
			return err
		}
		seq := md.Sequence.Stream
		if seq <= l.applied.Load() || seq <= last {
			continue // redelivery after a consumer reset
		}
		last = seq
		var ev Event
		if err := json.Unmarshal(m.Data(), &ev); err != nil {
			l.log.Warn("skipping undecodable event", "seq", seq, "err", err)
			continue
		}
		if _, err := l.db.txStmt(ctx, tx, sqlSavepoint).ExecContext(ctx); err != nil {
			return err
		}
		items, aerr := l.apply(ctx, tx, seq, ev)
		var we *wh.Error
		switch {
		case aerr == nil:
			feed = append(feed, items...)
		case errors.As(aerr, &we) && we.Code != wh.EInternal, isConstraint(aerr):
			// Refused the same way on every node: the event leaves no trace.
			// (A constraint failure is as deterministic as a domain refusal;
			// stopping the projector on it would wedge every node forever.)
			if we == nil {
				l.log.Error("event refused by a database constraint", "seq", seq, "type", ev.Type, "err", aerr)
				aerr = wh.Wrap(aerr, "the change could not be applied")
			}
			if _, err := tx.ExecContext(ctx, `ROLLBACK TO ev`); err != nil {
				return err
			}
		default:
			return fmt.Errorf("apply event %d (%s): %w", seq, ev.Type, aerr)
		}
		if _, err := l.db.txStmt(ctx, tx, sqlRelease).ExecContext(ctx); err != nil {
			return err
		}
		outs = append(outs, outcome{ev.ID, aerr})
	}
	if last == 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, `UPDATE projection SET applied_seq = ? WHERE id = 1`, last); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	l.applied.Store(last)
	l.mu.Lock()
	for _, o := range outs {
		if w, ok := l.waiters[o.id]; ok {
			w <- o.err
			delete(l.waiters, o.id)
		}
	}
	subs := l.onFeed
	close(l.notify)
	l.notify = make(chan struct{})
	l.mu.Unlock()
	if len(feed) > 0 {
		for _, f := range subs {
			f(feed)
		}
	}
	return nil
}

// isConstraint reports a SQLite constraint failure (deterministic for a
// given event and projection).
func isConstraint(err error) bool {
	return err != nil && strings.Contains(err.Error(), "constraint failed")
}
