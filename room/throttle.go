package room

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	wh "github.com/wheelhouse-dev/wheelhouse"
)

// Login throttling. Every password check (a login, or the current
// password when changing it) counts against the normalized name together
// with the client's device (a cookie set at a successful login) when that
// device logged in as the name before, else with the client's address.
// A few attempts are free; after them each attempt pushes the next one
// further out (1 s, 2 s, 4 s … up to 15 minutes). The address's count over
// all names makes the free attempts fewer (see passwordAttempt) but never
// refuses anyone by itself. Nothing is ever locked for everyone: someone
// failing against a name delays only that name from their address, so
// the account's owner, from a device they logged in with or from any
// address that did not fail, logs in as usual. A correct password clears
// its key and takes its attempt back from the address.
//
// The counts live in a NATS KV bucket, so every hub node sees the same
// ones and a guesser cannot spread attempts over nodes; updates are
// compare-and-set, so parallel attempts are each counted. An entry expires
// an hour after its last attempt (the bucket's TTL), like ntfy's visitors.
// The log is the wrong place for them: they are not history, and a guesser
// would grow it forever.
const (
	LoginBucket    = "wheelhouse-logins"
	loginForget    = time.Hour
	loginPairFree  = 3  // attempts per (name, address) before delays
	loginAddrFree  = 20 // attempts per address, any name, before delays
	loginDelayBase = time.Second
	loginDelayMax  = 15 * time.Minute
	loginCASTries  = 8
)

// attempts is one key's count.
type attempts struct {
	N     int       `json:"n"`
	Until time.Time `json:"until"` // no attempt before this
}

// delay is the wait imposed after the n-th counted attempt.
func delay(n, free int) time.Duration {
	if n < free {
		return 0
	}
	d := loginDelayBase << min(n-free, 20)
	return min(d, loginDelayMax)
}

type limiter struct {
	kv  jetstream.KeyValue
	now func() time.Time
}

// openLimiter opens (admin creating it once) the login attempts bucket;
// ttl is how long an entry lives after its last attempt.
func openLimiter(ctx context.Context, admin, js jetstream.JetStream, replicas int, now func() time.Time, ttl time.Duration) (*limiter, error) {
	return openKV(ctx, admin, js, jetstream.KeyValueConfig{
		Bucket:       LoginBucket,
		Description:  "failed login attempts by name and address (Wheelhouse hubs)",
		TTL:          ttl,
		MaxValueSize: 256,
	}, replicas, now)
}

// openKV opens a limiter's bucket: one value per key, in memory (counts
// are not history), replicated like the stream.
// The bucket is created (or updated) through admin, the hub's ops
// identity, and used through js.
func openKV(ctx context.Context, admin, js jetstream.JetStream, cfg jetstream.KeyValueConfig, replicas int, now func() time.Time) (*limiter, error) {
	cfg.History, cfg.Storage, cfg.Replicas = 1, jetstream.MemoryStorage, max(replicas, 1)
	if _, err := admin.CreateOrUpdateKeyValue(ctx, cfg); err != nil {
		return nil, wh.Wrap(err, "open the %s bucket", cfg.Bucket)
	}
	kv, err := js.KeyValue(ctx, cfg.Bucket)
	if err != nil {
		return nil, wh.Wrap(err, "open the %s bucket", cfg.Bucket)
	}
	return &limiter{kv: kv, now: now}, nil
}

// AddrKey is the part of a client address that throttling keys on: the
// address itself for IPv4, its /64 for IPv6 (one subscriber's network:
// anyone holds a whole /64), "unknown" when there is none.
func AddrKey(addr string) string {
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return "unknown"
	}
	a = a.Unmap()
	if a.Is4() {
		return a.String()
	}
	p, _ := a.Prefix(64)
	return p.String()
}

func limiterKey(kind string, parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return kind + "." + hex.EncodeToString(h.Sum(nil)[:16])
}

// loginKeys are the two keys of one attempt: (name, address) and address.
func loginKeys(name, addr string) (pair, byAddr string) {
	a := AddrKey(addr)
	return limiterKey("p", name, a), limiterKey("a", a)
}

var errLimiterBusy = errors.New("too many concurrent updates")

// take counts one attempt on key, unless key must still wait: then it
// returns how long.
func (l *limiter) take(ctx context.Context, key string, free int) (time.Duration, error) {
	var wait time.Duration
	err := l.cas(ctx, key, func(old []byte) []byte {
		var a attempts
		if json.Unmarshal(old, &a) != nil {
			a = attempts{}
		}
		now := l.now()
		if wait = a.Until.Sub(now); wait > 0 {
			return nil
		}
		wait = 0
		a.N++
		a.Until = now.Add(delay(a.N, free))
		b, _ := json.Marshal(a)
		return b
	})
	return wait, err
}

// cas changes key's value (nil when there is none) to what change makes
// of it, compare-and-set: when another update came first, it reads again
// and asks change again. change returns nil to leave the key as it is.
func (l *limiter) cas(ctx context.Context, key string, change func(old []byte) []byte) error {
	for range loginCASTries {
		var old []byte
		var rev uint64
		e, err := l.kv.Get(ctx, key)
		switch {
		case err == nil:
			rev, old = e.Revision(), e.Value()
		case errors.Is(err, jetstream.ErrKeyNotFound):
		default:
			return err
		}
		b := change(old)
		if b == nil {
			return nil
		}
		if rev == 0 {
			_, err = l.kv.Create(ctx, key, b)
		} else {
			_, err = l.kv.Update(ctx, key, b, rev)
		}
		if err == nil {
			return nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) && !isWrongSeq(err) {
			return err
		}
	}
	return errLimiterBusy
}

