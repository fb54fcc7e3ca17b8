package web

import (
	"context"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/wheelhouse-dev/wheelhouse/chat"
	"github.com/wheelhouse-dev/wheelhouse/internal/netcork"
)

// A connection's outgoing queue is bounded in bytes (and items): a client
// that falls that far behind is closed with 1008 and resumes with since=.
// When it lags, the writer sends everything queued at once: the frames are
// written into the held-back connection (netcork) and leave in one system
// call, as centrifuge's writer batches them.

const (
	defaultQueueBytes = 1 << 20
	defaultQueueItems = 8192
	maxBatchBytes     = 256 << 10 // flushed at least this often within a burst
)

// outQueue is the items waiting for one connection's writer, and whether
// a writer is at work: at most one is, and none while the queue is empty.
type outQueue struct {
	mu       sync.Mutex
	items    []*chat.FeedItem
	bytes    int
	maxBytes int
	maxItems int
	writing  bool // the handler holds the writer's part until the backlog is sent
}

func newOutQueue(maxBytes, maxItems int) *outQueue {
	return &outQueue{maxBytes: maxBytes, maxItems: maxItems, writing: true}
}

// push queues it. ok is false when the queue is full (the client is too
// slow); start is true when no writer is at work and the caller is to
// start one.
func (q *outQueue) push(it *chat.FeedItem) (ok, start bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.bytes+len(it.Body) > q.maxBytes || len(q.items) >= q.maxItems {
		return false, false
	}
	q.items = append(q.items, it)
	q.bytes += len(it.Body)
	start = !q.writing
	q.writing = true
	return true, start
}

// take hands the writer everything queued, reusing spare's storage for the
// queue's next items. Nothing queued: the writer is done (false).
func (q *outQueue) take(spare []*chat.FeedItem) ([]*chat.FeedItem, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.items) == 0 {
		q.writing = false
		return spare[:0], false
	}
	out := q.items
	if cap(spare) > 256 {
		spare = nil // a burst's storage is not kept by an idle connection
	}
	q.items, q.bytes = spare[:0], 0
	return out, true
}

// live hands the queue to a writer once the backlog is sent, and starts
// pinging the client.
func (c *wsConn) live() {
	c.ping.Store(time.AfterFunc(wsPingEvery, c.pingOnce))
	go c.write() // what queued during the backlog, if anything
}

// write sends batches until the queue is empty. A failure ends the
// connection (its handler reads the cause); the queue then stays marked
// as being written, so no other writer starts.
func (c *wsConn) write() {
	var batch []*chat.FeedItem
	for {
		var ok bool
		if batch, ok = c.q.take(batch); !ok {
			return
		}
		if err := writeBatch(c.ctx, c.ws, c.cork, batch, &c.last, &c.lastIdx); err != nil {
			c.cancel(err)
			return
		}
		clear(batch) // the items may be large; do not keep them alive
	}
}

// pingOnce pings the client and, if it answers in time, schedules the next.
func (c *wsConn) pingOnce() {
	ctx, cancel := context.WithTimeout(c.ctx, wsPingTimeout)
	err := c.ws.Ping(ctx)
	cancel()
	if err != nil {
		c.cancel(err)
		return
	}
	if t := c.ping.Load(); t != nil && c.ctx.Err() == nil {
		t.Reset(wsPingEvery)
	}
}

func (c *wsConn) stopPinging() {
	if t := c.ping.Load(); t != nil {
		t.Stop()
	}
}

// writeBatch writes items after (last, lastIdx) under one deadline, held
// back and sent together when the connection allows it. An item of
// sequence 0 is no event but a reply to the client's request: it is
// always sent and does not move the position.
func writeBatch(ctx context.Context, ws *websocket.Conn, cork *netcork.Conn, items []*chat.FeedItem, last *uint64, lastIdx *int) error {
	wctx, cancel := context.WithTimeout(ctx, wsWriteTimeout)
	defer cancel()
	if cork != nil && len(items) > 1 {
		cork.Cork()
		defer cork.Flush(wsWriteTimeout) // on an error path; a no-op after the flush below
	}
	for _, it := range items {
		reply := it.Seq == 0
		if !reply && !it.After(*last, *lastIdx) {
			continue
		}
		if err := ws.Write(wctx, websocket.MessageText, it.Body); err != nil {
			return err
		}
		if !reply {
			*last, *lastIdx = it.Seq, it.Idx
		}
		if cork != nil && cork.Held() >= maxBatchBytes {
			if err := cork.Flush(wsWriteTimeout); err != nil {
				return err
			}
			cork.Cork()
		}
	}
	if cork != nil {
		return cork.Flush(wsWriteTimeout)
	}
	return nil
}
