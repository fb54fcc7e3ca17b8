package stubmodel

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// recorded is the requests a stub server has seen, in arrival order; every
// server keeps one, and tests read or wait on it.
type recorded[T any] struct {
	mu      sync.Mutex
	reqs    []T
	changed chan struct{} // closed and replaced when a request is recorded
}

// add records the request build returns for the next 1-based number.
func (r *recorded[T]) add(build func(n int) T) T {
	r.mu.Lock()
	defer r.mu.Unlock()
	req := build(len(r.reqs) + 1)
	r.reqs = append(r.reqs, req)
	if r.changed != nil {
		close(r.changed)
		r.changed = nil
	}
	return req
}

// all returns a copy of the requests so far, and a channel closed on the
// next one.
func (r *recorded[T]) all() ([]T, <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.changed == nil {
		r.changed = make(chan struct{})
	}
	return append([]T(nil), r.reqs...), r.changed
}

// waitFor blocks until cond holds for the requests, or ctx ends.
func (r *recorded[T]) waitFor(ctx context.Context, cond func([]T) bool) ([]T, error) {
	for {
		reqs, changed := r.all()
		if cond(reqs) {
			return reqs, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return reqs, fmt.Errorf("stubmodel: %d requests seen: %w", len(reqs), ctx.Err())
		}
	}
}

// nth returns the nth request (1-based), failing t after timeout.
func (r *recorded[T]) nth(t testing.TB, what string, n int, timeout time.Duration) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	reqs, err := r.waitFor(ctx, func(reqs []T) bool { return len(reqs) >= n })
	if err != nil {
		t.Fatalf("stubmodel: waited %v for %s #%d, got %d", timeout, what, n, len(reqs))
		var zero T
		return zero
	}
	return reqs[n-1]
}
