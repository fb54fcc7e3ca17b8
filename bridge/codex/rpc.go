package codex

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
)

// defaultMaxLine bounds one JSON-RPC line from codex. Longer lines (a huge
// command output, say) are logged and skipped rather than buffered without
// limit.
const defaultMaxLine = 16 << 20

// errConnClosed is what calls fail with once the peer is gone.
var errConnClosed = errors.New("codex app-server connection closed")

// rpcError is a JSON-RPC error object, as a reply to one of our calls or as
// what we answer to a server request we cannot serve.
type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("%s (code %d)", e.Message, e.Code) }

// JSON-RPC error codes we use or map.
const (
	codeInvalidRequest = -32600
	codeMethodNotFound = -32601
)

// rpcMessage is any line on the wire. Codex omits "jsonrpc":"2.0". Its kind
// follows from which keys are present: method+id is a server request,
// method alone a notification, id alone a response.
type rpcMessage struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *rpcError       `json:"error,omitempty"`
}

// handlers receive what the server sends us. Both run on the reader
// goroutine, in wire order, and must return quickly.
type handlers struct {
	// notify gets notifications; unknown methods are the handler's to ignore.
	notify func(method string, params json.RawMessage)
	// request gets server requests; it returns false for methods it does
	// not serve, and the conn then answers method-not-found. A request it
	// takes must be answered (reply/replyError) exactly once.
	request func(id json.RawMessage, method string, params json.RawMessage) bool
}

// conn is a JSON-RPC 2.0 client over line-delimited stdio. It owns one
// reader goroutine that ends when its reader does (EOF or error); every call
// still waiting then fails.
type conn struct {
	log     *slog.Logger
	h       handlers
	maxLine int

	wmu sync.Mutex
	w   io.Writer

	mu      sync.Mutex
	next    int64
	pending map[int64]*pendingCall
	err     error // set once the reader ended
	done    chan struct{}
}

type pendingCall struct {
	ch chan callResult // buffered 1
	// onResult, if set, runs on the reader goroutine with a successful
	// result before any later message is handled, so state it sets is in
	// place when the notifications that follow the reply arrive.
	onResult func(json.RawMessage)
}

type callResult struct {
	result json.RawMessage
	err    error
}

// newConn makes a conn writing to w; start begins reading.
func newConn(w io.Writer, h handlers, log *slog.Logger) *conn {
	return &conn{log: log, h: h, maxLine: defaultMaxLine, w: w, pending: map[int64]*pendingCall{}, done: make(chan struct{})}
}

// start runs the reader goroutine on r. Call it once, after everything the
// handlers use is in place.
func (c *conn) start(r io.Reader) { go c.readLoop(r) }

// Done is closed once the reader has ended and every pending call failed.
func (c *conn) Done() <-chan struct{} { return c.done }

// Err is why the connection ended (nil while it runs).
func (c *conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// call sends a request and waits for its reply; out, if not nil, receives
// the decoded result. A JSON-RPC error reply comes back as *rpcError.
func (c *conn) call(ctx context.Context, method string, params, out any) error {
	return c.callThen(ctx, method, params, out, nil)
}

// callThen is call with an onResult hook (see pendingCall).
func (c *conn) callThen(ctx context.Context, method string, params, out any, onResult func(json.RawMessage)) error {
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return err
	}
	id := c.next
	c.next++
	pc := &pendingCall{ch: make(chan callResult, 1), onResult: onResult}
	c.pending[id] = pc
	c.mu.Unlock()

	if err := c.send(map[string]any{"id": id, "method": method, "params": params}); err != nil {
		c.forget(id)
		return err
	}
	select {
	case res := <-pc.ch:
		if res.err != nil {
			return res.err
		}
		if out != nil {
			if err := json.Unmarshal(res.result, out); err != nil {
				return fmt.Errorf("codex %s: decode result: %w", method, err)
			}
		}
		return nil
	case <-ctx.Done():
		c.forget(id)
		return ctx.Err()
	}
}

func (c *conn) forget(id int64) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// notify sends a notification.
func (c *conn) notify(method string, params any) error {
	m := map[string]any{"method": method}
	if params != nil {
		m["params"] = params
	}
	return c.send(m)
}

