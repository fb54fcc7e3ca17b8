package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Bytes is a data rate.
type Bytes struct {
	N       int64
	Elapsed time.Duration
}

func (b Bytes) String() string {
	return fmt.Sprintf("%.0f MB/s (%d MB)", b.MBPerSecond(), b.N/1e6)
}

// MBPerSecond is the rate in megabytes a second (0 for no time: JSON has no
// NaN, and one would fail the whole --json output).
func (b Bytes) MBPerSecond() float64 { return ratio(float64(b.N)/1e6, b.Elapsed.Seconds()) }

// MarshalJSON writes the rate, for comparing runs.
func (b Bytes) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Bytes       int64   `json:"bytes"`
		Seconds     float64 `json:"seconds"`
		MBPerSecond float64 `json:"mbPerSecond"`
	}{b.N, b.Elapsed.Seconds(), b.MBPerSecond()})
}

// UploadThroughput uploads n files of size bytes one after another over
// HTTP (raw body): the hub checks the room and quota, sniffs the type,
// streams the bytes into the object store and records the file in the log.
func UploadThroughput(ctx context.Context, n, size int) (Bytes, error) {
	e, err := newEnv(ctx, envOptions{})
	if err != nil {
		return Bytes{}, err
	}
	defer e.close()
	data := make([]byte, size)
	rand.Read(data)
	client := &http.Client{}
	start := time.Now()
	for i := 0; i < n; i++ {
		req, _ := http.NewRequestWithContext(ctx, "POST", e.url(fmt.Sprintf("/api/v1/rooms/bench/files?name=f%d.bin", i)), bytes.NewReader(data))
		req.Header.Set("Authorization", "Bearer "+e.token)
		resp, err := client.Do(req)
		if err != nil {
			return Bytes{}, err
		}
		drain(resp)
		if resp.StatusCode != http.StatusCreated {
			return Bytes{}, fmt.Errorf("upload: %s", resp.Status)
		}
	}
	return Bytes{N: int64(n * size), Elapsed: time.Since(start)}, nil
}

// RawObjectPut is the baseline: n puts of size bytes straight into a
// JetStream object store (file storage) on an embedded server.
func RawObjectPut(ctx context.Context, n, size int) (Bytes, error) {
	dir, err := os.MkdirTemp("", "wheelhouse-bench-obs-")
	if err != nil {
		return Bytes{}, err
	}
	defer os.RemoveAll(dir)
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: dir, NoSigs: true, NoLog: true})
	if err != nil {
		return Bytes{}, err
	}
	go ns.Start()
	defer ns.Shutdown()
	if !ns.ReadyForConnections(10 * time.Second) {
		return Bytes{}, fmt.Errorf("baseline nats-server not ready")
	}
	nc, err := nats.Connect("", nats.InProcessServer(ns))
	if err != nil {
		return Bytes{}, err
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	obs, err := js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: "bench", Storage: jetstream.FileStorage})
	if err != nil {
		return Bytes{}, err
	}
	data := make([]byte, size)
	rand.Read(data)
	start := time.Now()
	for i := 0; i < n; i++ {
		if _, err := obs.Put(ctx, jetstream.ObjectMeta{Name: fmt.Sprintf("f%d", i)}, bytes.NewReader(data)); err != nil {
			return Bytes{}, err
		}
	}
	return Bytes{N: int64(n * size), Elapsed: time.Since(start)}, nil
}
