package testhub

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// Event is one live event frame, or the reply to a request sent on the
// socket (Type "reply", with Req, Status and Data or Error).
type Event struct {
	ID     uint64          `json:"id"`
	Type   string          `json:"type"`
	Room   string          `json:"room"`
	Data   json.RawMessage `json:"data"`
	Req    string          `json:"req"`
	Status int             `json:"status"`
	Error  *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Reason  string `json:"reason"`
		// RetryAfter (seconds) is on rate_limited replies.
		RetryAfter int `json:"retryAfter"`
	} `json:"error"`
}

// Stream is a live-events WebSocket that records what it receives.
type Stream struct {
	t      testing.TB
	ws     *websocket.Conn
	cancel context.CancelFunc
	mu     sync.Mutex
	events []Event
	ready  bool
	closed error
	done   chan struct{}
}

// Events connects to /api/v1/events?since=N with the client's credentials.
// If slow is true, the stream does not read (to test slow-client handling).
func (c *Client) Events(since uint64, slow bool) *Stream {
	c.t.Helper()
	u := strings.Replace(c.Base, "http", "ws", 1) + "/api/v1/events?since=" + strconv.FormatUint(since, 10)
	h := http.Header{}
	if c.Token != "" {
		h.Set("Authorization", "Bearer "+c.Token)
	}
	ctx, cancel := context.WithCancel(context.Background())
	hc := c.HTTP
	if slow {
		// A tiny receive buffer makes the server's writes block quickly.
		tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if tc, ok := conn.(*net.TCPConn); ok {
				tc.SetReadBuffer(4096)
			}
			return conn, err
		}}
		hc = &http.Client{Jar: c.HTTP.Jar, Transport: tr}
	}
	ws, _, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPClient: hc, HTTPHeader: h})
	if err != nil {
		cancel()
		c.t.Fatalf("dial events: %v", err)
	}
	ws.SetReadLimit(1 << 20)
	s := &Stream{t: c.t, ws: ws, cancel: cancel, done: make(chan struct{})}
	c.t.Cleanup(s.Close)
	if slow {
		close(s.done)
		return s
	}
	go func() {
		defer close(s.done)
		for {
			_, b, err := ws.Read(ctx)
			if err != nil {
				s.mu.Lock()
				s.closed = err
				s.mu.Unlock()
				return
			}
			var e Event
			json.Unmarshal(b, &e)
			s.mu.Lock()
			if e.Type == "ready" {
				s.ready = true
			} else {
				s.events = append(s.events, e)
			}
			s.mu.Unlock()
		}
	}()
	return s
}

// Close closes the connection.
func (s *Stream) Close() {
	s.ws.Close(websocket.StatusNormalClosure, "")
	s.cancel()
	<-s.done
}

// Ready waits for the backlog to be delivered.
func (s *Stream) Ready() {
	s.t.Helper()
	WaitFor(s.t, 10*time.Second, "ready", func() bool { s.mu.Lock(); defer s.mu.Unlock(); return s.ready })
}

// Events returns what has arrived so far.
func (s *Stream) Events() []Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Event(nil), s.events...)
}

// Closed returns the read error once the server closed the stream.
func (s *Stream) Closed() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// WaitType waits until n events of type typ have arrived and returns them.
func (s *Stream) WaitType(typ string, n int, d time.Duration) []Event {
	s.t.Helper()
	var got []Event
	WaitFor(s.t, d, strconv.Itoa(n)+" "+typ+" events", func() bool {
		got = got[:0]
		for _, e := range s.Events() {
			if e.Type == typ {
				got = append(got, e)
			}
		}
		return len(got) >= n
	})
	return got
}

// Send writes one frame on the socket: v as JSON text, or a []byte as it is.
func (s *Stream) Send(v any) {
	s.t.Helper()
	b, ok := v.([]byte)
	if !ok {
		var err error
		if b, err = json.Marshal(v); err != nil {
			s.t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.ws.Write(ctx, websocket.MessageText, b); err != nil {
		s.t.Fatalf("send on the events socket: %v", err)
	}
}

// Reply waits for the reply to the request req.
func (s *Stream) Reply(req string) Event {
	s.t.Helper()
	var got Event
	WaitFor(s.t, 20*time.Second, "the reply to "+req, func() bool {
		for _, e := range s.Events() {
			if e.Type == "reply" && e.Req == req {
				got = e
				return true
			}
		}
		return false
	})
	return got
}

// Request sends v and waits for the reply to its "req".
func (s *Stream) Request(v map[string]any) Event {
	s.t.Helper()
	s.Send(v)
	req, _ := v["req"].(string)
	return s.Reply(req)
}

// Raw returns the underlying connection (for slow-client tests).
func (s *Stream) Raw() *websocket.Conn { return s.ws }
