package bench

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/wheelhouse-dev/wheelhouse/hub"
)

// Rate is acknowledged operations per second, with the process's CPU time
// per operation (load generator included).
type Rate struct {
	N         int     `json:"n"`
	Seconds   float64 `json:"seconds"`
	PerSecond float64 `json:"perSecond"`
	CPUMicros float64 `json:"cpuMicrosPerOp"`
	// MeanBatch is how many events the projector applied per transaction.
	MeanBatch float64 `json:"meanBatch,omitempty"`
}

func newRate(n int, el, cpu time.Duration) Rate {
	return Rate{N: n, Seconds: el.Seconds(), PerSecond: float64(n) / el.Seconds(), CPUMicros: micros(cpu) / float64(n)}
}

func (r Rate) String() string {
	s := fmt.Sprintf("%6.0f/s  %4.0f µs CPU each", r.PerSecond, r.CPUMicros)
	if r.MeanBatch > 0 {
		s += fmt.Sprintf("  (%.1f events per projector transaction)", r.MeanBatch)
	}
	return s
}

// loadLabels mark the load generator's goroutines in CPU profiles, so
// `go tool pprof -tagignore side=load` shows the hub's share alone.
var loadLabels = pprof.Labels("side", "load")

// PostThroughput posts n messages with c concurrent clients and counts
// those acknowledged (201: appended to the log, projected, answered). Over
// HTTP the clients are keep-alive connections of one person posting to one
// room; over the socket, c people each hold their events WebSocket and
// post to a room of their own (so each socket also receives its own
// messages, as a browser's does).
func PostThroughput(ctx context.Context, n, c int, sync, over string) (Rate, error) {
	e, err := newEnv(ctx, envOptions{Sync: sync})
	if err != nil {
		return Rate{}, err
	}
	defer e.close()
	post, err := e.posters(ctx, c, over)
	if err != nil {
		return Rate{}, err
	}
	b0, ev0 := e.h.Rooms().Log.Batches()
	cpu0 := cpuTime()
	start := time.Now()
	failed, err := hammer(ctx, n, c, func(ctx context.Context, i int) error {
		return post(ctx, fmt.Sprintf("message %d", i))
	})
	el, cpu := time.Since(start), cpuTime()-cpu0
	if err != nil {
		return Rate{}, fmt.Errorf("%d of %d posts failed; the first: %w", failed, n, err)
	}
	r := newRate(n, el, cpu)
	b1, ev1 := e.h.Rooms().Log.Batches()
	r.MeanBatch = ratio(float64(ev1-ev0), float64(b1-b0))
	return r, nil
}

// posters returns a post function c goroutines may call at once: over
// HTTP to the room "bench", or over c sockets to c rooms.
func (e *env) posters(ctx context.Context, c int, over string) (func(ctx context.Context, text string) error, error) {
	if over != OverSocket {
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: c}}
		return func(ctx context.Context, text string) error {
			_, err := e.post(ctx, client, e.token, "bench", text)
			return err
		}, nil
	}
	people, err := e.addPeople(ctx, "p", c)
	if err != nil {
		return nil, err
	}
	type poster struct {
		room string
		p    *socketPoster
	}
	pool := make(chan poster, c)
	for _, pp := range people {
		name := "room-" + pp.name
		if _, err := e.h.Rooms().CreateRoom(ctx, pp.user, name, false, ""); err != nil {
			return nil, err
		}
		sp, err := e.dialPoster(ctx, pp.token)
		if err != nil {
			return nil, err
		}
		pool <- poster{room: name, p: sp}
	}
	return func(ctx context.Context, text string) error {
		p := <-pool
		defer func() { pool <- p }()
		_, err := p.p.post(ctx, p.room, text)
		return err
	}, nil
}

// hammer runs do n times on c goroutines (labelled as load) and returns how
// many failed and the first error.
func hammer(ctx context.Context, n, c int, do func(ctx context.Context, i int) error) (int64, error) {
	var next, failed atomic.Int64
	var first atomic.Pointer[error]
	var wg sync.WaitGroup
	for range c {
		wg.Add(1)
		go pprof.Do(ctx, loadLabels, func(ctx context.Context) {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > int64(n) || ctx.Err() != nil {
					return
				}
				if err := do(ctx, int(i)); err != nil {
					failed.Add(1)
					first.CompareAndSwap(nil, &err)
				}
			}
		})
	}
	wg.Wait()
	if p := first.Load(); p != nil {
		return failed.Load(), *p
	}
	return 0, ctx.Err()
}

// RawPublishThroughput is the baseline: n JetStream publishes (file
// storage, acknowledged, the same sync setting) with c concurrent
// publishers on an embedded server.
func RawPublishThroughput(ctx context.Context, n, c int, sync string) (Rate, error) {
	dir, err := os.MkdirTemp("", "wheelhouse-bench-js-")
	if err != nil {
		return Rate{}, err
	}
	defer os.RemoveAll(dir)
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: dir, NoSigs: true, NoLog: true,
		SyncAlways: sync == hub.SyncAlways})
	if err != nil {
		return Rate{}, err
	}
	go ns.Start()
	defer ns.Shutdown()
	if !ns.ReadyForConnections(10 * time.Second) {
		return Rate{}, fmt.Errorf("baseline nats-server not ready")
	}
	nc, err := nats.Connect("", nats.InProcessServer(ns))
	if err != nil {
		return Rate{}, err
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "B", Subjects: []string{"b.>"}, Storage: jetstream.FileStorage}); err != nil {
		return Rate{}, err
	}
	cpu0 := cpuTime()
	start := time.Now()
	if _, err := hammer(ctx, n, c, func(ctx context.Context, _ int) error {
		_, err := js.Publish(ctx, "b.x", []byte(`{"text":"message"}`))
		return err
	}); err != nil {
		return Rate{}, err
	}
	return newRate(n, time.Since(start), cpuTime()-cpu0), nil
}
