package store

import (
	"context"
	"database/sql"
	"errors"

	wh "github.com/wheelhouse-dev/wheelhouse"
)

// ErrBridgeEventRecorded refuses a bridge event the projection has
// already applied (a retry from the bridge's outbox): the first one
// stands.
var ErrBridgeEventRecorded = &wh.Error{Code: wh.EConflict, Message: "the hub already recorded this bridge event", Reason: "duplicate"}

// claimBridgeEventTx records that the event seq applies bridge event id
// ("" for events that came from no bridge), refusing a second one.
func claimBridgeEventTx(ctx context.Context, tx *sql.Tx, id string, seq uint64) error {
	if id == "" {
		return nil
	}
	var n int
	if err := queryRowTx(ctx, tx, `SELECT COUNT(*) FROM bridge_events WHERE id = ?`, id).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return ErrBridgeEventRecorded
	}
	_, err := execTx(ctx, tx, `INSERT INTO bridge_events (id, seq) VALUES (?, ?)`, id, seq)
	return err
}

// BridgeEventRecorded reports whether the projection has applied bridge
// event id.
func (s *Store) BridgeEventRecorded(ctx context.Context, id string) (bool, error) {
	var seq int64
	err := s.db.r.QueryRowContext(ctx, `SELECT seq FROM bridge_events WHERE id = ?`, id).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}
