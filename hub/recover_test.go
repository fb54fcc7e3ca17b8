package hub

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// A handler that panics is recovered, logged and counted by handler, and
// the hub goes on: the bridge's worker handles its next message, and HTTP
// still answers. (A nil message is the one way to make the real handlers
// panic from outside; every input a bridge can send is fuzzed not to.)
func TestHandlerPanicRecovered(t *testing.T) {
	env := newBridgeEnv(t)
	l := env.h.link

	l.handle(nil)               // the NATS callback of the bridge subscription
	l.heartbeat(nil)            // the NATS callback of heartbeats
	l.dispatch(env.bridge, nil) // a worker, through its queue
	l.safely("test", func() { panic("boom") })

	want := map[string]float64{"dispatch": 1, "heartbeat": 1, "bridge message": 1, "test": 1}
	deadline := time.Now().Add(10 * time.Second)
	for {
		ok := true
		for h, n := range want {
			if counterValue(t, env.h.reg, "wheelhouse_handler_panics_total", h) != n {
				ok = false
			}
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("panics not counted by handler: %v", counterValue(t, env.h.reg, "wheelhouse_handler_panics_total", ""))
		}
		time.Sleep(5 * time.Millisecond)
	}

	// The same worker handles the bridge's next message: an announce, asked
	// over NATS as the bridge would, with its key.
	a, _ := json.Marshal(wire.Announce{Version: wire.Version, Agents: []wire.AgentInfo{{Name: "demo", Harness: "demo", Status: wire.AgentIdle, Policy: wire.DefaultPolicy()}}})
	pub, _ := env.key.PublicKey()
	nc, err := nats.Connect(env.h.ns.ns.ClientURL(), nats.Nkey(pub, env.key.Sign), nats.CustomInboxPrefix(wire.InboxPrefix(env.bridge)))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	m, err := nc.Request(wire.FromBridge(env.bridge, wire.KindAnnounce), a, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var ack wire.AnnounceAck
	if err := json.Unmarshal(m.Data, &ack); err != nil || !ack.OK || ack.Owner != "alice" {
		t.Fatalf("announce after a panic: %s", m.Data)
	}

	resp, err := http.Get(env.h.MetricsURL())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(body), `wheelhouse_handler_panics_total{handler="bridge message"} 1`) {
		t.Fatalf("/metrics does not show the panic:\n%s", body)
	}
}
