package store

import (
	"context"
	"database/sql"
)

// The projector indexes the messages a transaction posts in one statement,
// just before the commit, instead of one trigger run per message: FTS5
// writes its pending entries to disk at every statement savepoint of the
// transaction, and the per-message insert made a new index segment (and
// the merges after it) for every message.
//
// The index is external content: deleting or replacing a row's entry (the
// triggers of an edit or a deletion) needs the entry there. So the batch's
// new messages are indexed before any statement that changes a message's
// text (beforeTextChangeTx), as well as before the commit.

// ftsPending is the range of message ids (message id = event sequence, so
// a transaction's new messages are the only rows in it) this transaction
// inserted and has not indexed yet; lo == 0: none.
type ftsPending struct{ lo, hi int64 }

// notePostedTx records that message id was inserted by this transaction.
func notePostedTx(ctx context.Context, id int64) {
	db, _ := ctx.Value(applyDBKey{}).(*DB)
	if db == nil {
		return
	}
	if db.fts.lo == 0 {
		db.fts.lo = id
	}
	db.fts.hi = id
}

// indexPendingTx indexes this transaction's messages not indexed yet.
func indexPendingTx(ctx context.Context, tx *sql.Tx) error {
	db, _ := ctx.Value(applyDBKey{}).(*DB)
	if db == nil || db.fts.lo == 0 {
		return nil
	}
	if _, err := execTx(ctx, tx, `INSERT INTO messages_fts (rowid, text) SELECT id, text FROM messages WHERE id BETWEEN ? AND ?`,
		db.fts.lo, db.fts.hi); err != nil {
		return err
	}
	db.fts = ftsPending{}
	return nil
}

// beforeTextChangeTx is called before a statement changes message id's
// text: its triggers replace the message's index entry, which must be
// there. Only a message this transaction posted may lack it; indexing the
// pending messages for any other would only cut the batch's index into
// more segments.
func beforeTextChangeTx(ctx context.Context, tx *sql.Tx, id int64) error {
	db, _ := ctx.Value(applyDBKey{}).(*DB)
	if db == nil || db.fts.lo == 0 || id < db.fts.lo || id > db.fts.hi {
		return nil
	}
	return indexPendingTx(ctx, tx)
}
