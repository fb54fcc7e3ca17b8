package store

import (
	"context"
	"reflect"
	"testing"

	"github.com/wheelhouse-dev/wheelhouse/chat"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// The steers the router takes from the projector's memory are the ones it
// would read back from the database (and the agent they go to).
func TestPendingSteersFromMemoryMatchTheDatabase(t *testing.T) {
	b := newBenchStore(t, 2, true) // u0 owns agent u0/a in room r; u1 is a member
	b.apply(t, messageEvent(t, "u1", "a thread starts here"))
	root := int64(b.seq)
	t.Run("Channel", func(t *testing.T) {
		b.apply(t, messageEvent(t, "u1", "@u0/a look at `this` please"))
		comparePending(t, b, int64(b.seq))
	})
	t.Run("Thread", func(t *testing.T) {
		b.apply(t, event(t, chat.EvMessagePosted, chat.MessagePosted{Room: "r", AuthorKind: chat.AuthorUser, Author: "u1", Text: "@u0/a and here",
			Mentions: chat.ParseMentions("@u0/a and here"), Route: true, Thread: root}))
		comparePending(t, b, int64(b.seq))
	})
	t.Run("OwnersSignedWords", func(t *testing.T) {
		words := wire.Signed{Statement: `{"kind":"message"}`, Device: "d0123456789abcdef", Sig: "c2ln"}
		b.apply(t, event(t, chat.EvMessagePosted, chat.MessagePosted{Room: "r", AuthorKind: chat.AuthorUser, Author: "u0", Text: "@u0/a mine",
			Mentions: chat.ParseMentions("@u0/a mine"), Route: true, Words: map[string]wire.Signed{"u0/a": words}}))
		o := comparePending(t, b, int64(b.seq))
		if o.Words == nil || *o.Words != words {
			t.Fatalf("the steer's words are %+v, want %+v", o.Words, words)
		}
	})
}

func comparePending(t *testing.T, b *benchStore, msg int64) Outbound {
	t.Helper()
	ctx := context.Background()
	mem, err := b.s.PendingSteersOf(ctx, msg)
	if err != nil {
		t.Fatal(err)
	}
	db, err := b.s.PendingSteersOf(ctx, msg) // taken once: now from the database
	if err != nil {
		t.Fatal(err)
	}
	if len(mem) != 1 || len(db) != 1 {
		t.Fatalf("%d steers from memory, %d from the database, want 1", len(mem), len(db))
	}
	target := mem[0].Target
	if target == nil || db[0].Target != nil {
		t.Fatalf("targets: memory %v, database %v", mem[0].Target, db[0].Target)
	}
	a, err := b.s.AgentByHandle(ctx, "u0/a")
	if err != nil {
		t.Fatal(err)
	}
	if target.AgentID != a.ID || target.Name != a.Name || target.Owner != a.Owner || target.Bridge != a.Bridge || target.HeadSeq != uint64(msg) {
		t.Fatalf("target %+v, agent %+v", target, a)
	}
	if seq, idx, hash, _ := b.s.TimelineHead(ctx, a.ID); seq != target.HeadSeq || idx != target.HeadIdx || hash != target.HeadHash {
		t.Fatalf("head %d/%d/%s, timeline's %d/%d/%s", target.HeadSeq, target.HeadIdx, target.HeadHash, seq, idx, hash)
	}
	mem[0].Target = nil
	mem[0].At, db[0].At = mem[0].At.UTC(), db[0].At.UTC()
	mem[0].SentAt, db[0].SentAt = mem[0].SentAt.UTC(), db[0].SentAt.UTC()
	if !reflect.DeepEqual(mem[0], db[0]) {
		t.Fatalf("from memory\n%+v\nfrom the database\n%+v", mem[0], db[0])
	}
	return db[0]
}

// The router asks the database for held mentions only when the projector
// says the message may hold one: never for a mention that was simply
// allowed, always for one the owner reads first.
func TestDecidedSteersSayWhetherAMentionIsHeld(t *testing.T) {
	b := newBenchStore(t, 2, true) // u1 is a member; u0/a takes members' mentions
	ctx := context.Background()
	never := func() bool { return false }
	changed := func() <-chan struct{} { return make(chan struct{}) }

	b.apply(t, messageEvent(t, "u1", "@u0/a allowed"))
	out, mayHold, err := b.s.DecidedSteers(ctx, int64(b.seq), never, changed)
	if err != nil || len(out) != 1 || mayHold {
		t.Fatalf("an allowed mention: %d steers, mayHold %v, %v", len(out), mayHold, err)
	}

	b.apply(t, event(t, chat.EvAgentPolicy, chat.AgentPolicy{Handle: "u0/a", Policy: wire.Policy{Address: wire.AddressModerate}, By: "u0"}))
	b.apply(t, messageEvent(t, "u1", "@u0/a held for the owner"))
	out, mayHold, err = b.s.DecidedSteers(ctx, int64(b.seq), never, changed)
	if err != nil || len(out) != 0 || !mayHold {
		t.Fatalf("a moderated mention: %d steers, mayHold %v, %v", len(out), mayHold, err)
	}
	held, err := b.s.HeldSteersOf(ctx, int64(b.seq))
	if err != nil || len(held) != 1 {
		t.Fatalf("held %v, %v", held, err)
	}
}
