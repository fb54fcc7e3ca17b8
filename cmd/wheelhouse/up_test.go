package main

import (
	"strings"
	"testing"

	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
)

// TestUp runs `wheelhouse up` as a newcomer would, mentions the demo agent
// it set up, and uses the owner's commands on the same machine.
func TestUp(t *testing.T) {
	env := homeEnv(t)
	p := startProc(t, env, "up", "--http", "127.0.0.1:0")
	url := p.expect(t, `^Wheelhouse is running: (\S+)`)[1]
	pw := p.expect(t, `^Log in as "admin" with password (\S+)`)[1]
	p.expect(t, `^Answer its approval requests here too: wheelhouse approvals`)
	admin := testhub.NewClient(t, url)
	admin.Must(201, "POST", "/api/v1/sessions", map[string]string{"name": "admin", "password": pw})
	r := admin.Must(201, "POST", "/api/v1/rooms/general/messages", map[string]string{"text": "@admin/demo list the files"})
	rs := testhub.AsList(r.Body["receipts"])
	if len(rs) != 1 || (rs[0]["status"] != "started" && rs[0]["status"] != "pending") {
		t.Fatalf("receipts %v", rs)
	}
	page := admin.Must(200, "GET", "/", nil)
	if !strings.Contains(string(page.Raw), "<title>") {
		t.Fatal("no UI at /")
	}
	t.Run("NewUsersLandInGeneral", func(t *testing.T) {
		admin.Must(201, "POST", "/api/v1/users", map[string]string{"name": "newbie", "password": "newbie-password"})
		c := testhub.NewClient(t, url)
		c.Must(201, "POST", "/api/v1/sessions", map[string]string{"name": "newbie", "password": "newbie-password"})
		if r := c.Must(200, "GET", "/api/v1/rooms/general", nil).Body["room"].(map[string]any); r["role"] != "member" {
			t.Fatalf("a new user is not in #general: %v", r)
		}
	})
	t.Run("OwnerCommandsFindUp", func(t *testing.T) {
		if out, code := runProc(t, env, "approvals"); code != 0 || !strings.Contains(out, "No approval requests") {
			t.Fatalf("approvals: %d %s", code, out)
		}
		if out, code := runProc(t, env, "deny", "nope"); code != 1 || !strings.Contains(out, "no pending approval nope") {
			t.Fatalf("deny: %d %s", code, out)
		}
		if out, code := runProc(t, env, "bridge", "invitations"); code != 0 || !strings.Contains(out, "No invitations") {
			t.Fatalf("bridge invitations: %d %s", code, out)
		}
	})
	t.Run("DoctorKnowsUp", func(t *testing.T) {
		out, code := runProc(t, env, "doctor")
		if code != 0 || !strings.Contains(out, "wheelhouse up's local bridge") || !strings.Contains(out, "wheelhouse up runs its demo agent") || !strings.Contains(out, "All checks passed") {
			t.Fatalf("doctor: %d\n%s", code, out)
		}
	})
}
