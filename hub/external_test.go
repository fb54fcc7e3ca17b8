package hub_test

import (
	"testing"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
)

func TestExternalNATS(t *testing.T) {
	o := testhub.Options{NATS: testhub.StartNATS(t)}
	t.Run("Rooms", func(t *testing.T) { testRoomsAndMembership(t, o) })
	t.Run("Messages", func(t *testing.T) {
		testMessagesAndPagination(t, testhub.Options{NATS: testhub.StartNATS(t)})
	})
}

// Two hub nodes on one NATS share one log: a browser can post on one and
// resume its live stream on the other with no gap and no duplicate.
func TestTwoHubNodes(t *testing.T) {
	ns := testhub.StartNATS(t)
	a := testhub.Start(t, testhub.Options{NATS: ns})
	adminA := a.Setup("root", "correct horse")
	adminA.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "shared"})
	first := uint64(adminA.Post("shared", "from node A"))

	b := testhub.Start(t, testhub.Options{NATS: ns})
	adminB := b.Login("root", "correct horse")
	sb := adminB.Events(first, false)
	sb.Ready()
	adminA.Post("shared", "second, from A")
	adminB.Post("shared", "third, from B")
	got := sb.WaitType("message", 2, 10*time.Second)
	if len(got) != 2 || got[0].ID <= first || got[1].ID <= got[0].ID {
		t.Fatalf("node B stream: %+v", got)
	}
	// Each node answers a write after applying it itself; another node
	// applies it a moment later (it projects the same stream).
	testhub.WaitFor(t, 10*time.Second, "node A to apply node B's message", func() bool {
		r := adminA.Must(200, "GET", "/api/v1/rooms/shared/messages", nil)
		return len(r.Body["messages"].([]any)) == 3
	})

	// A post sent over node A's socket whose reply was lost, sent again
	// over HTTP to node B with the same key (a client that reconnected to
	// the other node): one message, the first answer.
	sa := adminA.Events(0, false)
	sa.Ready()
	postThenRetry(t, sa, adminB, "shared", "sent once", "across-nodes")
	if n := len(adminB.Must(200, "GET", "/api/v1/rooms/shared/messages", nil).Body["messages"].([]any)); n != 4 {
		t.Fatalf("%d messages after a post and its retry on the other node, want 4", n)
	}
}
