package hub_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
)

func TestPostRate(t *testing.T) {
	h := testhub.Start(t, testhub.Options{})
	admin := h.Setup("root", "correct horse")
	admin.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "b"})
	start := time.Now()
	var n atomic.Int64
	var wg sync.WaitGroup
	for p := 0; p < 16; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				admin.Post("b", fmt.Sprint("m", i))
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	t.Logf("%d posts in %s: %.0f/s", n.Load(), time.Since(start), float64(n.Load())/time.Since(start).Seconds())
}
