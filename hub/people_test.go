package hub_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/bridge"
	"github.com/wheelhouse-dev/wheelhouse/chat"
	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
)

func userIn(list []map[string]any, name string) map[string]any {
	for _, u := range list {
		if u["user"] == name || u["name"] == name {
			return u
		}
	}
	return nil
}

// People management through the API, for every role: an admin, a user, a
// deactivated user.
func TestPeopleManagement(t *testing.T) {
	h := testhub.Start(t, testhub.Options{})
	root := h.Setup("root", "correct horse")
	root.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "team"})
	bob := h.AddUser(root, "bob")
	bob.Must(200, "POST", "/api/v1/rooms/team/members", nil)
	carol := h.AddUser(root, "carol")

	t.Run("User", func(t *testing.T) {
		for _, c := range []struct{ method, path string }{
			{"PATCH", "/api/v1/users/carol"},
			{"PATCH", "/api/v1/users/bob"},
			{"POST", "/api/v1/users/carol/password-reset"},
		} {
			r := bob.Do(c.method, c.path, map[string]any{"active": false, "admin": true})
			if r.Status != 403 || r.ErrCode() != "forbidden" {
				t.Fatalf("%s %s as a user: %d %s", c.method, c.path, r.Status, r.Raw)
			}
		}
		// Everyone sees who is who.
		if u := userIn(testhub.AsList(bob.Must(200, "GET", "/api/v1/users", nil).Body["users"]), "carol"); u == nil || u["deactivated"] != nil {
			t.Fatalf("users: %v", u)
		}
		// Changing one's own password needs the current one, and a wrong
		// one is a 403 (the session is fine), never a 401.
		r := bob.Must(403, "PUT", "/api/v1/me/password", map[string]string{"current": "not it at all", "password": "new password 1"})
		if !strings.Contains(string(r.Raw), "current password is wrong") {
			t.Fatalf("%s", r.Raw)
		}
		bob.Must(400, "PUT", "/api/v1/me/password", map[string]string{"current": "pw-bob-secret", "password": "short"})
		bob.Must(400, "PUT", "/api/v1/me/password", map[string]string{"current": "pw-bob-secret", "password": "pw-bob-secret"})
		if s := testhub.AsList(bob.Must(200, "GET", "/api/v1/sessions", nil).Body["sessions"]); len(s) != 1 || s[0]["current"] != true {
			t.Fatalf("sessions %v", s)
		}
		bob.Must(400, "DELETE", "/api/v1/sessions/nothex", nil)
		// Another user's session id is not found, not ended.
		rootSession := testhub.AsList(root.Must(200, "GET", "/api/v1/sessions", nil).Body["sessions"])[0]["id"].(string)
		bob.Must(404, "DELETE", "/api/v1/sessions/"+rootSession, nil)
		root.Must(200, "GET", "/api/v1/me", nil)
	})

	t.Run("Admin", func(t *testing.T) {
		r := root.Must(403, "PATCH", "/api/v1/users/root", map[string]any{"active": false})
		if r.ErrReason() != "self" {
			t.Fatalf("deactivate self: %s", r.Raw)
		}
		r = root.Must(403, "PATCH", "/api/v1/users/root", map[string]any{"admin": false})
		if r.ErrReason() != "last-admin" {
			t.Fatalf("demote the last admin: %s", r.Raw)
		}
		r = root.Must(403, "POST", "/api/v1/users/root/password-reset", nil)
		if r.ErrReason() != "self" {
			t.Fatalf("reset own password: %s", r.Raw)
		}
		root.Must(404, "PATCH", "/api/v1/users/nobody", map[string]any{"active": false})
		root.Must(400, "PATCH", "/api/v1/users/bob", map[string]any{})

		// Grant and revoke admin; the new admin can act at once.
		if u := root.Must(200, "PATCH", "/api/v1/users/carol", map[string]any{"admin": true}).Body["user"].(map[string]any); u["admin"] != true {
			t.Fatalf("grant: %v", u)
		}
		carol.Must(200, "PATCH", "/api/v1/users/bob", map[string]any{"admin": false}) // a no-op, but allowed
		// With two admins, one may step down; then the other is the last.
		root.Must(200, "PATCH", "/api/v1/users/root", map[string]any{"admin": false})
		root.Must(403, "PATCH", "/api/v1/users/bob", map[string]any{"active": false})
		r = carol.Must(403, "PATCH", "/api/v1/users/carol", map[string]any{"admin": false})
		if r.ErrReason() != "last-admin" {
			t.Fatalf("%s", r.Raw)
		}
		carol.Must(200, "PATCH", "/api/v1/users/root", map[string]any{"admin": true})
		root.Must(200, "PATCH", "/api/v1/users/carol", map[string]any{"admin": false})
	})

	t.Run("Deactivated", func(t *testing.T) {
		dan := h.AddUser(root, "dan")
		dan.Must(200, "POST", "/api/v1/rooms/team/members", nil)
		if u := root.Must(200, "PATCH", "/api/v1/users/dan", map[string]any{"active": false}).Body["user"].(map[string]any); u["deactivated"] != true {
			t.Fatalf("deactivate: %v", u)
		}
		root.Must(200, "PATCH", "/api/v1/users/dan", map[string]any{"active": false}) // again: nothing left to do
		dan.Must(401, "GET", "/api/v1/me", nil)
		dan.Must(401, "POST", "/api/v1/rooms/team/messages", map[string]string{"text": "hi"})
		testhub.NewClient(t, h.URL()).Must(401, "POST", "/api/v1/sessions", map[string]string{"name": "dan", "password": "wrong password!"})
		r := testhub.NewClient(t, h.URL()).Must(403, "POST", "/api/v1/sessions", map[string]string{"name": "dan", "password": "pw-dan-secret"})
		if r.ErrReason() != "deactivated" {
			t.Fatalf("%s", r.Raw)
		}
		// Shown as such to everyone: in the user list and in member lists.
		if u := userIn(testhub.AsList(bob.Must(200, "GET", "/api/v1/users", nil).Body["users"]), "dan"); u["deactivated"] != true {
			t.Fatalf("users: %v", u)
		}
		if m := userIn(testhub.AsList(bob.Must(200, "GET", "/api/v1/rooms/team/members", nil).Body["members"]), "dan"); m["deactivated"] != true {
			t.Fatalf("members: %v", m)
		}
		r = root.Must(403, "PATCH", "/api/v1/users/dan", map[string]any{"admin": true})
		if r.ErrReason() != "deactivated" {
			t.Fatalf("grant admin to a deactivated user: %s", r.Raw)
		}
		root.Must(403, "POST", "/api/v1/users/dan/password-reset", nil)

		// Reactivated: logs in again; old sessions stay ended.
		if u := root.Must(200, "PATCH", "/api/v1/users/dan", map[string]any{"active": true}).Body["user"].(map[string]any); u["deactivated"] != nil {
			t.Fatalf("reactivate: %v", u)
		}
		dan.Must(401, "GET", "/api/v1/me", nil)
		h.Login("dan", "pw-dan-secret").Must(200, "GET", "/api/v1/me", nil)
	})
}

