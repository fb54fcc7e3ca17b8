package bridge

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// The outbox holds what the hub must record of what this bridge's agents
// did — turn events, their output, receipts — until the hub acknowledges
// it: each is sent as a request, in order, and sent again (with backoff,
// however long the hub is away) until the hub answers that it recorded it
// or refuses it. The hub records an event once by its id, so a retry of
// something it already has changes nothing.
//
// It is kept in a file of its own beside the agents' journals (one JSON
// line per entry added or done, compacted as it goes), so what a hub
// outage held back is sent after the bridge restarts too. It is bounded:
// past OutboxMax entries the oldest progress notes and partial output go
// first, then the oldest entries, each said in the log.

// OutboxMax bounds the entries an outbox keeps.
const OutboxMax = 10_000

// outboxTimeout is how long one send waits for the hub's answer: more
// than the hub takes to record an event (handleTimeout).
const outboxTimeout = 15 * time.Second

// OutboxPath is where a bridge keeps its outbox under the journal folder.
func OutboxPath(journalDir, bridgeID string) string {
	return filepath.Join(journalDir, ".outbox", bridgeID+".jsonl")
}

// outEntry is one message on its way to the hub.
type outEntry struct {
	ID      string          `json:"id"`
	Kind    string          `json:"kind"` // wire.KindTurn or wire.KindReceipt
	Turn    *wire.TurnEvent `json:"turn,omitempty"`
	Receipt *wire.Receipt   `json:"receipt,omitempty"`
}

// key names a streamed message's item: a later version replaces an
// earlier one not yet sent.
func (e *outEntry) key() string {
	if e.Turn == nil || e.Turn.Kind != wire.TurnMessage || e.Turn.ItemID == "" {
		return ""
	}
	return e.Turn.Agent + "\x00" + e.Turn.TurnID + "\x00" + e.Turn.ItemID
}

// droppable reports whether the entry may go first when the outbox is
// full: a progress note, or a partial version of a message.
func (e *outEntry) droppable() bool {
	return e.Turn != nil && (e.Turn.Kind == wire.TurnProgress || e.Turn.Partial)
}

// outLine is one line of the outbox file.
type outLine struct {
	Add  *outEntry `json:"add,omitempty"`
	Done string    `json:"done,omitempty"`
}

type outbox struct {
	path string // "" keeps it in memory only
	log  *slog.Logger
	now  func() time.Time
	max  int

	mu       sync.Mutex
	entries  []*outEntry // in order; entries[0] is in flight while sending
	inflight bool
	f        *os.File
	lines    int // lines in the file
	dropped  int // entries dropped because the outbox was full
	wake     chan struct{}
	removed  chan struct{} // closed (and replaced) whenever an entry leaves
}

// openOutbox loads the outbox at path (creating it), or an in-memory one
// for "".
func openOutbox(path string, log *slog.Logger, now func() time.Time) (*outbox, error) {
	o := &outbox{path: path, log: log, now: now, max: OutboxMax, wake: make(chan struct{}, 1), removed: make(chan struct{})}
	if path == "" {
		return o, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, wh.Wrap(err, "create the outbox folder")
	}
	if f, err := os.Open(path); err == nil {
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			var l outLine
			if json.Unmarshal(sc.Bytes(), &l) != nil {
				continue // a line cut by a crash: the entries before it stand
			}
			switch {
			case l.Add != nil:
				o.insert(l.Add)
			case l.Done != "":
				o.remove(l.Done)
			}
		}
		f.Close()
	}
	if err := o.rewrite(); err != nil {
		return nil, err
	}
	if n := len(o.entries); n > 0 {
		log.Info("the outbox holds messages for the hub from before; sending them", "entries", n)
	}
	return o, nil
}

// insert adds e at the end, or in place of an unsent earlier version of
// the same streamed message. Callers hold mu.
func (o *outbox) insert(e *outEntry) (replaced string) {
	if k := e.key(); k != "" {
		for i := len(o.entries) - 1; i >= 0; i-- {
			old := o.entries[i]
			if i == 0 && o.inflight {
				break // on its way: the new version follows it
			}
			if old.key() == k && old.Turn.Partial {
				o.entries[i] = e
				return old.ID
			}
		}
	}
	o.entries = append(o.entries, e)
	return ""
}

