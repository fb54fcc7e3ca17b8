package store

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"

	wh "github.com/wheelhouse-dev/wheelhouse"
)

// Snapshot writes a consistent copy of the read model to path (SQLite's
// VACUUM INTO: a read transaction, so the projector goes on writing) and
// returns the stream sequence the copy has applied. path must not exist.
func (s *Store) Snapshot(ctx context.Context, path string) (uint64, error) {
	if _, err := s.db.r.ExecContext(ctx, `VACUUM INTO ?`, path); err != nil {
		return 0, wh.Wrap(err, "write a snapshot of the database to %s", path)
	}
	seq, _, err := Position(ctx, path)
	return seq, err
}

// Position reads, without changing it, the stream sequence a database
// file has applied and the id of its stream's first event.
func Position(ctx context.Context, path string) (applied uint64, identity string, err error) {
	if _, err := os.Stat(path); err != nil {
		return 0, "", wh.Wrap(err, "open database %s", path)
	}
	db, err := sql.Open("sqlite", "file:"+filepath.ToSlash(path)+"?mode=ro&_pragma=busy_timeout(10000)")
	if err != nil {
		return 0, "", wh.Wrap(err, "open database %s", path)
	}
	defer db.Close()
	if err := db.QueryRowContext(ctx, `SELECT applied_seq, first_event FROM projection WHERE id = 1`).Scan(&applied, &identity); err != nil {
		return 0, "", wh.Wrap(err, "read the projection position of %s", path)
	}
	return applied, identity, nil
}

// CopyDatabase writes a consistent copy of the database file src, which a
// running hub may be writing, to dst (VACUUM INTO on a read-only
// connection) and returns the stream sequence the copy has applied.
func CopyDatabase(ctx context.Context, src, dst string) (uint64, error) {
	if _, err := os.Stat(src); err != nil {
		return 0, wh.Wrap(err, "open database %s", src)
	}
	db, err := sql.Open("sqlite", "file:"+filepath.ToSlash(src)+"?mode=ro&_pragma=busy_timeout(10000)")
	if err != nil {
		return 0, wh.Wrap(err, "open database %s", src)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `VACUUM INTO ?`, dst); err != nil {
		return 0, wh.Wrap(err, "copy the database %s to %s", src, dst)
	}
	seq, _, err := Position(ctx, dst)
	return seq, err
}