// An admin's reset code sets a new password once, before it expires; it
// ends every session and token of the account.
func TestPasswordReset(t *testing.T) {
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	h := testhub.Start(t, testhub.Options{Now: clock})
	root := h.Setup("root", "correct horse")
	bob := h.AddUser(root, "bob")
	tok := bob.Must(201, "POST", "/api/v1/tokens", map[string]string{"label": "ci"}).Body["token"].(string)
	script := testhub.NewClient(t, h.URL())
	script.Token = tok
	s := bob.Events(0, false)
	s.Ready()

	issue := func() string {
		r := root.Must(201, "POST", "/api/v1/users/bob/password-reset", nil)
		code := r.Body["code"].(string)
		if !strings.HasPrefix(code, "whr_") || r.Body["expiresAt"] == nil {
			t.Fatalf("%s", r.Raw)
		}
		return code
	}
	anon := testhub.NewClient(t, h.URL())

	t.Run("ErrExpired", func(t *testing.T) {
		code := issue()
		advance(25 * time.Hour)
		r := anon.Must(403, "POST", "/api/v1/password-reset", map[string]string{"code": code, "password": "new password here"})
		if !strings.Contains(string(r.Raw), "expired") {
			t.Fatalf("%s", r.Raw)
		}
	})
	t.Run("ErrReplaced", func(t *testing.T) {
		first := issue()
		issue()
		r := anon.Must(403, "POST", "/api/v1/password-reset", map[string]string{"code": first, "password": "new password here"})
		if !strings.Contains(string(r.Raw), "already used or replaced") {
			t.Fatalf("%s", r.Raw)
		}
	})
	t.Run("ErrBadInput", func(t *testing.T) {
		anon.Must(400, "POST", "/api/v1/password-reset", map[string]string{"code": "nope", "password": "new password here"})
		anon.Must(403, "POST", "/api/v1/password-reset", map[string]string{"code": "whr_unknown", "password": "new password here"})
		anon.Must(400, "POST", "/api/v1/password-reset", map[string]string{"code": issue(), "password": "short"})
	})
	t.Run("OK", func(t *testing.T) {
		code := issue()
		fresh := testhub.NewClient(t, h.URL())
		r := fresh.Must(201, "POST", "/api/v1/password-reset", map[string]string{"code": code, "password": "chosen by bob"})
		if r.Body["user"].(map[string]any)["name"] != "bob" {
			t.Fatalf("%s", r.Raw)
		}
		fresh.Must(200, "GET", "/api/v1/me", nil) // logged in
		testhub.WaitFor(t, time.Second, "bob's old socket to close", func() bool { return s.Closed() != nil })
		bob.Must(401, "GET", "/api/v1/me", nil)
		script.Must(401, "GET", "/api/v1/me", nil) // recovery ends tokens too
		h.Login("bob", "chosen by bob")
		anon.Must(401, "POST", "/api/v1/sessions", map[string]string{"name": "bob", "password": "pw-bob-secret"})
		r = anon.Must(403, "POST", "/api/v1/password-reset", map[string]string{"code": code, "password": "again and again"})
		if !strings.Contains(string(r.Raw), "already used") {
			t.Fatalf("second use: %s", r.Raw)
		}
	})
}

