package claude

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/bridge"

	"github.com/wheelhouse-dev/wheelhouse/bridge/claude/claudehook"
)

func TestGating(t *testing.T) {
	t.Run("AttachedNeedsTheHookWired", func(t *testing.T) {
		m := newMachine(t)
		h, _ := startAttached(t, m, nil, nil)
		if err := h.StrictTurns(); err == nil || !strings.Contains(err.Error(), "not wired") {
			t.Fatalf("unwired project: %v", err)
		}
		if err := Install(m.dir, hookBin, nil); err != nil {
			t.Fatal(err)
		}
		if err := h.StrictTurns(); err != nil {
			t.Fatalf("wired project: %v", err)
		}
		turn, _ := h.StartTurn(ctxFor(t, time.Second), bridge.Input{Text: "x", SenderIsOwner: true})
		if !h.TurnStrict(turn) || h.TurnStrict("a-0-other") || h.OwnerTurns() == "" {
			t.Fatal("TurnStrict or OwnerTurns")
		}
	})
	t.Run("AttachedOwnersPasteTaints", func(t *testing.T) {
		m := newMachine(t)
		h, _ := startAttached(t, m, nil, nil)
		turn, _ := h.StartTurn(ctxFor(t, time.Second), bridge.Input{Text: "mine", SteerID: "1", SenderIsOwner: true})
		h.Steer(ctxFor(t, time.Second), turn, bridge.Input{Text: "pasted", SteerID: "2", SenderIsOwner: true, Strict: true})
		for _, n := range pendingNotes(t, h) {
			if n.SteerID == "1" && n.Taints || n.SteerID == "2" && !n.Taints {
				t.Errorf("note %s taints=%v", n.SteerID, n.Taints)
			}
		}
	})
	t.Run("LaunchedOwnersPasteTaints", func(t *testing.T) {
		for _, in := range []bridge.Input{{SenderIsOwner: false}, {SenderIsOwner: true, Strict: true}} {
			if !taints(in) {
				t.Errorf("%+v does not taint", in)
			}
		}
		if taints(bridge.Input{SenderIsOwner: true}) {
			t.Error("the owner's own typed words taint")
		}
		l, err := NewLaunched(bridge.Deps{Agent: bridge.AgentConfig{Name: "cc", Dir: t.TempDir()}})
		if err != nil {
			t.Fatal(err)
		}
		if l.StrictTurns() != nil || l.TurnStrict("") || l.OwnerTurns() == "" {
			t.Fatal("launched gating answers")
		}
	})
}

func pendingNotes(t *testing.T, h *Attached) []claudehook.Note {
	t.Helper()
	p := h.Project()
	key, err := p.ReadKey()
	if err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(p.Inbox())
	var out []claudehook.Note
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(p.Inbox(), e.Name()))
		n, err := p.OpenNote(key, e.Name(), b)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	return out
}
