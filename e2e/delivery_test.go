package e2e_test

import (
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
)

// A poster who hangs up right after sending still gets every mention
// delivered: routing follows from the message being in the log, not from
// the request.
func TestAbandonedPostsAreDelivered(t *testing.T) {
	tm := newTeam(t)
	tm.h.StartBridge(tm.alice, nil, demoAgent("demo", bridgePolicyMembers(), 1, "10ms"))
	tm.alice.AddAgent("dev", "alice/demo")
	tok := tm.bob.Must(201, "POST", "/api/v1/tokens", map[string]string{"label": "script"}).Body["token"].(string)
	u, _ := url.Parse(tm.h.URL())
	const n = 10
	for i := 0; i < n; i++ {
		body := fmt.Sprintf(`{"text":"@alice/demo abandoned %d"}`, i)
		c, err := net.Dial("tcp", u.Host)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "POST /api/v1/rooms/dev/messages HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
			u.Host, tok, len(body), body)
		c.Close() // gone before any answer
	}
	testhub.CheckFor(t, 20*time.Second, "every abandoned mention to reach the agent", func() error {
		r := tm.bob.Must(200, "GET", "/api/v1/rooms/dev/messages?limit=100", nil)
		posted := map[int64]bool{}
		for _, m := range testhub.AsList(r.Body["messages"]) {
			if m["author"] == "bob" && strings.Contains(m["text"].(string), "abandoned") {
				posted[int64(m["id"].(float64))] = true
			}
		}
		// Each got a receipt from the bridge (started, steered, or refused by
		// the agent's own rules, such as its steer limit per turn).
		answered := 0
		for _, rc := range testhub.AsList(r.Body["receipts"]) {
			if posted[int64(rc["messageId"].(float64))] && rc["status"] != "pending" && rc["reason"] != "timeout" && rc["reason"] != "agent-offline" {
				answered++
			}
		}
		if len(posted) != n || answered != n {
			return fmt.Errorf("%d of %d stored, %d answered by the agent's bridge", len(posted), n, answered)
		}
		return nil
	})
}

// An agent name belongs to one bridge of its owner: a second bridge that
// announces it is refused, told so, and the agent stays with the first —
// also after the second one stops.
func TestSecondBridgeCannotTakeAnAgent(t *testing.T) {
	tm := newTeam(t)
	first := tm.h.StartBridge(tm.alice, nil, demoAgent("demo", bridgePolicyMembers(), 1, "10ms"))
	tm.alice.AddAgent("dev", "alice/demo")
	second := tm.h.StartBridge(tm.alice, nil, demoAgent("demo", bridgePolicyMembers(), 1, "10ms"))
	testhub.WaitFor(t, 10*time.Second, "the second bridge to say it does not run the agent", func() bool {
		return strings.Contains(second.Out(), "is not running here") && strings.Contains(second.Out(), "already run by your bridge")
	})
	a := agentStatus(t, tm.alice, "alice/demo")
	if a["bridge"] != first.Creds.BridgeID {
		t.Fatalf("the agent moved to bridge %v", a["bridge"])
	}
	// The owner hears of it.
	dm := testhub.AsList(tm.alice.Must(200, "GET", "/api/v1/rooms/dm:alice:alice+demo/messages", nil).Body["messages"])
	if len(dm) == 0 || !strings.Contains(dm[len(dm)-1]["text"].(string), "second bridge") {
		t.Fatalf("the owner was not told: %v", dm)
	}
	second.Stop()
	id, _ := post(t, tm.bob, "dev", "@alice/demo still yours?", nil)
	receipt(t, tm.bob, "dev", id, "alice/demo", "started")
	if a := agentStatus(t, tm.alice, "alice/demo"); a["status"] == "offline" {
		t.Fatal("the agent went offline when the refused bridge stopped")
	}
}