func isWrongSeq(err error) bool {
	var ae *jetstream.APIError
	return errors.As(err, &ae) && ae.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence
}

// giveBack takes one attempt back from key (a correct password).
func (l *limiter) giveBack(ctx context.Context, key string, free int) error {
	for range loginCASTries {
		e, err := l.kv.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		var a attempts
		json.Unmarshal(e.Value(), &a)
		if a.N <= 1 {
			err = l.kv.Delete(ctx, key, jetstream.LastRevision(e.Revision()))
		} else {
			a.N--
			if delay(a.N, free) == 0 {
				a.Until = time.Time{}
			}
			b, _ := json.Marshal(a)
			_, err = l.kv.Update(ctx, key, b, e.Revision())
		}
		if err == nil || errors.Is(err, jetstream.ErrKeyNotFound) {
			return nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) && !isWrongSeq(err) {
			return err
		}
	}
	return errLimiterBusy
}

func seconds(d time.Duration) string {
	n := int((d + time.Second - 1) / time.Second)
	if n == 1 {
		return "1 second"
	}
	return fmt.Sprintf("%d seconds", n)
}

// forget clears key.
func (l *limiter) forget(ctx context.Context, key string) error {
	err := l.kv.Purge(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil
	}
	return err
}

// DeviceBucket remembers which devices (a cookie set at a successful
// login) have logged in as which names.
const (
	DeviceBucket = "wheelhouse-devices"
	deviceForget = 180 * 24 * time.Hour
	// DevicePrefix starts a device cookie's value.
	DevicePrefix = "whd_"
)

// openDevices opens the bucket of known devices.
func openDevices(ctx context.Context, admin, js jetstream.JetStream, replicas int, now func() time.Time) (*limiter, error) {
	return openKV(ctx, admin, js, jetstream.KeyValueConfig{
		Bucket:       DeviceBucket,
		Description:  "devices that logged in as a name before, by hash (Wheelhouse hubs)",
		TTL:          deviceForget,
		MaxValueSize: 16,
	}, replicas, now)
}

// validDevice: a device cookie as the hub sets it (anything else is no
// device at all).
func validDevice(d string) bool {
	return strings.HasPrefix(d, DevicePrefix) && len(d) == len(DevicePrefix)+43
}

// knownDevice reports whether device has logged in as name before.
func (s *Service) knownDevice(ctx context.Context, name, device string) bool {
	if !validDevice(device) || s.loginDevices == nil {
		return false
	}
	_, err := s.loginDevices.kv.Get(ctx, limiterKey("d", name, device))
	return err == nil
}

// passwordAttempt counts an attempt to check name's password from addr
// (and device, the cookie a successful login set; "" when none); it
// refuses one that must wait. Call done with whether the password was
// right.
//
// From a device that logged in as name before, the attempt counts only
// against (name, device): nobody else's failures, from any address, delay
// it. Otherwise it counts against (name, address), and the address's
// count of failures over all names only makes it stricter: from an
// address with many failures each name gets one free attempt, not three,
// before its own delays begin. So a shared address (an office, a VPN)
// never keeps anyone out whose password is right, and every delay is
// the name's own failures' doing and runs out.
func (s *Service) passwordAttempt(ctx context.Context, name string, from Client) (done func(ok bool), err error) {
	l := s.logins
	_, byAddr := loginKeys(name, from.Addr)
	pair, free, what := "", loginPairFree, "for this name from your address"
	if s.knownDevice(ctx, name, from.Device) {
		pair, what = limiterKey("q", name, from.Device), "for this name from this device"
	} else {
		pair, _ = loginKeys(name, from.Addr)
		if n, err := l.count(ctx, byAddr); err == nil && n >= loginAddrFree {
			free = 1
		}
	}
	unavailable := func(err error) error {
		return &wh.Error{Code: wh.EUnavailable, Message: "the hub cannot check login attempts right now; try again shortly", Err: err}
	}
	wait, err := l.take(ctx, pair, free)
	if err != nil {
		return nil, unavailable(err)
	}
	if wait > 0 {
		return nil, &wh.Error{Code: wh.ERateLimited, Reason: "login-delay", RetryAfter: wait,
			Message: fmt.Sprintf("too many wrong passwords %s; try again in %s", what, seconds(wait))}
	}
	if !strings.HasPrefix(pair, "q.") {
		if _, err := l.take(ctx, byAddr, 1<<30); err != nil { // counted, never waited on
			return nil, unavailable(err)
		}
	}
	return func(ok bool) {
		if !ok {
			return
		}
		// Off the request's context: the answer is decided already.
		bg, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		l.forget(bg, pair)
		if !strings.HasPrefix(pair, "q.") {
			l.giveBack(bg, byAddr, 1<<30)
		}
		if validDevice(from.Device) && s.loginDevices != nil {
			s.loginDevices.kv.Put(bg, limiterKey("d", name, from.Device), []byte("1"))
		}
	}, nil
}

// count is how many attempts key holds.
func (l *limiter) count(ctx context.Context, key string) (int, error) {
	e, err := l.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var a attempts
	json.Unmarshal(e.Value(), &a)
	return a.N, nil
}
