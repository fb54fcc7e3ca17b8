package e2e_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/wheelhouse-dev/wheelhouse/authz"
	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// TestBridgeBoundary: a paired bridge, with its own real key, sends the hub
// malformed, oversized, wrong-hash, badly named, badly timed and
// out-of-order messages of every kind. The hub refuses each (requests get
// a reason, publishes are dropped), counts it in /metrics, stores nothing,
// and keeps working.
func TestBridgeBoundary(t *testing.T) {
	h := testhub.Start(t, testhub.Options{MetricsAddr: "127.0.0.1:0"})
	admin := h.Setup("root", "correct horse")
	tm := &team{h: h, admin: admin, alice: h.AddUser(admin, "alice"), bob: h.AddUser(admin, "bob")}
	tm.alice.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "dev"})
	tm.bob.Must(200, "POST", "/api/v1/rooms/dev/members", nil)
	br := tm.h.StartBridge(tm.alice, nil, demoAgent("demo", bridgePolicyMembers(), 1, "10ms"))
	tm.alice.AddAgent("dev", "alice/demo")
	bobBr := tm.h.StartBridge(tm.bob, nil, demoAgent("helper", bridgePolicyMembers(), 1, "10ms"))

	// A real pending approval of bob's bridge, for alice's bridge to try to decide.
	bobApproval := "a000000000000b0b0"
	func() {
		nc, err := bobBr.Creds.Connect()
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		req := approvalReq(t, bobApproval, "helper")
		if ack := request(t, nc, bobBr.Creds.BridgeID, wire.KindApproval, mustJSON(t, req)); !ack.OK {
			t.Fatalf("bob's real approval refused: %+v", ack)
		}
	}()

	nc, err := br.Creds.Connect() // alice's bridge's real key
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	id := br.Creds.BridgeID

	now := time.Now().UTC()
	okPolicy := `"policy":{"address":"members","steering":true,"maxSteers":5,"grace":"5s","startOnEnded":true,"maxAge":"10m","approvalTimeout":"5m"}`
	okAgent := `{"name":"demo","harness":"demo","canSteer":true,"status":"idle",` + okPolicy + `}`
	agents := func(n int) string { return "[" + strings.TrimSuffix(strings.Repeat(okAgent+",", n), ",") + "]" }
	at := func(t time.Time) string { return t.Format(time.RFC3339Nano) }
	approval := func(mut func(*wire.ApprovalRequest)) []byte {
		r := approvalReq(t, "a000000000000a1a1", "demo")
		mut(&r)
		return mustJSON(t, r)
	}
	hash, payload, _ := authz.PayloadHash("shell", map[string]any{"cmd": "make"})

	type msg struct {
		name, kind string
		data       string
		request    bool
	}
	cases := []msg{
		// announce (request)
		{"Malformed", wire.KindAnnounce, `{"version":1,"agents":[`, true},
		{"NotAnObject", wire.KindAnnounce, `[1,2]`, true},
		{"TrailingData", wire.KindAnnounce, `{"version":1,"agents":[]} {"version":1}`, true},
		{"UnknownField", wire.KindAnnounce, `{"version":1,"agents":[],"admin":true}`, true},
		{"WrongType", wire.KindAnnounce, `{"version":"1","agents":[]}`, true},
		{"TooManyAgents", wire.KindAnnounce, `{"version":1,"agents":` + agents(wire.MaxAgents+1) + `}`, true},
		{"BadAgentName", wire.KindAnnounce, `{"version":1,"agents":[{"name":"../etc","status":"idle",` + okPolicy + `}]}`, true},
		{"OtherVersion", wire.KindAnnounce, `{"version":99,"agents":[]}`, true},
		// heartbeat (publish)
		{"Malformed", wire.KindHeartbeat, `{"agents":[{"name":`, false},
		{"UnknownField", wire.KindHeartbeat, `{"agents":[],"at":"` + at(now) + `","x":1}`, false},
		{"TrailingData", wire.KindHeartbeat, `{"agents":[],"at":"` + at(now) + `"}]`, false},
		{"TimeMissing", wire.KindHeartbeat, `{"agents":[]}`, false},
		{"TimeFarPast", wire.KindHeartbeat, `{"agents":[],"at":"` + at(now.Add(-48*time.Hour)) + `"}`, false},
		{"TimeFarFuture", wire.KindHeartbeat, `{"agents":[],"at":"` + at(now.Add(72*time.Hour)) + `"}`, false},
		{"BadStatus", wire.KindHeartbeat, `{"agents":[{"name":"demo","status":"root",` + okPolicy + `}],"at":"` + at(now) + `"}`, false},
		{"BadAgentName", wire.KindHeartbeat, `{"agents":[{"name":"Demo Agent","status":"idle",` + okPolicy + `}],"at":"` + at(now) + `"}`, false},
		{"TooManyAgents", wire.KindHeartbeat, `{"agents":` + agents(wire.MaxAgents+1) + `,"at":"` + at(now) + `"}`, false},
		// receipt (publish)
		{"Malformed", wire.KindReceipt, `{"steerId":`, false},
		{"BadSteerID", wire.KindReceipt, `{"steerId":"../1","agent":"demo","status":"delivered","at":"` + at(now) + `"}`, false},
		{"StatusOnlyTheHubSets", wire.KindReceipt, `{"steerId":"s1.demo","agent":"demo","status":"done","at":"` + at(now) + `"}`, false},
		{"DetailTooLong", wire.KindReceipt, `{"steerId":"s1.demo","agent":"demo","status":"delivered","detail":"` + strings.Repeat("d", wire.MaxDetail+1) + `","at":"` + at(now) + `"}`, false},
		{"TimeFarFuture", wire.KindReceipt, `{"steerId":"s1.demo","agent":"demo","status":"delivered","at":"` + at(now.Add(30*24*time.Hour)) + `"}`, false},
		{"UnknownField", wire.KindReceipt, `{"steerId":"s1.demo","agent":"demo","status":"delivered","sql":"drop"}`, false},
		{"TrailingData", wire.KindReceipt, `{"steerId":"s1.demo","agent":"demo","status":"delivered","at":"` + at(now) + `"}}`, false},
		{"TimeFarPast", wire.KindReceipt, `{"steerId":"s1.demo","agent":"demo","status":"delivered","at":"` + at(now.Add(-30*24*time.Hour)) + `"}`, false},
		{"SteerNeverSent", wire.KindReceipt, `{"steerId":"s999999.demo","agent":"demo","status":"delivered","turnId":"t1","at":"` + at(now) + `"}`, false},
		// turn (publish)
		{"Malformed", wire.KindTurn, `{"agent":"demo","turnId":`, false},
		{"BadTurnID", wire.KindTurn, `{"agent":"demo","turnId":"t 1","kind":"message","text":"hi","room":"dev","at":"` + at(now) + `"}`, false},
		{"UnknownKind", wire.KindTurn, `{"agent":"demo","turnId":"t1","kind":"exec","text":"rm -rf /","room":"dev","at":"` + at(now) + `"}`, false},
		{"TextTooLong", wire.KindTurn, `{"agent":"demo","turnId":"t1","kind":"message","text":"` + strings.Repeat("x", wire.MaxText+1) + `","room":"dev","at":"` + at(now) + `"}`, false},
		{"TextNotUTF8", wire.KindTurn, "{\"agent\":\"demo\",\"turnId\":\"t1\",\"kind\":\"message\",\"text\":\"\xff\xfe\",\"room\":\"dev\",\"at\":\"" + at(now) + "\"}", false},
		{"TimeFarPast", wire.KindTurn, `{"agent":"demo","turnId":"t1","kind":"message","text":"old","room":"dev","at":"` + at(now.Add(-25*time.Hour)) + `"}`, false},
		{"TrailingData", wire.KindTurn, `{"agent":"demo","turnId":"t1","kind":"message","text":"hi","room":"dev","at":"` + at(now) + `"}x`, false},
		{"UnknownField", wire.KindTurn, `{"agent":"demo","turnId":"t1","kind":"message","text":"hi","room":"dev","at":"` + at(now) + `","author":"root"}`, false},
		{"AgentOfAnotherBridge", wire.KindTurn, `{"agent":"helper","turnId":"t1","kind":"message","text":"spoof","room":"dev","at":"` + at(now) + `"}`, false},
		{"EndOfTurnNeverStarted", wire.KindTurn, `{"agent":"demo","turnId":"never-started","kind":"ended","status":"completed","room":"dev","at":"` + at(now) + `"}`, false},
		// approval (request)
		{"Malformed", wire.KindApproval, `{"id":"a000000000000a1a1"`, true},
		{"ShortHash", wire.KindApproval, string(approval(func(r *wire.ApprovalRequest) { r.PayloadHash = "abc" })), true},
		{"HashOfAnotherPayload", wire.KindApproval, string(approval(func(r *wire.ApprovalRequest) { r.PayloadHash = hash })), true},
		{"PayloadNotCanonical", wire.KindApproval, string(approval(func(r *wire.ApprovalRequest) {
			r.Payload = strings.Replace(r.Payload, `"args":`, `"args" : `, 1)
		})), true},
		{"ToolMismatch", wire.KindApproval, string(approval(func(r *wire.ApprovalRequest) { r.Tool, r.PayloadHash, r.Payload = "read", hash, string(payload) })), true},
		{"BadID", wire.KindApproval, string(approval(func(r *wire.ApprovalRequest) { r.ID = "a1" })), true},
		{"ExpiredAlready", wire.KindApproval, string(approval(func(r *wire.ApprovalRequest) { r.Expires = now.Add(-time.Hour) })), true},
		{"ExpiresFarAhead", wire.KindApproval, string(approval(func(r *wire.ApprovalRequest) { r.Expires = now.Add(30 * 24 * time.Hour) })), true},
		{"DiffTooLong", wire.KindApproval, string(approval(func(r *wire.ApprovalRequest) { r.Diff = strings.Repeat("+", wire.MaxDiff+1) })), true},
		{"UnknownField", wire.KindApproval, strings.Replace(string(approval(func(*wire.ApprovalRequest) {})), `{`, `{"approved":true,`, 1), true},
		{"TrailingData", wire.KindApproval, string(approval(func(*wire.ApprovalRequest) {})) + `{}`, true},
		{"AgentOfAnotherBridge", wire.KindApproval, string(approval(func(r *wire.ApprovalRequest) { r.Agent = "helper" })), true},
		// approvalupdate (publish)
		{"Malformed", wire.KindApprovalUpdate, `{"approvalId":"`, false},
		{"BadID", wire.KindApprovalUpdate, `{"approvalId":"x","agent":"demo","status":"approved","by":"alice"}`, false},
		{"StatusOnlyTheHubSets", wire.KindApprovalUpdate, `{"approvalId":"` + bobApproval + `","agent":"demo","status":"pending"}`, false},
		{"UnknownField", wire.KindApprovalUpdate, `{"approvalId":"` + bobApproval + `","agent":"demo","status":"denied","by":"alice","force":true}`, false},
		{"TrailingData", wire.KindApprovalUpdate, `{"approvalId":"` + bobApproval + `","agent":"demo","status":"expired"} null`, false},
		{"AnotherBridgesApproval", wire.KindApprovalUpdate, `{"approvalId":"` + bobApproval + `","agent":"helper","status":"denied","by":"bob"}`, false},
		{"ApprovalNeverAsked", wire.KindApprovalUpdate, `{"approvalId":"a00000000000ffff0","agent":"demo","status":"approved","by":"alice"}`, false},
		// invitations (request)
		{"Malformed", wire.KindInvitations, `{"decide":`, true},
		{"DecideUnknown", wire.KindInvitations, `{"decide":"force","id":1}`, true},
		{"AcceptWithoutID", wire.KindInvitations, `{"decide":"accept"}`, true},
		{"UnknownField", wire.KindInvitations, `{"all":true}`, true},
		{"TrailingData", wire.KindInvitations, `{}{}`, true},
		// an unknown kind, asked and published
		{"Asked", "selfdestruct", `{}`, true},
		{"Published", "shutdown", `{}`, false},
	}

	before := snapshot(t, tm)
	counts := invalidCounts(t, tm.h)
	want := map[string]float64{}
	for _, c := range cases {
		label := c.kind
		switch label {
		case wire.KindAnnounce, wire.KindHeartbeat, wire.KindReceipt, wire.KindTurn, wire.KindApproval, wire.KindApprovalUpdate, wire.KindInvitations:
		default:
			label = "unknown" // one series for every kind a bridge invents
		}
		want[label]++
		t.Run(c.kind+"/"+c.name, func(t *testing.T) {
			if !c.request {
				if err := nc.Publish(wire.FromBridge(id, c.kind), []byte(c.data)); err != nil {
					t.Fatal(err)
				}
				return
			}
			ack := request(t, nc, id, c.kind, []byte(c.data))
			if ack.OK || ack.Code == "" || ack.Message == "" {
				t.Fatalf("not refused with a reason: %+v", ack)
			}
			t.Logf("refused: %s: %s", ack.Code, ack.Message)
		})
	}
	nc.Flush()
	testhub.CheckFor(t, 5*time.Second, "every refusal counted in /metrics", func() error {
		got := invalidCounts(t, tm.h)
		var wrong []string
		for k, n := range want {
			if got[k]-counts[k] != n {
				wrong = append(wrong, fmt.Sprintf("%s: %v refused, want %v", k, got[k]-counts[k], n))
			}
		}
		if len(wrong) > 0 {
			return fmt.Errorf("%s", strings.Join(wrong, "; "))
		}
		return nil
	})
	if after := snapshot(t, tm); after != before {
		t.Fatalf("refused messages left state behind:\nbefore %s\nafter  %s", before, after)
	}

	t.Run("HubStillWorks", func(t *testing.T) {
		if r := tm.bob.Do("GET", "/readyz", nil); r.Status != 200 {
			t.Fatalf("readyz %d %s", r.Status, r.Raw)
		}
		mid, _ := post(t, tm.bob, "dev", "@alice/demo are you still there?", nil)
		receipt(t, tm.bob, "dev", mid, "alice/demo", "done")
		if p := metric(t, tm.h, "wheelhouse_handler_panics_total"); p != 0 {
			t.Fatalf("%v handler panics", p)
		}
	})
}

