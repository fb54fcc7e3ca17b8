package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/chat"
)

// HasUsers reports whether setup has been done.
func (s *Store) HasUsers(ctx context.Context) (bool, error) {
	var n int
	err := s.db.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM users`).Scan(&n)
	return n > 0, err
}

// UserByName looks a user up.
func (s *Store) UserByName(ctx context.Context, name string) (*chat.User, error) {
	var u chat.User
	err := s.db.r.QueryRowContext(ctx, `SELECT id, name, display, is_admin, deactivated FROM users WHERE name = ?`, name).Scan(&u.ID, &u.Name, &u.Display, &u.Admin, &u.Deactivated)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, wh.Errorf(wh.ENotFound, "no user named @%s", name)
	}
	if err != nil {
		return nil, wh.Wrap(err, "look up user")
	}
	return &u, nil
}

// Users lists all accounts (for mention autocomplete and admin screens).
func (s *Store) Users(ctx context.Context) ([]chat.User, error) {
	rows, err := s.db.r.QueryContext(ctx, `SELECT id, name, display, is_admin, deactivated FROM users ORDER BY name`)
	if err != nil {
		return nil, wh.Wrap(err, "list users")
	}
	defer rows.Close()
	out := []chat.User{}
	for rows.Next() {
		var u chat.User
		if err := rows.Scan(&u.ID, &u.Name, &u.Display, &u.Admin, &u.Deactivated); err != nil {
			return nil, wh.Wrap(err, "list users")
		}
		out = append(out, u)
	}
	return out, rows.Err()
}

// Tokens lists actor's API tokens.
func (s *Store) Tokens(ctx context.Context, actor *chat.User) ([]chat.Token, error) {
	rows, err := s.db.r.QueryContext(ctx, `SELECT substr(token_hash, 1, 16), label, created_at, revoked FROM credentials
		WHERE user_id = ? AND kind = 'token' ORDER BY created_at DESC`, actor.ID)
	if err != nil {
		return nil, wh.Wrap(err, "list tokens")
	}
	defer rows.Close()
	out := []chat.Token{}
	for rows.Next() {
		var t chat.Token
		var at string
		if err := rows.Scan(&t.ID, &t.Label, &at, &t.Revoked); err != nil {
			return nil, wh.Wrap(err, "list tokens")
		}
		t.CreatedAt, _ = time.Parse(time.RFC3339Nano, at)
		out = append(out, t)
	}
	return out, rows.Err()
}

// PasswordHash returns a user and their password hash (for login).
func (s *Store) PasswordHash(ctx context.Context, name string) (*chat.User, string, error) {
	var hash string
	var u chat.User
	err := s.db.r.QueryRowContext(ctx, `SELECT id, name, display, is_admin, deactivated, password_hash FROM users WHERE name = ?`, name).Scan(&u.ID, &u.Name, &u.Display, &u.Admin, &u.Deactivated, &hash)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, "", wh.Errorf(wh.ENotFound, "no user named @%s", name)
	}
	if err != nil {
		return nil, "", wh.Wrap(err, "look up user")
	}
	return &u, hash, nil
}

// Credential is a stored session or token, resolved to its user.
type Credential struct {
	User    chat.User
	Kind    string    // chat.CredSession or chat.CredToken
	Expires time.Time // zero: never
	Revoked bool
}

// CredentialByHash looks a credential up by the hash of its secret.
func (s *Store) CredentialByHash(ctx context.Context, hash string) (*Credential, error) {
	var c Credential
	var exp sql.NullString
	err := s.db.stmt(ctx, `SELECT u.id, u.name, u.display, u.is_admin, u.deactivated, c.expires_at, c.revoked
		FROM credentials c JOIN users u ON u.id = c.user_id WHERE c.token_hash = ?`).QueryRowContext(ctx, hash).
		Scan(&c.User.ID, &c.User.Name, &c.User.Display, &c.User.Admin, &c.User.Deactivated, &exp, &c.Revoked)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, wh.Errorf(wh.ENotFound, "no such credential")
	}
	if err != nil {
		return nil, wh.Wrap(err, "authenticate")
	}
	if exp.Valid {
		c.Expires, _ = time.Parse(time.RFC3339Nano, exp.String)
	}
	return &c, nil
}

// TokenHash finds the stored hash of one of a user's API tokens by its id
// (the hash's first 16 hex characters).
func (s *Store) TokenHash(ctx context.Context, userID int64, id string) (string, error) {
	var hash string
	err := s.db.r.QueryRowContext(ctx, `SELECT token_hash FROM credentials WHERE user_id = ? AND kind = 'token' AND substr(token_hash, 1, 16) = ?`, userID, id).Scan(&hash)
	if errors.Is(err, sql.ErrNoRows) {
		return "", wh.Errorf(wh.ENotFound, "you have no token %s", id)
	}
	if err != nil {
		return "", wh.Wrap(err, "find token")
	}
	return hash, nil
}
