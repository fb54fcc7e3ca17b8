package bench

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Throughput is acknowledged operations per second.
type Throughput struct {
	N       int
	Elapsed time.Duration
}

// PerSecond is the rate.
func (t Throughput) PerSecond() float64 { return float64(t.N) / t.Elapsed.Seconds() }

func (t Throughput) String() string { return fmt.Sprintf("%.0f/s (n=%d)", t.PerSecond(), t.N) }

// PostThroughput posts n messages over HTTP with c concurrent clients and
// counts those acknowledged (201: appended to the log, projected, answered).
func PostThroughput(ctx context.Context, n, c int) (Throughput, error) {
	e, err := newEnv(ctx)
	if err != nil {
		return Throughput{}, err
	}
	defer e.close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: c}}
	var next atomic.Int64
	var failed atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < c; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > int64(n) || ctx.Err() != nil {
					return
				}
				if err := e.post(ctx, client, fmt.Sprintf("message %d", i)); err != nil {
					failed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	if f := failed.Load(); f > 0 {
		return Throughput{}, fmt.Errorf("%d of %d posts failed", f, n)
	}
	return Throughput{N: n, Elapsed: el}, nil
}

// RawPublishThroughput is the baseline: n JetStream publishes (file
// storage, acknowledged) with c concurrent publishers on an embedded server.
func RawPublishThroughput(ctx context.Context, n, c int) (Throughput, error) {
	dir, err := os.MkdirTemp("", "wheelhouse-bench-js-")
	if err != nil {
		return Throughput{}, err
	}
	defer os.RemoveAll(dir)
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: dir, NoSigs: true, NoLog: true})
	if err != nil {
		return Throughput{}, err
	}
	go ns.Start()
	defer ns.Shutdown()
	if !ns.ReadyForConnections(10 * time.Second) {
		return Throughput{}, fmt.Errorf("baseline nats-server not ready")
	}
	nc, err := nats.Connect("", nats.InProcessServer(ns))
	if err != nil {
		return Throughput{}, err
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "B", Subjects: []string{"b.>"}, Storage: jetstream.FileStorage}); err != nil {
		return Throughput{}, err
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	var firstErr atomic.Pointer[error]
	for w := 0; w < c; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(n) {
				if _, err := js.Publish(ctx, "b.x", []byte(`{"text":"message"}`)); err != nil {
					firstErr.CompareAndSwap(nil, &err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if p := firstErr.Load(); p != nil {
		return Throughput{}, *p
	}
	return Throughput{N: n, Elapsed: time.Since(start)}, nil
}
