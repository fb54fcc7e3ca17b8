package bench

import (
	"context"
	"testing"
)

func TestTmpFigures(t *testing.T) {
	ctx := context.Background()
	r, err := SearchLatency(ctx, 100_000, 400)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("search: fill %s hub %s raw %s ratio p50 %s p99 %s hits %.1f", r.Fill, r.Hub, r.Raw, ratio(r.Hub.P50, r.Raw.P50), ratio(r.Hub.P99, r.Raw.P99), r.HitsPerTerm)
	raw, err := RawObjectPut(ctx, 40, 4<<20)
	if err != nil {
		t.Fatal(err)
	}
	up, err := UploadThroughput(ctx, 40, 4<<20)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("uploads: hub %s raw %s ratio %.2f", up, raw, (float64(up.N)/up.Elapsed.Seconds())/(float64(raw.N)/raw.Elapsed.Seconds()))
}
