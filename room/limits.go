package room

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/authz"
	"github.com/wheelhouse-dev/wheelhouse/chat"
)

// Per-person limits. Each person has a token bucket per kind of action
// (posts, rooms created, uploads) and a bound on open event sockets; each
// bridge has a bucket of its own for its agents' output. The buckets live
// in a NATS KV bucket beside the login attempts (the same compare-and-set
// limiter, throttle.go), so every hub node spends from the same ones. The
// rates are the hub's flags, which an admin can change with PUT /settings;
// the rule itself is authz.Take.
const (
	LimitsBucket = "wheelhouse-limits"
	limitsForget = 24 * time.Hour // a bucket untouched this long is full again

	// Socket leases: a socket holds one while it is open and renews it; a
	// node that dies without closing its sockets frees them when the
	// leases run out.
	socketLease = 3 * time.Minute
	socketRenew = time.Minute
)

// The kinds of per-person limits (the label of the refusals metric).
const (
	LimitPosts   = "posts"
	LimitRooms   = "rooms"
	LimitUploads = "uploads"
	LimitSockets = "sockets"
	// limitUnchecked counts actions let through because their limit
	// could not be checked.
	limitUnchecked = "unchecked"
)

// Default per-person limits: generous enough that nobody typing, and no
// script a person runs for themselves, meets them; they bound what one
// account can do to the disk and to everyone's sockets.
var DefaultBudgets = authz.Budgets{
	Posts:   authz.Rate{N: 1000, Per: time.Hour},
	Rooms:   authz.Rate{N: 50, Per: time.Hour},
	Uploads: authz.Rate{N: 100, Per: time.Hour},
	Bridge:  authz.Rate{N: 3000, Per: 5 * time.Minute},
	Sockets: 50,
}

type budgets struct {
	kv      *limiter
	base    authz.Budgets
	refused map[string]*atomic.Uint64
}

func newBudgets(base authz.Budgets) *budgets {
	b := &budgets{base: base, refused: map[string]*atomic.Uint64{}}
	for _, k := range []string{LimitPosts, LimitRooms, LimitUploads, LimitSockets, limitUnchecked} {
		b.refused[k] = new(atomic.Uint64)
	}
	return b
}

func (s *Service) openBudgets(ctx context.Context) error {
	l, err := openKV(ctx, s.admin, s.js, jetstream.KeyValueConfig{
		Bucket:       LimitsBucket,
		Description:  "per-person rate limits and socket leases (Wheelhouse hubs)",
		TTL:          limitsForget,
		MaxValueSize: 64 << 10,
	}, s.repl, s.now)
	if err != nil {
		return err
	}
	s.budgets.kv = l
	return nil
}

// Budgets are the limits in force: the admin's settings over the hub's
// flags.
func (s *Service) Budgets(ctx context.Context) (authz.Budgets, error) {
	set, err := s.Store.Settings(ctx)
	if err != nil {
		return authz.Budgets{}, err
	}
	return set.Limits.Over(s.budgets.base), nil
}

// LimitRefusals counts, by kind, the actions this node refused for a
// person's limit.
func (s *Service) LimitRefusals() map[string]uint64 {
	out := make(map[string]uint64, len(s.budgets.refused))
	for k, n := range s.budgets.refused {
		out[k] = n.Load()
	}
	return out
}

var limitWords = map[string]string{
	LimitPosts:   "posting (messages, edits and reactions)",
	LimitRooms:   "creating rooms",
	LimitUploads: "uploading files",
}

// limitsUnchecked lets an action through whose limit could not be
// checked (the limits bucket unreachable, as when the cluster has lost
// quorum): a limit guards against a flood, and refusing everyone's
// writes for it would be the outage it guards against. A write then
// succeeds, or the event log refuses it with its own reason. Counted in
// wheelhouse_limit_refusals_total{limit="unchecked"} and logged.
func (s *Service) limitsUnchecked(what string, err error) {
	s.budgets.refused[limitUnchecked].Add(1)
	s.logger.Warn("could not check a per-person limit; letting the action through", "limit", what, "err", err)
}

// spend takes one action of kind from actor's bucket, or refuses it with
// how long to wait.
func (s *Service) spend(ctx context.Context, kind string, actor *chat.User) error {
	lim, err := s.Budgets(ctx)
	if err != nil {
		return err
	}
	r := map[string]authz.Rate{LimitPosts: lim.Posts, LimitRooms: lim.Rooms, LimitUploads: lim.Uploads}[kind]
	if r.Off() {
		return nil
	}
	wait, _, err := s.takeBucket(ctx, limiterKey("b."+kind, actor.Name), r, false)
	if err != nil {
		s.limitsUnchecked(kind, err)
		return nil
	}
	if wait > 0 {
		s.budgets.refused[kind].Add(1)
		return &wh.Error{Code: wh.ERateLimited, Reason: "limit-" + kind, RetryAfter: wait,
			Message: fmt.Sprintf("you are %s faster than this hub allows (%d every %s); try again in %s",
				limitWords[kind], r.N, shortDur(r.Per), seconds(wait))}
	}
	return nil
}

