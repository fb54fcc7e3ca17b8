package web_test

import (
	"testing"

	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
)

// The people endpoints answer as web/openapi.json describes, for an admin,
// a user and an account that was deactivated.
func TestPeopleAnswersMatchTheDescription(t *testing.T) {
	tm := newTeam(t, testhub.Options{})
	root, alice, bob := tm.root, tm.alice, tm.bob

	sessions := testhub.AsList(alice.Must(200, "GET", "/api/v1/sessions", nil).Body["sessions"])
	if len(sessions) != 1 || sessions[0]["current"] != true {
		t.Fatalf("sessions %v", sessions)
	}
	other := apiClient(t, tm.h.Login("alice", "pw-alice-secret"))
	for _, s := range testhub.AsList(alice.Must(200, "GET", "/api/v1/sessions", nil).Body["sessions"]) {
		if s["current"] != true {
			alice.Must(204, "DELETE", "/api/v1/sessions/"+s["id"].(string), nil)
		}
	}
	other.Must(401, "GET", "/api/v1/me", nil)
	alice.Must(404, "DELETE", "/api/v1/sessions/0123456789abcdef", nil)
	alice.Must(403, "PUT", "/api/v1/me/password", map[string]string{"current": "wrong password", "password": "a new password"})
	alice.Must(204, "PUT", "/api/v1/me/password", map[string]string{"current": "pw-alice-secret", "password": "a new password"})

	bob.Must(403, "PATCH", "/api/v1/users/alice", map[string]any{"admin": true})
	root.Must(200, "PATCH", "/api/v1/users/alice", map[string]any{"admin": true})
	root.Must(200, "PATCH", "/api/v1/users/alice", map[string]any{"admin": false})
	root.Must(403, "PATCH", "/api/v1/users/root", map[string]any{"active": false})
	code := root.Must(201, "POST", "/api/v1/users/bob/password-reset", nil).Body["code"].(string)
	anon := apiClient(t, testhub.NewClient(t, tm.h.URL()))
	anon.Must(201, "POST", "/api/v1/password-reset", map[string]string{"code": code, "password": "bob's own now"})
	anon.Must(403, "POST", "/api/v1/password-reset", map[string]string{"code": code, "password": "bob's own now"})
	bob.Must(401, "GET", "/api/v1/me", nil)

	root.Must(200, "PATCH", "/api/v1/users/bob", map[string]any{"active": false})
	root.Must(200, "GET", "/api/v1/users", nil)
	root.Must(200, "GET", "/api/v1/rooms/dev/members", nil)
	anon.Must(403, "POST", "/api/v1/sessions", map[string]string{"name": "bob", "password": "bob's own now"})
	root.Must(200, "PATCH", "/api/v1/users/bob", map[string]any{"active": true})
}
