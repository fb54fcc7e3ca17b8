package web_test

import (
	"testing"

	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
)

// Passwords are counted in characters, and common ones are refused: on
// every path that sets one.
func TestPasswordPolicy(t *testing.T) {
	tm := newTeam(t, testhub.Options{})
	for _, pw := range []string{"éééé", "        ", "password", "12345678", "pass\x00word!"} {
		r := tm.root.Do("POST", "/api/v1/users", map[string]string{"name": "weak", "password": pw})
		if r.Status != 400 || r.ErrReason() != "weak-password" {
			t.Errorf("POST /users with %q: %d %s", pw, r.Status, r.Raw)
		}
		r = tm.alice.Do("PUT", "/api/v1/me/password", map[string]string{"current": "pw-alice-secret", "password": pw})
		if r.Status != 400 || r.ErrReason() != "weak-password" {
			t.Errorf("PUT /me/password with %q: %d %s", pw, r.Status, r.Raw)
		}
	}
	tm.root.Must(201, "POST", "/api/v1/users", map[string]string{"name": "strong", "password": "éàéàéàéà"})
}
