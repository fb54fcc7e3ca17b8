package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"sync"
	"time"
)

// chatRequest is the body of POST {base}/chat/completions.
type chatRequest struct {
	Model         string         `json:"model"`
	Messages      []chatMessage  `json:"messages"`
	Tools         []toolDef      `json:"tools,omitempty"`
	Stream        bool           `json:"stream"`
	StreamOptions *streamOptions `json:"stream_options,omitempty"`
	Temperature   *float64       `json:"temperature,omitempty"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// maxErrorBody bounds how much of an error answer is read.
const maxErrorBody = 64 << 10

// dialTimeout bounds connecting to the endpoint (and the reachability check
// before a turn).
const dialTimeout = 3 * time.Second

// client talks to one endpoint.
type client struct {
	base      string // without a trailing slash
	endpoint  string // base + "/chat/completions"
	apiKey    string
	idle      time.Duration
	http      *http.Client
	transport *http.Transport
}

func newClient(cfg *Config) *client {
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment, // never for loopback addresses
		DialContext:           (&net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          4,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: cfg.IdleTimeout,
	}
	return &client{base: cfg.BaseURL, endpoint: cfg.BaseURL + "/chat/completions", apiKey: cfg.APIKey, idle: cfg.IdleTimeout,
		transport: tr, http: &http.Client{Transport: tr}}
}

func (c *client) close() { c.transport.CloseIdleConnections() }

// reachable checks that the endpoint accepts connections (when no proxy
// stands between), so a turn is not started against a server that is down.
func (c *client) reachable(ctx context.Context) error {
	u, err := url.Parse(c.base)
	if err != nil {
		return err
	}
	if p, _ := c.transport.Proxy(&http.Request{URL: u}); p != nil {
		return nil
	}
	host := u.Host
	if u.Port() == "" {
		port := "80"
		if u.Scheme == "https" {
			port = "443"
		}
		host = net.JoinHostPort(u.Hostname(), port)
	}
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", host)
	if err != nil {
		return c.unreachable(err)
	}
	conn.Close()
	return nil
}

// errEndpoint is a failure of the endpoint (down, refusing, broken); the
// turn fails with its message.
type errEndpoint struct{ msg string }

func (e *errEndpoint) Error() string { return e.msg }

func (c *client) unreachable(err error) error {
	var oe *net.OpError
	if errors.As(err, &oe) {
		err = oe.Err
		if oe.Addr != nil {
			err = fmt.Errorf("%s: %w", oe.Addr, oe.Err)
		}
	}
	return &errEndpoint{msg: fmt.Sprintf("the model endpoint at %s is unreachable: %v", c.base, err)}
}

// complete sends one request and reads the streamed answer; onText gets
// the text as it arrives. Errors: ctx's when it ends, *errEndpoint when the
// endpoint fails, *errStream when its answer is broken.
func (c *client) complete(ctx context.Context, req *chatRequest, onText func(string)) (completion, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return completion{}, fmt.Errorf("encode the request: %w", err)
	}
	return c.send(ctx, body, onText)
}

func (c *client) send(ctx context.Context, body []byte, onText func(string)) (completion, error) {
	// The request lives until the answer is read; a stall of idle ends it.
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	resp, err := c.do(rctx, body)
	if err != nil {
		if ctx.Err() != nil {
			return completion{}, ctx.Err()
		}
		var ue *url.Error
		if errors.As(err, &ue) && ue.Timeout() {
			return completion{}, &errEndpoint{msg: fmt.Sprintf("the model endpoint at %s did not answer within %s", c.base, c.idle)}
		}
		var oe *net.OpError
		if errors.As(err, &oe) && oe.Op == "dial" {
			return completion{}, c.unreachable(err)
		}
		return completion{}, &errEndpoint{msg: fmt.Sprintf("the request to the model endpoint at %s failed: %v", c.base, unwrapURL(err))}
	}
	defer func() {
		// Read what follows [DONE] (usually nothing) so the connection is
		// reused, unless the answer is being abandoned.
		if rctx.Err() == nil {
			t := time.AfterFunc(time.Second, func() { cancel(nil) }) // a server that keeps it open
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			t.Stop()
		}
		resp.Body.Close()
	}()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		return completion{}, c.statusError(resp.StatusCode, b)
	}
	watch := &idleWatch{r: resp.Body, d: c.idle, stop: func() { cancel(errIdle) }}
	defer watch.done()
	var a accumulator
	a.onText = onText
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt == "application/json" {
		err = readWhole(watch, &a) // a server that ignored "stream": true
	} else {
		err = readStream(watch, &a)
	}
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return completion{}, ctx.Err()
		case errors.Is(context.Cause(rctx), errIdle):
			return completion{}, &errEndpoint{msg: fmt.Sprintf("the model endpoint at %s sent nothing for %s; gave up", c.base, c.idle)}
		}
		var se *errStream
		if errors.As(err, &se) {
			return completion{}, err
		}
		return completion{}, &errEndpoint{msg: fmt.Sprintf("the connection to the model endpoint at %s broke mid-answer: %v", c.base, unwrapURL(err))}
	}
	var n int
	return a.result(func() string { n++; return fmt.Sprintf("call_%d_%d", time.Now().UnixNano(), n) })
}

var errIdle = errors.New("idle")

// do posts body. A kept-alive connection the server closed meanwhile (it
// restarted, or dropped idle connections) fails before any answer; the
// request then goes once more, on a new connection: nothing was answered,
// so nothing is repeated.
func (c *client) do(ctx context.Context, body []byte) (*http.Response, error) {
	for attempt := 0; ; attempt++ {
		reused := false
		trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }}
		hr, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodPost, c.endpoint, bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		hr.Header.Set("Content-Type", "application/json")
		hr.Header.Set("Accept", "text/event-stream")
		hr.Header.Set("User-Agent", "wheelhouse")
		if c.apiKey != "" {
			hr.Header.Set("Authorization", "Bearer "+c.apiKey)
		}
		resp, err := c.http.Do(hr)
		if err == nil || attempt > 0 || !reused || ctx.Err() != nil {
			return resp, err
		}
	}
}

func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

func (c *client) statusError(code int, body []byte) error {
	msg := apiErrorMessage(body)
	if msg == "" {
		msg = "(no details)"
	}
	status := fmt.Sprintf("%d %s", code, http.StatusText(code))
	switch code {
	case http.StatusUnauthorized, http.StatusForbidden:
		return &errEndpoint{msg: fmt.Sprintf("the model endpoint at %s refused the request (%s): %s — check the API key (api_key_env)", c.base, status, msg)}
	case http.StatusNotFound:
		return &errEndpoint{msg: fmt.Sprintf("the model endpoint at %s answered %s: %s — check base_url (it ends in /v1) and that the model is served there", c.base, status, msg)}
	}
	return &errEndpoint{msg: fmt.Sprintf("the model endpoint at %s answered %s: %s", c.base, status, msg)}
}

// readWhole reads a non-streamed chat.completion into a.
func readWhole(r io.Reader, a *accumulator) error {
	b, err := io.ReadAll(io.LimitReader(r, maxAnswerBytes+maxToolCalls*maxArgumentBytes))
	if err != nil {
		return err
	}
	var v struct {
		Choices []struct {
			Index   int `json:"index"`
			Message struct {
				Content   *string    `json:"content"`
				ToolCalls []toolCall `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage *usage `json:"usage"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return streamErrorf("the model endpoint sent a malformed answer (%v): %s", err, clip(b, 200))
	}
	if len(v.Choices) == 0 {
		return streamErrorf("the model endpoint's answer has no choices: %s", clip(b, 200))
	}
	ch := v.Choices[0]
	if ch.Message.Content != nil {
		a.content.WriteString(*ch.Message.Content)
		if a.onText != nil {
			a.onText(*ch.Message.Content)
		}
	}
	a.byIndex = map[int]*callAcc{}
	for i, tc := range ch.Message.ToolCalls {
		c := a.newCall(i)
		if c == nil {
			return streamErrorf("the model sent more than %d tool calls in one answer", maxToolCalls)
		}
		c.id, c.name = tc.ID, tc.Function.Name
		c.args.WriteString(tc.Function.Arguments)
	}
	a.finish, a.usage, a.done = ch.FinishReason, v.Usage, true
	return nil
}

// idleWatch ends a read that waits longer than d for bytes.
type idleWatch struct {
	r     io.Reader
	d     time.Duration
	stop  func()
	mu    sync.Mutex
	timer *time.Timer
}

func (w *idleWatch) Read(p []byte) (int, error) {
	w.mu.Lock()
	if w.timer == nil {
		w.timer = time.AfterFunc(w.d, w.stop)
	} else {
		w.timer.Reset(w.d)
	}
	w.mu.Unlock()
	n, err := w.r.Read(p)
	w.mu.Lock()
	w.timer.Stop()
	w.mu.Unlock()
	return n, err
}

func (w *idleWatch) done() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.timer != nil {
		w.timer.Stop()
	}
}
