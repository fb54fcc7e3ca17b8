package chat

import (
	"time"

	"github.com/wheelhouse-dev/wheelhouse/authz"
)

// User is an account.
type User struct {
	ID      int64  `json:"id"`
	Name    string `json:"name"`
	Display string `json:"display,omitempty"`
	Admin   bool   `json:"admin"`
	// Deactivated accounts cannot log in; their sessions, tokens and
	// bridges were ended when an admin deactivated them.
	Deactivated bool `json:"deactivated,omitempty"`
}

// Credential kinds and lifetimes.
const (
	CredSession = "session"
	CredToken   = "token"

	SessionTTL     = 30 * 24 * time.Hour
	MinPasswordLen = authz.MinPasswordRunes
)

// Token is an API token as its owner sees it (never the secret).
type Token struct {
	ID        string    `json:"id"` // the first 16 hex characters of the stored hash
	Label     string    `json:"label"`
	CreatedAt time.Time `json:"createdAt"`
	Revoked   bool      `json:"revoked"`
}

// PasswordResetTTL bounds how long a reset code an admin issued works.
const PasswordResetTTL = 24 * time.Hour

// Session is one of a user's logged-in browsers, as its user sees it.
type Session struct {
	ID        string    `json:"id"` // the first 16 hex characters of the stored hash
	CreatedAt time.Time `json:"createdAt"`
	ExpiresAt time.Time `json:"expiresAt"`
	Client    string    `json:"client"` // User-Agent at login, shortened
	Addr      string    `json:"addr"`   // client address at login
	Current   bool      `json:"current"`
}
