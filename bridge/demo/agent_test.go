package demo

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/wheelhouse-dev/wheelhouse/bridge"
)

func TestTurnLifecycle(t *testing.T) {
	a, rec := newAgent(t, "1ms", 3, nil)
	if a.Kind() != "demo" || !a.CanSteer() {
		t.Fatalf("Kind=%q CanSteer=%v", a.Kind(), a.CanSteer())
	}
	id, err := a.StartTurn(t.Context(), bridge.Input{Text: envelope("@owner", "tidy up the project"), Sender: "@owner", SenderIsOwner: true})
	if err != nil {
		t.Fatal(err)
	}
	end := rec.waitEnded(t, id)
	if end.Status != "completed" {
		t.Fatalf("status %q, want completed", end.Status)
	}
	evs := rec.all()
	if evs[0].Kind != bridge.EventTurnStarted || evs[len(evs)-1].Kind != bridge.EventTurnEnded {
		t.Fatalf("turn must open with %s and close with %s: %+v", bridge.EventTurnStarted, bridge.EventTurnEnded, evs)
	}
	var progress []string
	var final string
	for _, e := range evs {
		if e.TurnID != id {
			t.Fatalf("event for turn %q, want %q: %+v", e.TurnID, id, e)
		}
		switch e.Kind {
		case bridge.EventProgress:
			progress = append(progress, e.Text)
		case bridge.EventMessage:
			final = e.Text
		}
	}
	for _, want := range []string{"listing files…", "reading README.md…", "reading main.go…"} {
		if !slices.Contains(progress, want) {
			t.Errorf("progress %q missing from %q", want, progress)
		}
	}
	for _, want := range []string{"scripted stand-in, no model involved", `You asked: "tidy up the project"`} {
		if !strings.Contains(final, want) {
			t.Errorf("final message lacks %q:\n%s", want, final)
		}
	}

	// The agent is idle again: the next turn starts, with a new id.
	id2, err := a.StartTurn(t.Context(), bridge.Input{Text: "again"})
	if err != nil {
		t.Fatal(err)
	}
	if id2 == id {
		t.Fatalf("turn id %q reused", id)
	}
	rec.waitEnded(t, id2)
}

func TestStartTurn(t *testing.T) {
	t.Run("ErrBusy", func(t *testing.T) {
		a, _ := newAgent(t, "1h", 1, nil)
		if _, err := a.StartTurn(t.Context(), bridge.Input{Text: "one"}); err != nil {
			t.Fatal(err)
		}
		if _, err := a.StartTurn(t.Context(), bridge.Input{Text: "two"}); !errors.Is(err, bridge.ErrBusy) {
			t.Fatalf("err = %v, want ErrBusy", err)
		}
	})
	t.Run("ErrNotRunningBeforeStart", func(t *testing.T) {
		a, err := New(bridge.Deps{})
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		if _, err := a.StartTurn(t.Context(), bridge.Input{Text: "hi"}); !errors.Is(err, bridge.ErrNotRunning) {
			t.Fatalf("err = %v, want ErrNotRunning", err)
		}
	})
	t.Run("ErrNotRunningAfterClose", func(t *testing.T) {
		a, _ := newAgent(t, "1ms", 1, nil)
		a.Close()
		if _, err := a.StartTurn(t.Context(), bridge.Input{Text: "hi"}); !errors.Is(err, bridge.ErrNotRunning) {
			t.Fatalf("err = %v, want ErrNotRunning", err)
		}
	})
}

func TestSteer(t *testing.T) {
	t.Run("LandsInRunningTurn", func(t *testing.T) {
		a, rec := newAgent(t, "100ms", 2, nil)
		id, err := a.StartTurn(t.Context(), bridge.Input{Text: envelope("@owner", "fix the parser")})
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Steer(t.Context(), id, bridge.Input{Text: envelope("@bob", "use tabs, not spaces"), Sender: "@bob"}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "steer acknowledged", func() bool {
			return rec.has(id, bridge.EventProgress, "Noted from @bob: use tabs, not spaces")
		})
		if end := rec.waitEnded(t, id); end.Status != "completed" {
			t.Fatalf("status %q", end.Status)
		}
		if !rec.has(id, bridge.EventMessage, "Noted from @bob: use tabs, not spaces") {
			t.Fatalf("final reply ignores the steer: %+v", rec.all())
		}
	})
	t.Run("StaleTurnRejected", func(t *testing.T) {
		gate := newTestGate() // never decides: the second turn stays running
		a, rec := newAgent(t, "1ms", 1, gate)
		old, _ := a.StartTurn(t.Context(), bridge.Input{Text: "first"})
		rec.waitEnded(t, old)
		cur, err := a.StartTurn(t.Context(), bridge.Input{Text: "please delete old.log"})
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the approval ask", func() bool { return len(gate.asked()) == 1 })
		for _, expected := range []string{old, "not-a-turn", ""} {
			if err := a.Steer(t.Context(), expected, bridge.Input{Text: "hello"}); !errors.Is(err, bridge.ErrStaleTurn) {
				t.Errorf("Steer(%q) while %q runs: err = %v, want ErrStaleTurn", expected, cur, err)
			}
		}
		if err := a.Steer(t.Context(), cur, bridge.Input{Text: "hello"}); err != nil {
			t.Errorf("Steer into the running turn: %v", err)
		}
	})
	t.Run("ErrNoActiveTurn", func(t *testing.T) {
		a, rec := newAgent(t, "1ms", 1, nil)
		if err := a.Steer(t.Context(), "", bridge.Input{Text: "hello"}); !errors.Is(err, bridge.ErrNoActiveTurn) {
			t.Fatalf("idle: err = %v, want ErrNoActiveTurn", err)
		}
		id, _ := a.StartTurn(t.Context(), bridge.Input{Text: "quick"})
		rec.waitEnded(t, id)
		if err := a.Steer(t.Context(), id, bridge.Input{Text: "late"}); !errors.Is(err, bridge.ErrNoActiveTurn) {
			t.Fatalf("after the turn: err = %v, want ErrNoActiveTurn", err)
		}
	})
}
