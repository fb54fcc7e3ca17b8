package hub_test

import (
	"testing"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/bridge"
	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
)

// agentAs is the agent handle as c's GET /agents shows it.
func agentAs(t *testing.T, c *testhub.Client, handle string) map[string]any {
	t.Helper()
	for _, a := range testhub.AsList(c.Must(200, "GET", "/api/v1/agents", nil).Body["agents"]) {
		if a["handle"] == handle {
			return a
		}
	}
	t.Fatalf("%s does not list %s", c.Name, handle)
	return nil
}

// After a turn in a private room ends, the bridge still reports the room
// it ran in: GET /agents shows it only to those who may see the room's
// activity (the owner and the room's members), as while it ran.
func TestAgentsHideTheLastTurnsPrivateRoom(t *testing.T) {
	h := testhub.Start(t, testhub.Options{})
	root := h.Setup("root", "correct horse")
	alice := h.AddUser(root, "alice")
	bob := h.AddUser(root, "bob")
	carol := h.AddUser(root, "carol")
	h.StartBridge(alice, nil, bridge.AgentConfig{Name: "demo", Harness: "demo", Options: map[string]string{"steps": "1", "step": "10ms"}})
	alice.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "secret", "private": true})
	alice.Must(200, "POST", "/api/v1/rooms/secret/members", map[string]any{"user": "carol"})
	alice.AddAgent("secret", "alice/demo")
	alice.Post("secret", "@alice/demo hello")
	testhub.WaitFor(t, 30*time.Second, "the turn to end with its room reported", func() bool {
		a := agentAs(t, alice, "alice/demo")
		return a["status"] == "idle" && a["turnRoom"] == "secret"
	})
	if a := agentAs(t, carol, "alice/demo"); a["turnRoom"] != "secret" {
		t.Fatalf("carol, a member of the room, sees %v", a)
	}
	a := agentAs(t, bob, "alice/demo")
	if _, ok := a["turnRoom"]; ok {
		t.Fatalf("bob, not in the private room, sees its name through the agent: %v", a)
	}
	if _, ok := a["turnId"]; ok {
		t.Fatalf("bob sees the agent's turn: %v", a)
	}
}
