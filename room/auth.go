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
	"github.com/wheelhouse-dev/wheelhouse/authz"
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

// validatePassword applies the password policy (authz.PasswordProblem).
func validatePassword(pw string) error {
	if why := authz.PasswordProblem(pw); why != "" {
		return &wh.Error{Code: wh.EInvalid, Reason: "weak-password", Message: why}
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
	name = normName(name)
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

// Client says where a login or password check comes from.
type Client struct {
	Addr  string // the client's address (netip form); throttling keys on it
	Agent string // its User-Agent, shown in its user's list of sessions
	// Device is the device cookie the client sent (DevicePrefix…), or a
	// fresh one to set when the login succeeds; "" for none.
	Device string
}

// maxClientAgent bounds the User-Agent kept with a session.
const maxClientAgent = 160

// normName is how names are compared everywhere: trimmed, lower case.
func normName(name string) string { return strings.ToLower(strings.TrimSpace(name)) }

// dummyHash keeps an unknown name as slow to check as a known one.
const dummyHash = "$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHRzYWx0c2FsdA$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaGhhc2g"

// checkPassword checks name's password under the login throttle.
func (s *Service) checkPassword(ctx context.Context, name, password string, from Client) (*chat.User, error) {
	done, err := s.passwordAttempt(ctx, name, from)
	if err != nil {
		return nil, err
	}
	u, hash, err := s.PasswordHash(ctx, name)
	if wh.ErrorCode(err) == wh.ENotFound {
		CheckPassword(dummyHash, password) // same cost either way
		done(false)
		return nil, wh.Errorf(wh.EUnauthenticated, "wrong user name or password")
	}
	if err != nil {
		done(false)
		return nil, err
	}
	if !CheckPassword(hash, password) {
		done(false)
		return nil, wh.Errorf(wh.EUnauthenticated, "wrong user name or password")
	}
	done(true)
	return u, nil
}

// Login checks a password and creates a session; it returns the secret.
// Attempts are throttled per name and client address (see throttle.go).
func (s *Service) Login(ctx context.Context, name, password string, from Client) (string, *chat.User, error) {
	name = normName(name)
	u, err := s.checkPassword(ctx, name, password, from)
	if err != nil {
		return "", nil, err
	}
	if u.Deactivated {
		return "", nil, &wh.Error{Code: wh.EForbidden, Reason: authz.ReasonDeactivated, Message: "your account is deactivated; ask a hub admin"}
	}
	secret, err := s.newSession(ctx, u.Name, from)
	if err != nil {
		return "", nil, err
	}
	return secret, u, nil
}

func (s *Service) newSession(ctx context.Context, user string, from Client) (string, error) {
	agent := from.Agent
	if len(agent) > maxClientAgent {
		agent = strings.ToValidUTF8(agent[:maxClientAgent], "")
	}
	secret := NewSecret("whs_")
	exp := s.now().Add(chat.SessionTTL)
	_, err := s.append(ctx, chat.EvCredentialCreated, chat.CredentialCreated{TokenHash: HashSecret(secret), User: user, Kind: chat.CredSession,
		ExpiresAt: &exp, Client: agent, Addr: from.Addr})
	return secret, err
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

// Revoke ends a session or token by its secret (a logout: reason
// chat.EndLogout). Every hub node forgets it and closes the sockets opened
// with it as it applies the event.
// A secret that names no live credential appends nothing: anyone may send
// a made-up cookie, and it must not grow the log.
func (s *Service) Revoke(ctx context.Context, secret, reason string) error {
	hash := HashSecret(secret)
	c, err := s.CredentialByHash(ctx, hash)
	if wh.ErrorCode(err) == wh.ENotFound || (err == nil && c.Revoked) {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = s.append(ctx, chat.EvCredentialRevoked, chat.CredentialRevoked{TokenHash: hash, Reason: reason})
	return err
}

// Authenticate resolves a session or token secret to its user.
func (s *Service) Authenticate(ctx context.Context, secret string) (*chat.User, error) {
	if secret == "" {
		return nil, wh.Errorf(wh.EUnauthenticated, "log in first (session cookie or Authorization: Bearer token)")
	}
	return s.AuthenticateHash(ctx, HashSecret(secret))
}

// AuthenticateHash resolves a credential by the hash of its secret (a
// socket keeps the hash of the one it was opened with, not the secret).
func (s *Service) AuthenticateHash(ctx context.Context, hash string) (*chat.User, error) {
	u, ok, gen := s.cache.getAuth(hash, s.now())
	if ok {
		return &u, nil
	}
	c, err := s.CredentialByHash(ctx, hash)
	if wh.ErrorCode(err) == wh.ENotFound || (err == nil && (c.Revoked || c.User.Deactivated)) {
		return nil, wh.Errorf(wh.EUnauthenticated, "your session or token is not valid; log in again")
	}
	if err != nil {
		return nil, err
	}
	if !c.Expires.IsZero() && s.now().After(c.Expires) {
		return nil, wh.Errorf(wh.EUnauthenticated, "your session has expired; log in again")
	}
	s.cache.putAuth(hash, authEntry{u: c.User, exp: c.Expires, at: s.now()}, gen)
	u = c.User
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
	_, err = s.append(ctx, chat.EvCredentialRevoked, chat.CredentialRevoked{TokenHash: hash, Reason: chat.EndRevoked})
	return err
}
