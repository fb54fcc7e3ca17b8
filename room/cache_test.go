package room

import (
	"testing"

	"github.com/wheelhouse-dev/wheelhouse/chat"
)

func TestAccessCacheIgnoresAnswersFromBeforeAChange(t *testing.T) {
	c := newCaches()
	_, ok, gen := c.getAccess(1, "dev")
	if ok {
		t.Fatal("empty cache answered")
	}
	// Membership changes while the database read is in flight…
	c.onFeed([]chat.FeedItem{{Kind: chat.EvMemberRemoved}})
	// …so the (possibly stale) answer must not be kept.
	c.putAccess(1, "dev", 42, gen)
	if _, ok, _ := c.getAccess(1, "dev"); ok {
		t.Fatal("kept a membership answer read before a removal")
	}
	_, _, gen = c.getAccess(1, "dev")
	c.putAccess(1, "dev", 42, gen)
	if id, ok, _ := c.getAccess(1, "dev"); !ok || id != 42 {
		t.Fatal("did not keep a fresh answer")
	}
	c.onFeed([]chat.FeedItem{{Kind: "message"}})
	if _, ok, _ := c.getAccess(1, "dev"); !ok {
		t.Fatal("a message dropped the membership cache")
	}
	c.onFeed([]chat.FeedItem{{Kind: chat.EvMemberAdded}})
	if _, ok, _ := c.getAccess(1, "dev"); ok {
		t.Fatal("a membership change kept the cache")
	}
}
