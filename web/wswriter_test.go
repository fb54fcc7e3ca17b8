package web

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/wheelhouse-dev/wheelhouse/chat"
	"github.com/wheelhouse-dev/wheelhouse/internal/netcork"
)

func item(seq uint64, body string) *chat.FeedItem {
	return &chat.FeedItem{Seq: seq, Body: []byte(body)}
}

func TestOutQueue(t *testing.T) {
	t.Run("BoundedInBytes", func(t *testing.T) {
		q := newOutQueue(10, 100)
		if ok, _ := q.push(item(1, "12345")); !ok {
			t.Fatal("refused what fits")
		}
		if ok, _ := q.push(item(2, "12345")); !ok {
			t.Fatal("refused what fits")
		}
		if ok, _ := q.push(item(3, "1")); ok {
			t.Fatal("took an eleventh byte")
		}
		if got, _ := q.take(nil); len(got) != 2 || got[0].Seq != 1 || got[1].Seq != 2 {
			t.Fatalf("took %v", got)
		}
		if ok, _ := q.push(item(3, "1234567890")); !ok {
			t.Fatal("a drained queue refused")
		}
	})
	t.Run("BoundedInItems", func(t *testing.T) {
		q := newOutQueue(1<<20, 2)
		q.push(item(1, "a"))
		q.push(item(2, "b"))
		if ok, _ := q.push(item(3, "c")); ok {
			t.Fatal("took a third item")
		}
	})
	t.Run("OneWriterAtATime", func(t *testing.T) {
		q := newOutQueue(1<<20, 100)
		if _, start := q.push(item(1, "a")); start {
			t.Fatal("started a writer during the backlog")
		}
		if _, ok := q.take(nil); !ok {
			t.Fatal("the backlog's writer found nothing queued")
		}
		if _, ok := q.take(nil); ok {
			t.Fatal("an empty queue kept its writer")
		}
		if _, start := q.push(item(2, "b")); !start {
			t.Fatal("no writer started for an idle queue")
		}
		if _, start := q.push(item(3, "c")); start {
			t.Fatal("a second writer started")
		}
	})
}

// countingListener counts the writes that reach the network.
type countingListener struct {
	net.Listener
	writes *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	return countingConn{c, l.writes}, err
}

type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(p []byte) (int, error) { c.writes.Add(1); return c.Conn.Write(p) }

// A lagging client's queued frames leave in one write, in order, each a
// WebSocket message of its own; frames already sent are skipped.
func TestWriteBatchSendsQueuedFramesTogether(t *testing.T) {
	var writes atomic.Int64
	done := make(chan error, 1)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			done <- err
			return
		}
		cork := netcork.From(r.Context())
		if cork == nil {
			done <- fmt.Errorf("no corkable connection")
			return
		}
		var items []*chat.FeedItem
		for i := 1; i <= 100; i++ {
			items = append(items, item(uint64(i), fmt.Sprintf(`{"id":%d}`, i)))
		}
		last, lastIdx := uint64(10), 1<<30 // the client has 1–10 already
		before := writes.Load()
		err = writeBatch(r.Context(), ws, cork, items, &last, &lastIdx)
		if n := writes.Load() - before; err == nil && n != 1 {
			err = fmt.Errorf("%d writes for one batch", n)
		}
		done <- err
		<-ws.CloseRead(context.Background()).Done() // until the client hangs up
	}))
	srv.Listener = netcork.Listener{Listener: countingListener{srv.Listener, &writes}}
	srv.Config.ConnContext = netcork.ConnContext
	srv.Start()
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, strings.Replace(srv.URL, "http", "ws", 1), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for i := 11; i <= 100; i++ {
		_, b, err := ws.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf(`{"id":%d}`, i); string(b) != want {
			t.Fatalf("frame %q, want %q", b, want)
		}
	}
}
