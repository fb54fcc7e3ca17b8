package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/authz"
	"github.com/wheelhouse-dev/wheelhouse/chat"
)

// People appliers: deactivation, admin, passwords. Every change that ends
// credentials returns a feed item with Access set, which is how every hub
// node learns to forget them and to close the sockets opened with them.

func (s *Store) registerPeopleAppliers() {
	s.appliers[chat.EvUserDeactivated] = applyUserDeactivated
	s.appliers[chat.EvUserReactivated] = applyUserReactivated
	s.appliers[chat.EvUserAdmin] = applyUserAdmin
	s.appliers[chat.EvPasswordChanged] = applyPasswordChanged
	s.appliers[chat.EvPasswordResetIssued] = applyPasswordResetIssued
}

type userRow struct {
	id          int64
	admin       bool
	deactivated bool
}

func userRowTx(ctx context.Context, tx *sql.Tx, name string) (userRow, error) {
	var u userRow
	err := tx.QueryRowContext(ctx, `SELECT id, is_admin, deactivated FROM users WHERE name = ?`, name).Scan(&u.id, &u.admin, &u.deactivated)
	if errors.Is(err, sql.ErrNoRows) {
		return u, wh.Errorf(wh.ENotFound, "no user named @%s", name)
	}
	return u, err
}

func activeAdminsTx(ctx context.Context, tx *sql.Tx) (int, error) {
	var n int
	err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM users WHERE is_admin = 1 AND deactivated = 0`).Scan(&n)
	return n, err
}

// keepsAnAdminTx refuses to take the last active admin away.
func keepsAnAdminTx(ctx context.Context, tx *sql.Tx, u userRow) error {
	n, err := activeAdminsTx(ctx, tx)
	if err != nil {
		return err
	}
	if d := authz.KeepsAnAdmin(n, u.admin && !u.deactivated); !d.Allow {
		return &wh.Error{Code: wh.EForbidden, Message: d.Message, Reason: d.Reason}
	}
	return nil
}

// endCredentialsTx revokes the user's live credentials that match where
// and returns the access change to hand to the nodes.
func endCredentialsTx(ctx context.Context, tx *sql.Tx, seq uint64, userID int64, reason, where string, args ...any) ([]chat.FeedItem, error) {
	args = append([]any{userID}, args...)
	hashes, err := queryStrings(ctx, tx, `SELECT token_hash FROM credentials WHERE user_id = ? AND revoked = 0`+where, args...)
	if err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE credentials SET revoked = 1 WHERE user_id = ? AND revoked = 0`+where, args...); err != nil {
		return nil, err
	}
	return []chat.FeedItem{{Seq: seq, Kind: "access", Access: &chat.AccessChange{User: userID, Ended: hashes, Reason: reason}}}, nil
}

func applyUserDeactivated(ctx context.Context, tx *sql.Tx, seq uint64, ev chat.Event) ([]chat.FeedItem, error) {
	var d chat.UserChange
	if err := decode(ev, &d); err != nil {
		return nil, err
	}
	u, err := userRowTx(ctx, tx, d.User)
	if err != nil {
		return nil, err
	}
	if u.deactivated {
		return nil, wh.Errorf(wh.EConflict, "@%s is already deactivated", d.User)
	}
	if err := keepsAnAdminTx(ctx, tx, u); err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE users SET deactivated = 1 WHERE id = ?`, u.id); err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE password_resets SET used = 1 WHERE user_id = ? AND used = 0`, u.id); err != nil {
		return nil, err
	}
	return endCredentialsTx(ctx, tx, seq, u.id, chat.EndDeactivated, "")
}

func applyUserReactivated(ctx context.Context, tx *sql.Tx, seq uint64, ev chat.Event) ([]chat.FeedItem, error) {
	var d chat.UserChange
	if err := decode(ev, &d); err != nil {
		return nil, err
	}
	u, err := userRowTx(ctx, tx, d.User)
	if err != nil {
		return nil, err
	}
	if !u.deactivated {
		return nil, wh.Errorf(wh.EConflict, "@%s is not deactivated", d.User)
	}
	_, err = tx.ExecContext(ctx, `UPDATE users SET deactivated = 0 WHERE id = ?`, u.id)
	return []chat.FeedItem{{Seq: seq, Kind: "access", Access: &chat.AccessChange{User: u.id}}}, err
}

