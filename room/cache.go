package room

import (
	"sync"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/chat"
)

// The hot read paths (every request authenticates; every post and history
// read checks membership) answer from small in-memory caches in front of
// SQLite. They are only an optimization: the projector re-checks
// membership when it applies a post, so a stale entry can never let a
// non-member's message in.
//
// A credential leaves the cache on the event that ends it (logout,
// revocation, deactivation, a password change) as each node applies it,
// and an answer read from the database while such an event was being
// applied is never cached (the generation check). The TTL is only a
// backstop.

const (
	authCacheTTL  = time.Minute
	cacheMaxItems = 50_000
)

type authEntry struct {
	u   chat.User
	exp time.Time // zero: never
	at  time.Time
}

type caches struct {
	mu      sync.Mutex
	auth    map[string]authEntry // by credential hash
	authGen uint64               // bumped on every access change
	access  map[accessKey]int64  // member's (user, room) → room id
	gen     uint64               // bumped on every membership change
}

type accessKey struct {
	user int64
	room string
}

func newCaches() *caches {
	return &caches{auth: map[string]authEntry{}, access: map[accessKey]int64{}}
}

// getAuth returns a cached credential, or the generation to pass to
// putAuth after reading the database.
func (c *caches) getAuth(hash string, now time.Time) (u chat.User, ok bool, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.auth[hash]
	if !ok || now.Sub(e.at) > authCacheTTL || (!e.exp.IsZero() && now.After(e.exp)) {
		return chat.User{}, false, c.authGen
	}
	return e.u, true, c.authGen
}

// putAuth stores an answer read at generation gen, unless access changed
// since (the answer may predate the change).
func (c *caches) putAuth(hash string, e authEntry, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.authGen {
		return
	}
	if len(c.auth) >= cacheMaxItems {
		c.auth = map[string]authEntry{}
	}
	c.auth[hash] = e
}

// dropAccess forgets the credentials an access change ended and every
// cached credential of its user (their account changed).
func (c *caches) dropAccess(a *chat.AccessChange) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.authGen++
	for _, h := range a.Ended {
		delete(c.auth, h)
	}
	for h, e := range c.auth {
		if e.u.ID == a.User {
			delete(c.auth, h)
		}
	}
}

// getAccess returns a cached membership answer, or the generation to pass
// to putAccess after reading the database.
func (c *caches) getAccess(user int64, room string) (id int64, ok bool, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id, ok = c.access[accessKey{user, room}]
	return id, ok, c.gen
}

// putAccess stores an answer read at generation gen, unless membership
// changed since (the answer may predate the change).
func (c *caches) putAccess(user int64, room string, id int64, gen uint64) {
	c.mu.Lock()
	if gen != c.gen {
		c.mu.Unlock()
		return
	}
	if len(c.access) >= cacheMaxItems {
		c.access = map[accessKey]int64{}
	}
	c.access[accessKey{user, room}] = id
	c.mu.Unlock()
}

// onFeed forgets membership answers when membership may have changed and
// credentials when access changed.
func (c *caches) onFeed(items []chat.FeedItem) {
	members := false
	for _, it := range items {
		if it.Access != nil {
			c.dropAccess(it.Access)
		}
		switch it.Kind {
		case chat.EvMemberAdded, chat.EvMemberRemoved, chat.EvRoomCreated:
			members = true
		}
	}
	if members {
		c.mu.Lock()
		c.access = map[accessKey]int64{}
		c.gen++
		c.mu.Unlock()
	}
}
