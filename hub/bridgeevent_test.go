package hub

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/chat"
	"github.com/wheelhouse-dev/wheelhouse/store"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// A bridge event sent again (the bridge's outbox retrying after a lost
// acknowledgement, however late) is recorded once: the hub finds its id in
// the projection before appending, and the projection refuses a second
// event carrying it (past JetStream's duplicate window, or two hub nodes
// racing).
func TestBridgeEventRecordedOnce(t *testing.T) {
	env := newBridgeEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	te := wire.TurnEvent{Agent: "demo", TurnID: "t1", Kind: wire.TurnMessage, Text: "said once", Room: "dev", EventID: "e1"}
	for range 3 {
		te.At = env.h.rooms.Now().UTC() // stamped at each send
		data, _ := json.Marshal(te)
		env.h.link.process(env.bridge, &nats.Msg{Subject: wire.FromBridge(env.bridge, wire.KindTurn), Data: data})
	}
	// Past the duplicate window, or another node: the same bridge event
	// under another event id.
	ev, err := chat.NewEvent(chat.EvMessagePosted, env.h.rooms.Now(), chat.MessagePosted{Room: "dev", AuthorKind: chat.AuthorAgent, Author: "alice/demo",
		Text: "said once", BridgeEvent: env.bridge + "/e1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.h.rooms.Log.Append(ctx, ev); wh.ErrorCode(err) != wh.EConflict {
		t.Fatalf("a second event for the same bridge event: %v, want a conflict", err)
	}
	alice, err := env.h.rooms.UserByName(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := env.h.rooms.History(ctx, alice, "dev", store.Page{Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range msgs {
		if m.Text == "said once" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("the bridge event became %d messages, want 1", n)
	}
	if ok, err := env.h.rooms.BridgeEventRecorded(ctx, env.bridge+"/e1"); !ok || err != nil {
		t.Fatalf("not recorded: %v %v", ok, err)
	}
}
