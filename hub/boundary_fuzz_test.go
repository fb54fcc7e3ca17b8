package hub

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/wheelhouse-dev/wheelhouse/authz"
	"github.com/wheelhouse-dev/wheelhouse/chat"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// The fuzz targets drive the hub's real handlers for bridge messages (the
// per-bridge worker's process, and the heartbeat callback) with arbitrary
// bytes, against a real hub (embedded NATS, SQLite, the event log) holding
// a real paired bridge that runs @alice/demo in #dev. For every input: no
// panic; a message the wire rules refuse is counted and stores nothing.
//
// The test command runs the seed corpora (testdata/fuzz); explore with
//
//	go test ./hub -run '^$' -fuzz FuzzBridgeApproval -fuzztime 30s -parallel 1

func FuzzBridgeAnnounce(f *testing.F) {
	seedNow(f, wire.Announce{Version: wire.Version, Agents: []wire.AgentInfo{{Name: "demo", Harness: "demo", Status: wire.AgentIdle, Policy: wire.DefaultPolicy()}}})
	fuzzKind(f, wire.KindAnnounce)
}

func FuzzBridgeHeartbeat(f *testing.F) {
	seedNow(f, wire.Heartbeat{At: time.Now(), Agents: []wire.AgentInfo{{Name: "demo", Status: wire.AgentWorking, TurnID: "t1", TurnRoom: "dev", SteeredBy: []string{"alice"}}}})
	fuzzKind(f, wire.KindHeartbeat)
}

func FuzzBridgeReceipt(f *testing.F) {
	seedNow(f, wire.Receipt{SteerID: "s1.demo", Agent: "demo", Status: wire.StatusDelivered, TurnID: "t1", At: time.Now()})
	fuzzKind(f, wire.KindReceipt)
}

func FuzzBridgeTurn(f *testing.F) {
	seedNow(f, wire.TurnEvent{Agent: "demo", TurnID: "t1", Kind: wire.TurnMessage, Text: "hello", Room: "dev", At: time.Now()})
	seedNow(f, wire.TurnEvent{Agent: "demo", TurnID: "t1", Kind: wire.TurnEnded, Status: wire.TurnCompleted, Room: "dev", At: time.Now()})
	fuzzKind(f, wire.KindTurn)
}

func FuzzBridgeApproval(f *testing.F) {
	hash, payload, err := authz.PayloadHash("shell", map[string]any{"cmd": "make"})
	if err != nil {
		f.Fatal(err)
	}
	seedNow(f, wire.ApprovalRequest{ID: "a0123456789abcdef", Agent: "demo", TurnID: "t1", Tool: "shell", Summary: "run make",
		PayloadHash: hash, Payload: string(payload), Room: "dev", Expires: time.Now().Add(time.Minute)})
	fuzzKind(f, wire.KindApproval)
}

func FuzzBridgeApprovalUpdate(f *testing.F) {
	seedNow(f, wire.ApprovalUpdate{ApprovalID: "a0123456789abcdef", Agent: "demo", Status: wire.ApprovalDenied, By: "alice"})
	fuzzKind(f, wire.KindApprovalUpdate)
}

func FuzzBridgeInvitations(f *testing.F) {
	seedNow(f, wire.InvitationsRequest{Decide: "accept", ID: 1})
	fuzzKind(f, wire.KindInvitations)
}

// FuzzBridgeSubject fuzzes the subject's last token too: kinds the hub does
// not know are refused (and counted under one label).
func FuzzBridgeSubject(f *testing.F) {
	f.Add("selfdestruct", []byte(`{}`))
	f.Add(wire.KindAnnounce, []byte(`{"version":1,"agents":[]}`))
	env := newBridgeEnv(f)
	f.Fuzz(func(t *testing.T, kind string, data []byte) {
		subject := wire.FromBridge(env.bridge, kind)
		if _, _, ok := bridgeOf(subject); !ok || kind == wire.KindHeartbeat {
			return // the subscription's callback drops it before any worker sees it
		}
		env.deliver(t, kind, data)
	})
}

// seedNow adds v, encoded, as a seed with the current time (the corpus
// files' times age out of the hub's window; these do not).
func seedNow(f *testing.F, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
}

