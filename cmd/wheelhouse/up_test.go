package main

import (
	"strings"
	"testing"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
)

// TestUp runs `wheelhouse up` as a newcomer would, mentions the demo agent
// it set up, and uses the owner's commands on the same machine.
func TestUp(t *testing.T) {
	env := homeEnv(t)
	p := startProc(t, env, "up", "--http", "127.0.0.1:0")
	url := p.expect(t, `^Wheelhouse is running: (\S+)`)[1]
	pw := p.expect(t, `^Log in as "admin" with password (\S+)`)[1]
	// The first run shows, in the same terminal, the code that enrolls
	// the owner's browser.
	code := p.expect(t, `device enrollment code for @admin: ([0-9A-Z]{5}-[0-9A-Z]{5}) `)[1]
	p.expect(t, `^To approve from your browser, enroll it once: .* type the enrollment code printed just above \(until`)
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
	t.Run("InspectVerifyFindsUpsJournal", func(t *testing.T) {
		tok := admin.Must(201, "POST", "/api/v1/tokens", map[string]string{"label": "cli"}).Body["token"].(string)
		if out, code := runProc(t, env, "inspect", "@admin/demo", "--verify"); code == 0 || !strings.Contains(out, "inspect needs --token") || strings.Contains(out, "--hub") {
			t.Fatalf("inspect without a token: %d %s", code, out)
		}
		var out string
		testhub.WaitFor(t, 20*time.Second, "inspect --verify to check the local bridge's journal", func() bool {
			var code int
			out, code = runProc(t, env, "inspect", "@admin/demo", "--verify", "--token", tok)
			return code == 0 && strings.Contains(out, "is whole") && !strings.Contains(out, "NOTE:")
		})
		if strings.Contains(out, "no bridge journal") {
			t.Fatalf("inspect --verify did not find up's journal:\n%s", out)
		}
	})
	t.Run("EnrollWithTheCodeItPrinted", func(t *testing.T) {
		bs := testhub.AsList(admin.Must(200, "GET", "/api/v1/bridges", nil).Body["bridges"])
		dev := testhub.NewDevice(t, "laptop")
		admin.Must(201, "POST", "/api/v1/devices", dev.Enrollment(code, bs[0]["id"].(string)))
		out, code := runProc(t, env, "bridge", "devices")
		if code != 0 || !strings.Contains(out, dev.ID) || !strings.Contains(out, "laptop") || !strings.Contains(out, "trusted") {
			t.Fatalf("bridge devices: %d %s", code, out)
		}
		// A new code for the next device; the one used is spent.
		if out, code := runProc(t, env, "bridge", "devices", "add"); code != 0 || !strings.Contains(out, "Enrollment code: ") {
			t.Fatalf("bridge devices add: %d %s", code, out)
		}
		if out, code := runProc(t, env, "bridge", "devices", "revoke", dev.ID); code != 0 || !strings.Contains(out, "revoked") {
			t.Fatalf("bridge devices revoke: %d %s", code, out)
		}
		testhub.WaitFor(t, 10*time.Second, "the hub to show the device revoked", func() bool {
			for _, d := range testhub.AsList(admin.Must(200, "GET", "/api/v1/devices", nil).Body["devices"]) {
				if d["id"] == dev.ID && d["revoked"] == true {
					return true
				}
			}
			return false
		})
	})
	t.Run("DoctorKnowsUp", func(t *testing.T) {
		out, code := runProc(t, env, "doctor")
		if code != 0 || !strings.Contains(out, "wheelhouse up's local bridge") || !strings.Contains(out, "wheelhouse up runs its demo agent") || !strings.Contains(out, "All checks passed") {
			t.Fatalf("doctor: %d\n%s", code, out)
		}
	})
}
