package room

import (
	"context"
	"testing"
	"time"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/authz"
	"github.com/wheelhouse-dev/wheelhouse/internal/natstest"
)

// A bridge past its budget is paced, never refused: every output gets
// through, later.
func TestPaceBridgeNeverRefuses(t *testing.T) {
	ctx := context.Background()
	lim := authz.Budgets{Bridge: authz.Rate{N: 2, Per: time.Second}}
	s, err := Open(ctx, Config{DataDir: t.TempDir(), JS: natstest.JetStream(t), Budgets: &lim})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		if err := s.PaceBridge(ctx, "b1"); err != nil {
			t.Fatalf("output %d: %v", i, err)
		}
	}
	t.Run("AnEndedWaitAsksForARetry", func(t *testing.T) {
		short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		for range 10 {
			err = s.PaceBridge(short, "b2")
		}
		// 10 outputs at 2 a second cannot all fit in 200 ms.
		if !isRateLimited(err) {
			t.Fatalf("an ended wait: %v, want rate_limited (the bridge sends it again)", err)
		}
	})
}

func isRateLimited(err error) bool { return wh.ErrorCode(err) == wh.ERateLimited }