func fuzzKind(f *testing.F, kind string) {
	env := newBridgeEnv(f)
	f.Fuzz(func(t *testing.T, data []byte) { env.deliver(t, kind, data) })
}

// bridgeEnv is a real hub with one paired bridge.
type bridgeEnv struct {
	h      *Hub
	bridge string
	key    nkeys.KeyPair // the bridge's
}

func newBridgeEnv(tb testing.TB) *bridgeEnv {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h, err := New(Config{DataDir: tb.TempDir(), HTTPAddr: "127.0.0.1:0", NATSAddr: "127.0.0.1:0", MetricsAddr: "127.0.0.1:0", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		tb.Fatal(err)
	}
	if err := h.Open(ctx); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { h.Close(context.Background()) })
	must := func(err error) {
		tb.Helper()
		if err != nil {
			tb.Fatal(err)
		}
	}
	alice, err := h.rooms.Setup(ctx, "alice", "correct horse battery")
	must(err)
	tok, _, err := h.rooms.CreatePairingToken(ctx, alice)
	must(err)
	kp, err := nkeys.CreateUser()
	must(err)
	pub, _ := kp.PublicKey()
	b, err := h.rooms.Pair(ctx, tok, pub, "fuzz")
	must(err)
	must(h.rooms.RegisterAgent(ctx, b.ID, wire.AgentInfo{Name: "demo", Harness: "demo", CanSteer: true, Policy: wire.DefaultPolicy()}, "demo"))
	_, err = h.rooms.CreateRoom(ctx, alice, "dev", false, "")
	must(err)
	_, _, err = h.rooms.AddAgent(ctx, alice, "dev", "alice/demo")
	must(err)
	return &bridgeEnv{h: h, bridge: b.ID, key: kp}
}

// deliver hands one message to the hub's handler for its kind and checks
// what became of it.
func (e *bridgeEnv) deliver(t *testing.T, kind string, data []byte) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st := e.h.rooms.Log.Stream()
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seq := info.State.LastSeq
	refusedBefore := counterValue(t, e.h.reg, "wheelhouse_bridge_messages_invalid_total", kindLabel(kind))

	m := &nats.Msg{Subject: wire.FromBridge(e.bridge, kind), Data: data}
	if kind == wire.KindHeartbeat {
		e.h.link.heartbeat(m)
	} else {
		e.h.link.process(e.bridge, m)
	}

	if p := counterValue(t, e.h.reg, "wheelhouse_handler_panics_total", ""); p != 0 {
		t.Fatalf("%v handler panics", p)
	}
	if wireValid(kind, data, e.h.rooms.Now()) {
		return // what a valid message does is the handlers' business
	}
	if n := counterValue(t, e.h.reg, "wheelhouse_bridge_messages_invalid_total", kindLabel(kind)); n != refusedBefore+1 {
		t.Fatalf("an invalid %s was not counted (%v → %v): %q", kind, refusedBefore, n, data)
	}
	info, err = st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for s := seq + 1; s <= info.State.LastSeq; s++ {
		raw, err := st.GetMsg(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		var ev chat.Event
		json.Unmarshal(raw.Data, &ev)
		if !background(kind, ev) {
			t.Fatalf("an invalid %s was stored as event %d (%s %s): %q", kind, s, ev.Type, ev.Data, data)
		}
	}
}

// background reports an event the hub appends on its own while a message
// is handled: presence and expiry (shared idempotency keys), and the
// router's receipts for mentions in agent output.
func background(kind string, ev chat.Event) bool {
	for _, p := range []string{"status:", "offline:", "expire:", "stale:"} {
		if strings.HasPrefix(ev.ID, p) {
			return true
		}
	}
	return kind == wire.KindTurn && ev.Type == chat.EvSteerReceipt
}

// wireValid is whether a message passes the wire rules (decoding, limits,
// formats, times, the payload hash) on its own.
func wireValid(kind string, data []byte, now time.Time) bool {
	read, ok := bridgeMessages[kind]
	if !ok {
		return false
	}
	_, err := read(data, now)
	return err == nil
}