// remove drops the entry with id. Callers hold mu.
func (o *outbox) remove(id string) bool {
	for i, e := range o.entries {
		if e.ID == id {
			o.entries = append(o.entries[:i], o.entries[i+1:]...)
			close(o.removed)
			o.removed = make(chan struct{})
			return true
		}
	}
	return false
}

// drained waits until every entry queued before the call has left the
// outbox (the hub recorded it), or ctx ends: what the bridge then sends
// outside the outbox (an approval request) reaches the hub after the turn
// events that led to it.
func (o *outbox) drained(ctx context.Context) {
	o.mu.Lock()
	waiting := map[string]bool{}
	for _, e := range o.entries {
		waiting[e.ID] = true
	}
	for {
		left := false
		for _, e := range o.entries {
			if waiting[e.ID] {
				left = true
				break
			}
		}
		if !left {
			o.mu.Unlock()
			return
		}
		ch := o.removed
		o.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
		o.mu.Lock()
	}
}

// add queues a turn event or receipt for the hub.
func (o *outbox) add(kind string, v any) {
	e := &outEntry{ID: newEventID(), Kind: kind}
	switch x := v.(type) {
	case wire.TurnEvent:
		x.EventID = e.ID
		e.Turn = &x
	case wire.Receipt:
		e.Receipt = &x
	default:
		panic(fmt.Sprintf("outbox: %T is not a turn event or receipt", v)) // a programming error
	}
	o.mu.Lock()
	replaced := o.insert(e)
	o.write(outLine{Add: e}) // replayed, it replaces the earlier version in place too
	if replaced != "" {
		o.write(outLine{Done: replaced})
	}
	o.bound()
	o.mu.Unlock()
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// bound drops entries past max: the oldest droppable ones, else the
// oldest. Callers hold mu.
func (o *outbox) bound() {
	for len(o.entries) > o.max {
		i := -1
		for j, e := range o.entries {
			if (j > 0 || !o.inflight) && e.droppable() {
				i = j
				break
			}
		}
		if i < 0 {
			i = 0
			if o.inflight {
				i = 1
			}
		}
		e := o.entries[i]
		o.entries = append(o.entries[:i], o.entries[i+1:]...)
		o.write(outLine{Done: e.ID})
		o.dropped++
		o.log.Error("the outbox is full: dropped a message the hub has not recorded", "kind", e.Kind, "entries", len(o.entries), "dropped", o.dropped)
	}
}

// write appends a line to the file, the change it records already made
// to entries (so a rewrite, which compacts the file once it has grown well
// past what it holds, stands for it too). Callers hold mu.
func (o *outbox) write(l outLine) {
	if o.path == "" {
		return
	}
	if o.f == nil { // a failed write before: start the file afresh
		if err := o.rewrite(); err != nil {
			o.log.Warn("writing the outbox failed", "err", err)
		}
		return
	}
	b, _ := json.Marshal(l)
	if _, err := o.f.Write(append(b, '\n')); err != nil {
		o.log.Warn("writing the outbox failed", "err", err)
		o.f.Close()
		o.f = nil
		return
	}
	o.lines++
	if o.lines > 2*len(o.entries)+1000 {
		if err := o.rewrite(); err != nil {
			o.log.Warn("compacting the outbox failed", "err", err)
		}
	}
}

// rewrite replaces the file with the pending entries. Callers hold mu (or
// are opening it).
func (o *outbox) rewrite() error {
	tmp := o.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return wh.Wrap(err, "write the outbox")
	}
	w := bufio.NewWriter(f)
	for _, e := range o.entries {
		b, _ := json.Marshal(outLine{Add: e})
		w.Write(append(b, '\n'))
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return wh.Wrap(err, "write the outbox")
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return wh.Wrap(err, "write the outbox")
	}
	f.Close()
	if err := os.Rename(tmp, o.path); err != nil {
		return wh.Wrap(err, "write the outbox")
	}
	if o.f != nil {
		o.f.Close()
	}
	o.f, err = os.OpenFile(o.path, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		o.f = nil
		return wh.Wrap(err, "open the outbox")
	}
	o.lines = len(o.entries)
	return nil
}

