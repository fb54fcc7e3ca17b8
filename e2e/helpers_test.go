package e2e_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/bridge"
	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
)

// receipt polls the receipts of message id until one for agent has a
// status in want, and returns it.
func receipt(t *testing.T, c *testhub.Client, room string, id int64, agent string, want ...string) map[string]any {
	t.Helper()
	var last map[string]any
	testhub.CheckFor(t, 15*time.Second, fmt.Sprintf("receipt %v for message %d", want, id), func() error {
		r := c.Must(200, "GET", fmt.Sprintf("/api/v1/rooms/%s/messages?include=replies&after=%d&limit=1", room, id-1), nil)
		for _, rc := range testhub.AsList(r.Body["receipts"]) {
			if rc["agent"] == agent {
				last = rc
				for _, w := range want {
					// "started" is satisfied by a turn it started that has
					// since ended (via started).
					if rc["status"] == w || rc["via"] == w {
						return nil
					}
				}
			}
		}
		return fmt.Errorf("last receipt %v", last)
	})
	return last
}

// post posts text and returns the message id and the receipts in the answer.
func post(t *testing.T, c *testhub.Client, room, text string, turns map[string]string) (int64, []map[string]any) {
	t.Helper()
	body := map[string]any{"text": text}
	if turns != nil {
		body["turns"] = turns
	}
	// The owner's words to her own agents are signed by her device, as her
	// browser signs them.
	if w := c.Words(room, 0, text, turns); len(w) > 0 {
		body["signed"] = w
	}
	r := c.Must(201, "POST", "/api/v1/rooms/"+room+"/messages", body)
	m := r.Body["message"].(map[string]any)
	return int64(m["id"].(float64)), testhub.AsList(r.Body["receipts"])
}

// agentMessages returns the texts an agent posted in a room.
func agentMessages(t *testing.T, c *testhub.Client, room, agent string) []string {
	r := c.Must(200, "GET", "/api/v1/rooms/"+room+"/messages?include=replies&limit=200", nil)
	var out []string
	for _, m := range testhub.AsList(r.Body["messages"]) {
		if m["author"] == agent {
			out = append(out, m["text"].(string))
		}
	}
	return out
}

func waitAgentSays(t *testing.T, c *testhub.Client, room, agent, sub string) string {
	t.Helper()
	var got string
	testhub.WaitFor(t, 20*time.Second, agent+" saying "+sub, func() bool {
		for _, m := range agentMessages(t, c, room, agent) {
			if strings.Contains(m, sub) {
				got = m
				return true
			}
		}
		return false
	})
	return got
}

func agentStatus(t *testing.T, c *testhub.Client, handle string) map[string]any {
	r := c.Must(200, "GET", "/api/v1/agents", nil)
	for _, a := range testhub.AsList(r.Body["agents"]) {
		if a["handle"] == handle {
			return a
		}
	}
	t.Fatalf("no agent %s", handle)
	return nil
}

func demoAgent(name string, policy bridge.PolicyConfig, steps int, step string) bridge.AgentConfig {
	return bridge.AgentConfig{Name: name, Harness: "demo", PolicyFile: policy,
		Options: map[string]string{"steps": fmt.Sprint(steps), "step": step}}
}

func boolp(b bool) *bool { return &b }