// A deactivated user's bridges are disconnected and refused (through the
// bridges' own revocation), and their agents go offline.
func TestDeactivationStopsBridges(t *testing.T) {
	h := testhub.Start(t, testhub.Options{})
	root := h.Setup("root", "correct horse")
	alice := h.AddUser(root, "alice")
	br := h.StartBridge(alice, nil, bridge.AgentConfig{Name: "demo", Harness: "demo"})
	root.Must(200, "PATCH", "/api/v1/users/alice", map[string]any{"active": false})
	testhub.WaitFor(t, 10*time.Second, "the agent to go offline", func() bool {
		for _, a := range testhub.AsList(root.Must(200, "GET", "/api/v1/agents", nil).Body["agents"]) {
			if a["handle"] == "alice/demo" {
				return a["status"] == "offline"
			}
		}
		return true
	})
	testhub.WaitFor(t, 10*time.Second, "the bridge to be disconnected", func() bool { return strings.Contains(br.Out(), "lost the hub connection") })
	_, err := br.Creds.Connect()
	if err == nil || !strings.Contains(err.Error(), "refused this bridge's key") {
		t.Fatalf("a deactivated user's bridge connected: %v", err)
	}
	// Reactivation does not bring the bridge back: it is paired anew.
	root.Must(200, "PATCH", "/api/v1/users/alice", map[string]any{"active": true})
	if _, err := br.Creds.Connect(); err == nil {
		t.Fatal("a reactivated user's old bridge connected")
	}
}

// Between a deactivation and the bridge revocations that follow it, the
// owner's bridges already count as revoked: refused at connect.
func TestDeactivatedOwnersBridgeRefusedBeforeItsRevocation(t *testing.T) {
	h := testhub.Start(t, testhub.Options{})
	root := h.Setup("root", "correct horse")
	alice := h.AddUser(root, "alice")
	creds := h.Pair(alice, "laptop")
	nc, err := creds.Connect()
	if err != nil {
		t.Fatal(err)
	}
	nc.Close()
	// Only the deactivation, as if the hub stopped right after it.
	ev, err := chat.NewEvent(chat.EvUserDeactivated, time.Now(), chat.UserChange{User: "alice", By: "root"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Rooms().Log.Append(t.Context(), ev); err != nil {
		t.Fatal(err)
	}
	if _, err := creds.Connect(); err == nil || !strings.Contains(err.Error(), "refused this bridge's key") {
		t.Fatalf("a deactivated owner's bridge connected: %v", err)
	}
	for _, b := range testhub.AsList(root.Must(200, "GET", "/api/v1/users", nil).Body["users"]) {
		if b["name"] == "alice" && b["deactivated"] != true {
			t.Fatalf("alice: %v", b)
		}
	}
}
