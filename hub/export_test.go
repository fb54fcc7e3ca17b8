package hub

import (
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// Role names for tests.
const (
	RoleBridgeServing = string(roleBridgeServing)
	RoleLogWriter     = string(roleLogWriter)
	RoleOps           = string(roleOps)
)

// ConnectAs connects to the hub's NATS (embedded: its plain listener;
// else url) as one of the hub's own users, as a test with the hub's
// secrets may.
func (h *Hub) ConnectAs(t testing.TB, role string, opts ...nats.Option) *nats.Conn {
	t.Helper()
	k, err := h.natsSecrets.keys()
	if err != nil {
		t.Fatal(err)
	}
	kp := map[string]nkeys.KeyPair{RoleBridgeServing: k.hub, RoleLogWriter: k.log, RoleOps: k.ops}[role]
	url := h.cfg.NATSURL
	if h.ns != nil {
		url = h.ns.ns.ClientURL()
	}
	nc, err := nats.Connect(url, append([]nats.Option{nats.Nkey(pubKey(kp), kp.Sign), nats.CustomInboxPrefix(inboxOf(natsRole(role)))}, opts...)...)
	if err != nil {
		t.Fatalf("connect as %s: %v", role, err)
	}
	t.Cleanup(nc.Close)
	return nc
}
