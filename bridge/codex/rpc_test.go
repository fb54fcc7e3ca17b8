package codex

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// peer plays codex's side of a conn over OS pipes, speaking lines recorded
// from codex-cli 0.171.0.
type peer struct {
	t    *testing.T
	out  *os.File // the conn reads what we write here
	in   *os.File // we read what the conn writes
	read *bufio.Reader
}

// newPeer connects a conn whose handlers mk builds (it gets the conn, to reply).
func newPeer(t *testing.T, mk func(*conn) handlers, maxLine int) (*conn, *peer) {
	t.Helper()
	connR, peerW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	peerR, connW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	c := newConn(connW, handlers{}, slog.New(slog.DiscardHandler))
	c.h = mk(c)
	c.maxLine = maxLine
	c.start(connR)
	p := &peer{t: t, out: peerW, in: peerR, read: bufio.NewReader(peerR)}
	t.Cleanup(func() {
		peerW.Close()
		<-c.Done()
		connR.Close()
		connW.Close()
		peerR.Close()
	})
	return c, p
}

func (p *peer) send(lines ...string) {
	p.t.Helper()
	for _, l := range lines {
		if _, err := io.WriteString(p.out, l+"\n"); err != nil {
			p.t.Fatal(err)
		}
	}
}

// sync returns once the conn has handled everything sent so far: it sends
// a server request nobody serves and waits for the error reply.
func (p *peer) sync() {
	p.t.Helper()
	p.send(`{"method":"test/sync","id":"sync","params":{}}`)
	if m := p.recv(); m["id"] != "sync" {
		p.t.Fatalf("expected the sync reply, got %v", m)
	}
}

// recv returns the next message the conn wrote.
func (p *peer) recv() map[string]any {
	p.t.Helper()
	if err := p.in.SetReadDeadline(time.Now().Add(waitTimeout)); err != nil {
		p.t.Fatal(err)
	}
	line, err := p.read.ReadString('\n')
	if err != nil {
		p.t.Fatalf("peer read: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		p.t.Fatalf("conn wrote a bad line %q: %v", line, err)
	}
	return m
}

func noHandlers(*conn) handlers { return handlers{} }

// asyncCall runs c.call in the background.
func asyncCall(c *conn, method string, out any) <-chan error {
	done := make(chan error, 1)
	go func() { done <- c.call(context.Background(), method, map[string]any{}, out) }()
	return done
}

func waitErr(t *testing.T, ch <-chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(waitTimeout):
		t.Fatal("call did not return")
		return nil
	}
}

// recorder collects what the handlers got.
type recorder struct {
	mu       sync.Mutex
	notes    []string
	requests []string
}

func (r *recorder) handlers(serve map[string]any) func(*conn) handlers {
	return func(c *conn) handlers {
		return handlers{
			notify: func(method string, _ json.RawMessage) {
				r.mu.Lock()
				r.notes = append(r.notes, method)
				r.mu.Unlock()
			},
			request: func(id json.RawMessage, method string, _ json.RawMessage) bool {
				r.mu.Lock()
				r.requests = append(r.requests, method+"#"+string(id))
				r.mu.Unlock()
				res, ok := serve[method]
				if ok {
					_ = c.reply(id, res)
				}
				return ok
			},
		}
	}
}

func (r *recorder) got() (notes, requests []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.notes...), append([]string(nil), r.requests...)
}