// A client that retries a post (or a create) with the same Idempotency-Key
// gets the first answer, not a duplicate.
func TestIdempotentRetries(t *testing.T) {
	tm := newTeam(t)
	post := func(key, text string) testhub.Response {
		return tm.bob.DoWith("POST", "/api/v1/rooms/dev/messages", map[string]string{"text": text}, map[string]string{"Idempotency-Key": key})
	}
	r1 := post("k-1", "only once")
	r2 := post("k-1", "only once")
	if r1.Status != 201 || r2.Status != 201 {
		t.Fatalf("%d %d: %s", r1.Status, r2.Status, r2.Raw)
	}
	id1 := r1.Body["message"].(map[string]any)["id"]
	if id2 := r2.Body["message"].(map[string]any)["id"]; id1 != id2 {
		t.Fatalf("the retry posted again: %v then %v", id1, id2)
	}
	n := 0
	for _, m := range testhub.AsList(tm.bob.Must(200, "GET", "/api/v1/rooms/dev/messages", nil).Body["messages"]) {
		if m["text"] == "only once" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d copies", n)
	}
	if r3 := post("k-2", "only once"); r3.Body["message"].(map[string]any)["id"] == id1 {
		t.Fatal("another key was taken for a retry")
	}
	// Another user with the same key is another request.
	r4 := tm.dave.DoWith("POST", "/api/v1/rooms/dev/messages", map[string]string{"text": "only once"}, map[string]string{"Idempotency-Key": "k-1"})
	if r4.Body["message"].(map[string]any)["id"] == id1 {
		t.Fatal("a key was shared across users")
	}
	t.Run("Create", func(t *testing.T) {
		c := func() testhub.Response {
			return tm.bob.DoWith("POST", "/api/v1/rooms", map[string]any{"name": "retried"}, map[string]string{"Idempotency-Key": "room-1"})
		}
		if a, b := c(), c(); a.Status != 201 || b.Status != 201 {
			t.Fatalf("%d %d %s", a.Status, b.Status, b.Raw)
		}
		if r := tm.bob.Do("POST", "/api/v1/rooms", map[string]any{"name": "retried"}); r.Status != 409 {
			t.Fatalf("without the key a second create is a conflict, got %d", r.Status)
		}
	})
	t.Run("SecretsRefuseIt", func(t *testing.T) {
		r := tm.bob.DoWith("POST", "/api/v1/tokens", map[string]string{"label": "x"}, map[string]string{"Idempotency-Key": "t-1"})
		if r.Status != 400 || !strings.Contains(string(r.Raw), "shown once") {
			t.Fatalf("%d %s", r.Status, r.Raw)
		}
	})
	t.Run("BadKey", func(t *testing.T) {
		if r := post(strings.Repeat("x", 300), "long key"); r.Status != 400 {
			t.Fatalf("%d", r.Status)
		}
		if r := post("has space", "spacey key"); r.Status != 400 {
			t.Fatalf("%d", r.Status)
		}
	})
}

// after=0 pages forward from the first message.
func TestHistoryAfterZero(t *testing.T) {
	tm := newTeam(t)
	var ids []int64
	for i := 0; i < 12; i++ {
		ids = append(ids, tm.bob.Post("dev", fmt.Sprintf("m%d", i)))
	}
	r := tm.bob.Must(200, "GET", "/api/v1/rooms/dev/messages?after=0&limit=5", nil)
	ms := testhub.AsList(r.Body["messages"])
	if len(ms) != 5 || ms[0]["text"] == "m7" {
		t.Fatalf("after=0 did not page from the start: %v", ms)
	}
	first := int64(ms[0]["id"].(float64))
	if first > ids[0] {
		t.Fatalf("first page starts at %d, after the first post %d", first, ids[0])
	}
	// Without after: the newest page.
	r = tm.bob.Must(200, "GET", "/api/v1/rooms/dev/messages?limit=5", nil)
	if ms := testhub.AsList(r.Body["messages"]); ms[len(ms)-1]["text"] != "m11" {
		t.Fatalf("newest page %v", ms)
	}
}

// In a DM with an agent every message addresses it: no mention needed.
func TestAgentDMIsAConversation(t *testing.T) {
	tm := newTeam(t)
	tm.h.StartBridge(tm.alice, nil, demoAgent("demo", bridgePolicyMembers(), 1, "10ms"))
	r := tm.alice.Must(200, "POST", "/api/v1/dms", map[string]string{"with": "alice/demo"})
	dm := r.Body["room"].(map[string]any)["name"].(string)
	id, rcs := post(t, tm.alice, dm, "list the files please", nil)
	if len(rcs) != 1 {
		t.Fatalf("a plain DM message got %d receipts", len(rcs))
	}
	receipt(t, tm.alice, dm, id, "alice/demo", "started")
	waitAgentSays(t, tm.alice, dm, "alice/demo", "scripted")
}
