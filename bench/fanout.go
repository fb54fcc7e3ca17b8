package bench

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// subscriber records when each marked message arrives.
type subscriber struct {
	mu   sync.Mutex
	got  map[int]time.Time
	want int
	done chan struct{}
	once sync.Once
}

func (s *subscriber) read(ctx context.Context, ws *websocket.Conn) {
	for {
		_, b, err := ws.Read(ctx)
		if err != nil {
			return
		}
		i := bytes.Index(b, []byte("mark-"))
		if i < 0 {
			continue
		}
		j := i + 5
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		k, _ := strconv.Atoi(string(b[i+5 : j]))
		now := time.Now()
		s.mu.Lock()
		if _, dup := s.got[k]; !dup {
			s.got[k] = now
		}
		n := len(s.got)
		s.mu.Unlock()
		if n >= s.want {
			s.once.Do(func() { close(s.done) })
		}
	}
}

func dialAll(ctx context.Context, url string, h http.Header, n, want int) ([]*subscriber, []*websocket.Conn, error) {
	subs := make([]*subscriber, n)
	conns := make([]*websocket.Conn, n)
	for i := range n {
		ws, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: h})
		if err != nil {
			for _, c := range conns[:i] {
				c.CloseNow()
			}
			return nil, nil, fmt.Errorf("dial subscriber %d: %w", i, err)
		}
		ws.SetReadLimit(1 << 20)
		subs[i] = &subscriber{got: map[int]time.Time{}, want: want, done: make(chan struct{})}
		conns[i] = ws
		go subs[i].read(ctx, ws)
	}
	return subs, conns, nil
}

func collect(subs []*subscriber, sent map[int]time.Time, timeout time.Duration) (Dist, error) {
	deadline := time.After(timeout)
	for i, s := range subs {
		select {
		case <-s.done:
		case <-deadline:
			s.mu.Lock()
			n := len(s.got)
			s.mu.Unlock()
			return Dist{}, fmt.Errorf("subscriber %d got %d of %d messages", i, n, s.want)
		}
	}
	var ds []time.Duration
	for _, s := range subs {
		s.mu.Lock()
		for k, at := range s.got {
			ds = append(ds, at.Sub(sent[k]))
		}
		s.mu.Unlock()
	}
	return dist(ds), nil
}

// FanoutLatency measures post → WebSocket receive through the hub: m
// messages posted one after another, each received by every one of n
// subscribers (live events over /api/v1/events).
func FanoutLatency(ctx context.Context, n, m int) (Dist, error) {
	e, err := newEnv(ctx)
	if err != nil {
		return Dist{}, err
	}
	defer e.close()
	h := http.Header{"Authorization": {"Bearer " + e.token}}
	since := e.h.Rooms().Log.Applied()
	wsURL := strings.Replace(e.url(fmt.Sprintf("/api/v1/events?since=%d", since)), "http", "ws", 1)
	subs, conns, err := dialAll(ctx, wsURL, h, n, m)
	if err != nil {
		return Dist{}, err
	}
	defer func() {
		for _, c := range conns {
			c.CloseNow()
		}
	}()
	time.Sleep(100 * time.Millisecond) // let every stream pass its (empty) backlog
	client := &http.Client{}
	sent := map[int]time.Time{}
	for k := 0; k < m; k++ {
		sent[k] = time.Now()
		if err := e.post(ctx, client, fmt.Sprintf("mark-%d", k)); err != nil {
			return Dist{}, err
		}
		pace(n)
	}
	return collect(subs, sent, time.Minute)
}

// pace spaces posts so one round of fan-out mostly finishes before the next
// (we measure latency, not queueing under overload).
func pace(n int) {
	if n >= 100 {
		time.Sleep(time.Duration(n) * 20 * time.Microsecond)
	}
}

// RawFanoutLatency is the baseline: a bare coder/websocket server with one
// writer goroutine and bounded queue per connection broadcasting the same
// frame to n clients; latency is broadcast → receive.
func RawFanoutLatency(ctx context.Context, n, m int) (Dist, error) {
	type conn struct{ q chan []byte }
	var mu sync.Mutex
	var cs []*conn
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		c := &conn{q: make(chan []byte, 4096)}
		mu.Lock()
		cs = append(cs, c)
		mu.Unlock()
		for b := range c.q {
			if err := ws.Write(r.Context(), websocket.MessageText, b); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	subs, conns, err := dialAll(ctx, strings.Replace(srv.URL, "http", "ws", 1), nil, n, m)
	if err != nil {
		return Dist{}, err
	}
	defer func() {
		for _, c := range conns {
			c.CloseNow()
		}
		mu.Lock()
		for _, c := range cs {
			close(c.q)
		}
		mu.Unlock()
	}()
	for {
		mu.Lock()
		k := len(cs)
		mu.Unlock()
		if k == n {
			break
		}
		time.Sleep(time.Millisecond)
	}
	sent := map[int]time.Time{}
	for k := 0; k < m; k++ {
		b := []byte(fmt.Sprintf(`{"id":%d,"type":"message","room":"bench","data":{"text":"mark-%d"}}`, k, k))
		sent[k] = time.Now()
		mu.Lock()
		for _, c := range cs {
			select {
			case c.q <- b:
			default:
			}
		}
		mu.Unlock()
		time.Sleep(time.Millisecond) // a post's own round trip is about this
		pace(n)
	}
	return collect(subs, sent, time.Minute)
}
