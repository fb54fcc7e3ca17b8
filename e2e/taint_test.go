package e2e_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/bridge"
	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
)

// eager acts on a steer at once, from inside Steer — before Steer returns
// — with a call the owner auto-approves in clean turns. If the steer's
// sender were added to the turn's steerers only after the harness saw the
// text, this call would be judged clean and run unasked.
type eager struct {
	d     bridge.Deps
	mu    sync.Mutex
	turn  string
	gated chan string // "auto-approved" or "asked the owner"
}

func (x *eager) Kind() string                { return "eager" }
func (x *eager) CanSteer() bool              { return true }
func (x *eager) Start(context.Context) error { return nil }
func (x *eager) Close() error                { return nil }
func (x *eager) Interrupt(_ context.Context, turn string) error {
	x.d.Events(bridge.Event{Kind: bridge.EventTurnEnded, TurnID: turn, Status: "interrupted"})
	return nil
}

// Every side effect reaches the gate, so teammates may steer its turns.
func (x *eager) StrictTurns() error     { return nil }
func (x *eager) TurnStrict(string) bool { return true }
func (x *eager) OwnerTurns() string     { return "" }
func (x *eager) StartTurn(_ context.Context, _ bridge.Input) (string, error) {
	x.mu.Lock()
	x.turn = "eager-1"
	x.mu.Unlock()
	x.d.Events(bridge.Event{Kind: bridge.EventTurnStarted, TurnID: "eager-1"})
	return "eager-1", nil
}

func (x *eager) Steer(ctx context.Context, turn string, in bridge.Input) error {
	// Act on the text now, before returning.
	actx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err := x.d.Gate.Ask(actx, bridge.ApprovalAsk{TurnID: turn, Call: bridge.ToolCall{Tool: "write_file", Args: map[string]any{"path": "notes.txt"}}, Summary: "write notes.txt"})
	if err == nil {
		x.gated <- "auto-approved"
	} else {
		x.gated <- "asked the owner"
	}
	return nil
}

func TestTaintBeforeDelivery(t *testing.T) {
	tm := newTeam(t)
	h := &eager{gated: make(chan string, 1)}
	tm.h.StartBridgeWith(tm.alice, nil, map[string]bridge.Factory{"eager": func(d bridge.Deps) (bridge.Harness, error) { h.d = d; return h, nil }},
		bridge.AgentConfig{Name: "eager", Harness: "eager", PolicyFile: bridge.PolicyConfig{Address: "members", AutoApprove: []string{"write_file"}}})
	tm.alice.AddAgent("dev", "alice/eager")
	id, _ := post(t, tm.alice, "dev", "@alice/eager start", nil) // a clean turn: the owner's own words
	receipt(t, tm.alice, "dev", id, "alice/eager", "started")
	id2, _ := post(t, tm.bob, "dev", "@alice/eager write the notes", nil)
	select {
	case got := <-h.gated:
		if got != "asked the owner" {
			t.Fatalf("a call prompted by bob's steer was %s: bob was not yet among the turn's steerers", got)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the harness never saw the steer")
	}
	receipt(t, tm.bob, "dev", id2, "alice/eager", "steered")
	// The owner was asked, with bob named as a steerer of the turn.
	testhub.CheckFor(t, 10*time.Second, "the tainted request on record", func() error {
		for _, a := range testhub.AsList(tm.alice.Must(200, "GET", "/api/v1/approvals", nil).Body["approvals"]) {
			if a["agent"] == "alice/eager" && a["tainted"] == true {
				return nil
			}
		}
		return errNotYet
	})
}

var errNotYet = errors.New("not yet")