func approvalReq(t *testing.T, id, agent string) wire.ApprovalRequest {
	hash, payload, err := authz.PayloadHash("shell", map[string]any{"cmd": "make test", "agent": agent})
	if err != nil {
		t.Fatal(err)
	}
	return wire.ApprovalRequest{ID: id, Agent: agent, TurnID: "t1", Tool: "shell", Summary: "run the tests", PayloadHash: hash,
		Payload: string(payload), Room: "dev", Expires: time.Now().Add(5 * time.Minute)}
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func request(t *testing.T, nc *nats.Conn, bridgeID, kind string, data []byte) wire.Ack {
	t.Helper()
	m, err := nc.Request(wire.FromBridge(bridgeID, kind), data, 10*time.Second)
	if err != nil {
		t.Fatalf("%s: %v", kind, err)
	}
	var ack wire.Ack
	if err := json.Unmarshal(m.Data, &ack); err != nil {
		t.Fatalf("%s: unreadable answer %q", kind, m.Data)
	}
	return ack
}

// snapshot is what a refused bridge message must not change: the event
// log's length, the messages of the room and of every room alice and bob
// see, approval cards, and the agents' timelines.
func snapshot(t *testing.T, tm *team) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "log=%v ", metric(t, tm.h, "wheelhouse_projection_applied_seq"))
	for _, c := range []*testhub.Client{tm.alice, tm.bob} {
		rooms := c.Must(200, "GET", "/api/v1/rooms", nil)
		for _, r := range testhub.AsList(rooms.Body["rooms"]) {
			name := r["name"].(string)
			msgs := c.Must(200, "GET", "/api/v1/rooms/"+name+"/messages?limit=200", nil)
			fmt.Fprintf(&b, "%s:%s:%d ", c.Name, name, len(testhub.AsList(msgs.Body["messages"])))
		}
		for _, st := range []string{"pending", "approved", "denied", "expired", "voided"} {
			aps := c.Must(200, "GET", "/api/v1/approvals?state="+st, nil)
			for _, a := range testhub.AsList(aps.Body["approvals"]) {
				fmt.Fprintf(&b, "%s:%s=%s ", c.Name, a["id"], a["status"])
			}
		}
	}
	for _, h := range []struct {
		c      *testhub.Client
		handle string
	}{{tm.alice, "alice/demo"}, {tm.bob, "bob/helper"}} {
		tl := h.c.Must(200, "GET", "/api/v1/agents/"+h.handle+"/timeline", nil)
		fmt.Fprintf(&b, "%s:timeline:%d ", h.handle, len(testhub.AsList(tl.Body["entries"])))
	}
	return b.String()
}

// metric sums the samples of a metric in the hub's /metrics.
func metric(t *testing.T, h *testhub.Hub, name string) float64 {
	t.Helper()
	var sum float64
	for k, v := range metrics(t, h) {
		if k == name || strings.HasPrefix(k, name+"{") {
			sum += v
		}
	}
	return sum
}

// invalidCounts is wheelhouse_bridge_messages_invalid_total by kind.
func invalidCounts(t *testing.T, h *testhub.Hub) map[string]float64 {
	out := map[string]float64{}
	for k, v := range metrics(t, h) {
		if kind, ok := strings.CutPrefix(k, `wheelhouse_bridge_messages_invalid_total{kind="`); ok {
			out[strings.TrimSuffix(kind, `"}`)] = v
		}
	}
	return out
}

func metrics(t *testing.T, h *testhub.Hub) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(h.Metrics()))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	return out
}
