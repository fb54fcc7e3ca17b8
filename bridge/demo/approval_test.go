package demo

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/wheelhouse-dev/wheelhouse/bridge"
)

func TestDeleteAsksApproval(t *testing.T) {
	cases := []struct {
		name      string
		decide    func(*testGrant) func(bridge.ApprovalAsk) (bridge.Grant, error)
		grantFail error
		deleted   bool
		message   string
	}{
		{
			name:    "ApprovedDeletesOnce",
			decide:  approve,
			deleted: true,
			message: "deleted old.log",
		},
		{
			name: "DeniedKeepsFile",
			decide: func(*testGrant) func(bridge.ApprovalAsk) (bridge.Grant, error) {
				return func(bridge.ApprovalAsk) (bridge.Grant, error) { return nil, errors.New("denied by the owner") }
			},
			message: "did not delete old.log: denied by the owner",
		},
		{
			name:      "RedeemMismatchKeepsFile",
			decide:    approve,
			grantFail: errors.New("payload hash mismatch"),
			message:   "did not delete old.log: payload hash mismatch",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			gate := newTestGate()
			a, rec := newAgent(t, "1ms", 2, gate)
			// Asked twice in one text: one ask, one deletion.
			id, err := a.StartTurn(t.Context(), bridge.Input{Text: envelope("@owner", "please delete old.log, yes rm old.log")})
			if err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the approval ask", func() bool { return len(gate.asked()) == 1 })
			ask := gate.asked()[0]
			if ask.TurnID != id || ask.Call.Tool != "delete_file" || ask.Call.Args["path"] != "old.log" || ask.Summary != "delete old.log" {
				t.Fatalf("ask = %+v", ask)
			}
			if !strings.Contains(ask.Diff, "-build failed: flaky network") {
				t.Errorf("ask diff does not show the content:\n%s", ask.Diff)
			}
			// Waiting for the owner, the turn is still running and the file is there.
			if _, ended := rec.ended(id); ended {
				t.Fatal("turn ended while waiting for approval")
			}
			if !hasFile(a, "old.log") {
				t.Fatal("old.log deleted before approval")
			}
			grant := &testGrant{fail: tc.grantFail}
			gate.decide <- tc.decide(grant)

			if end := rec.waitEnded(t, id); end.Status != "completed" {
				t.Fatalf("status %q", end.Status)
			}
			if got := hasFile(a, "old.log"); got == tc.deleted {
				t.Fatalf("old.log present=%v, want deleted=%v (files %v)", got, tc.deleted, a.Files())
			}
			if !rec.has(id, bridge.EventMessage, tc.message) {
				t.Fatalf("no message %q in %+v", tc.message, rec.all())
			}
			if n := len(gate.asked()); n != 1 {
				t.Fatalf("%d asks, want 1", n)
			}
			if tc.deleted && grant.count() != 1 {
				t.Fatalf("%d redeems, want 1", grant.count())
			}
			want := newWorkspace()
			if tc.deleted {
				delete(want, "old.log")
			}
			if got := a.Files(); !slices.Equal(got, want.names()) {
				t.Fatalf("files %v, want %v", got, want.names())
			}
		})
	}
}

func TestDeleteFromSteer(t *testing.T) {
	gate := newTestGate()
	a, rec := newAgent(t, "1h", 1, gate) // the turn runs until interrupted
	// A fenced block is pasted data: its "rm main.go" asks for nothing.
	start := envelope("@owner", "look at this log:\n```\n$ rm main.go\n```\nand wait for my next message")
	id, _ := a.StartTurn(t.Context(), bridge.Input{Text: start})
	if err := a.Steer(t.Context(), id, bridge.Input{Text: envelope("@bob", "rm notes.txt"), Sender: "@bob"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the approval ask", func() bool { return len(gate.asked()) == 1 })
	if p := gate.asked()[0].Call.Args["path"]; p != "notes.txt" {
		t.Fatalf("asked to delete %v, want notes.txt", p)
	}
	gate.decide <- approve(&testGrant{})
	waitFor(t, "the deletion", func() bool { return rec.has(id, bridge.EventMessage, "deleted notes.txt") })
	if err := a.Interrupt(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	rec.waitEnded(t, id)
	if hasFile(a, "notes.txt") || !hasFile(a, "main.go") || len(gate.asked()) != 1 {
		t.Fatalf("files %v after %d asks: want notes.txt gone, main.go kept, one ask", a.Files(), len(gate.asked()))
	}
}

func TestInterrupt(t *testing.T) {
	t.Run("DuringSteps", func(t *testing.T) {
		a, rec := newAgent(t, "1h", 3, nil)
		id, _ := a.StartTurn(t.Context(), bridge.Input{Text: "work forever"})
		if err := a.Interrupt(t.Context(), "other"); !errors.Is(err, bridge.ErrStaleTurn) {
			t.Fatalf("Interrupt(other): err = %v, want ErrStaleTurn", err)
		}
		if err := a.Interrupt(t.Context(), id); err != nil {
			t.Fatal(err)
		}
		if end := rec.waitEnded(t, id); end.Status != "interrupted" {
			t.Fatalf("status %q, want interrupted", end.Status)
		}
		waitFor(t, "agent idle", func() bool {
			return errors.Is(a.Interrupt(t.Context(), id), bridge.ErrNoActiveTurn)
		})
		if rec.has(id, bridge.EventMessage, "") {
			t.Fatal("an interrupted turn sent a final reply")
		}
	})
	t.Run("WhileAwaitingApproval", func(t *testing.T) {
		gate := newTestGate()
		a, rec := newAgent(t, "1ms", 1, gate)
		id, _ := a.StartTurn(t.Context(), bridge.Input{Text: "delete old.log"})
		waitFor(t, "the approval ask", func() bool { return len(gate.asked()) == 1 })
		if err := a.Interrupt(t.Context(), id); err != nil {
			t.Fatal(err)
		}
		if end := rec.waitEnded(t, id); end.Status != "interrupted" {
			t.Fatalf("status %q, want interrupted", end.Status)
		}
		if !hasFile(a, "old.log") {
			t.Fatal("old.log deleted by an interrupted turn")
		}
	})
	t.Run("ByClose", func(t *testing.T) {
		a, rec := newAgent(t, "1h", 1, nil)
		id, _ := a.StartTurn(t.Context(), bridge.Input{Text: "work forever"})
		a.Close()
		if end, ok := rec.ended(id); !ok || end.Status != "interrupted" {
			t.Fatalf("after Close: end=%+v ok=%v, want interrupted", end, ok)
		}
		n := len(rec.all())
		if _, err := a.StartTurn(t.Context(), bridge.Input{Text: "x"}); err == nil || len(rec.all()) != n {
			t.Fatal("events or turns after Close")
		}
	})
	t.Run("ErrNoActiveTurn", func(t *testing.T) {
		a, _ := newAgent(t, "1ms", 1, nil)
		if err := a.Interrupt(t.Context(), "x"); !errors.Is(err, bridge.ErrNoActiveTurn) {
			t.Fatalf("err = %v, want ErrNoActiveTurn", err)
		}
	})
}

func TestNewRejectsBadOptions(t *testing.T) {
	for _, opts := range []map[string]string{
		{"step": "soon"},
		{"step": "-1s"},
		{"steps": "0"},
		{"steps": "many"},
		{"steps": "100000"},
	} {
		if _, err := New(bridge.Deps{Agent: bridge.AgentConfig{Name: "d", Options: opts}}); err == nil {
			t.Errorf("New with %v: no error", opts)
		}
	}
}
