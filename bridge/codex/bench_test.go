package codex

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/bridge"
	"github.com/wheelhouse-dev/wheelhouse/internal/stubmodel"
)

// stdinTap passes writes through and timestamps each turn/steer line.
type stdinTap struct {
	w     io.Writer
	steer chan time.Time
}

func (s *stdinTap) Write(p []byte) (int, error) {
	n, err := s.w.Write(p)
	if bytes.Contains(p, []byte(`"method":"turn/steer"`)) {
		select {
		case s.steer <- time.Now():
		default:
		}
	}
	return n, err
}

// BenchmarkSteerWrite measures Steer() → the turn/steer line written to
// codex's stdin (metric ns-to-stdin/op); ns/op is the whole call, until the
// steer was accepted. InMemoryPeer is the baseline: a peer that answers at
// once, so only the adapter's own work is timed. RealCodex steers genuine
// codex while the stub holds the model stream open (each steer makes codex
// abort and reissue the model request).
func BenchmarkSteerWrite(b *testing.B) {
	b.Run("InMemoryPeer", func(b *testing.B) {
		h, tap := inMemoryHarness(b)
		steerLoop(b, h, "U", tap)
	})
	b.Run("RealCodex", func(b *testing.B) {
		tap := &stdinTap{steer: make(chan time.Time, 1)}
		r := newRigWith(b, nil, func(h *Harness) {
			h.wrapStdin = func(w io.Writer) io.Writer { tap.w = w; return tap }
		})
		r.stub.SetFallback(stubmodel.Hold(make(chan struct{}), ""))
		turn := r.startTurn("hold on")
		r.stub.WaitRequest(b, 1, waitTimeout)
		steerLoop(b, r.h, turn, tap)
	})
}

func steerLoop(b *testing.B, h *Harness, turn string, tap *stdinTap) {
	ctx := context.Background()
	var toStdin time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if err := h.Steer(ctx, turn, bridge.Input{Text: "keep going"}); err != nil {
			b.Fatal(err)
		}
		toStdin += (<-tap.steer).Sub(t0)
	}
	b.StopTimer()
	b.ReportMetric(float64(toStdin.Nanoseconds())/float64(b.N), "ns-to-stdin/op")
}

// inMemoryHarness is a started Harness whose codex is a goroutine that
// answers every request with {"turnId":"U"} at once.
func inMemoryHarness(b *testing.B) (*Harness, *stdinTap) {
	connR, peerW, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	peerR, connW, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	life, stop := context.WithCancel(context.Background())
	h := &Harness{cfg: settings{dir: "/p"}, log: log, life: life, stop: stop, started: true}
	s := &session{h: h, log: log, threadID: "T", turn: "U", exited: make(chan struct{}),
		items: map[string]*liveItem{}, approvals: map[string]*pendingApproval{}, turnErr: map[string]string{}}
	tap := &stdinTap{w: connW, steer: make(chan time.Time, 1)}
	s.conn = newConn(tap, handlers{notify: s.onNotify, request: s.onRequest}, log)
	s.conn.start(connR)
	h.sess = s
	go func() {
		br := bufio.NewReader(peerR)
		for {
			line, err := br.ReadBytes('\n')
			if err != nil {
				return
			}
			var m struct {
				ID int64 `json:"id"`
			}
			_ = json.Unmarshal(line, &m)
			if _, err := fmt.Fprintf(peerW, "{\"id\":%d,\"result\":{\"turnId\":\"U\"}}\n", m.ID); err != nil {
				return
			}
		}
	}()
	b.Cleanup(func() {
		stop()
		connW.Close()
		peerW.Close()
		<-s.conn.Done()
		connR.Close()
		peerR.Close()
	})
	return h, tap
}

// BenchmarkSpawnReady measures Start on the real binary: spawn codex
// app-server, initialize, thread/start, ready for turns.
func BenchmarkSpawnReady(b *testing.B) {
	r := newRig(b, nil) // its config home and stub are reused
	cfg := r.h.cfg
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h, err := New(bridge.Deps{Agent: bridge.AgentConfig{Name: "bench", Dir: cfg.dir, Binary: cfg.binary,
			Options: map[string]string{OptCodexHome: cfg.codexHome}}})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		if err := h.Start(ctx); err != nil {
			b.Fatal(err)
		}
		cancel()
		b.StopTimer()
		h.Close()
		b.StartTimer()
	}
}
