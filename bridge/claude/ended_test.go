package claude

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/bridge"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A note for a session that ended (SessionEnd) before taking it goes to
// the owner's next session in the project, and the receipt says so; if no
// session takes it in time, the owner is shown it and the receipt says
// that.
func TestAttachedNoteForAnEndedSession(t *testing.T) {
	start := func(t *testing.T, opts map[string]string) (machine, *Attached, *eventLog, *syncBuffer) {
		m := newMachine(t)
		logs := &syncBuffer{}
		events := &eventLog{}
		h, err := NewAttached(bridge.Deps{Agent: bridge.AgentConfig{Name: "mine", Harness: "claude-attach", Dir: m.dir, Options: m.opts(opts)},
			Events: events.sink, Log: slog.New(slog.NewTextHandler(logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Start(ctxFor(t, 5*time.Second)); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.Close() })
		return m, h, events, logs
	}
	t.Run("NextSessionGetsIt", func(t *testing.T) {
		m, h, events, _ := start(t, nil)
		runHook(t, m, sessionEvent("SessionStart", sessOld))
		h.StartTurn(ctxFor(t, time.Second), bridge.Input{Text: "NOTE-FOR-OLD", SteerID: "1", SenderIsOwner: true})
		runHook(t, m, sessionEvent("SessionEnd", sessOld))
		runHook(t, m, sessionEvent("SessionStart", sessNew))
		waitFor(t, 10*time.Second, "the next session gets the note", func() bool {
			out, _ := runHook(t, m, readAs(sessNew))
			return strings.Contains(out, "NOTE-FOR-OLD")
		})
		ev := events.wait(t, 10*time.Second, "the receipt", handled("1", ""))
		if !strings.Contains(ev.Detail, "next Claude Code session") || !strings.Contains(ev.Detail, sessOld) {
			t.Fatalf("the receipt says %q", ev.Detail)
		}
	})
	t.Run("NoSessionShownToTheOwner", func(t *testing.T) {
		m, h, events, logs := start(t, map[string]string{"expiry": "1s"})
		runHook(t, m, sessionEvent("SessionStart", sessOld))
		h.StartTurn(ctxFor(t, time.Second), bridge.Input{Text: "NOTE-NOBODY-TOOK", SteerID: "1", Sender: "bob"})
		runHook(t, m, sessionEvent("SessionEnd", sessOld))
		ev := events.wait(t, 20*time.Second, "the expiry receipt", handled("1", "expired"))
		if !strings.Contains(ev.Detail, "shown to the owner") {
			t.Fatalf("the receipt says %q", ev.Detail)
		}
		if l := logs.String(); !strings.Contains(l, "NOTE-NOBODY-TOOK") || !strings.Contains(l, "from=bob") {
			t.Fatalf("the owner was not shown the note:\n%s", l)
		}
	})
}
