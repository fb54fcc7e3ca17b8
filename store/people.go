package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/chat"
)

// ActiveSessions lists a user's sessions that still work at now, newest first.
func (s *Store) ActiveSessions(ctx context.Context, userID int64, now time.Time) ([]chat.Session, error) {
	rows, err := s.db.r.QueryContext(ctx, `SELECT token_hash, created_at, expires_at, client, addr FROM credentials
		WHERE user_id = ? AND kind = 'session' AND revoked = 0 AND expires_at > ? ORDER BY created_at DESC`, userID, ts(now))
	if err != nil {
		return nil, wh.Wrap(err, "list sessions")
	}
	defer rows.Close()
	out := []chat.Session{}
	for rows.Next() {
		var se chat.Session
		var hash, at, exp string
		if err := rows.Scan(&hash, &at, &exp, &se.Client, &se.Addr); err != nil {
			return nil, wh.Wrap(err, "list sessions")
		}
		se.ID = hash[:16]
		se.CreatedAt, _ = time.Parse(time.RFC3339Nano, at)
		se.ExpiresAt, _ = time.Parse(time.RFC3339Nano, exp)
		out = append(out, se)
	}
	return out, rows.Err()
}

// SessionHash finds the stored hash of one of a user's live sessions by its
// id (the hash's first 16 hex characters).
func (s *Store) SessionHash(ctx context.Context, userID int64, id string) (string, error) {
	var hash string
	err := s.db.r.QueryRowContext(ctx, `SELECT token_hash FROM credentials
		WHERE user_id = ? AND kind = 'session' AND revoked = 0 AND substr(token_hash, 1, 16) = ?`, userID, id).Scan(&hash)
	if errors.Is(err, sql.ErrNoRows) {
		return "", wh.Errorf(wh.ENotFound, "you have no session %s (it may have ended already)", id)
	}
	if err != nil {
		return "", wh.Wrap(err, "find session")
	}
	return hash, nil
}

// PasswordReset is a reset code as stored (by its hash).
type PasswordReset struct {
	User    string
	Expires time.Time
	Used    bool
}

// PasswordResetByHash looks a reset code up by its hash.
func (s *Store) PasswordResetByHash(ctx context.Context, hash string) (*PasswordReset, error) {
	var pr PasswordReset
	var exp string
	err := s.db.r.QueryRowContext(ctx, `SELECT u.name, p.expires_at, p.used FROM password_resets p JOIN users u ON u.id = p.user_id
		WHERE p.code_hash = ?`, hash).Scan(&pr.User, &exp, &pr.Used)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, wh.Errorf(wh.EForbidden, "this reset code is not valid: ask an admin for a new one")
	}
	if err != nil {
		return nil, wh.Wrap(err, "look up reset code")
	}
	pr.Expires, _ = time.Parse(time.RFC3339Nano, exp)
	return &pr, nil
}

// ActiveAdmins counts the admins who are not deactivated.
func (s *Store) ActiveAdmins(ctx context.Context) (int, error) {
	var n int
	if err := s.db.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM users WHERE is_admin = 1 AND deactivated = 0`).Scan(&n); err != nil {
		return 0, wh.Wrap(err, "count admins")
	}
	return n, nil
}

// PairedBridgeIDs lists the ids of a user's bridges that no bridge.revoked
// event has revoked yet (a deactivated owner's bridges count as revoked
// everywhere else; this is what is left to revoke).
func (s *Store) PairedBridgeIDs(ctx context.Context, userID int64) ([]string, error) {
	rows, err := s.db.r.QueryContext(ctx, `SELECT id FROM bridges WHERE owner_id = ? AND revoked = 0 ORDER BY id`, userID)
	return collect("bridges", rows, err, scanString)
}
