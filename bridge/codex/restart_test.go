package codex

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	wheelhouse "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/bridge"
	"github.com/wheelhouse-dev/wheelhouse/internal/stubmodel"
)

func TestProcessDeath(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	defer close(release)
	r := newRig(t, nil, stubmodel.Hold(release, ""), stubmodel.Text("back again"))
	turn := r.startTurn("remember PINEAPPLE")
	r.stub.WaitRequest(t, 1, waitTimeout)

	s, err := r.h.current()
	if err != nil {
		t.Fatal(err)
	}
	oldThread := s.thread()
	if err := s.cmd.Process.Kill(); err != nil { // a crash, as far as we can tell
		t.Fatal(err)
	}

	t.Run("FailedAndTurnEnded", func(t *testing.T) {
		failed := r.events.wait(t, "failed", kindIs(bridge.EventFailed))
		if !strings.Contains(failed.Text, "codex app-server exited") {
			t.Fatalf("failed event %+v", failed)
		}
		end := r.events.wait(t, "turn end", turnEnded(turn))
		if end.Status != "failed" || end.Text == "" {
			t.Fatalf("turn ended %+v", end)
		}
	})
	t.Run("CallsFailWhileDown", func(t *testing.T) {
		// Either still restarting (ErrNotRunning) or already back, where
		// the dead turn is gone (ErrNoActiveTurn). Never a hang.
		err := r.steer(turn, "anyone there?")
		if !errors.Is(err, bridge.ErrNotRunning) && !errors.Is(err, bridge.ErrNoActiveTurn) {
			t.Fatalf("steer while down: %v", err)
		}
	})
	t.Run("RecoveredOnSameThread", func(t *testing.T) {
		r.events.wait(t, "recovered", kindIs(bridge.EventRecovered))
		ns, err := r.h.current()
		if err != nil {
			t.Fatal(err)
		}
		if ns == s || ns.thread() != oldThread {
			t.Fatalf("new session thread %q, want resumed %q", ns.thread(), oldThread)
		}
		turn2 := r.startTurn("what did I ask you to remember?")
		end := r.events.wait(t, "turn end", turnEnded(turn2))
		if end.Status != "completed" {
			t.Fatalf("turn after recovery %+v", end)
		}
		req := r.stub.WaitRequest(t, 2, waitTimeout)
		if !req.HasUserText("PINEAPPLE") {
			t.Fatalf("resumed thread lost its history: %q", req.UserTexts())
		}
	})
}

func TestCloseStopsWithoutRestart(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	s, err := r.h.current()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := r.h.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.exited:
	default:
		t.Fatal("process still running after Close")
	}
	t.Logf("close took %v", time.Since(start))
	if _, err := r.h.StartTurn(context.Background(), bridge.Input{Text: "x"}); !errors.Is(err, bridge.ErrNotRunning) {
		t.Fatalf("start turn after close: %v", err)
	}
	for _, e := range r.events.all() {
		if e.Kind == bridge.EventFailed || e.Kind == bridge.EventRecovered {
			t.Fatalf("event after close: %+v", e)
		}
	}
	if err := r.h.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
}

func TestStartFails(t *testing.T) {
	falseBin, err := exec.LookPath("false")
	if err != nil {
		t.Fatal(err)
	}
	badHome := t.TempDir()
	if err := os.WriteFile(filepath.Join(badHome, "config.toml"), []byte("no_such_codex_key = 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, binary string
		options      map[string]string
		wantErr      string
	}{
		{"ErrBinaryMissing", filepath.Join(t.TempDir(), "no-codex-here"), nil, "no-codex-here"},
		{"ErrExitsAtOnce", falseBin, nil, "exit status 1"},
		{"ErrStrictConfig", codexBinary(t), map[string]string{OptCodexHome: badHome, OptStrictConfig: "true"}, "no_such_codex_key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := New(bridge.Deps{Agent: bridge.AgentConfig{Name: "x", Dir: t.TempDir(), Binary: tc.binary, Options: tc.options}})
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
			defer cancel()
			err = h.Start(ctx)
			if wheelhouse.ErrorCode(err) != wheelhouse.EUnavailable || !strings.Contains(wheelhouse.ErrorMessage(err), "codex") ||
				!strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("start: %v", err)
			}
			if tc.name == "ErrStrictConfig" && !strings.Contains(wheelhouse.ErrorMessage(err), "unknown configuration field") {
				t.Fatalf("start: %v", err)
			}
			if _, err := h.StartTurn(ctx, bridge.Input{Text: "x"}); !errors.Is(err, bridge.ErrNotRunning) {
				t.Fatalf("start turn: %v", err)
			}
		})
	}
}

// Not parallel: it counts goroutines before the parallel tests start.
func TestCloseLeavesNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	r := newRig(t, askForCommands, stubmodel.Exec("touch x"))
	r.gate.decide = func(ctx context.Context, _ bridge.ApprovalAsk) error { <-ctx.Done(); return ctx.Err() }
	r.startTurn("leave an approval pending")
	waitFor(t, "approval pending", func() bool { return len(r.gate.asked()) == 1 })
	if err := r.h.Close(); err != nil {
		t.Fatal(err)
	}
	r.stub.Close()
	waitFor(t, "goroutines to exit", func() bool { return runtime.NumGoroutine() <= before })
}
