package hub_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/authz"
	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
	"github.com/wheelhouse-dev/wheelhouse/store"
)

// A sustained post load, with readers paging the room all along, keeps
// the SQLite WAL under its bound (plus one batch); before the bound, the
// background PASSIVE checkpoint never caught up with the writer and the
// WAL grew by kilobytes per post (1.43 GB at 100k posts).
func TestSustainedLoadKeepsWALBounded(t *testing.T) {
	const limit = 1 << 20
	// One person posts far beyond a person's limit: the test measures
	// the WAL, not the limits.
	h := testhub.Start(t, testhub.Options{SQLiteWALLimit: limit, MetricsAddr: "127.0.0.1:0", Budgets: &authz.Budgets{}})
	admin := h.Setup("root", "correct horse")
	admin.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "load"})
	wal := filepath.Join(h.DataDir, store.DBFile+"-wal")

	var peak atomic.Int64
	stop := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Add(1)
	go func() { // the file's size, every millisecond or so
		defer sampler.Done()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if fi, err := os.Stat(wal); err == nil && fi.Size() > peak.Load() {
				peak.Store(fi.Size())
			}
		}
	}()

	const posters, each = 8, 300
	var wg sync.WaitGroup
	for p := 0; p < posters; p++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				admin.Post("load", fmt.Sprintf("post %d of poster %d: a line long enough to be indexed for search like any chat message", i, p))
			}
		}()
		go func() { // a reader holding snapshots while the writer writes
			defer wg.Done()
			for i := 0; i < each/10; i++ {
				admin.Must(200, "GET", "/api/v1/rooms/load/messages?limit=100", nil)
			}
		}()
	}
	wg.Wait()
	close(stop)
	sampler.Wait()

	m := h.Metrics()
	truncations := metricValue(t, m, "wheelhouse_sqlite_wal_truncations_total")
	walNow := metricValue(t, m, "wheelhouse_sqlite_wal_bytes")
	t.Logf("%d posts: WAL peak %d bytes, now %g, %g truncations", posters*each, peak.Load(), walNow, truncations)
	if truncations < 1 {
		t.Errorf("the WAL was never truncated (peak %d bytes)", peak.Load())
	}
	// One batch past the bound is the most it may be; a generous 8× the
	// bound stands for that (the unbounded WAL passed 20× here).
	if p := peak.Load(); p > 8*limit {
		t.Errorf("the WAL reached %d bytes, bound %d", p, limit)
	}
	if metricValue(t, m, "wheelhouse_sqlite_wal_limit_bytes") != limit {
		t.Errorf("wheelhouse_sqlite_wal_limit_bytes is not the configured bound:\n%s", m)
	}
}

// metricValue reads one unlabelled sample from a Prometheus text scrape.
func metricValue(t *testing.T, scrape, name string) float64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\S+)$`).FindStringSubmatch(scrape)
	if m == nil {
		t.Fatalf("no %s in the scrape:\n%s", name, scrape)
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
