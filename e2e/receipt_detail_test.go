package e2e_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/bridge"
	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
)

// redirector is a harness the test drives: each turn it starts hands its
// steer id to the test, which then has the bridge report what it likes.
type redirector struct {
	d      bridge.Deps
	mu     sync.Mutex
	n      int
	steers chan [2]string // {steer id, turn id}
}

func (x *redirector) Kind() string                            { return "redirector" }
func (x *redirector) CanSteer() bool                          { return false }
func (x *redirector) Start(context.Context) error             { return nil }
func (x *redirector) Close() error                            { return nil }
func (x *redirector) Interrupt(context.Context, string) error { return nil }
func (x *redirector) Steer(context.Context, string, bridge.Input) error {
	return bridge.ErrNoActiveTurn
}
func (x *redirector) StartTurn(_ context.Context, in bridge.Input) (string, error) {
	x.mu.Lock()
	x.n++
	id := fmt.Sprintf("redirect-%d", x.n)
	x.mu.Unlock()
	x.d.Events(bridge.Event{Kind: bridge.EventTurnStarted, TurnID: id})
	x.steers <- [2]string{in.SteerID, id}
	return id, nil
}

// A bridge's later word on where a delivered message went reaches the
// sender's receipt without moving it; once the receipt is final, nothing
// the bridge sends changes it (a hostile bridge cannot move it backwards).
func TestReceiptDetailNeverMovesAFinalReceipt(t *testing.T) {
	tm := newTeam(t)
	h := &redirector{steers: make(chan [2]string, 4)}
	tm.h.StartBridgeWith(tm.alice, nil, map[string]bridge.Factory{"redirector": func(d bridge.Deps) (bridge.Harness, error) { h.d = d; return h, nil }},
		bridge.AgentConfig{Name: "redir", Harness: "redirector", PolicyFile: bridge.PolicyConfig{Address: "members"}})
	tm.alice.AddAgent("dev", "alice/redir")
	next := func() (string, string) {
		t.Helper()
		select {
		case s := <-h.steers:
			return s[0], s[1]
		case <-time.After(30 * time.Second):
			t.Fatal("the harness never got the mention")
		}
		return "", ""
	}
	waitDetail := func(id int64, status, detail string) map[string]any {
		t.Helper()
		var rc map[string]any
		testhub.WaitFor(t, 15*time.Second, fmt.Sprintf("receipt %s %q", status, detail), func() bool {
			rc = receipt(t, tm.alice, "dev", id, "alice/redir", status)
			return rc["status"] == status && strings.Contains(str(rc["detail"]), detail)
		})
		return rc
	}

	id, _ := post(t, tm.alice, "dev", "@alice/redir one", nil)
	steer, turn := next()
	receipt(t, tm.alice, "dev", id, "alice/redir", "started")
	// The bridge's new word while the receipt is started: recorded, the
	// status stays.
	h.d.Events(bridge.Event{Kind: bridge.EventInputHandled, TurnID: turn, Text: steer, Detail: "taken by the owner's other session"})
	waitDetail(id, "started", "taken by the owner's other session")
	h.d.Events(bridge.Event{Kind: bridge.EventTurnEnded, TurnID: turn, Status: "completed"})
	final := waitDetail(id, "done", "")
	// Hostile: after the final receipt, a new detail and an expiry.
	h.d.Events(bridge.Event{Kind: bridge.EventInputHandled, TurnID: turn, Text: steer, Detail: "HOSTILE moved back"})
	h.d.Events(bridge.Event{Kind: bridge.EventInputHandled, TurnID: turn, Text: steer, Status: "expired", Detail: "HOSTILE expired"})

	// The bridge's messages are recorded in order: once a later one shows,
	// the hostile ones were handled.
	id2, _ := post(t, tm.alice, "dev", "@alice/redir two", nil)
	steer2, turn2 := next()
	h.d.Events(bridge.Event{Kind: bridge.EventInputHandled, TurnID: turn2, Text: steer2, Detail: "MARKER"})
	waitDetail(id2, "started", "MARKER")
	rc := receipt(t, tm.alice, "dev", id, "alice/redir", "done")
	if rc["status"] != "done" || rc["detail"] != final["detail"] || strings.Contains(fmt.Sprint(rc), "HOSTILE") {
		t.Fatalf("a final receipt moved: %v (was %v)", rc, final)
	}
}
