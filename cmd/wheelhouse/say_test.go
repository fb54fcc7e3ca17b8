package main

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/bridge"
	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
)

// TestSay: the owner's words typed on the bridge machine carry her full
// authority (her auto-approve list applies) and are shown to the team in
// the room; the same words posted unsigned through the hub do not.
func TestSay(t *testing.T) {
	h := testhub.Start(t, testhub.Options{})
	admin := h.Setup("root", "correct horse")
	alice := h.AddUser(admin, "alice")
	alice.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "dev"})
	br := h.StartBridge(alice, nil, bridge.AgentConfig{Name: "demo", Harness: "demo", Options: map[string]string{"steps": "2", "step": "10ms"},
		PolicyFile: bridge.PolicyConfig{AutoApprove: []string{"delete_file"}}})
	alice.AddAgent("dev", "alice/demo")
	started := regexp.MustCompile(`started @?alice/demo turn (\S+) `)
	idle := func() {
		testhub.WaitFor(t, 15*time.Second, "alice/demo idle", func() bool {
			// Every turn the bridge started has ended there (the hub's
			// status can say idle a moment before the bridge's turn ends).
			out := br.Out()
			for _, m := range started.FindAllStringSubmatch(out, -1) {
				if !strings.Contains(out, "turn "+m[1]+" ended:") {
					return false
				}
			}
			for _, a := range testhub.AsList(alice.Must(200, "GET", "/api/v1/agents", nil).Body["agents"]) {
				if a["handle"] == "alice/demo" {
					return a["status"] == "idle"
				}
			}
			return false
		})
	}
	roomSays := func(room, sub string) bool {
		r := alice.Must(200, "GET", "/api/v1/rooms/"+room+"/messages?include=replies&limit=200", nil)
		for _, m := range testhub.AsList(r.Body["messages"]) {
			if m["author"] == "alice/demo" && strings.Contains(m["text"].(string), sub) {
				return true
			}
		}
		return false
	}

	t.Run("OwnersAuthority", func(t *testing.T) {
		out, code := runCmd(t, "say", "@alice/demo", "delete", "old.log", "--room", "dev", "--socket", br.Socket)
		if code != 0 || !strings.Contains(out, "@alice/demo: started turn") {
			t.Fatalf("say: %d %s", code, out)
		}
		testhub.WaitFor(t, 15*time.Second, "the words and the deed in #dev", func() bool {
			return roomSays("dev", "@alice, on the agent's machine: delete old.log") && roomSays("dev", "deleted old.log")
		})
		if !strings.Contains(br.Out(), "auto-approved delete_file") {
			t.Fatalf("alice's own words did not get her auto-approve list:\n%s", br.Out())
		}
		idle()
	})
	t.Run("UnsignedPostGetsNoAuthority", func(t *testing.T) {
		alice.PostUnsigned("dev", "@alice/demo delete notes.txt")
		testhub.WaitFor(t, 15*time.Second, "an approval request for the unsigned words", func() bool {
			out, _ := runCmd(t, "approvals", "--socket", br.Socket)
			return strings.Contains(out, "notes.txt") && strings.Contains(out, "(tainted)")
		})
		list, _ := runCmd(t, "approvals", "--socket", br.Socket, "--json")
		i := strings.Index(list, `"id":"`) + 6
		if out, code := runCmd(t, "deny", list[i:i+strings.Index(list[i:], `"`)], "--socket", br.Socket); code != 0 {
			t.Fatalf("deny: %d %s", code, out)
		}
		idle()
	})
	t.Run("DefaultsToTheOwnersDM", func(t *testing.T) {
		out, code := runCmd(t, "say", "--socket", br.Socket, "@alice/demo", "hello")
		if code != 0 || !strings.Contains(out, "started turn") {
			t.Fatalf("say: %d %s", code, out)
		}
		if !strings.Contains(br.Out(), "said on this machine to @alice/demo in dm:alice:alice+demo") {
			t.Fatalf("the words did not go to alice's DM with the agent:\n%s", br.Out())
		}
		idle()
	})
	t.Run("ErrUsage", func(t *testing.T) {
		if out, code := runCmd(t, "say", "@alice/demo", "--socket", br.Socket); code != 2 {
			t.Fatalf("no words: %d %s", code, out)
		}
		if out, code := runCmd(t, "say", "demo", "hi", "--socket", br.Socket); code != 2 || !strings.Contains(out, "@owner/agent") {
			t.Fatalf("no handle: %d %s", code, out)
		}
		if out, code := runCmd(t, "say", "@alice/nobody", "hi", "--socket", br.Socket); code == 0 || !strings.Contains(out, "no agent") {
			t.Fatalf("an unknown agent: %d %s", code, out)
		}
	})
}
