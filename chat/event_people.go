package chat

import "time"

// People event types: an account's life after it was created.
const (
	EvUserDeactivated     = "user.deactivated"
	EvUserReactivated     = "user.reactivated"
	EvUserAdmin           = "user.admin"
	EvPasswordChanged     = "user.password"
	EvPasswordResetIssued = "password_reset.issued"
)

// Why credentials ended, as the events record it (CredentialRevoked.Reason)
// and as a closed socket says it.
const (
	EndLogout      = "logout"      // the session logged out
	EndRevoked     = "revoked"     // its owner revoked the token or ended the session
	EndDeactivated = "deactivated" // an admin deactivated the account
	EndPassword    = "password"    // the account's password changed
)

// UserChange is the payload of the events recorded when an admin
// deactivated or reactivated an account.
type UserChange struct {
	User string `json:"user"`
	By   string `json:"by"`
}

// UserAdmin is the payload of the event recorded when an admin granted or
// revoked hub admin.
type UserAdmin struct {
	User  string `json:"user"`
	Admin bool   `json:"admin"`
	By    string `json:"by"`
}

// PasswordChanged is the payload of the event recorded when a password was
// changed: by its user (Keep names the session that did it, which stays;
// every other session ends), or with a reset code (Reset is the code's
// hash; every session and token ends).
type PasswordChanged struct {
	User         string `json:"user"`
	PasswordHash string `json:"passwordHash"`
	Keep         string `json:"keep,omitempty"`  // credential hash that stays valid
	Reset        string `json:"reset,omitempty"` // hash of the reset code redeemed
}

// PasswordResetIssued is the payload of the event recorded when an admin
// issued a one-time password reset code (any earlier unused code of the
// user stops working).
type PasswordResetIssued struct {
	User      string    `json:"user"`
	CodeHash  string    `json:"codeHash"`
	ExpiresAt time.Time `json:"expiresAt"`
	By        string    `json:"by"`
}
