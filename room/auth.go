package room

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"

	"golang.org/x/crypto/argon2"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/chat"
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
	if len(pw) < chat.MinPasswordLen {
		return wh.Errorf(wh.EInvalid, "the password must have at least %d characters", chat.MinPasswordLen)
	}
	if len(pw) > 1024 {
		return wh.Errorf(wh.EInvalid, "the password is too long (at most 1024 bytes)")
	}
	return nil
}

// Setup creates the first admin. The caller has checked the setup token.
func (s *Service) Setup(ctx context.Context, name, password string) (*chat.User, error) {
	return s.createUser(ctx, name, "", password, true, true)
}

// CreateUser creates an account; only admins may.
func (s *Service) CreateUser(ctx context.Context, actor *chat.User, name, display, password string, admin bool) (*chat.User, error) {
	if actor == nil || !actor.Admin {
		return nil, wh.Errorf(wh.EForbidden, "only an admin can create users")
	}
	return s.createUser(ctx, name, display, password, admin, false)
}

func (s *Service) createUser(ctx context.Context, name, display, password string, admin, setup bool) (*chat.User, error) {
	name = strings.ToLower(strings.TrimSpace(name))
	if !chat.ValidUserName(name) {
		return nil, wh.Errorf(wh.EInvalid, "user names are 1-32 characters: lowercase letters, digits, '.', '_' or '-', starting with a letter or digit")
	}
	if err := validatePassword(password); err != nil {
		return nil, err
	}
	if len(display) > 64 {
		return nil, wh.Errorf(wh.EInvalid, "the display name is too long (at most 64 bytes)")
	}
	if _, err := s.UserByName(ctx, name); err == nil && !retried(ctx) {
		return nil, wh.Errorf(wh.EConflict, "a user named @%s already exists", name)
	}
	hash, err := HashPassword(password)
	if err != nil {
		return nil, wh.Wrap(err, "hash password")
	}
	if _, err := s.append(ctx, chat.EvUserCreated, chat.UserCreated{Name: name, Display: display, PasswordHash: hash, Admin: admin, Setup: setup}); err != nil {
		return nil, err
	}
	return s.UserByName(ctx, name)
}

// Login checks a password and creates a session; it returns the secret.
func (s *Service) Login(ctx context.Context, name, password string) (string, *chat.User, error) {
	name = strings.ToLower(strings.TrimSpace(name))
	u, hash, err := s.PasswordHash(ctx, name)
	if wh.ErrorCode(err) == wh.ENotFound {
		CheckPassword("$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHRzYWx0c2FsdA$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaGhhc2g", password) // same cost either way
		return "", nil, wh.Errorf(wh.EUnauthenticated, "wrong user name or password")
	}
	if err != nil {
		return "", nil, err
	}
	if !CheckPassword(hash, password) {
		return "", nil, wh.Errorf(wh.EUnauthenticated, "wrong user name or password")
	}
	secret := NewSecret("whs_")
	exp := s.now().Add(chat.SessionTTL)
	if _, err := s.append(ctx, chat.EvCredentialCreated, chat.CredentialCreated{TokenHash: HashSecret(secret), User: u.Name, Kind: chat.CredSession, ExpiresAt: &exp}); err != nil {
		return "", nil, err
	}
	return secret, u, nil
}

// CreateToken creates an API bearer token for actor.
func (s *Service) CreateToken(ctx context.Context, actor *chat.User, label string) (string, error) {
	if len(label) > 64 {
		return "", wh.Errorf(wh.EInvalid, "the token label is too long (at most 64 bytes)")
	}
	secret := NewSecret("wht_")
	if _, err := s.append(ctx, chat.EvCredentialCreated, chat.CredentialCreated{TokenHash: HashSecret(secret), User: actor.Name, Kind: chat.CredToken, Label: label}); err != nil {
		return "", err
	}
	return secret, nil
}

// Revoke ends a session or token.
func (s *Service) Revoke(ctx context.Context, secret string) error {
	_, err := s.append(ctx, chat.EvCredentialRevoked, chat.CredentialRevoked{TokenHash: HashSecret(secret)})
	s.cache.dropAuth(HashSecret(secret))
	return err
}

// Authenticate resolves a session or token secret to its user.
func (s *Service) Authenticate(ctx context.Context, secret string) (*chat.User, error) {
	if secret == "" {
		return nil, wh.Errorf(wh.EUnauthenticated, "log in first (session cookie or Authorization: Bearer token)")
	}
	hash := HashSecret(secret)
	if u, ok := s.cache.getAuth(hash, s.now()); ok {
		return &u, nil
	}
	c, err := s.CredentialByHash(ctx, hash)
	if wh.ErrorCode(err) == wh.ENotFound || (err == nil && c.Revoked) {
		return nil, wh.Errorf(wh.EUnauthenticated, "your session or token is not valid; log in again")
	}
	if err != nil {
		return nil, err
	}
	if !c.Expires.IsZero() && s.now().After(c.Expires) {
		return nil, wh.Errorf(wh.EUnauthenticated, "your session has expired; log in again")
	}
	s.cache.putAuth(hash, authEntry{u: c.User, exp: c.Expires, at: s.now()})
	u := c.User
	return &u, nil
}

// RevokeToken revokes one of actor's API tokens by its id.
func (s *Service) RevokeToken(ctx context.Context, actor *chat.User, id string) error {
	if len(id) != 16 {
		return wh.Errorf(wh.EInvalid, "token ids are 16 hex characters (see GET /api/v1/tokens)")
	}
	hash, err := s.TokenHash(ctx, actor.ID, id)
	if err != nil {
		return err
	}
	if _, err := s.append(ctx, chat.EvCredentialRevoked, chat.CredentialRevoked{TokenHash: hash}); err != nil {
		return err
	}
	s.cache.dropAuth(hash)
	return nil
}
