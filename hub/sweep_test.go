package hub_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
)

// A revocation whose disconnect was missed (recorded, but no node kicked
// the bridge) is caught by the hub's sweep.
func TestSweepDisconnectsMissedRevocation(t *testing.T) {
	h := testhub.Start(t, testhub.Options{BridgeSweep: 100 * time.Millisecond})
	admin := h.Setup("root", "correct horse")
	alice := h.AddUser(admin, "alice")
	creds := h.Pair(alice, "laptop")
	lost := make(chan struct{}, 1)
	nc, err := creds.Dial("probe", nats.DisconnectErrHandler(func(*nats.Conn, error) {
		select {
		case lost <- struct{}{}:
		default:
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ctx := context.Background()
	owner, err := h.Rooms().UserByName(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Rooms().RevokeBridge(ctx, owner, creds.BridgeID); err != nil { // the room service only: nothing kicks
		t.Fatal(err)
	}
	select {
	case <-lost:
	case <-time.After(10 * time.Second):
		t.Fatal("the revoked bridge stayed connected")
	}
}
