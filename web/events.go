package web

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/coder/websocket"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/chat"
	"github.com/wheelhouse-dev/wheelhouse/room"
)

// WebSocket limits.
const (
	wsPingEvery    = 20 * time.Second
	wsPingTimeout  = 10 * time.Second
	wsWriteTimeout = 10 * time.Second
	wsReadLimit    = 4 << 10
	wsBacklogPage  = 500
)

// broker fans projected feed items out to connections by user. Items are
// serialized once (at apply time); each recipient's connection gets the same
// bytes in its bounded queue.
type broker struct {
	metrics *metrics
	mu      sync.RWMutex
	byUser  map[int64]map[*wsConn]struct{}
}

func newBroker(m *metrics) *broker {
	return &broker{metrics: m, byUser: map[int64]map[*wsConn]struct{}{}}
}

func (b *broker) add(c *wsConn) {
	b.mu.Lock()
	set := b.byUser[c.userID]
	if set == nil {
		set = map[*wsConn]struct{}{}
		b.byUser[c.userID] = set
	}
	set[c] = struct{}{}
	b.mu.Unlock()
}

func (b *broker) remove(c *wsConn) {
	b.mu.Lock()
	if set := b.byUser[c.userID]; set != nil {
		delete(set, c)
		if len(set) == 0 {
			delete(b.byUser, c.userID)
		}
	}
	b.mu.Unlock()
}

func (b *broker) publish(items []chat.FeedItem) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	for i := range items {
		it := &items[i]
		for _, uid := range it.Recipients {
			for c := range b.byUser[uid] {
				c.enqueue(it)
			}
		}
	}
}

// wsConn is one live client: a reader loop (control frames only) and one
// writer goroutine draining a bounded queue.
type wsConn struct {
	userID int64
	cred   string // hash of the credential the socket was opened with
	ws     *websocket.Conn
	q      chan *chat.FeedItem
	cancel context.CancelCauseFunc
	once   sync.Once
}

var errSlow = errors.New("slow consumer")

func (c *wsConn) enqueue(it *chat.FeedItem) {
	select {
	case c.q <- it:
	default:
		c.once.Do(func() { c.cancel(errSlow) })
	}
}

func (c *wsConn) goingAway() {
	c.ws.Close(websocket.StatusGoingAway, "hub shutting down")
}

// StatusSessionEnded closes a socket whose session or token ended: the
// client must log in again rather than reconnect.
const StatusSessionEnded websocket.StatusCode = 4001

// endedReason is the close reason for each way a credential ends.
func endedReason(reason string) string {
	switch reason {
	case chat.EndLogout:
		return "session ended: you logged out"
	case chat.EndDeactivated:
		return "session ended: your account was deactivated"
	case chat.EndPassword:
		return "session ended: your password was changed"
	}
	return "session ended: the session or token was revoked"
}

// end closes the socket because its credential ended.
func (c *wsConn) end(reason string) {
	c.ws.Close(StatusSessionEnded, endedReason(reason))
}

// endSockets closes this node's sockets opened with a credential that a
// change ended (the close handshake runs off the projector's goroutine).
func (s *Server) endSockets(a *chat.AccessChange) {
	ended := make(map[string]bool, len(a.Ended))
	for _, h := range a.Ended {
		ended[h] = true
	}
	s.mu.Lock()
	var hit []*wsConn
	for c := range s.conns {
		if ended[c.cred] {
			hit = append(hit, c)
		}
	}
	s.mu.Unlock()
	for _, c := range hit {
		s.metrics.wsEnded.Inc()
		go c.end(a.Reason)
	}
}

