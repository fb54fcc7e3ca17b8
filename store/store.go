package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync/atomic"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/chat"
	"github.com/wheelhouse-dev/wheelhouse/eventlog"
)

// DBFile is the SQLite file name under the data directory.
const DBFile = "wheelhouse.db"

// Store is the hub's SQLite read model: it applies the event log (it is the
// log's Projector) and answers the queries of the room rules and the API.
type Store struct {
	db       *DB
	logger   *slog.Logger
	appliers map[string]applier
	recent   recentSteers // pending steers of messages just applied, for the router
	// savepointRuns counts batches applied a second time, with a savepoint
	// per event, because an event in them was refused.
	savepointRuns atomic.Uint64
}

// SavepointRuns is how many batches were applied again with a savepoint
// per event because one of their events was refused.
func (s *Store) SavepointRuns() uint64 { return s.savepointRuns.Load() }

var _ eventlog.Projector = (*Store)(nil)

// Open opens (creating and migrating) the read model in dataDir; walLimit
// bounds its write-ahead log (0: DefaultWALLimit).
func Open(ctx context.Context, dataDir string, logger *slog.Logger, walLimit int64) (*Store, error) {
	if logger == nil {
		logger = slog.Default()
	}
	db, err := OpenDB(ctx, filepath.Join(dataDir, DBFile), walLimit)
	if err != nil {
		return nil, err
	}
	s := &Store{db: db, logger: logger, appliers: map[string]applier{}}
	s.registerCoreAppliers()
	s.registerAgentAppliers()
	s.registerChatAppliers()
	s.registerPeopleAppliers()
	s.registerOwnerAppliers()
	return s, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// DB is the store's database (its WAL's size and bound, for metrics).
func (s *Store) DB() *DB { return s.db }

// AppliedSeq is the last stream sequence projected into this database.
func (s *Store) AppliedSeq(ctx context.Context) (uint64, error) { return s.db.AppliedSeq(ctx) }

// Identity is the id of the stream's first event, as recorded when it was
// applied ("" before that).
func (s *Store) Identity(ctx context.Context) (string, error) {
	var id string
	err := s.db.r.QueryRowContext(ctx, `SELECT first_event FROM projection WHERE id = 1`).Scan(&id)
	return id, err
}

// Refusal returns how the event with this id was refused, if it was.
func (s *Store) Refusal(ctx context.Context, eventID string) (error, bool) {
	var code, msg, reason string
	err := s.db.r.QueryRowContext(ctx, `SELECT code, message, reason FROM refusals WHERE event_id = ?`, eventID).Scan(&code, &msg, &reason)
	if err != nil {
		return nil, false
	}
	return &wh.Error{Code: code, Message: msg, Reason: reason}, true
}

// Apply implements eventlog.Projector: one transaction for the batch. A
// refusal (a *wh.Error that is not internal, or a constraint failure, both
// decided the same way on every node) rolls back that event alone and is
// recorded; any other error fails the batch.
//
// Refusals are rare (the API checks before it appends; the projector
// re-checks against races), and a savepoint per event is not free: FTS5
// writes its pending index entries to disk at every savepoint release, a
// new index segment for every message. So the batch is applied first
// without savepoints; if an event is refused, that transaction is rolled
// back and the batch applied again with a savepoint per event. Both runs
// apply the same events to the same state in the same order, so they
// decide the same outcomes.
func (s *Store) Apply(ctx context.Context, batch []eventlog.Entry) ([]eventlog.Outcome, []chat.FeedItem, error) {
	defer s.db.prepareWanted(ctx) // after the rollbacks: the connection is free
	defer s.db.boundWAL(ctx)      // after the commit: the projector's turn
	outs, feed, err := s.applyBatch(ctx, batch, false)
	if errors.Is(err, errRefusedInBatch) {
		s.savepointRuns.Add(1)
		outs, feed, err = s.applyBatch(ctx, batch, true)
	}
	return outs, feed, err
}

// errRefusedInBatch stops a run without savepoints at its first refusal.
var errRefusedInBatch = errors.New("an event of the batch was refused")

// applyBatch applies batch in one transaction, with a savepoint around
// each event when savepoints is set; without them, a refusal rolls the
// whole transaction back and returns errRefusedInBatch.
func (s *Store) applyBatch(ctx context.Context, batch []eventlog.Entry, savepoints bool) ([]eventlog.Outcome, []chat.FeedItem, error) {
	tx, err := s.db.w.BeginTx(ctx, nil)
	if err != nil {
		return nil, nil, err
	}
	defer tx.Rollback()
	ctx = withApplyDB(ctx, s.db)
	s.db.members.begin()
	s.db.fts = ftsPending{}
	var feed []chat.FeedItem
	outs := make([]eventlog.Outcome, 0, len(batch))
	exec := func(q string) error {
		_, err := s.db.txStmt(ctx, tx, q).ExecContext(ctx)
		return err
	}
	for _, e := range batch {
		if e.Unauthentic != nil {
			// Not the hub's own event (no valid MAC: a stray or forged
			// publish on a log subject): never applied, recorded as refused
			// under no event id (the id in its body is the forger's word).
			if err := refuseTx(ctx, tx, e.Seq, "", unauthentic(e.Unauthentic)); err != nil {
				return nil, nil, err
			}
			continue
		}
		var ev chat.Event
		if err := json.Unmarshal(e.Data, &ev); err != nil {
			// Deterministic: the same bytes fail the same way on every
			// node. Nothing was written for it, so no savepoint is needed.
			s.logger.Error("refused an undecodable event", "seq", e.Seq, "err", err)
			if err := refuseTx(ctx, tx, e.Seq, "", wh.Errorf(wh.EInvalid, "undecodable event")); err != nil {
				return nil, nil, err
			}
			continue
		}
		if e.MsgID != "" && e.MsgID != ev.ID {
			s.logger.Error("refused an event whose message id is not its own", "seq", e.Seq, "msgId", e.MsgID, "id", ev.ID)
			if err := refuseTx(ctx, tx, e.Seq, "", unauthentic(wh.Errorf(wh.EForbidden, "the event's message id is not its id"))); err != nil {
				return nil, nil, err
			}
			continue
		}
		s.db.members.applying(ev.Type)
		if e.Seq == 1 {
			if _, err := execTx(ctx, tx, `UPDATE projection SET first_event = ? WHERE id = 1`, ev.ID); err != nil {
				return nil, nil, err
			}
		}
		fts := s.db.fts // what ROLLBACK TO puts back: messages before this event not indexed
		if savepoints {
			if err := exec(sqlSavepoint); err != nil {
				return nil, nil, err
			}
		}
		notes := &pendingNotes{seq: int64(e.Seq), recent: &s.recent}
		ectx := context.WithValue(context.WithValue(ctx, feedCounterKey{}, &feedCounter{}), pendingNotesKey{}, notes)
		items, aerr := s.applyEvent(ectx, tx, e.Seq, ev)
		refusal, err := asRefusal(aerr)
		if err != nil {
			return nil, nil, fmt.Errorf("apply event %d (%s): %w", e.Seq, ev.Type, err)
		}
		if refusal != nil && notes.published {
			// Cannot happen (decidedTx comes after the last refusal an
			// applier makes); should it, the router must not act on it.
			s.recent.forget(int64(e.Seq))
			s.logger.Error("an event was refused after its steers were decided", "seq", e.Seq, "type", ev.Type, "err", aerr)
		}
		if refusal != nil && !savepoints {
			return nil, nil, errRefusedInBatch // rolled back by the deferred Rollback
		}
		if refusal != nil {
			if _, err := execTx(ctx, tx, `ROLLBACK TO ev`); err != nil {
				return nil, nil, err
			}
			s.db.fts = fts
			if IsConstraint(aerr) {
				s.logger.Error("event refused by a database constraint", "seq", e.Seq, "type", ev.Type, "err", aerr)
			}
			if err := refuseTx(ctx, tx, e.Seq, ev.ID, refusal); err != nil {
				return nil, nil, err
			}
		} else {
			feed = append(feed, items...)
			notes.publish() // if the applier did not
		}
		if savepoints {
			if err := exec(sqlRelease); err != nil {
				return nil, nil, err
			}
		}
		var oerr error
		if refusal != nil {
			oerr = refusal
		}
		outs = append(outs, eventlog.Outcome{ID: ev.ID, Err: oerr})
	}
	if err := indexPendingTx(ctx, tx); err != nil {
		return nil, nil, err
	}
	if _, err := execTx(ctx, tx, `UPDATE projection SET applied_seq = ? WHERE id = 1`, batch[len(batch)-1].Seq); err != nil {
		return nil, nil, err
	}
	if err := tx.Commit(); err != nil {
		return nil, nil, err
	}
	return outs, feed, nil
}

// asRefusal sorts an applier's error: nil; a refusal (the same on every
// node); or an error that must stop the projector (I/O, disk full, busy).
func asRefusal(err error) (*wh.Error, error) {
	if err == nil {
		return nil, nil
	}
	var we *wh.Error
	if errors.As(err, &we) && we.Code != wh.EInternal {
		return we, nil
	}
	if IsConstraint(err) {
		return &wh.Error{Code: wh.EConflict, Message: "the change conflicts with the current state", Err: err}, nil
	}
	return nil, err
}

// IsConstraint reports a SQLite constraint failure (deterministic for a
// given event and projection), by its result code.
func IsConstraint(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_CONSTRAINT
}

// unauthentic is the refusal of an entry that is not the hub's own event.
func unauthentic(err error) *wh.Error {
	var we *wh.Error
	if errors.As(err, &we) {
		return we
	}
	return &wh.Error{Code: wh.EForbidden, Reason: eventlog.ReasonUnauthentic, Message: err.Error()}
}

// refuseTx records a refused event, so a duplicate append of the same id
// learns the first outcome.
func refuseTx(ctx context.Context, tx *sql.Tx, seq uint64, eventID string, e *wh.Error) error {
	_, err := execTx(ctx, tx, `INSERT INTO refusals (seq, event_id, code, message, reason) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
		seq, eventID, e.Code, wh.ErrorMessage(e), e.Reason)
	return err
}
