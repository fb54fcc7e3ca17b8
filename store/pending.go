package store

import (
	"context"
	"runtime"
	"sync"
	"time"
)

// The router delivers a message's pending steers as soon as this node's
// projector has decided them: the projector hands them over in memory when
// it has applied the message, before its transaction commits (the commit
// is most of applying a mention, and nothing the router does needs it:
// if the commit fails, applying the message again decides the same steers,
// and a bridge answers a steer id once). A steer the router takes later
// (a redelivery after a node died, a restart) is read from the database.

const (
	recentTTL = 5 * time.Second // shorter than the router's ack wait: a redelivery reads the database
	recentMax = 4096            // other nodes route most messages; their entries age out
)

type recentSteers struct {
	mu      sync.Mutex
	byMsg   map[int64]recentEntry
	order   []int64       // oldest first
	changed chan struct{} // closed and replaced on every put
}

type recentEntry struct {
	at   time.Time
	out  []Outbound
	held bool // the message also holds mentions for their owners
}

// put keeps message id's pending steers (and whether it holds mentions)
// and reports whether it woke a router waiting for them.
func (r *recentSteers) put(id int64, out []Outbound, held bool, now time.Time) (woke bool) {
	if len(out) == 0 && !held {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byMsg == nil {
		r.byMsg = map[int64]recentEntry{}
	}
	for len(r.order) > 0 && (len(r.order) >= recentMax || now.Sub(r.byMsg[r.order[0]].at) > recentTTL) {
		delete(r.byMsg, r.order[0])
		r.order = r.order[1:]
	}
	// A second put of the same message (the event applied again) replaces
	// the first.
	if _, ok := r.byMsg[id]; !ok {
		r.order = append(r.order, id)
	}
	r.byMsg[id] = recentEntry{at: now, out: out, held: held}
	if r.changed != nil {
		close(r.changed)
		r.changed = nil
		woke = true
	}
	return woke
}

// forget drops a message's entry (its event was refused after all).
func (r *recentSteers) forget(id int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.byMsg, id) // its key leaves order when it ages out
}

// changes returns a channel closed on the next put.
func (r *recentSteers) changes() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.changed == nil {
		r.changed = make(chan struct{})
	}
	return r.changed
}

// take returns and forgets the entry of a message applied less than
// recentTTL ago.
func (r *recentSteers) take(messageID int64, now time.Time) (recentEntry, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.byMsg[messageID]
	if !ok {
		return recentEntry{}, false
	}
	delete(r.byMsg, messageID) // its key leaves order when it ages out
	if now.Sub(e.at) > recentTTL {
		return recentEntry{}, false
	}
	return e, true
}

// DecidedSteers returns a message's pending steers as soon as this node's
// projector has decided them, without waiting for its commit; applied
// reports whether the projection has committed the message, and changed
// returns a channel closed when that may have changed. A message applied
// with no steers in memory (none pending, or taken already) is read from
// the database. mayHold is false when the message is known to hold no
// mentions for their owners (HeldSteersOf need not be asked).
func (s *Store) DecidedSteers(ctx context.Context, messageID int64, applied func() bool, changed func() <-chan struct{}) (out []Outbound, mayHold bool, err error) {
	for {
		puts, commits := s.recent.changes(), changed()
		if e, ok := s.recent.take(messageID, time.Now()); ok {
			return e.out, e.held, nil
		}
		if applied() {
			out, err := s.PendingSteersOf(ctx, messageID)
			return out, true, err
		}
		select {
		case <-puts:
		case <-commits:
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
	}
}

// pendingNotes collects the steers one event records as pending, and
// whether it held any for their owners. publish hands them to the router.
type pendingNotes struct {
	seq       int64
	recent    *recentSteers
	out       []Outbound
	held      bool
	published bool
}

// publish hands the notes to the router (once). It may deliver them now:
// the decision is made, and applying the event again (after a failed
// commit, or in the run with savepoints) makes the same one (the bridge
// answers a steer id once).
func (n *pendingNotes) publish() {
	if n.published {
		return
	}
	n.published = true
	if n.recent.put(n.seq, n.out, n.held, time.Now()) {
		// Let the router run now: woken from here, it would otherwise wait
		// for this processor until the commit.
		runtime.Gosched()
	}
}

// decidedTx hands the steers this event has decided to the router before
// the event is fully applied: the applier calls it once what it writes
// after (feed rows) can neither change them nor refuse the event.
func decidedTx(ctx context.Context) {
	if n, ok := ctx.Value(pendingNotesKey{}).(*pendingNotes); ok {
		n.publish()
	}
}

type pendingNotesKey struct{}

func notePending(ctx context.Context, o Outbound) {
	if n, ok := ctx.Value(pendingNotesKey{}).(*pendingNotes); ok {
		n.out = append(n.out, o)
	}
}

// noteHeldMention notes that an event held a mention for its owner.
func noteHeldMention(ctx context.Context) {
	if n, ok := ctx.Value(pendingNotesKey{}).(*pendingNotes); ok {
		n.held = true
	}
}
