package bench

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// subscriber records when each marked message arrives: "mark-K" messages
// of the measured room and "chatter-K" messages of the busy rooms (whose
// names, busy-N, are in their frames too).
type subscriber struct {
	mu       sync.Mutex
	main     map[int]time.Time
	busy     map[int]time.Time
	wantMain int
	ready    chan struct{}
	done     chan struct{}
	once     sync.Once
}

func newSubscriber(wantMain int) *subscriber {
	return &subscriber{main: map[int]time.Time{}, busy: map[int]time.Time{}, wantMain: wantMain,
		ready: make(chan struct{}), done: make(chan struct{})}
}

var (
	markMain  = []byte("mark-")
	markBusy  = []byte("chatter-")
	readyType = []byte(`"type":"ready"`)
)

func markOf(b, prefix []byte) (int, bool) {
	i := bytes.Index(b, prefix)
	if i < 0 {
		return 0, false
	}
	j := i + len(prefix)
	k := j
	for k < len(b) && b[k] >= '0' && b[k] <= '9' {
		k++
	}
	n, err := strconv.Atoi(string(b[j:k]))
	return n, err == nil
}

func (s *subscriber) read(ctx context.Context, ws *websocket.Conn) {
	readySeen := false
	for {
		_, b, err := ws.Read(ctx)
		if err != nil {
			return
		}
		now := time.Now()
		if !readySeen && bytes.Contains(b, readyType) {
			readySeen = true
			close(s.ready)
			continue
		}
		if k, ok := markOf(b, markMain); ok {
			s.mu.Lock()
			if _, dup := s.main[k]; !dup {
				s.main[k] = now
			}
			n := len(s.main)
			s.mu.Unlock()
			if n >= s.wantMain {
				s.once.Do(func() { close(s.done) })
			}
		} else if k, ok := markOf(b, markBusy); ok {
			s.mu.Lock()
			if _, dup := s.busy[k]; !dup {
				s.busy[k] = now
			}
			s.mu.Unlock()
		}
	}
}

// sockets are live WebSocket clients.
type sockets struct {
	subs  []*subscriber
	conns []*websocket.Conn
}

func (ss *sockets) close() {
	for _, c := range ss.conns {
		if c != nil {
			c.CloseNow()
		}
	}
}

// dialSockets opens n sockets, the i-th to the URL and with the bearer
// token target(i) gives ("": none), and waits until each has its "ready"
// frame: registered and past its backlog.
func dialSockets(ctx context.Context, target func(i int) (url, token string), n, wantMain int) (*sockets, error) {
	ss := &sockets{subs: make([]*subscriber, n), conns: make([]*websocket.Conn, n)}
	err := parallel(n, 32, func(i int) error {
		url, token := target(i)
		var h http.Header
		if token != "" {
			h = http.Header{"Authorization": {"Bearer " + token}}
		}
		dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		ws, _, err := websocket.Dial(dctx, url, &websocket.DialOptions{HTTPHeader: h})
		if err != nil {
			return fmt.Errorf("dial socket %d: %w", i, err)
		}
		ws.SetReadLimit(1 << 20)
		s := newSubscriber(wantMain)
		ss.subs[i], ss.conns[i] = s, ws
		go s.read(ctx, ws)
		select {
		case <-s.ready:
			return nil
		case <-dctx.Done():
			return fmt.Errorf("socket %d: no ready frame", i)
		}
	})
	if err != nil {
		ss.close()
		return nil, err
	}
	return ss, nil
}

// collect waits until every subscriber has every main message and returns
// the latencies of main and busy messages against when each was sent.
func (ss *sockets) collect(sentMain, sentBusy map[int]time.Time, timeout time.Duration) (main, busy []time.Duration, err error) {
	deadline := time.After(timeout)
	for i, s := range ss.subs {
		select {
		case <-s.done:
		case <-deadline:
			s.mu.Lock()
			n := len(s.main)
			s.mu.Unlock()
			return nil, nil, fmt.Errorf("socket %d got %d of %d messages", i, n, s.wantMain)
		}
	}
	var dm, db []time.Duration
	for _, s := range ss.subs {
		s.mu.Lock()
		for k, at := range s.main {
			dm = append(dm, at.Sub(sentMain[k]))
		}
		for k, at := range s.busy {
			if t0, ok := sentBusy[k]; ok {
				db = append(db, at.Sub(t0))
			}
		}
		s.mu.Unlock()
	}
	return dm, db, nil
}
