package web

import (
	"strings"
	"sync"
	"time"
)

// Login throttling: after loginMaxFails wrong passwords for one name
// within loginWindow, that name is refused for loginLockout, on this node.
// argon2id already makes each guess slow; this caps how many there are.
const (
	loginMaxFails = 5
	loginWindow   = time.Minute
	loginLockout  = time.Minute
	throttleMax   = 10_000
)

type throttle struct {
	mu  sync.Mutex
	now func() time.Time
	m   map[string]*failures
}

type failures struct {
	n      int
	first  time.Time
	locked time.Time // refused until
}

func newThrottle(now func() time.Time) *throttle {
	return &throttle{now: now, m: map[string]*failures{}}
}

// locked reports how long name is still refused.
func (t *throttle) locked(name string) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.m[strings.ToLower(name)]
	if f == nil {
		return 0
	}
	if d := f.locked.Sub(t.now()); d > 0 {
		return d
	}
	return 0
}

func (t *throttle) fail(name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	name = strings.ToLower(name)
	now := t.now()
	if len(t.m) >= throttleMax {
		t.m = map[string]*failures{}
	}
	f := t.m[name]
	if f == nil || now.Sub(f.first) > loginWindow {
		f = &failures{first: now}
		t.m[name] = f
	}
	f.n++
	if f.n >= loginMaxFails {
		f.locked = now.Add(loginLockout)
		f.n, f.first = 0, now
	}
}

func (t *throttle) succeed(name string) {
	t.mu.Lock()
	delete(t.m, strings.ToLower(name))
	t.mu.Unlock()
}
