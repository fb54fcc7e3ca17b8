//go:build unix

package execagent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/wheelhouse-dev/wheelhouse/bridge"
)

func TestTurnOutput(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name    string
		cfg     bridge.AgentConfig
		status  string
		exact   string   // the whole message, if set
		want    []string // substrings of the message
		wantEnd []string // substrings of the end event's text
	}{
		{
			name:   "PromptArgEnvAndDir",
			cfg:    bridge.AgentConfig{Command: sh(`printf '  got: %s\n\n' "$1"; echo "x=$WH_X"; pwd; echo`, "{prompt}"), Env: map[string]string{"WH_X": "from-config"}, Dir: dir},
			status: "completed",
			exact:  "got: hello world\n\nx=from-config\n" + dir,
		},
		{
			name:   "PromptOnStdin",
			cfg:    bridge.AgentConfig{Command: sh(`tr a-z A-Z`)},
			status: "completed",
			want:   []string{"HELLO WORLD"},
		},
		{
			name:   "NoOutput",
			cfg:    bridge.AgentConfig{Command: sh(`true`)},
			status: "completed",
			want:   []string{"(the command printed nothing)"},
		},
		{
			name:   "Truncated",
			cfg:    bridge.AgentConfig{Command: sh(`i=0; while [ $i -lt 800 ]; do echo "line $i of a long answer that goes on and on"; i=$((i+1)); done`)},
			status: "completed",
			want:   []string{"line 0 of", "[output truncated: showing the first"},
		},
		{
			name:    "NonZeroExitFails",
			cfg:     bridge.AgentConfig{Command: sh(`echo partial; echo "boom: bad flag" >&2; exit 3`)},
			status:  "failed",
			want:    []string{"partial"},
			wantEnd: []string{"exit status 3", "boom: bad flag"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, rec := newAgent(t, tc.cfg)
			id, err := a.StartTurn(t.Context(), bridge.Input{Text: "hello world"})
			if err != nil {
				t.Fatal(err)
			}
			end := rec.waitEnded(t, id)
			if end.Status != tc.status {
				t.Fatalf("status %q (%s), want %q", end.Status, end.Text, tc.status)
			}
			evs := rec.all()
			if evs[0].Kind != bridge.EventTurnStarted || evs[0].TurnID != id || evs[len(evs)-1] != end {
				t.Fatalf("events out of order: %+v", evs)
			}
			msg := rec.message(id)
			if tc.exact != "" && msg != tc.exact {
				t.Errorf("message %q, want %q", msg, tc.exact)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("message lacks %q:\n%.300s", w, msg)
				}
			}
			if len(msg) > MaxOutput+200 {
				t.Errorf("message is %d bytes, cap is %d", len(msg), MaxOutput)
			}
			for _, w := range tc.wantEnd {
				if !strings.Contains(end.Text, w) {
					t.Errorf("end text %q lacks %q", end.Text, w)
				}
			}
		})
	}
}

func TestBusy(t *testing.T) {
	a, rec := newAgent(t, bridge.AgentConfig{Command: sh(`sleep 30`)})
	if a.Kind() != "exec" || a.CanSteer() {
		t.Fatalf("Kind=%q CanSteer=%v", a.Kind(), a.CanSteer())
	}
	id, err := a.StartTurn(t.Context(), bridge.Input{Text: "one"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.StartTurn(t.Context(), bridge.Input{Text: "two"}); !errors.Is(err, bridge.ErrBusy) {
		t.Fatalf("StartTurn while running: err = %v, want ErrBusy", err)
	}
	if err := a.Steer(t.Context(), id, bridge.Input{Text: "steer"}); !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("Steer: err = %v, want an unsupported error", err)
	}
	if err := a.Interrupt(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	rec.waitEnded(t, id)
}

func TestNextTurnFromEndEvent(t *testing.T) {
	a, rec := newAgent(t, bridge.AgentConfig{Command: sh(`cat`)})
	first := make(chan string, 1)
	next := make(chan error, 1)
	handled := false // only the wait goroutine of the first turn reads it first
	rec.mu.Lock()
	rec.onEvent = func(e bridge.Event) {
		if e.Kind != bridge.EventTurnEnded || handled {
			return
		}
		handled = true
		// A bridge that starts the queued follow-up as soon as it sees the end.
		if id := <-first; id == e.TurnID {
			_, err := a.StartTurn(t.Context(), bridge.Input{Text: "follow-up"})
			next <- err
		}
	}
	rec.mu.Unlock()
	id, err := a.StartTurn(t.Context(), bridge.Input{Text: "first"})
	if err != nil {
		t.Fatal(err)
	}
	first <- id
	if err := <-next; err != nil {
		t.Fatalf("StartTurn on the end event: %v", err)
	}
}

// alive reports whether pid is a live (not zombie) process.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return !os.IsNotExist(err)
	}
	// The state follows the parenthesized command name.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

func TestInterrupt(t *testing.T) {
	cases := []struct {
		name   string
		script string
		grace  string
	}{
		{"KillsProcessGroup", `sleep 30 & echo $! > "$1"; wait`, "2s"},
		{"EscalatesToKill", `trap '' TERM; sleep 30 & echo $! > "$1"; wait; wait`, "50ms"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pidFile := filepath.Join(t.TempDir(), "pid")
			a, rec := newAgent(t, bridge.AgentConfig{Command: sh(tc.script, pidFile), Options: map[string]string{"kill_grace": tc.grace}})
			id, err := a.StartTurn(t.Context(), bridge.Input{Text: "x"})
			if err != nil {
				t.Fatal(err)
			}
			var child int
			waitFor(t, "the child's pid", func() bool {
				b, _ := os.ReadFile(pidFile)
				child, err = strconv.Atoi(strings.TrimSpace(string(b)))
				return err == nil
			})
			if err := a.Interrupt(t.Context(), "other-turn"); !errors.Is(err, bridge.ErrStaleTurn) {
				t.Fatalf("Interrupt(other): err = %v, want ErrStaleTurn", err)
			}
			if err := a.Interrupt(t.Context(), id); err != nil {
				t.Fatal(err)
			}
			if end := rec.waitEnded(t, id); end.Status != "interrupted" {
				t.Fatalf("status %q, want interrupted", end.Status)
			}
			waitFor(t, "the grandchild to die", func() bool { return !alive(child) })
			if err := a.Interrupt(t.Context(), id); !errors.Is(err, bridge.ErrNoActiveTurn) {
				t.Fatalf("Interrupt when idle: err = %v, want ErrNoActiveTurn", err)
			}
		})
	}
}