func applyUserAdmin(ctx context.Context, tx *sql.Tx, seq uint64, ev chat.Event) ([]chat.FeedItem, error) {
	var d chat.UserAdmin
	if err := decode(ev, &d); err != nil {
		return nil, err
	}
	u, err := userRowTx(ctx, tx, d.User)
	if err != nil {
		return nil, err
	}
	if d.Admin && u.deactivated {
		return nil, &wh.Error{Code: wh.EForbidden, Reason: authz.ReasonDeactivated, Message: "@" + d.User + " is deactivated; reactivate the account first"}
	}
	if !d.Admin {
		if err := keepsAnAdminTx(ctx, tx, u); err != nil {
			return nil, err
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE users SET is_admin = ? WHERE id = ?`, d.Admin, u.id); err != nil {
		return nil, err
	}
	// Cached credentials carry the admin flag: drop them.
	return []chat.FeedItem{{Seq: seq, Kind: "access", Access: &chat.AccessChange{User: u.id}}}, nil
}

func applyPasswordResetIssued(ctx context.Context, tx *sql.Tx, seq uint64, ev chat.Event) ([]chat.FeedItem, error) {
	var d chat.PasswordResetIssued
	if err := decode(ev, &d); err != nil {
		return nil, err
	}
	u, err := userRowTx(ctx, tx, d.User)
	if err != nil {
		return nil, err
	}
	if u.deactivated {
		return nil, &wh.Error{Code: wh.EForbidden, Reason: authz.ReasonDeactivated, Message: "@" + d.User + " is deactivated; reactivate the account first"}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE password_resets SET used = 1 WHERE user_id = ? AND used = 0`, u.id); err != nil {
		return nil, err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO password_resets (code_hash, user_id, created_by, created_at, expires_at) VALUES (?, ?, ?, ?, ?)`,
		d.CodeHash, u.id, d.By, ts(ev.At), ts(d.ExpiresAt))
	return nil, err
}

func applyPasswordChanged(ctx context.Context, tx *sql.Tx, seq uint64, ev chat.Event) ([]chat.FeedItem, error) {
	var d chat.PasswordChanged
	if err := decode(ev, &d); err != nil {
		return nil, err
	}
	u, err := userRowTx(ctx, tx, d.User)
	if err != nil {
		return nil, err
	}
	if u.deactivated {
		return nil, &wh.Error{Code: wh.EForbidden, Reason: authz.ReasonDeactivated, Message: "this account is deactivated; ask an admin"}
	}
	if d.Reset != "" {
		// A reset code works once, before it expires, for its own user.
		var owner int64
		var exp string
		var used bool
		err := tx.QueryRowContext(ctx, `SELECT user_id, expires_at, used FROM password_resets WHERE code_hash = ?`, d.Reset).Scan(&owner, &exp, &used)
		if errors.Is(err, sql.ErrNoRows) || (err == nil && owner != u.id) {
			return nil, wh.Errorf(wh.EForbidden, "this reset code is not valid: ask an admin for a new one")
		}
		if err != nil {
			return nil, err
		}
		if used {
			return nil, wh.Errorf(wh.EForbidden, "this reset code was already used or replaced: ask an admin for a new one")
		}
		if t, _ := time.Parse(time.RFC3339Nano, exp); ev.At.After(t) {
			return nil, wh.Errorf(wh.EForbidden, "this reset code has expired: ask an admin for a new one")
		}
		if _, err := tx.ExecContext(ctx, `UPDATE password_resets SET used = 1 WHERE user_id = ? AND used = 0`, u.id); err != nil {
			return nil, err
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE users SET password_hash = ? WHERE id = ?`, d.PasswordHash, u.id); err != nil {
		return nil, err
	}
	if d.Reset != "" {
		// Recovery: whoever knew the old password may have made
		// sessions or tokens; all of them end.
		return endCredentialsTx(ctx, tx, seq, u.id, chat.EndPassword, "")
	}
	// The user's own change: every other session ends; the session that
	// made the change and API tokens (listed and revocable on their own)
	// stay.
	return endCredentialsTx(ctx, tx, seq, u.id, chat.EndPassword, ` AND kind = 'session' AND token_hash != ?`, d.Keep)
}
