package store

import (
	"context"
	"database/sql"
)

// The projector's statements are prepared on the writer connection the
// first time they are used: parsing SQL is a large share of a small
// statement's cost in SQLite. A statement seen for the first time inside a
// transaction runs unprepared (the transaction holds the writer's one
// connection) and is prepared right after the commit.

type applyDBKey struct{}

// withApplyDB marks ctx as the projector's, so the helpers below can find
// the writer's prepared statements.
func withApplyDB(ctx context.Context, db *DB) context.Context {
	return context.WithValue(ctx, applyDBKey{}, db)
}

// preparedTx returns q prepared on the writer and bound to tx, or nil
// when it is not prepared yet (it will be after this transaction).
func preparedTx(ctx context.Context, tx *sql.Tx, q string) *sql.Stmt {
	db, _ := ctx.Value(applyDBKey{}).(*DB)
	if db == nil {
		return nil
	}
	db.mu.Lock()
	st, ok := db.wstmts[q]
	if !ok {
		if db.wanted == nil {
			db.wanted = map[string]struct{}{}
		}
		db.wanted[q] = struct{}{}
	}
	db.mu.Unlock()
	if !ok {
		return nil
	}
	return tx.StmtContext(ctx, st)
}

// prepareWanted prepares the statements first seen in the last
// transaction; the writer's connection is free again.
func (db *DB) prepareWanted(ctx context.Context) {
	db.mu.Lock()
	defer db.mu.Unlock()
	for q := range db.wanted {
		if st, err := db.w.PrepareContext(ctx, q); err == nil {
			db.wstmts[q] = st
		}
		delete(db.wanted, q)
	}
}

func execTx(ctx context.Context, tx *sql.Tx, q string, args ...any) (sql.Result, error) {
	if st := preparedTx(ctx, tx, q); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return tx.ExecContext(ctx, q, args...)
}

func queryRowTx(ctx context.Context, tx *sql.Tx, q string, args ...any) *sql.Row {
	if st := preparedTx(ctx, tx, q); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return tx.QueryRowContext(ctx, q, args...)
}

func queryTx(ctx context.Context, tx *sql.Tx, q string, args ...any) (*sql.Rows, error) {
	if st := preparedTx(ctx, tx, q); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return tx.QueryContext(ctx, q, args...)
}