func TestCloseEndsTurn(t *testing.T) {
	a, rec := newAgent(t, bridge.AgentConfig{Command: sh(`sleep 30`)})
	id, err := a.StartTurn(t.Context(), bridge.Input{Text: "x"})
	if err != nil {
		t.Fatal(err)
	}
	a.Close()
	evs := rec.all()
	if last := evs[len(evs)-1]; last.Kind != bridge.EventTurnEnded || last.TurnID != id || last.Status != "interrupted" {
		t.Fatalf("last event after Close = %+v, want the turn interrupted", last)
	}
	if _, err := a.StartTurn(t.Context(), bridge.Input{Text: "x"}); !errors.Is(err, bridge.ErrNotRunning) {
		t.Fatalf("StartTurn after Close: err = %v, want ErrNotRunning", err)
	}
}

func TestConfigErrors(t *testing.T) {
	t.Run("NoCommand", func(t *testing.T) {
		if _, err := New(bridge.Deps{Agent: bridge.AgentConfig{Name: "x"}}); err == nil {
			t.Fatal("New without a command: no error")
		}
	})
	t.Run("BadKillGrace", func(t *testing.T) {
		if _, err := New(bridge.Deps{Agent: bridge.AgentConfig{Command: []string{"true"}, Options: map[string]string{"kill_grace": "soon"}}}); err == nil {
			t.Fatal("no error")
		}
	})
	for _, tc := range []struct {
		name string
		cfg  bridge.AgentConfig
	}{
		{"NotOnPath", bridge.AgentConfig{Command: []string{"wheelhouse-no-such-command"}}},
		{"NoSuchDir", bridge.AgentConfig{Command: []string{"true"}, Dir: "/no/such/dir"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := New(bridge.Deps{Agent: tc.cfg})
			if err != nil {
				t.Fatal(err)
			}
			if err := a.Start(t.Context()); err == nil {
				t.Fatal("Start: no error")
			}
		})
	}
	t.Run("StartFailsWithoutEvents", func(t *testing.T) {
		a, rec := newAgent(t, bridge.AgentConfig{Command: []string{"/no/such/binary"}})
		if _, err := a.StartTurn(t.Context(), bridge.Input{Text: "x"}); err == nil {
			t.Fatal("StartTurn: no error")
		}
		if evs := rec.all(); len(evs) != 0 {
			t.Fatalf("events for a turn that never started: %+v", evs)
		}
		if _, err := a.StartTurn(t.Context(), bridge.Input{Text: "x"}); errors.Is(err, bridge.ErrBusy) {
			t.Fatal("agent stuck busy after a failed start")
		}
	})
	t.Run("ErrNotRunningBeforeStart", func(t *testing.T) {
		a, _ := New(bridge.Deps{Agent: bridge.AgentConfig{Command: []string{"true"}}})
		if _, err := a.StartTurn(t.Context(), bridge.Input{Text: "x"}); !errors.Is(err, bridge.ErrNotRunning) {
			t.Fatalf("err = %v, want ErrNotRunning", err)
		}
	})
}