func TestConn(t *testing.T) {
	t.Run("ServerRequestIDCollidesWithOurs", func(t *testing.T) {
		rec := &recorder{}
		c, p := newPeer(t, rec.handlers(map[string]any{reqCommandApproval: approvalDecision{Decision: "accept"}}), defaultMaxLine)
		var res turnStartResult
		done := asyncCall(c, methodTurnStart, &res)
		if m := p.recv(); m["id"] != float64(0) || m["method"] != methodTurnStart {
			t.Fatalf("our request %v", m)
		}
		// codex asks its own request 0 before answering ours.
		p.send(`{"method":"item/commandExecution/requestApproval","id":0,"params":{"kind":"command","threadId":"T","turnId":"U","itemId":"call_stub_6","startedAtMs":1796026006119,"command":"/bin/bash -lc 'touch x'","cwd":"/p"}}`)
		if m := p.recv(); m["id"] != float64(0) || m["result"].(map[string]any)["decision"] != "accept" || m["method"] != nil {
			t.Fatalf("our answer to server request 0: %v", m)
		}
		select {
		case err := <-done:
			t.Fatalf("our call 0 completed by the server's request 0: %v", err)
		default:
		}
		p.send(`{"id":0,"result":{"turn":{"id":"01a22b7d-f414-77b2-9bd9-0ee8f9004d77","items":[],"status":"inProgress","error":null}}}`)
		if err := waitErr(t, done); err != nil {
			t.Fatal(err)
		}
		if res.Turn.ID != "01a22b7d-f414-77b2-9bd9-0ee8f9004d77" {
			t.Fatalf("result %+v", res)
		}
		if _, reqs := rec.got(); len(reqs) != 1 || reqs[0] != reqCommandApproval+"#0" {
			t.Fatalf("server requests %v", reqs)
		}
	})
	t.Run("UnknownServerRequestGetsError", func(t *testing.T) {
		rec := &recorder{}
		_, p := newPeer(t, rec.handlers(nil), defaultMaxLine)
		p.send(`{"method":"item/tool/requestUserInput","id":7,"params":{"threadId":"T"}}`)
		m := p.recv()
		e, _ := m["error"].(map[string]any)
		if m["id"] != float64(7) || e == nil || e["code"] != float64(codeMethodNotFound) ||
			!strings.Contains(e["message"].(string), "item/tool/requestUserInput") {
			t.Fatalf("reply %v", m)
		}
	})
	t.Run("MalformedLinesSkipped", func(t *testing.T) {
		rec := &recorder{}
		c, p := newPeer(t, rec.handlers(nil), 256)
		done := asyncCall(c, methodInitialize, nil)
		p.recv()
		p.send(
			`not json at all`,
			`[1,2,3]`,
			`{}`,
			`{"id":"foreign","result":{}}`,
			`{"id":99,"result":{}}`,
			`{"method":"configWarning","params":{"summary":"bubblewrap"},"emittedAtMs":1796026004556}`,
			`{"method":"thread/started","params":`+strings.Repeat(" ", 300)+`{}}`,
			``,
			`{"id":0,"result":{"userAgent":"wheelhouse/0.171.0","codexHome":"/h","platformFamily":"unix","platformOs":"linux"}}`,
			`{"method":"remoteControl/status/changed","params":{}}`,
		)
		if err := waitErr(t, done); err != nil {
			t.Fatalf("call after garbage: %v", err)
		}
		waitFor(t, "notifications", func() bool { n, _ := rec.got(); return len(n) == 2 })
		if n, _ := rec.got(); n[0] != "configWarning" || n[1] != "remoteControl/status/changed" {
			t.Fatalf("notifications %v (the over-long one must be skipped)", n)
		}
	})
	t.Run("ErrorReplyIsRPCError", func(t *testing.T) {
		c, p := newPeer(t, noHandlers, defaultMaxLine)
		done := asyncCall(c, methodTurnSteer, nil)
		p.recv()
		p.send("{\"id\":0,\"error\":{\"code\":-32600,\"message\":\"expected active turn id `not-the-turn` but found `01a22b7d`\"}}")
		var re *rpcError
		if err := waitErr(t, done); !errors.As(err, &re) || re.Code != codeInvalidRequest {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("PeerExitFailsCalls", func(t *testing.T) {
		c, p := newPeer(t, noHandlers, defaultMaxLine)
		done := asyncCall(c, methodTurnStart, nil)
		p.recv()
		p.send(`{"method":"turn/started","params":{"threadId":"T","turn":{"id":"U"}}}`)
		p.out.Close() // the process died mid-call
		if err := waitErr(t, done); !errors.Is(err, errConnClosed) {
			t.Fatalf("pending call: %v", err)
		}
		<-c.Done()
		if err := c.call(context.Background(), methodTurnSteer, nil, nil); !errors.Is(err, errConnClosed) {
			t.Fatalf("call after exit: %v", err)
		}
	})
	t.Run("CanceledCallIgnoresLateReply", func(t *testing.T) {
		c, p := newPeer(t, noHandlers, defaultMaxLine)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- c.call(ctx, methodTurnInterrupt, nil, nil) }()
		p.recv()
		cancel()
		if err := waitErr(t, done); !errors.Is(err, context.Canceled) {
			t.Fatalf("canceled call: %v", err)
		}
		p.send(`{"id":0,"result":{}}`)
		done2 := asyncCall(c, methodTurnInterrupt, nil)
		if m := p.recv(); m["id"] != float64(1) {
			t.Fatalf("next id %v", m["id"])
		}
		p.send(`{"id":1,"result":{}}`)
		if err := waitErr(t, done2); err != nil {
			t.Fatal(err)
		}
	})
}

func TestConnNoGoroutineLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	for i := 0; i < 20; i++ {
		connR, peerW, _ := os.Pipe()
		peerR, connW, _ := os.Pipe()
		c := newConn(connW, handlers{}, slog.New(slog.DiscardHandler))
		c.start(connR)
		done := asyncCall(c, methodTurnStart, nil)
		_, _ = bufio.NewReader(peerR).ReadString('\n')
		peerW.Close()
		if err := waitErr(t, done); err == nil {
			t.Fatal("call succeeded without a reply")
		}
		<-c.Done()
		connR.Close()
		connW.Close()
		peerR.Close()
	}
	waitFor(t, "goroutines to exit", func() bool { return runtime.NumGoroutine() <= before })
}

func FuzzConnRead(f *testing.F) {
	for _, seed := range []string{
		`{"id":0,"result":{"userAgent":"x"}}`,
		`{"method":"item/commandExecution/requestApproval","id":0,"params":{}}`,
		`{"method":"turn/completed","params":{"threadId":"T","turn":{"id":"U","status":"completed"}},"emittedAtMs":1}`,
		`{"id":null,"error":{"code":-32700,"message":"parse error"}}`,
		"\n\n{\"id\":",
	} {
		f.Add([]byte(seed + "\n"))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		connR, peerW, err := os.Pipe()
		if err != nil {
			t.Skip(err)
		}
		var c *conn
		c = newConn(io.Discard, handlers{
			notify: func(string, json.RawMessage) {},
			request: func(id json.RawMessage, _ string, _ json.RawMessage) bool {
				_ = c.reply(id, map[string]any{})
				return true
			},
		}, slog.New(slog.DiscardHandler))
		c.maxLine = 1024
		c.start(connR)
		go func() {
			_, _ = peerW.Write(data)
			peerW.Close()
		}()
		<-c.Done()
		connR.Close()
	})
}
