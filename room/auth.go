package room

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"golang.org/x/crypto/argon2"

	wh "github.com/wheelhouse-dev/wheelhouse"
)

// User is an account.
type User struct {
	ID      int64  `json:"id"`
	Name    string `json:"name"`
	Display string `json:"display,omitempty"`
	Admin   bool   `json:"admin"`
}

// Credential kinds.
const (
	CredSession = "session"
	CredToken   = "token"

	SessionTTL     = 30 * 24 * time.Hour
	MinPasswordLen = 8
)

// argon2id parameters (OWASP's minimum recommendation: 19 MiB, t=2, p=1).
const (
	argonTime    = 2
	argonMemory  = 19 * 1024
	argonThreads = 1
	argonKeyLen  = 32
)

// HashPassword returns an encoded argon2id hash of password.
func HashPassword(password string) (string, error) {
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	key := argon2.IDKey([]byte(password), salt, argonTime, argonMemory, argonThreads, argonKeyLen)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemory, argonTime, argonThreads,
		base64.RawStdEncoding.EncodeToString(salt), base64.RawStdEncoding.EncodeToString(key)), nil
}

// CheckPassword reports whether password matches encoded.
func CheckPassword(encoded, password string) bool {
	parts := strings.Split(encoded, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false
	}
	var m uint32
	var t uint32
	var p uint8
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &m, &t, &p); err != nil {
		return false
	}
	salt, err := base64.RawStdEncoding.DecodeString(parts[4])
	if err != nil {
		return false
	}
	want, err := base64.RawStdEncoding.DecodeString(parts[5])
	if err != nil {
		return false
	}
	got := argon2.IDKey([]byte(password), salt, t, m, p, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1
}

// NewSecret returns a random secret with a readable prefix.
func NewSecret(prefix string) string {
	b := make([]byte, 32)
	rand.Read(b)
	return prefix + base64.RawURLEncoding.EncodeToString(b)
}

// HashSecret is how secrets are stored: sha256 hex.
func HashSecret(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(h[:])
}

func validatePassword(pw string) error {
	if len(pw) < MinPasswordLen {
		return wh.Errorf(wh.EInvalid, "the password must have at least %d characters", MinPasswordLen)
	}
	if len(pw) > 1024 {
		return wh.Errorf(wh.EInvalid, "the password is too long (at most 1024 bytes)")
	}
	return nil
}