func (s *Server) events(w http.ResponseWriter, r *http.Request, u *chat.User) error {
	since, err := queryInt(r, "since")
	if err != nil {
		return err
	}
	// n: the place of the last item processed within event since (one
	// event may reach a client as several items); absent: all of it.
	sinceIdx := int64(1 << 30)
	if r.URL.Query().Has("n") {
		if sinceIdx, err = queryInt(r, "n"); err != nil {
			return err
		}
	}
	if r.Header.Get("Upgrade") == "" {
		return wh.Errorf(wh.EInvalid, "this endpoint speaks WebSocket: connect with a WebSocket client")
	}
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{OriginPatterns: s.cfg.OriginPatterns})
	if err != nil {
		return nil // Accept wrote the response (403 for a foreign origin)
	}
	ws.SetReadLimit(wsReadLimit)
	ctx, cancel := context.WithCancelCause(context.Background())
	secret, _ := secretFrom(r)
	c := &wsConn{userID: u.ID, cred: room.HashSecret(secret), ws: ws, q: make(chan *chat.FeedItem, s.cfg.QueueSize), cancel: cancel}

	s.mu.Lock()
	s.conns[c] = struct{}{}
	s.mu.Unlock()
	s.broker.add(c)
	s.metrics.wsClients.Inc()
	defer func() {
		s.broker.remove(c)
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		s.metrics.wsClients.Dec()
		cancel(nil)
	}()
	// Registered first, checked again second: a credential that ended
	// between the upgrade and the registration is caught here, one that
	// ends later by endSockets.
	if _, err := s.rooms.Authenticate(ctx, secret); wh.ErrorCode(err) == wh.EUnauthenticated {
		ws.Close(StatusSessionEnded, endedReason(chat.EndRevoked))
		return nil
	}

	go func() { // reader: answers pings, notices close
		for {
			if _, _, err := ws.Read(ctx); err != nil {
				cancel(err)
				return
			}
		}
	}()

	err = s.writeLoop(ctx, c, uint64(since), int(min(sinceIdx, 1<<30)))
	if errors.Is(context.Cause(ctx), errSlow) || errors.Is(err, context.DeadlineExceeded) {
		s.metrics.wsSlow.Inc()
		s.log.Warn("disconnected a slow WebSocket client", "user", u.Name)
		ws.Close(websocket.StatusPolicyViolation, "too slow: reconnect with since=<last id>")
		return nil
	}
	if err != nil && ctx.Err() == nil {
		s.log.Debug("websocket ended", "user", u.Name, "err", err)
	}
	ws.Close(websocket.StatusNormalClosure, "")
	return nil
}

func (s *Server) writeLoop(ctx context.Context, c *wsConn, since uint64, sinceIdx int) error {
	write := func(b []byte) error {
		wctx, cancel := context.WithTimeout(ctx, wsWriteTimeout)
		defer cancel()
		return c.ws.Write(wctx, websocket.MessageText, b)
	}
	// Backlog first (the connection is already registered, so nothing
	// applied from now on is missed), then live items, skipping any seq
	// already sent.
	last, lastIdx := since, sinceIdx
	for {
		items, err := s.rooms.FeedSince(ctx, c.userID, last, lastIdx, wsBacklogPage)
		if err != nil {
			return err
		}
		for _, it := range items {
			if err := write(it.Body); err != nil {
				return err
			}
			last, lastIdx = it.Seq, it.Idx
		}
		if len(items) < wsBacklogPage {
			break
		}
	}
	// The client resumes after this position: every item of event id is
	// sent (live items of it follow only if they were not in the backlog).
	if err := write([]byte(`{"type":"ready","id":` + strconv.FormatUint(last, 10) + `,"n":` + strconv.Itoa(lastIdx) + `}`)); err != nil {
		return err
	}
	ping := time.NewTicker(wsPingEvery)
	defer ping.Stop()
	for {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case it := <-c.q:
			// Write what is queued under one deadline (one timer per burst,
			// not per frame: a room's burst reaches many connections).
			wctx, cancel := context.WithTimeout(ctx, wsWriteTimeout)
			for n := 0; ; n++ {
				if it.After(last, lastIdx) {
					if err := c.ws.Write(wctx, websocket.MessageText, it.Body); err != nil {
						cancel()
						return err
					}
					last, lastIdx = it.Seq, it.Idx
				}
				if n == 63 {
					break
				}
				select {
				case it = <-c.q:
					continue
				default:
				}
				break
			}
			cancel()
		case <-ping.C:
			pctx, cancel := context.WithTimeout(ctx, wsPingTimeout)
			err := c.ws.Ping(pctx)
			cancel()
			if err != nil {
				return err
			}
		}
	}
}
