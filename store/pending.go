package store

import (
	"context"
	"sync"
	"time"
)

// The router delivers a message's pending steers as soon as this node has
// applied the message. The projector has just written them, so it keeps
// them in memory for a moment and the router takes them from there rather
// than reading them back. A steer the router takes later (a redelivery
// after a node died, a restart) is read from the database.

const (
	recentTTL = 5 * time.Second // shorter than the router's ack wait: a redelivery reads the database
	recentMax = 4096            // other nodes route most messages; their entries age out
)

type recentSteers struct {
	mu    sync.Mutex
	byMsg map[int64]recentEntry
	order []int64 // oldest first
}

type recentEntry struct {
	at  time.Time
	out []Outbound
}

func (r *recentSteers) put(out []Outbound, now time.Time) {
	if len(out) == 0 {
		return
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
	for _, o := range out {
		e, ok := r.byMsg[o.MessageID]
		if !ok {
			r.order = append(r.order, o.MessageID)
		}
		e.at = now
		e.out = append(e.out, o)
		r.byMsg[o.MessageID] = e
	}
}

// take returns and forgets the pending steers of a message applied less
// than recentTTL ago.
func (r *recentSteers) take(messageID int64, now time.Time) ([]Outbound, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.byMsg[messageID]
	if !ok {
		return nil, false
	}
	delete(r.byMsg, messageID) // its key leaves order when it ages out
	if now.Sub(e.at) > recentTTL {
		return nil, false
	}
	return e.out, true
}

// pendingNotes collects the steers one event records as pending.
type pendingNotes struct{ out []Outbound }

type pendingNotesKey struct{}

func notePending(ctx context.Context, o Outbound) {
	if n, ok := ctx.Value(pendingNotesKey{}).(*pendingNotes); ok {
		n.out = append(n.out, o)
	}
}
