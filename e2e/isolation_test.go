package e2e_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/wheelhouse-dev/wheelhouse/authz"
	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// TestBridgeIsolation proves with the real NATS server that a bridge's
// credentials reach only its own subjects.
func TestBridgeIsolation(t *testing.T) {
	h := testhub.Start(t, testhub.Options{})
	admin := h.Setup("root", "correct horse")
	alice := h.AddUser(admin, "alice")
	bob := h.AddUser(admin, "bob")
	a := h.Pair(alice, "a")
	b := h.Pair(bob, "b")

	var violations testhub.Violations
	nc, err := a.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetErrorHandler(violations.Handler)
	expectViolation := func(t *testing.T, what string, do func() error) {
		t.Helper()
		violations.Refused(t, nc, what, do)
	}
	noop := func(*nats.Msg) {}
	t.Run("CannotReadOtherBridge", func(t *testing.T) {
		expectViolation(t, "subscribe B", func() error { _, err := nc.Subscribe("wh.bridge."+b.BridgeID+".>", noop); return err })
		expectViolation(t, "subscribe B's inbox", func() error { _, err := nc.Subscribe(wire.InboxPrefix(b.BridgeID)+".>", noop); return err })
	})
	t.Run("CannotPublishAsOtherBridge", func(t *testing.T) {
		expectViolation(t, "publish B", func() error { return nc.Publish(wire.FromBridge(b.BridgeID, wire.KindReceipt), []byte("{}")) })
		expectViolation(t, "steer B", func() error { return nc.Publish(wire.ToBridge(b.BridgeID, wire.KindSteer), []byte("{}")) })
	})
	t.Run("CannotReachRoomsOrLog", func(t *testing.T) {
		expectViolation(t, "subscribe log", func() error { _, err := nc.Subscribe("wh.log.>", noop); return err })
		expectViolation(t, "publish log", func() error { return nc.Publish("wh.log.message.posted", []byte("{}")) })
		expectViolation(t, "JetStream API", func() error { return nc.Publish("$JS.API.STREAM.INFO.WHEELHOUSE", nil) })
		expectViolation(t, "subscribe everything", func() error { _, err := nc.Subscribe(">", noop); return err })
	})
	t.Run("OwnSubjectsWork", func(t *testing.T) {
		if _, err := nc.Subscribe(wire.ToBridge(a.BridgeID, wire.KindSteer), noop); err != nil {
			t.Fatal(err)
		}
		if err := nc.Publish(wire.FromBridge(a.BridgeID, wire.KindHeartbeat), []byte(`{"agents":[]}`)); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("RevokingDisconnectsARunningBridge", func(t *testing.T) {
		carol := h.AddUser(admin, "carol")
		br := h.StartBridge(carol, nil, demoAgent("demo", bridgePolicyMembers(), 1, "10ms"))
		carol.Must(204, "DELETE", "/api/v1/bridges/"+br.Creds.BridgeID, nil)
		waitStatus(t, carol, "carol/demo", "offline")
		testhub.WaitFor(t, 10*time.Second, "the bridge to notice", func() bool { return strings.Contains(br.Out(), "lost the hub connection") })
	})
	t.Run("RevokedBridgeCannotConnect", func(t *testing.T) {
		alice.Must(204, "DELETE", "/api/v1/bridges/"+a.BridgeID, nil)
		_, err := a.Connect()
		if err == nil || !strings.Contains(err.Error(), "refused this bridge's key") {
			t.Fatalf("a revoked bridge connected: %v", err)
		}
	})
	t.Run("PairingTokenSingleUse", func(t *testing.T) {
		r := alice.Must(201, "POST", "/api/v1/bridges/pairing-tokens", nil)
		tok := r.Body["token"].(string)
		if !strings.Contains(r.Body["command"].(string), "wheelhouse bridge pair --hub "+h.URL()+" --token "+tok) {
			t.Fatalf("command %q", r.Body["command"])
		}
		c := testhub.NewClient(t, h.URL())
		c.Must(201, "POST", "/api/v1/bridges/pair", map[string]string{"token": tok, "publicKey": "UAXXX", "name": "x"})
		r2 := c.Must(403, "POST", "/api/v1/bridges/pair", map[string]string{"token": tok, "publicKey": "UAYYY", "name": "y"})
		if !strings.Contains(r2.Body["error"].(map[string]any)["message"].(string), "already used") {
			t.Fatalf("%s", r2.Raw)
		}
	})
}

// A bridge cannot put approval cards into rooms its agent is not in, nor
// ask approvals for agents it does not run.
func TestBridgeApprovalScope(t *testing.T) {
	tm := newTeam(t)
	br := tm.h.StartBridge(tm.alice, nil, demoAgent("demo", bridgePolicyMembers(), 1, "10ms"))
	tm.bob.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "secret", "private": true})
	nc, err := br.Creds.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	n := 0
	ask := func(agent, room string) wire.Ack {
		n++
		hash, payload, _ := authz.PayloadHash("x", map[string]any{"n": n})
		req := wire.ApprovalRequest{ID: fmt.Sprintf("a%016x", n), Agent: agent, TurnID: "t", Tool: "x", Summary: "spam", PayloadHash: hash,
			Payload: string(payload), Room: room, Expires: time.Now().Add(time.Minute)}
		b, _ := json.Marshal(req)
		m, err := nc.Request(wire.FromBridge(br.Creds.BridgeID, wire.KindApproval), b, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var ack wire.Ack
		json.Unmarshal(m.Data, &ack)
		return ack
	}
	if ack := ask("ghost", ""); ack.OK {
		t.Fatal("accepted an approval for an agent the bridge does not run")
	}
	if ack := ask("demo", "secret"); !ack.OK {
		t.Fatalf("refused: %+v", ack)
	}
	r := tm.bob.Must(200, "GET", "/api/v1/approvals", nil)
	if n := len(testhub.AsList(r.Body["approvals"])); n != 0 {
		t.Fatalf("bob sees %d approval cards in a room the agent is not in", n)
	}
}