// ending lists agent's turns whose end is still in the outbox.
func (o *outbox) ending(agent string) []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []string
	for _, e := range o.entries {
		if e.Turn != nil && e.Turn.Agent == agent && e.Turn.Kind == wire.TurnEnded {
			out = append(out, e.Turn.TurnID)
		}
	}
	return out
}

// pending is how many entries wait for the hub.
func (o *outbox) pending() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.entries)
}

// run sends the entries in order until stop is closed.
func (o *outbox) run(nc *nats.Conn, bridgeID string, stop <-chan struct{}) {
	attempt := 0
	for {
		o.mu.Lock()
		if len(o.entries) == 0 {
			o.mu.Unlock()
			select {
			case <-o.wake:
				continue
			case <-stop:
				return
			}
		}
		e := o.entries[0]
		o.inflight = true
		o.mu.Unlock()

		var err error
		if nc.IsConnected() {
			err = o.send(nc, bridgeID, e)
		} else {
			// Not sent: a request made while reconnecting would wait its
			// whole timeout; the reconnect wakes the sender (poke).
			err = wh.Errorf(wh.EUnavailable, "not connected to the hub")
		}

		o.mu.Lock()
		o.inflight = false
		if err == nil || !retryable(err) {
			if err != nil {
				o.log.Warn("the hub refused a message from the outbox; dropped", "kind", e.Kind, "err", err)
			}
			if o.remove(e.ID) {
				o.write(outLine{Done: e.ID})
			}
			o.mu.Unlock()
			attempt = 0
			continue
		}
		o.mu.Unlock()
		attempt++
		if attempt == 1 || attempt%10 == 0 {
			o.log.Warn("the hub did not record a message; retrying", "kind", e.Kind, "attempt", attempt, "pending", o.pending(), "err", err)
		}
		select {
		case <-time.After(reconnectDelay(attempt)):
		case <-o.wake: // reconnected, or something new: try again now
		case <-stop:
			return
		}
	}
}

// poke makes the sender try again now (the connection is back).
func (o *outbox) poke() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// send asks the hub to record e, stamped with the time it is sent (the
// hub judges freshness on it; the event's id, not its time, makes a retry
// a retry).
func (o *outbox) send(nc *nats.Conn, bridgeID string, e *outEntry) error {
	var v any
	switch {
	case e.Turn != nil:
		t := *e.Turn
		t.At = o.now().UTC()
		v = t
	case e.Receipt != nil:
		r := *e.Receipt
		r.At = o.now().UTC()
		v = r
	default:
		return wh.Errorf(wh.EInvalid, "an empty outbox entry")
	}
	data, _ := json.Marshal(v)
	ctx, cancel := context.WithTimeout(context.Background(), outboxTimeout)
	defer cancel()
	go func() { // a connection lost meanwhile ends the wait: no answer can come on it
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if !nc.IsConnected() {
					cancel()
					return
				}
			}
		}
	}()
	m, err := nc.RequestWithContext(ctx, wire.FromBridge(bridgeID, e.Kind), data)
	if err != nil {
		return wh.Errorf(wh.EUnavailable, "the hub did not answer: %v", err)
	}
	var ack wire.Ack
	if err := json.Unmarshal(m.Data, &ack); err != nil {
		return wh.Errorf(wh.EUnavailable, "the hub answered with something unreadable")
	}
	if ack.OK {
		return nil
	}
	code := ack.Code
	if code == "" {
		code = wh.EInvalid
	}
	return wh.Errorf(code, "%s", ack.Message)
}

// retryable reports whether a failed send is worth sending again: the hub
// could not record it now, as opposed to refusing it.
func retryable(err error) bool {
	switch wh.ErrorCode(err) {
	case wh.EUnavailable, wh.EStorageFull, wh.EInternal, wh.ERateLimited:
		return true
	}
	return errors.Is(err, context.DeadlineExceeded)
}

// close closes the file; the pending entries stay in it for the next run.
func (o *outbox) close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.f != nil {
		o.f.Close()
		o.f = nil
	}
}

// newEventID is a fresh id for a bridge event.
func newEventID() string {
	b := make([]byte, 12)
	rand.Read(b)
	return hex.EncodeToString(b)
}
