// Package netcork holds back a connection's writes while a batch of them is
// written, so many small WebSocket frames leave in one system call (a
// userspace TCP_CORK). It imports nothing of ours.
package netcork

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"sync"
	"time"
)

// Conn is a net.Conn whose writes can be held back: between Cork and Flush
// they are kept in memory, in order, and Flush sends them at once.
type Conn struct {
	net.Conn
	mu     sync.Mutex // orders writes: a Flush and a write from another goroutine never interleave
	corked bool
	buf    []byte
}

// Write sends p, or keeps it while the connection is corked.
func (c *Conn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.corked {
		c.buf = append(c.buf, p...)
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// ReadFrom and WriteTo let io.Copy through the connection take the bare
// connection's path (the kernel's splice), as a proxy relaying it does;
// they do not go through the cork, so a connection is corked or relayed,
// never both.
func (c *Conn) ReadFrom(r io.Reader) (int64, error) { return io.Copy(c.Conn, r) }

// WriteTo is ReadFrom's other half.
func (c *Conn) WriteTo(w io.Writer) (int64, error) { return io.Copy(w, c.Conn) }

// Cork holds back writes until Flush.
func (c *Conn) Cork() {
	c.mu.Lock()
	c.corked = true
	c.mu.Unlock()
}

// Held is how many bytes are held back.
func (c *Conn) Held() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.buf)
}

// Flush sends what was held back in one write, within timeout, and stops
// holding back.
func (c *Conn) Flush(timeout time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.corked = false
	if len(c.buf) == 0 {
		return nil
	}
	c.Conn.SetWriteDeadline(time.Now().Add(timeout))
	_, err := c.Conn.Write(c.buf)
	c.Conn.SetWriteDeadline(time.Time{})
	if cap(c.buf) > 64<<10 {
		c.buf = nil // a burst's buffer is not kept by an idle connection
	} else {
		c.buf = c.buf[:0]
	}
	return err
}

// Listener wraps accepted connections in Conn.
type Listener struct{ net.Listener }

// Accept returns the next connection, corkable.
func (l Listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &Conn{Conn: c}, nil
}

type connKey struct{}

// ConnContext is an http.Server's ConnContext: it lets a handler find its
// connection with From.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// From returns the corkable connection under a request's context (through
// TLS too), or nil.
func From(ctx context.Context) *Conn {
	c, _ := ctx.Value(connKey{}).(net.Conn)
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	cc, _ := c.(*Conn)
	return cc
}