// counterValue reads a counter from the hub's registry (label "": the sum
// over all labels).
func counterValue(t *testing.T, reg *prometheus.Registry, name, label string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if label == "" || lp.GetValue() == label {
					sum += m.GetCounter().GetValue()
				}
			}
		}
	}
	return sum
}

// Every kind of bridge message a hub reads is counted under its own name
// when refused (a hand-kept list once named devices, forgery and file
// "unknown"), and a kind it does not read under "unknown".
func TestRefusedKindsCountedByName(t *testing.T) {
	env := newBridgeEnv(t)
	for kind := range bridgeMessages {
		if kind == wire.KindHeartbeat {
			continue // its own subscription, the same counter
		}
		before := counterValue(t, env.h.reg, "wheelhouse_bridge_messages_invalid_total", kind)
		env.deliver(t, kind, []byte(`{"notAField":1}`))
		if n := counterValue(t, env.h.reg, "wheelhouse_bridge_messages_invalid_total", kind); n != before+1 {
			t.Errorf("a refused %s message was not counted as %q (%v → %v)", kind, kind, before, n)
		}
	}
	before := counterValue(t, env.h.reg, "wheelhouse_bridge_messages_invalid_total", "unknown")
	env.deliver(t, "selfdestruct", []byte(`{}`))
	if n := counterValue(t, env.h.reg, "wheelhouse_bridge_messages_invalid_total", "unknown"); n != before+1 {
		t.Errorf("an unknown kind was not counted as unknown (%v → %v)", before, n)
	}
}

// TestSecondBridgeHeartbeatChangesNothing: a second bridge of the same
// owner (hostile, or only confused) heartbeats the first bridge's agent as
// working on a turn of its own, and a bridge of another person names an
// agent of the same name: the agent's recorded status stays as it was and
// nothing is appended for it.
func TestSecondBridgeHeartbeatChangesNothing(t *testing.T) {
	env := newBridgeEnv(t)
	ctx := t.Context()
	rs := env.h.rooms
	alice, err := rs.UserByName(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	bob, err := rs.CreateUser(ctx, alice, "bob", "", "bob's long password", false)
	if err != nil {
		t.Fatal(err)
	}
	pair := func(owner *chat.User, name string) string {
		tok, _, err := rs.CreatePairingToken(ctx, owner)
		if err != nil {
			t.Fatal(err)
		}
		kp, _ := nkeys.CreateUser()
		pub, _ := kp.PublicKey()
		b, err := rs.Pair(ctx, tok, pub, name)
		if err != nil {
			t.Fatal(err)
		}
		return b.ID
	}
	second, bobs := pair(alice, "second"), pair(bob, "bobs")
	before, err := rs.AgentByHandle(ctx, "alice/demo")
	if err != nil {
		t.Fatal(err)
	}
	info, err := rs.Log.Stream().Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	hb := wire.Heartbeat{At: time.Now(), Agents: []wire.AgentInfo{
		{Name: "demo", Status: wire.AgentWorking, TurnID: "forged-turn", TurnRoom: "dev", SteeredBy: []string{"bob"}}}}
	raw, _ := json.Marshal(hb)
	if !wireValid(wire.KindHeartbeat, raw, rs.Now()) {
		t.Fatalf("the claim is not even wire-valid: %s", raw)
	}
	env.h.link.applyHeartbeat(second, hb)
	env.h.link.applyHeartbeat(bobs, hb)

	after, err := rs.AgentByHandle(ctx, "alice/demo")
	if err != nil {
		t.Fatal(err)
	}
	if after.Status != before.Status || after.TurnID != before.TurnID || after.Bridge != env.bridge {
		t.Fatalf("alice/demo after the claims: %s %q on %s (before: %s %q on %s)", after.Status, after.TurnID, after.Bridge, before.Status, before.TurnID, before.Bridge)
	}
	if _, err := rs.AgentByHandle(ctx, "bob/demo"); err == nil {
		t.Fatal("bob's bridge made an agent bob/demo by heartbeat")
	}
	now, err := rs.Log.Stream().Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if now.State.LastSeq != info.State.LastSeq {
		t.Fatalf("the claims appended %d events", now.State.LastSeq-info.State.LastSeq)
	}
}