func shortDur(d time.Duration) string {
	s := authz.Rate{N: 1, Per: d}.String()
	return s[2:]
}

// takeBucket spends a token from key's bucket (authz.Take): it returns
// how long the action must wait and whether the token was taken.
func (s *Service) takeBucket(ctx context.Context, key string, r authz.Rate, reserve bool) (wait time.Duration, taken bool, err error) {
	err = s.budgets.kv.cas(ctx, key, func(old []byte) []byte {
		var b authz.Bucket
		if old != nil && json.Unmarshal(old, &b) != nil {
			b = authz.Bucket{}
		}
		nb, w := authz.Take(b, r, s.now(), reserve)
		wait, taken = w, nb != b
		if !taken {
			return nil
		}
		out, _ := json.Marshal(nb)
		return out
	})
	return wait, taken, err
}

// PaceBridge holds an agent's output to its bridge's budget: it returns
// once the output may be posted (at once while the bridge is within it).
// A bridge's output is never refused for its rate: it waits in the
// bridge's queue, and when that queue is full the hub answers
// rate_limited, which a bridge retries.
func (s *Service) PaceBridge(ctx context.Context, bridgeID string) error {
	retry := func(wait time.Duration) error {
		return &wh.Error{Code: wh.ERateLimited, Reason: "limit-bridge", RetryAfter: wait, Err: ctx.Err(),
			Message: "this bridge's agents are posting faster than the hub allows; send it again"}
	}
	lim, err := s.Budgets(ctx)
	if ctx.Err() != nil {
		return retry(0)
	}
	if err != nil || lim.Bridge.Off() {
		return err
	}
	for {
		wait, taken, err := s.takeBucket(ctx, limiterKey("b.bridge", bridgeID), lim.Bridge, true)
		if ctx.Err() != nil {
			return retry(wait)
		}
		if err != nil {
			s.limitsUnchecked("bridge", err)
			return nil
		}
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return retry(wait)
			case <-t.C:
			}
		}
		if taken { // the token was reserved: after the pause it is ours
			return nil
		}
	}
}

// leases are a person's open sockets: lease id → expiry (Unix seconds).
type leases struct {
	L map[string]int64 `json:"l"`
}

// OpenSocket takes one of user's socket leases, or refuses when they hold
// as many as the limit allows. The lease is renewed until release is
// called (or ctx ends).
func (s *Service) OpenSocket(ctx context.Context, user string) (release func(), err error) {
	lim, err := s.Budgets(ctx)
	if err != nil {
		return nil, err
	}
	if lim.Sockets <= 0 {
		return func() {}, nil
	}
	key := limiterKey("s", user)
	var idb [8]byte
	rand.Read(idb[:])
	id := hex.EncodeToString(idb[:])
	refused := false
	err = s.budgets.kv.cas(ctx, key, func(old []byte) []byte {
		l := liveLeases(old, s.now())
		refused = !authz.SocketAllowed(len(l.L), lim.Sockets)
		if refused {
			return nil
		}
		l.L[id] = s.now().Add(socketLease).Unix()
		b, _ := json.Marshal(l)
		return b
	})
	if err != nil {
		s.limitsUnchecked(LimitSockets, err)
		return func() {}, nil
	}
	if refused {
		s.budgets.refused[LimitSockets].Add(1)
		return nil, &wh.Error{Code: wh.ERateLimited, Reason: "limit-sockets", RetryAfter: socketRenew,
			Message: fmt.Sprintf("you have %d live connections open, as many as this hub allows; close a tab or a client first", lim.Sockets)}
	}
	stop := make(chan struct{})
	var once atomic.Bool
	go func() {
		t := time.NewTicker(socketRenew)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				s.renewLease(key, id, true)
			}
		}
	}()
	return func() {
		if once.CompareAndSwap(false, true) {
			close(stop)
			s.renewLease(key, id, false)
		}
	}, nil
}

// renewLease renews (keep) or drops a socket lease, off any request.
func (s *Service) renewLease(key, id string, keep bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.budgets.kv.cas(ctx, key, func(old []byte) []byte {
		l := liveLeases(old, s.now())
		if keep {
			l.L[id] = s.now().Add(socketLease).Unix()
		} else {
			delete(l.L, id)
		}
		b, _ := json.Marshal(l)
		return b
	})
	if err != nil {
		s.logger.Warn("could not update a socket lease", "keep", keep, "err", err)
	}
}

// liveLeases reads a lease record without the expired ones.
func liveLeases(b []byte, now time.Time) leases {
	var l leases
	if b != nil {
		json.Unmarshal(b, &l)
	}
	if l.L == nil {
		l.L = map[string]int64{}
	}
	for id, exp := range l.L {
		if exp <= now.Unix() {
			delete(l.L, id)
		}
	}
	return l
}
