package store

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver (pure Go, no cgo)

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/migrations"
)

// DB is the hub's SQLite read model: one writer connection (the projector)
// and a pool of readers, WAL mode, foreign keys on.
type DB struct {
	Path string
	w    *sql.DB // single writer
	r    *sql.DB // read pool

	done, stopped chan struct{} // the checkpointer's stop signal and its exit
	closeOnce     sync.Once
	walLimit      int64         // the WAL size past which a checkpoint truncates it
	truncations   atomic.Uint64 // truncating checkpoints run
	walBusy       atomic.Uint64 // truncating checkpoints a reader held off
	walNext       time.Time     // the projector's: no truncation before
	ckpt          sync.Mutex    // one checkpoint at a time (a second one fails at once with SQLITE_BUSY)

	mu     sync.Mutex
	stmts  map[string]*sql.Stmt // prepared hot-path reads
	wstmts map[string]*sql.Stmt // the projector's prepared statements
	wanted map[string]struct{}  // the projector's statements to prepare next

	members memberCache // the projector's rooms and members
	fts     ftsPending  // the projector's messages not yet indexed for search
}

// Hot projector statements, prepared once when the database opens: the
// writer has one connection, which a running transaction holds, so they
// cannot be prepared lazily.
const (
	sqlSavepoint     = `SAVEPOINT ev`
	sqlRelease       = `RELEASE ev`
	sqlRoomID        = `SELECT id FROM rooms WHERE name = ?`
	sqlRoomMembers   = `SELECT m.user_id, u.name FROM members m JOIN users u ON u.id = m.user_id WHERE m.room_id = ?`
	sqlInsertMessage = `INSERT INTO messages (id, room_id, author_kind, author, text, mentions, parts, turn_id, kind, created_at, thread_id, files, item_id, partial)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	sqlInsertFeed = `INSERT INTO feed (seq, idx, room_id, user_id, body) VALUES (?, ?, ?, 0, ?)`
)

func (db *DB) prepareWrites(ctx context.Context) error {
	db.wstmts = map[string]*sql.Stmt{}
	for _, q := range []string{sqlSavepoint, sqlRelease, sqlRoomID, sqlRoomMembers, sqlInsertMessage, sqlInsertFeed} {
		st, err := db.w.PrepareContext(ctx, q)
		if err != nil {
			return wh.Wrap(err, "prepare %q", q)
		}
		db.wstmts[q] = st
	}
	return nil
}

// txStmt returns the prepared writer statement q, bound to tx.
func (db *DB) txStmt(ctx context.Context, tx *sql.Tx, q string) *sql.Stmt {
	st, ok := db.wstmts[q]
	if !ok {
		panic(fmt.Sprintf("statement not prepared: %q", q)) // a programming error: add it to prepareWrites
	}
	return tx.StmtContext(ctx, st)
}

// stmt returns a prepared statement on the read pool for q, preparing it
// once (database/sql re-prepares per connection as needed). Parsing SQL is
// most of a hot read's cost in SQLite.
func (db *DB) stmt(ctx context.Context, q string) *sql.Stmt {
	db.mu.Lock()
	defer db.mu.Unlock()
	if st, ok := db.stmts[q]; ok {
		return st
	}
	st, err := db.r.PrepareContext(ctx, q)
	if err != nil {
		panic(fmt.Sprintf("prepare %q: %v", q, err)) // a programming error: the SQL is a constant
	}
	if db.stmts == nil {
		db.stmts = map[string]*sql.Stmt{}
	}
	db.stmts[q] = st
	return st
}

// DefaultWALLimit bounds the SQLite write-ahead log: past it, the
// checkpointer truncates the file (DB.checkpoints).
const DefaultWALLimit = 64 << 20

// OpenDB opens (creating if needed) the database at path and applies the
// embedded migrations. It refuses a database written by a newer binary.
// walLimit bounds the write-ahead log (0: DefaultWALLimit).
func OpenDB(ctx context.Context, path string, walLimit int64) (*DB, error) {
	if walLimit <= 0 {
		walLimit = DefaultWALLimit
	}
	// journal_size_limit trims the WAL to the limit whenever the writer
	// wraps it (after a complete checkpoint); the checkpointer truncates
	// it when it grows past the limit under load, when it never wraps.
	dsn := "file:" + filepath.ToSlash(path) +
		"?_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_pragma=busy_timeout(10000)&_pragma=synchronous(NORMAL)&_pragma=wal_autocheckpoint(0)" +
		"&_pragma=journal_size_limit(" + strconv.FormatInt(walLimit, 10) + ")&_txlock=immediate"
	w, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, wh.Wrap(err, "open database %s", path)
	}
	w.SetMaxOpenConns(1)
	r, err := sql.Open("sqlite", dsn)
	if err != nil {
		w.Close()
		return nil, wh.Wrap(err, "open database %s", path)
	}
	r.SetMaxOpenConns(8)
	r.SetMaxIdleConns(8)
	r.SetConnMaxIdleTime(0)
	db := &DB{Path: path, w: w, r: r, walLimit: walLimit}
	if err := db.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	if err := db.prepareWrites(ctx); err != nil {
		db.Close()
		return nil, err
	}
	db.done, db.stopped = make(chan struct{}), make(chan struct{})
	go db.checkpoints(db.done, db.stopped)
	return db, nil
}

// checkpoints moves the WAL into the database in the background, off the
// projector's commit path (automatic checkpoints would run inside the
// writer's commits and stall the projection for milliseconds). PASSIVE
// never blocks the writer; boundWAL empties what it cannot.
func (db *DB) checkpoints(done <-chan struct{}, stopped chan<- struct{}) {
	defer close(stopped)
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			db.ckpt.Lock()
			db.r.Exec(`PRAGMA wal_checkpoint(PASSIVE)`)
			db.ckpt.Unlock()
		}
	}
}

// walReaderWait is how long a truncating checkpoint waits for readers of
// older snapshots (reads take milliseconds); walRetryAfter how long the
// projector goes on before trying again when one held it off.
const (
	walReaderWait = 100 * time.Millisecond
	walRetryAfter = 500 * time.Millisecond
)

// boundWAL keeps the write-ahead log under walLimit. The projector calls
// it after each commit, on its own goroutine, so the WAL never passes its
// bound by more than one batch.
//
// The background PASSIVE checkpoint does not bound the WAL under a steady
// load: the writer appends while it copies, so the log is never wholly
// copied, never wraps to its start, and grows without bound (gigabytes at
// 100k posts). Once the file passes walLimit, a TRUNCATE checkpoint runs
// on the writer's connection between two transactions: with no writer to
// wait for, it copies only what the last PASSIVE one left (a fraction of a
// second's frames), waits up to walReaderWait for readers of older
// snapshots, and empties the file. The projector waits for that residue
// only, and only when the WAL is past its bound.
func (db *DB) boundWAL(ctx context.Context) {
	if db.WALBytes() <= db.walLimit || time.Now().Before(db.walNext) {
		return
	}
	c, err := db.w.Conn(ctx)
	if err != nil {
		return
	}
	defer c.Close()
	db.ckpt.Lock() // waits for a running PASSIVE one: it leaves less to copy
	defer db.ckpt.Unlock()
	c.ExecContext(ctx, fmt.Sprintf(`PRAGMA busy_timeout = %d`, walReaderWait.Milliseconds()))
	defer c.ExecContext(ctx, `PRAGMA busy_timeout = 10000`)
	var busy, logFrames, copied int
	if err := c.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &logFrames, &copied); err != nil {
		return // closing, or a failing disk: the projector reports that
	}
	db.truncations.Add(1)
	if busy != 0 {
		db.walBusy.Add(1) // a reader held it off: go on, try again shortly
		db.walNext = time.Now().Add(walRetryAfter)
	}
}

// WALBytes is the size of the write-ahead log file (0 when there is none).
func (db *DB) WALBytes() int64 {
	fi, err := os.Stat(db.Path + "-wal")
	if err != nil {
		return 0
	}
	return fi.Size()
}

// WALLimit is the bound the checkpointer keeps the WAL under.
func (db *DB) WALLimit() int64 { return db.walLimit }

// Truncations counts truncating checkpoints, and those a reader held off.
func (db *DB) Truncations() (run, busy uint64) { return db.truncations.Load(), db.walBusy.Load() }

// Close closes both pools.
func (db *DB) Close() error {
	db.closeOnce.Do(func() {
		if db.done != nil {
			close(db.done)
			<-db.stopped
		}
	})
	db.mu.Lock()
	for _, st := range db.stmts {
		st.Close()
	}
	for _, st := range db.wstmts {
		st.Close()
	}
	db.mu.Unlock()
	err1 := db.r.Close()
	err2 := db.w.Close()
	if err1 != nil {
		return err1
	}
	return err2
}

type migration struct {
	version int
	name    string
	sql     string
}

func loadMigrations() ([]migration, error) {
	names, err := fs.Glob(migrations.FS, "*.sql")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, n := range names {
		num, _, ok := strings.Cut(n, "_")
		if !ok {
			return nil, fmt.Errorf("migration %s: name must be NNNN_name.sql", n)
		}
		v, err := strconv.Atoi(num)
		if err != nil {
			return nil, fmt.Errorf("migration %s: %w", n, err)
		}
		b, err := migrations.FS.ReadFile(n)
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: n, sql: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	return out, nil
}

func (db *DB) migrate(ctx context.Context) error {
	ms, err := loadMigrations()
	if err != nil {
		return wh.Wrap(err, "load migrations")
	}
	if _, err := db.w.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL)`); err != nil {
		return wh.Wrap(err, "create schema_migrations")
	}
	var current int
	if err := db.w.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
		return wh.Wrap(err, "read schema version")
	}
	latest := 0
	if len(ms) > 0 {
		latest = ms[len(ms)-1].version
	}
	if current > latest {
		return wh.Errorf(wh.EInvalid, "database %s has schema version %d but this wheelhouse binary knows only up to %d: run a newer wheelhouse (or restore an older data directory)", db.Path, current, latest)
	}
	for _, m := range ms {
		if m.version <= current {
			continue
		}
		tx, err := db.w.BeginTx(ctx, nil)
		if err != nil {
			return wh.Wrap(err, "begin migration %s", m.name)
		}
		if _, err := tx.ExecContext(ctx, m.sql); err != nil {
			tx.Rollback()
			return wh.Wrap(err, "apply migration %s", m.name)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name) VALUES (?, ?)`, m.version, m.name); err != nil {
			tx.Rollback()
			return wh.Wrap(err, "record migration %s", m.name)
		}
		if err := tx.Commit(); err != nil {
			return wh.Wrap(err, "commit migration %s", m.name)
		}
	}
	return nil
}

// AppliedSeq is the last stream sequence projected into this database.
func (db *DB) AppliedSeq(ctx context.Context) (uint64, error) {
	var s uint64
	err := db.r.QueryRowContext(ctx, `SELECT applied_seq FROM projection WHERE id = 1`).Scan(&s)
	return s, err
}