// HasUsers reports whether setup has been done.
func (s *Service) HasUsers(ctx context.Context) (bool, error) {
	var n int
	err := s.db.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM users`).Scan(&n)
	return n > 0, err
}

// Setup creates the first admin. The caller has checked the setup token.
func (s *Service) Setup(ctx context.Context, name, password string) (*User, error) {
	return s.createUser(ctx, name, "", password, true, true)
}

// CreateUser creates an account; only admins may.
func (s *Service) CreateUser(ctx context.Context, actor *User, name, display, password string, admin bool) (*User, error) {
	if actor == nil || !actor.Admin {
		return nil, wh.Errorf(wh.EForbidden, "only an admin can create users")
	}
	return s.createUser(ctx, name, display, password, admin, false)
}

func (s *Service) createUser(ctx context.Context, name, display, password string, admin, setup bool) (*User, error) {
	name = strings.ToLower(strings.TrimSpace(name))
	if !ValidUserName(name) {
		return nil, wh.Errorf(wh.EInvalid, "user names are 1-32 characters: lowercase letters, digits, '.', '_' or '-', starting with a letter or digit")
	}
	if err := validatePassword(password); err != nil {
		return nil, err
	}
	if len(display) > 64 {
		return nil, wh.Errorf(wh.EInvalid, "the display name is too long (at most 64 bytes)")
	}
	if _, err := s.UserByName(ctx, name); err == nil {
		return nil, wh.Errorf(wh.EConflict, "a user named @%s already exists", name)
	}
	hash, err := HashPassword(password)
	if err != nil {
		return nil, wh.Wrap(err, "hash password")
	}
	if _, err := s.append(ctx, EvUserCreated, userCreated{Name: name, Display: display, PasswordHash: hash, Admin: admin, Setup: setup}); err != nil {
		return nil, err
	}
	return s.UserByName(ctx, name)
}

// UserByName looks a user up.
func (s *Service) UserByName(ctx context.Context, name string) (*User, error) {
	var u User
	err := s.db.r.QueryRowContext(ctx, `SELECT id, name, display, is_admin FROM users WHERE name = ?`, name).Scan(&u.ID, &u.Name, &u.Display, &u.Admin)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, wh.Errorf(wh.ENotFound, "no user named @%s", name)
	}
	if err != nil {
		return nil, wh.Wrap(err, "look up user")
	}
	return &u, nil
}

// Users lists all accounts (for mention autocomplete and admin screens).
func (s *Service) Users(ctx context.Context) ([]User, error) {
	rows, err := s.db.r.QueryContext(ctx, `SELECT id, name, display, is_admin FROM users ORDER BY name`)
	if err != nil {
		return nil, wh.Wrap(err, "list users")
	}
	defer rows.Close()
	out := []User{}
	for rows.Next() {
		var u User
		if err := rows.Scan(&u.ID, &u.Name, &u.Display, &u.Admin); err != nil {
			return nil, wh.Wrap(err, "list users")
		}
		out = append(out, u)
	}
	return out, rows.Err()
}

// Login checks a password and creates a session; it returns the secret.
func (s *Service) Login(ctx context.Context, name, password string) (string, *User, error) {
	name = strings.ToLower(strings.TrimSpace(name))
	var hash string
	var u User
	err := s.db.r.QueryRowContext(ctx, `SELECT id, name, display, is_admin, password_hash FROM users WHERE name = ?`, name).Scan(&u.ID, &u.Name, &u.Display, &u.Admin, &hash)
	if errors.Is(err, sql.ErrNoRows) {
		CheckPassword("$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHRzYWx0c2FsdA$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaGhhc2g", password) // same cost either way
		return "", nil, wh.Errorf(wh.EUnauthenticated, "wrong user name or password")
	}
	if err != nil {
		return "", nil, wh.Wrap(err, "look up user")
	}
	if !CheckPassword(hash, password) {
		return "", nil, wh.Errorf(wh.EUnauthenticated, "wrong user name or password")
	}
	secret := NewSecret("whs_")
	exp := s.now().Add(SessionTTL)
	if _, err := s.append(ctx, EvCredentialCreated, credentialCreated{TokenHash: HashSecret(secret), User: u.Name, Kind: CredSession, ExpiresAt: &exp}); err != nil {
		return "", nil, err
	}
	return secret, &u, nil
}

// CreateToken creates an API bearer token for actor.
func (s *Service) CreateToken(ctx context.Context, actor *User, label string) (string, error) {
	if len(label) > 64 {
		return "", wh.Errorf(wh.EInvalid, "the token label is too long (at most 64 bytes)")
	}
	secret := NewSecret("wht_")
	if _, err := s.append(ctx, EvCredentialCreated, credentialCreated{TokenHash: HashSecret(secret), User: actor.Name, Kind: CredToken, Label: label}); err != nil {
		return "", err
	}
	return secret, nil
}

// Revoke ends a session or token.
func (s *Service) Revoke(ctx context.Context, secret string) error {
	_, err := s.append(ctx, EvCredentialRevoked, credentialRevoked{TokenHash: HashSecret(secret)})
	s.cache.dropAuth(HashSecret(secret))
	return err
}

// Authenticate resolves a session or token secret to its user.
func (s *Service) Authenticate(ctx context.Context, secret string) (*User, error) {
	if secret == "" {
		return nil, wh.Errorf(wh.EUnauthenticated, "log in first (session cookie or Authorization: Bearer token)")
	}
	hash := HashSecret(secret)
	if u, ok := s.cache.getAuth(hash, s.now()); ok {
		return &u, nil
	}
	var u User
	var exp sql.NullString
	var revoked bool
	err := s.db.stmt(ctx, `SELECT u.id, u.name, u.display, u.is_admin, c.expires_at, c.revoked
		FROM credentials c JOIN users u ON u.id = c.user_id WHERE c.token_hash = ?`).QueryRowContext(ctx, hash).
		Scan(&u.ID, &u.Name, &u.Display, &u.Admin, &exp, &revoked)
	if errors.Is(err, sql.ErrNoRows) || revoked {
		return nil, wh.Errorf(wh.EUnauthenticated, "your session or token is not valid; log in again")
	}
	if err != nil {
		return nil, wh.Wrap(err, "authenticate")
	}
	e := authEntry{u: u, at: s.now()}
	if exp.Valid {
		t, err := time.Parse(time.RFC3339Nano, exp.String)
		if err == nil && s.now().After(t) {
			return nil, wh.Errorf(wh.EUnauthenticated, "your session has expired; log in again")
		}
		e.exp = t
	}
	s.cache.putAuth(hash, e)
	return &u, nil
}

// Token is an API token as its owner sees it (never the secret).
type Token struct {
	ID        string    `json:"id"` // the first 16 hex characters of the stored hash
	Label     string    `json:"label"`
	CreatedAt time.Time `json:"createdAt"`
	Revoked   bool      `json:"revoked"`
}

// Tokens lists actor's API tokens.
func (s *Service) Tokens(ctx context.Context, actor *User) ([]Token, error) {
	rows, err := s.db.r.QueryContext(ctx, `SELECT substr(token_hash, 1, 16), label, created_at, revoked FROM credentials
		WHERE user_id = ? AND kind = 'token' ORDER BY created_at DESC`, actor.ID)
	if err != nil {
		return nil, wh.Wrap(err, "list tokens")
	}
	defer rows.Close()
	out := []Token{}
	for rows.Next() {
		var t Token
		var at string
		if err := rows.Scan(&t.ID, &t.Label, &at, &t.Revoked); err != nil {
			return nil, wh.Wrap(err, "list tokens")
		}
		t.CreatedAt, _ = time.Parse(time.RFC3339Nano, at)
		out = append(out, t)
	}
	return out, rows.Err()
}

// RevokeToken revokes one of actor's API tokens by its id.
func (s *Service) RevokeToken(ctx context.Context, actor *User, id string) error {
	if len(id) != 16 {
		return wh.Errorf(wh.EInvalid, "token ids are 16 hex characters (see GET /api/v1/tokens)")
	}
	var hash string
	err := s.db.r.QueryRowContext(ctx, `SELECT token_hash FROM credentials WHERE user_id = ? AND kind = 'token' AND substr(token_hash, 1, 16) = ?`, actor.ID, id).Scan(&hash)
	if errors.Is(err, sql.ErrNoRows) {
		return wh.Errorf(wh.ENotFound, "you have no token %s", id)
	}
	if err != nil {
		return wh.Wrap(err, "find token")
	}
	if _, err := s.append(ctx, EvCredentialRevoked, credentialRevoked{TokenHash: hash}); err != nil {
		return err
	}
	s.cache.dropAuth(hash)
	return nil
}
