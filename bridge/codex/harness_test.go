package codex

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/wheelhouse-dev/wheelhouse/bridge"
	"github.com/wheelhouse-dev/wheelhouse/internal/stubmodel"
)

// These tests drive the genuine codex CLI (WHEELHOUSE_TEST_CODEX) against
// the stub Responses server.

func TestTurn(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil, stubmodel.Text("hello from the stub model"))
	if r.h.Kind() != "codex" || !r.h.CanSteer() {
		t.Fatalf("kind %q steer %v", r.h.Kind(), r.h.CanSteer())
	}
	turn := r.startTurn("say hello")

	t.Run("MessageAndCompleted", func(t *testing.T) {
		r.events.wait(t, "turn-started", func(e bridge.Event) bool {
			return e.Kind == bridge.EventTurnStarted && e.TurnID == turn
		})
		msg := r.events.wait(t, "message", kindIs(bridge.EventMessage))
		if msg.Text != "hello from the stub model" || msg.TurnID != turn {
			t.Fatalf("message %+v", msg)
		}
		end := r.events.wait(t, "turn-ended", turnEnded(turn))
		if end.Status != "completed" {
			t.Fatalf("turn ended %+v", end)
		}
	})
	t.Run("ModelSawInputFromWheelhouse", func(t *testing.T) {
		req := r.stub.WaitRequest(t, 1, waitTimeout)
		if !req.HasUserText("say hello") {
			t.Fatalf("user texts %q", req.UserTexts())
		}
		if got := req.Header.Get("originator"); got != "wheelhouse" {
			t.Fatalf("originator %q", got)
		}
		if req.TurnID() != turn {
			t.Fatalf("request turn %q, want %q", req.TurnID(), turn)
		}
	})
	t.Run("SteerAfterEndIsNoActiveTurn", func(t *testing.T) {
		err := r.steer(turn, "too late")
		if !errors.Is(err, bridge.ErrNoActiveTurn) {
			t.Fatalf("steer after end: %v", err)
		}
	})
	t.Run("NextTurnOnSameThread", func(t *testing.T) {
		turn2 := r.startTurn("second question")
		if turn2 == turn {
			t.Fatal("same turn id twice")
		}
		r.events.wait(t, "second turn end", turnEnded(turn2))
		req := r.stub.WaitRequest(t, 2, waitTimeout)
		if !req.HasUserText("say hello") || !req.HasUserText("second question") {
			t.Fatalf("second request lacks the thread history: %q", req.UserTexts())
		}
	})
}

func TestSteer(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	defer close(release)
	r := newRig(t, nil, stubmodel.Hold(release, "partial answer"), stubmodel.Text("answer after steer"))
	turn := r.startTurn("long task")
	r.stub.WaitRequest(t, 1, waitTimeout)
	// Steer once codex has streamed part of the message, so the steer
	// orphans an agentMessage that never completes.
	waitFor(t, "partial message streamed", func() bool {
		s, err := r.h.current()
		if err != nil {
			return false
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, it := range s.items {
			if it.item.Type == "agentMessage" && it.text.String() == "partial answer" {
				return true
			}
		}
		return false
	})

	t.Run("WrongTurnIsStale", func(t *testing.T) {
		err := r.steer("not-the-turn", "misdirected")
		if !errors.Is(err, bridge.ErrStaleTurn) {
			t.Fatalf("steer with wrong id: %v", err)
		}
	})
	t.Run("SteerReachesModelInSameTurn", func(t *testing.T) {
		if err := r.steer(turn, "STEER-MARKER mention bananas"); err != nil {
			t.Fatalf("steer: %v", err)
		}
		req := r.stub.WaitRequest(t, 2, waitTimeout)
		if !req.HasUserText("STEER-MARKER mention bananas") || !req.HasUserText("long task") {
			t.Fatalf("second request user texts %q", req.UserTexts())
		}
		if req.HasUserText("misdirected") {
			t.Fatal("the stale steer reached the model")
		}
		if req.TurnID() != turn {
			t.Fatalf("steered request in turn %q, want %q", req.TurnID(), turn)
		}
		end := r.events.wait(t, "turn end", turnEnded(turn))
		if end.Status != "completed" {
			t.Fatalf("turn ended %+v", end)
		}
	})
	t.Run("OrphanedMessageFinalized", func(t *testing.T) {
		var texts []string
		for _, e := range r.events.all() {
			if e.Kind == bridge.EventMessage {
				texts = append(texts, e.Text)
			}
		}
		want := []string{"answer after steer", "partial answer"}
		if strings.Join(texts, "|") != strings.Join(want, "|") {
			t.Fatalf("messages %q, want %q", texts, want)
		}
	})
}

func TestInterrupt(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	defer close(release)
	r := newRig(t, nil, stubmodel.Hold(release, ""))
	turn := r.startTurn("never finishes")
	r.stub.WaitRequest(t, 1, waitTimeout)
	ctx := context.Background()

	t.Run("WrongTurnIsStale", func(t *testing.T) {
		if err := r.h.Interrupt(ctx, "not-the-turn"); !errors.Is(err, bridge.ErrStaleTurn) {
			t.Fatalf("interrupt wrong turn: %v", err)
		}
	})
	t.Run("Interrupted", func(t *testing.T) {
		if err := r.h.Interrupt(ctx, turn); err != nil {
			t.Fatalf("interrupt: %v", err)
		}
		end := r.events.wait(t, "turn end", turnEnded(turn))
		if end.Status != "interrupted" {
			t.Fatalf("turn ended %+v", end)
		}
	})
	t.Run("AgainIsNoActiveTurn", func(t *testing.T) {
		if err := r.h.Interrupt(ctx, turn); !errors.Is(err, bridge.ErrNoActiveTurn) {
			t.Fatalf("second interrupt: %v", err)
		}
	})
}

func TestBusy(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	r := newRig(t, nil, stubmodel.Hold(release, ""))
	turn := r.startTurn("first")
	_, err := r.h.StartTurn(context.Background(), bridge.Input{Text: "second"})
	if !errors.Is(err, bridge.ErrBusy) {
		t.Fatalf("start while busy: %v", err)
	}
	close(release)
	r.events.wait(t, "turn end", turnEnded(turn))
}

func TestModelFailureEndsTurnFailed(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil, stubmodel.Failed("the model exploded"))
	turn := r.startTurn("anything")
	end := r.events.wait(t, "turn end", turnEnded(turn))
	if end.Status != "failed" || !strings.Contains(end.Text, "the model exploded") {
		t.Fatalf("turn ended %+v", end)
	}
}
