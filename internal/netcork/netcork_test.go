package netcork

import (
	"bytes"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// countingConn records each write that reaches the network.
type countingConn struct {
	net.Conn
	mu     sync.Mutex
	writes [][]byte
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.writes = append(c.writes, append([]byte(nil), p...))
	c.mu.Unlock()
	return c.Conn.Write(p)
}

func TestCorkedWritesLeaveTogetherInOrder(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	raw := &countingConn{Conn: a}
	c := &Conn{Conn: raw}
	got := make(chan []byte)
	go func() { all, _ := io.ReadAll(io.LimitReader(b, 9)); got <- all }()

	c.Cork()
	c.Write([]byte("one"))
	c.Write([]byte("two"))
	if c.Held() != 6 || len(raw.writes) != 0 {
		t.Fatalf("held %d, %d writes reached the network while corked", c.Held(), len(raw.writes))
	}
	if err := c.Flush(time.Second); err != nil {
		t.Fatal(err)
	}
	c.Write([]byte("end")) // uncorked: straight through
	if all := <-got; !bytes.Equal(all, []byte("onetwoend")) {
		t.Fatalf("read %q", all)
	}
	if len(raw.writes) != 2 || string(raw.writes[0]) != "onetwo" {
		t.Fatalf("writes %q, want the corked two in one", raw.writes)
	}
}

func TestFlushTimesOutOnAStuckPeer(t *testing.T) {
	a, b := net.Pipe() // nobody reads b
	defer a.Close()
	defer b.Close()
	c := &Conn{Conn: a}
	c.Cork()
	c.Write([]byte("stuck"))
	if err := c.Flush(50 * time.Millisecond); err == nil {
		t.Fatal("a flush to a peer that never reads succeeded")
	}
}
