package e2e_test

import (
	"strings"
	"testing"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/bridge"
	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
)

// What an agent does in a private room stays there: members of its other
// rooms see neither the entries, nor the room's name, nor the running
// turn's details; the policy is the owner's alone.
func TestAgentActivityFollowsRooms(t *testing.T) {
	tm := newTeam(t)
	tm.h.StartBridge(tm.alice, nil, demoAgent("demo", bridge.PolicyConfig{Address: "members"}, 40, "100ms"))
	tm.alice.AddAgent("dev", "alice/demo")
	tm.alice.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "secret-plans", "private": true})
	tm.alice.Must(200, "POST", "/api/v1/rooms/secret-plans/members", map[string]string{"user": "carol"})
	tm.alice.AddAgent("secret-plans", "alice/demo")

	bobLive := tm.bob.Events(0, false)
	defer bobLive.Close()
	bobLive.Ready()
	id, _ := post(t, tm.carol, "secret-plans", "@alice/demo read the merger notes", nil)
	receipt(t, tm.carol, "secret-plans", id, "alice/demo", "started")

	timeline := func(c *testhub.Client) string {
		return string(c.Must(200, "GET", "/api/v1/agents/alice/demo/timeline", nil).Raw)
	}
	agent := func(c *testhub.Client) map[string]any { return agentStatus(t, c, "alice/demo") }

	t.Run("OwnerSeesAll", func(t *testing.T) {
		if tl := timeline(tm.alice); !strings.Contains(tl, "secret-plans") {
			t.Fatalf("the owner does not see the private room's entries")
		}
		a := agent(tm.alice)
		if a["policy"] == nil || !strings.Contains(strings.Join(asStrings(a["rooms"]), ","), "secret-plans") {
			t.Fatalf("owner's view %v", a)
		}
	})
	t.Run("MemberOfTheRoomSeesIt", func(t *testing.T) {
		if tl := timeline(tm.carol); !strings.Contains(tl, "secret-plans") {
			t.Fatalf("carol does not see what happened in her room")
		}
	})
	t.Run("MemberOfAnotherRoomDoesNot", func(t *testing.T) {
		testhub.WaitFor(t, 10*time.Second, "the agent to be working", func() bool { return agent(tm.alice)["status"] == "working" })
		if tl := timeline(tm.bob); strings.Contains(tl, "secret-plans") || strings.Contains(tl, "merger") {
			t.Fatalf("bob sees the private room's activity: %s", tl)
		}
		a := agent(tm.bob)
		if a["policy"] != nil {
			t.Fatal("bob sees the policy")
		}
		for _, r := range asStrings(a["rooms"]) {
			if r == "secret-plans" {
				t.Fatal("bob sees the private room's name in the agent's rooms")
			}
		}
		if a["turnRoom"] != nil || a["turnId"] != nil {
			t.Fatalf("bob sees the private turn's details: %v", a)
		}
		// Nor does his live feed carry them.
		bobLive.WaitType("agent.status", 1, 10*time.Second)
		for _, e := range bobLive.Events() {
			if strings.Contains(string(e.Data), "secret-plans") || e.Room == "secret-plans" {
				t.Fatalf("bob's live feed carried the private room: %s %s", e.Type, e.Data)
			}
		}
	})
	t.Run("OutsidersAreRefused", func(t *testing.T) {
		// root (an admin) shares no room with the agent: admin status grants nothing.
		tm.admin.Must(403, "GET", "/api/v1/agents/alice/demo/timeline", nil)
	})
}

func asStrings(v any) []string {
	var out []string
	l, _ := v.([]any)
	for _, x := range l {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}