// reply answers a server request with a result.
func (c *conn) reply(id json.RawMessage, result any) error {
	return c.send(map[string]any{"id": id, "result": result})
}

// replyError answers a server request with an error.
func (c *conn) replyError(id json.RawMessage, code int, message string) error {
	return c.send(map[string]any{"id": id, "error": rpcError{Code: code, Message: message}})
}

// send writes one message as one line, in a single Write.
func (c *conn) send(m map[string]any) error {
	line, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("codex: encode %v: %w", m["method"], err)
	}
	line = append(line, '\n')
	select {
	case <-c.done:
		return c.Err()
	default:
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if _, err := c.w.Write(line); err != nil {
		return fmt.Errorf("%w: write: %v", errConnClosed, err)
	}
	return nil
}

func (c *conn) readLoop(r io.Reader) {
	br := bufio.NewReaderSize(r, 64<<10)
	var err error
	for {
		var line []byte
		line, err = readLine(br, c.maxLine)
		if errors.Is(err, errLineTooLong) {
			c.log.Warn("codex: skipped an over-long line", "limit", c.maxLine)
			continue
		}
		if len(bytes.TrimSpace(line)) > 0 {
			c.handleLine(line)
		}
		if err != nil {
			break
		}
	}
	if errors.Is(err, io.EOF) {
		err = fmt.Errorf("%w: end of output", errConnClosed)
	} else {
		err = fmt.Errorf("%w: %v", errConnClosed, err)
	}
	c.mu.Lock()
	c.err = err
	pending := c.pending
	c.pending = map[int64]*pendingCall{}
	c.mu.Unlock()
	for _, pc := range pending {
		pc.ch <- callResult{err: err}
	}
	close(c.done)
}

var errLineTooLong = errors.New("line too long")

// readLine returns the next line without its newline. A line over maxLine
// is consumed and reported as errLineTooLong.
func readLine(br *bufio.Reader, maxLine int) ([]byte, error) {
	var buf []byte
	tooLong := false
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if len(buf)+len(chunk) > maxLine {
				tooLong, buf = true, nil
			} else {
				buf = append(buf, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if tooLong && err == nil {
			return nil, errLineTooLong
		}
		return bytes.TrimSuffix(buf, []byte("\n")), err
	}
}

// hasID reports whether a raw id is present (JSON null counts as absent).
func hasID(id json.RawMessage) bool {
	return len(id) > 0 && !bytes.Equal(bytes.TrimSpace(id), []byte("null"))
}

func (c *conn) handleLine(line []byte) {
	var m rpcMessage
	if err := json.Unmarshal(line, &m); err != nil {
		c.log.Warn("codex: skipped a malformed line", "err", err, "line", clip(string(line), 200))
		return
	}
	switch {
	case m.Method != "" && hasID(m.ID):
		if c.h.request == nil || !c.h.request(m.ID, m.Method, m.Params) {
			c.log.Debug("codex: unsupported server request", "method", m.Method)
			if err := c.replyError(m.ID, codeMethodNotFound, "wheelhouse does not support "+m.Method); err != nil {
				c.log.Debug("codex: reply failed", "err", err)
			}
		}
	case m.Method != "":
		if c.h.notify != nil {
			c.h.notify(m.Method, m.Params)
		}
	case hasID(m.ID):
		c.handleResponse(m)
	default:
		c.log.Warn("codex: skipped a line that is neither request, notification nor response", "line", clip(string(line), 200))
	}
}

func (c *conn) handleResponse(m rpcMessage) {
	var id int64
	if err := json.Unmarshal(m.ID, &id); err != nil {
		c.log.Warn("codex: response with a foreign id", "id", string(m.ID))
		return
	}
	c.mu.Lock()
	pc := c.pending[id]
	delete(c.pending, id)
	c.mu.Unlock()
	if pc == nil {
		c.log.Debug("codex: response to no pending call (abandoned)", "id", id)
		return
	}
	if m.Error != nil {
		pc.ch <- callResult{err: m.Error}
		return
	}
	if pc.onResult != nil {
		pc.onResult(m.Result)
	}
	pc.ch <- callResult{result: m.Result}
}

// clip shortens s to at most n bytes, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
