package room

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/internal/natstest"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func TestLimiterGrowingDelays(t *testing.T) {
	ctx := context.Background()
	clk := &clock{t: time.Unix(1_000_000, 0)}
	js := natstest.JetStream(t)
	l, err := openLimiter(ctx, js, js, 1, clk.now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	const free = 3
	for i := range free - 1 {
		if wait, err := l.take(ctx, "p.k", free); err != nil || wait != 0 {
			t.Fatalf("attempt %d: wait %v err %v", i+1, wait, err)
		}
	}
	// Each attempt from the free-th on pushes the next one further out.
	want := time.Second
	for i := range 5 {
		if wait, err := l.take(ctx, "p.k", free); err != nil || wait != 0 {
			t.Fatalf("attempt after waiting: wait %v err %v", wait, err)
		}
		wait, err := l.take(ctx, "p.k", free)
		if err != nil || wait != want {
			t.Fatalf("round %d: wait %v, want %v (err %v)", i, wait, want, err)
		}
		clk.add(want)
		want *= 2
	}
	t.Run("CappedAt15Minutes", func(t *testing.T) {
		if d := delay(40, free); d != loginDelayMax {
			t.Fatalf("delay(40) = %v", d)
		}
	})
	t.Run("OtherKeysUntouched", func(t *testing.T) {
		if wait, _ := l.take(ctx, "p.other", free); wait != 0 {
			t.Fatalf("another key waits %v", wait)
		}
	})
	t.Run("ForgetClears", func(t *testing.T) {
		if err := l.forget(ctx, "p.k"); err != nil {
			t.Fatal(err)
		}
		if wait, _ := l.take(ctx, "p.k", free); wait != 0 {
			t.Fatalf("waits %v after forget", wait)
		}
	})
	t.Run("GiveBackUndoesAnAttempt", func(t *testing.T) {
		for range free - 1 {
			l.take(ctx, "a.k", free)
		}
		l.giveBack(ctx, "a.k", free) // a correct password
		if wait, _ := l.take(ctx, "a.k", free); wait != 0 {
			t.Fatalf("waits %v: the given-back attempt still counted", wait)
		}
	})
}

// Parallel attempts are each counted (compare-and-set), so a burst cannot
// slip past the free attempts.
func TestLimiterCountsParallelAttempts(t *testing.T) {
	ctx := context.Background()
	clk := &clock{t: time.Unix(1_000_000, 0)}
	js := natstest.JetStream(t)
	l, err := openLimiter(ctx, js, js, 1, clk.now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	passed := 0
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wait, err := l.take(ctx, "p.burst", 3)
			if err != nil && !errors.Is(err, errLimiterBusy) {
				t.Error(err)
			}
			if err == nil && wait == 0 {
				mu.Lock()
				passed++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if passed > 3 {
		t.Fatalf("%d of 20 parallel attempts passed; at most 3 may", passed)
	}
}

// Entries expire a while after their last attempt (the bucket's TTL).
func TestLimiterEntriesExpire(t *testing.T) {
	ctx := context.Background()
	js := natstest.JetStream(t)
	l, err := openLimiter(ctx, js, js, 1, time.Now, 500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		l.take(ctx, "p.gone", 3)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := l.kv.Get(ctx, "p.gone")
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the entry did not expire: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if wait, _ := l.take(ctx, "p.gone", 3); wait != 0 {
		t.Fatalf("an expired entry still delays: %v", wait)
	}
}

func TestAddrKey(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"203.0.113.7", "203.0.113.7"},
		{"::ffff:203.0.113.7", "203.0.113.7"},
		{"2001:db8:1:2::1", "2001:db8:1:2::/64"},
		{"2001:db8:1:2:ffff::9", "2001:db8:1:2::/64"},
		{"2001:db8:1:3::1", "2001:db8:1:3::/64"},
		{"", "unknown"},
		{"not an address", "unknown"},
	} {
		if got := AddrKey(c.in); got != c.want {
			t.Errorf("AddrKey(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestPasswordAttemptMessage(t *testing.T) {
	ctx := context.Background()
	clk := &clock{t: time.Unix(1_000_000, 0)}
	js := natstest.JetStream(t)
	l, err := openLimiter(ctx, js, js, 1, clk.now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	s := &Service{logins: l}
	for range loginPairFree {
		done, err := s.passwordAttempt(ctx, "u1", Client{Addr: "10.0.0.1"})
		if err != nil {
			t.Fatal(err)
		}
		done(false)
	}
	_, err = s.passwordAttempt(ctx, "u1", Client{Addr: "10.0.0.1"})
	if wh.ErrorCode(err) != wh.ERateLimited || wh.ErrorMessage(err) != "too many wrong passwords for this name from your address; try again in 1 second" ||
		wh.ErrorRetryAfter(err) != time.Second {
		t.Fatalf("got %v (retry after %v)", err, wh.ErrorRetryAfter(err))
	}
	done, err := s.passwordAttempt(ctx, "u1", Client{Addr: "10.0.0.2"})
	if err != nil {
		t.Fatalf("another address was refused: %v", err)
	}
	done(true)
}
