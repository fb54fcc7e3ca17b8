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

const (
	authCacheTTL  = time.Second // a revocation on another node takes effect within this
	cacheMaxItems = 50_000
)

type authEntry struct {
	u   chat.User
	exp time.Time // zero: never
	at  time.Time
}

type caches struct {
	mu     sync.Mutex
	auth   map[string]authEntry // by credential hash
	access map[accessKey]int64  // member's (user, room) → room id
	gen    uint64               // bumped on every membership change
}

type accessKey struct {
	user int64
	room string
}

func newCaches() *caches {
	return &caches{auth: map[string]authEntry{}, access: map[accessKey]int64{}}
}

func (c *caches) getAuth(hash string, now time.Time) (chat.User, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.auth[hash]
	if !ok || now.Sub(e.at) > authCacheTTL || (!e.exp.IsZero() && now.After(e.exp)) {
		return chat.User{}, false
	}
	return e.u, true
}

func (c *caches) putAuth(hash string, e authEntry) {
	c.mu.Lock()
	if len(c.auth) >= cacheMaxItems {
		c.auth = map[string]authEntry{}
	}
	c.auth[hash] = e
	c.mu.Unlock()
}

func (c *caches) dropAuth(hash string) {
	c.mu.Lock()
	delete(c.auth, hash)
	c.mu.Unlock()
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
// credentials when one was revoked.
func (c *caches) onFeed(items []chat.FeedItem) {
	for _, it := range items {
		switch it.Kind {
		case chat.EvMemberAdded, chat.EvMemberRemoved, chat.EvRoomCreated:
			c.mu.Lock()
			c.access = map[accessKey]int64{}
			c.gen++
			c.mu.Unlock()
			return
		}
	}
}
