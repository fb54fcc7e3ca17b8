package chat

import "time"

// User is an account.
type User struct {
	ID      int64  `json:"id"`
	Name    string `json:"name"`
	Display string `json:"display,omitempty"`
	Admin   bool   `json:"admin"`
}

// Credential kinds and lifetimes.
const (
	CredSession = "session"
	CredToken   = "token"

	SessionTTL     = 30 * 24 * time.Hour
	MinPasswordLen = 8
)

// Token is an API token as its owner sees it (never the secret).
type Token struct {
	ID        string    `json:"id"` // the first 16 hex characters of the stored hash
	Label     string    `json:"label"`
	CreatedAt time.Time `json:"createdAt"`
	Revoked   bool      `json:"revoked"`
}
