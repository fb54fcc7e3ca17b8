package web

import (
	"context"
	"errors"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/chat"
	"github.com/wheelhouse-dev/wheelhouse/internal/netcork"
	"github.com/wheelhouse-dev/wheelhouse/room"
)

// WebSocket limits.
const (
	wsPingEvery    = 20 * time.Second
	wsPingTimeout  = 10 * time.Second
	wsWriteTimeout = 10 * time.Second
	// wsReadLimit bounds a frame from the client: a request (a post's
	// body, the most the HTTP API takes, and its routing).
	wsReadLimit   = MaxBodyBytes + 1<<10
	wsBacklogPage = 500
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

// wsConn is one live client. Its handler's goroutine sends the backlog,
// then reads (requests, control frames, the close) until the connection
// ends; a
// writer goroutine runs while its bounded queue has items (wswriter.go).
// An idle socket costs one goroutine.
type wsConn struct {
	userID int64
	cred   string // hash of the credential the socket was opened with
	ws     *websocket.Conn
	cork   *netcork.Conn // nil when the server was not set up to batch writes
	q      *outQueue
	ctx    context.Context
	cancel context.CancelCauseFunc
	once   sync.Once
	ping   atomic.Pointer[time.Timer]
	// inflight counts the requests this socket has under way.
	inflight atomic.Int32
	// writable: the upgrade passed the checks an HTTP change must pass, so
	// the socket's requests may change things (Server.mayChange).
	writable bool
	// The position sent, owned by whoever writes: the handler during the
	// backlog, then one writer at a time.
	last    uint64
	lastIdx int
	// release gives back the socket's place under its person's limit.
	release func()
}

var errSlow = errors.New("slow consumer")

func (c *wsConn) enqueue(it *chat.FeedItem) {
	ok, start := c.q.push(it)
	if !ok {
		c.once.Do(func() { c.cancel(errSlow) })
		return
	}
	if start {
		go c.write()
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
	release, err := s.rooms.OpenSocket(r.Context(), u.Name) // a person's sockets are bounded
	if err != nil {
		return err
	}
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{OriginPatterns: s.cfg.OriginPatterns})
	if err != nil {
		release()
		return nil // Accept wrote the response (403 for a foreign origin)
	}
	ws.SetReadLimit(wsReadLimit)
	ctx, cancel := context.WithCancelCause(context.Background())
	secret, _ := secretFrom(r)
	c := &wsConn{userID: u.ID, cred: room.HashSecret(secret), ws: ws, cork: netcork.From(r.Context()), q: newOutQueue(s.cfg.QueueBytes, s.cfg.QueueSize),
		ctx: ctx, cancel: cancel, last: uint64(since), lastIdx: int(min(sinceIdx, 1<<30)), writable: s.mayChange(r)}
	c.release = release

	s.mu.Lock()
	s.conns[c] = struct{}{}
	closing := s.closing
	s.mu.Unlock()
	s.broker.add(c)
	s.metrics.wsClients.Inc()
	reading := false // the reader owns the end of the connection
	defer func() {
		if !reading {
			s.endSocket(c, u.Name, err)
		}
	}()
	if closing { // registered after Close took its list of sockets
		c.goingAway()
		return nil
	}
	// Registered first, checked again second: a credential that ended
	// between the upgrade and the registration is caught here, one that
	// ends later by endSockets.
	if _, err := s.rooms.Authenticate(ctx, secret); wh.ErrorCode(err) == wh.EUnauthenticated {
		ws.Close(StatusSessionEnded, endedReason(chat.EndRevoked))
		return nil
	}

	// The backlog and the ready frame from here, while live items queue;
	// then a writer takes the queue, and a reader of its own (this
	// goroutine's stack and the request are let go) reads until the
	// connection ends: the client's requests (wsrequest.go), the answers
	// to pings, the close.
	if err = s.sendBacklog(ctx, c); err != nil {
		return nil
	}
	c.live()
	reading = true
	go func() {
		for {
			typ, frame, err := ws.Read(ctx)
			if err != nil {
				s.endSocket(c, u.Name, err)
				return
			}
			s.request(c, typ, frame)
		}
	}()
	return nil
}

// endSocket unregisters a connection and closes it: with 1008 when it was
// too slow (its queue overflowed or a write timed out), else normally.
func (s *Server) endSocket(c *wsConn, user string, err error) {
	s.broker.remove(c)
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.metrics.wsClients.Dec()
	c.release()
	c.stopPinging()
	c.cancel(err)
	if cause := context.Cause(c.ctx); errors.Is(cause, errSlow) || errors.Is(cause, context.DeadlineExceeded) || errors.Is(cause, os.ErrDeadlineExceeded) {
		s.metrics.wsSlow.Inc()
		s.log.Warn("disconnected a slow WebSocket client", "user", user)
		c.ws.Close(websocket.StatusPolicyViolation, "too slow: reconnect with since=<last id>")
		return
	}
	if websocket.CloseStatus(err) == -1 {
		s.log.Debug("websocket ended", "user", user, "err", err)
	}
	c.ws.Close(websocket.StatusNormalClosure, "")
}

// sendBacklog sends what the client missed since its position, then the
// ready frame.
func (s *Server) sendBacklog(ctx context.Context, c *wsConn) error {
	write := func(b []byte) error {
		wctx, cancel := context.WithTimeout(ctx, wsWriteTimeout)
		defer cancel()
		return c.ws.Write(wctx, websocket.MessageText, b)
	}
	// The connection is already registered, so nothing applied from now
	// on is missed; the writer skips live items already sent here.
	last, lastIdx := c.last, c.lastIdx
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
	c.last, c.lastIdx = last, lastIdx
	// requests: how many requests the socket takes at once (wsrequest.go).
	return write([]byte(`{"type":"ready","id":` + strconv.FormatUint(last, 10) + `,"n":` + strconv.Itoa(lastIdx) + `,"requests":` + strconv.Itoa(wsMaxInflight) + `}`))
}
