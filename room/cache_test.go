package room

import (
	"testing"
	"time"

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

func TestAuthCacheDropsOnAccessChange(t *testing.T) {
	now := time.Unix(1000, 0)
	c := newCaches()
	alice := chat.User{ID: 7, Name: "alice"}
	bob := chat.User{ID: 8, Name: "bob"}
	_, _, gen := c.getAuth("h1", now)
	c.putAuth("h1", authEntry{u: alice, at: now}, gen)
	c.putAuth("h2", authEntry{u: alice, at: now}, gen)
	c.putAuth("h3", authEntry{u: bob, at: now}, gen)
	if _, ok, _ := c.getAuth("h1", now); !ok {
		t.Fatal("did not keep a fresh answer")
	}

	t.Run("EndedCredentialDropped", func(t *testing.T) {
		c.onFeed([]chat.FeedItem{{Access: &chat.AccessChange{User: 99, Ended: []string{"h3"}}}})
		if _, ok, _ := c.getAuth("h3", now); ok {
			t.Fatal("kept an ended credential")
		}
	})
	t.Run("AccountChangeDropsAllOfTheUser", func(t *testing.T) {
		c.onFeed([]chat.FeedItem{{Access: &chat.AccessChange{User: alice.ID}}})
		for _, h := range []string{"h1", "h2"} {
			if _, ok, _ := c.getAuth(h, now); ok {
				t.Fatalf("kept %s of a changed account", h)
			}
		}
	})
	t.Run("AnswerReadDuringAChangeNotKept", func(t *testing.T) {
		_, _, gen := c.getAuth("h4", now)
		c.onFeed([]chat.FeedItem{{Access: &chat.AccessChange{User: bob.ID, Ended: []string{"h4"}}}})
		c.putAuth("h4", authEntry{u: bob, at: now}, gen) // read before the revocation
		if _, ok, _ := c.getAuth("h4", now); ok {
			t.Fatal("kept a credential read before its revocation")
		}
	})
	t.Run("BackstopTTL", func(t *testing.T) {
		_, _, gen := c.getAuth("h5", now)
		c.putAuth("h5", authEntry{u: bob, at: now}, gen)
		if _, ok, _ := c.getAuth("h5", now.Add(authCacheTTL+time.Second)); ok {
			t.Fatal("kept an entry past the TTL")
		}
	})
}
