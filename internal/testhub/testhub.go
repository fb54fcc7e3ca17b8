// Package testhub starts real hubs for tests (embedded NATS on a random
// port, SQLite in a temp dir) and talks to them over real HTTP and
// WebSocket. It imports hub; product code never imports it.
package testhub

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/authz"
	"github.com/wheelhouse-dev/wheelhouse/hub"
)

// Options tweak a test hub.
type Options struct {
	DataDir string // reuse a data dir (restart tests)
	NATS    *NATS  // an external NATS (StartNATS) instead of the embedded one
	Logger  *slog.Logger
	WSQueue int
	// HTTPAddr fixes the listen address (restart tests reuse the port a
	// browser is connected to); default 127.0.0.1:0.
	HTTPAddr string
	// SteerTimeout shortens the wait for a bridge's receipt.
	SteerTimeout time.Duration
	// BridgeSweep shortens the hub's sweep for missed revocations.
	BridgeSweep time.Duration
	// TLS makes the hub serve HTTPS with a certificate from this CA (for
	// 127.0.0.1 and localhost); clients and bridges trust the CA.
	TLS *CA
	// FileMaxBytes and FileQuota set the upload limits.
	FileMaxBytes, FileQuota int64
	// Budgets sets the per-person limits (default room.DefaultBudgets).
	Budgets *authz.Budgets
	// PublicURL, TrustedProxies and MetricsAddr are the hub's settings.
	PublicURL      string
	TrustedProxies []string
	MetricsAddr    string
	// Now is the hub's clock (default time.Now).
	Now func() time.Time
	// NATSMaxStore caps the embedded JetStream store (bytes).
	NATSMaxStore int64
	// SQLiteWALLimit bounds the SQLite write-ahead log (bytes).
	SQLiteWALLimit int64
	// Replicas of the event stream (3 on a NATS cluster).
	Replicas int
	// BridgeCallTimeout bounds each harness call of the bridges this hub's
	// StartBridge runs (default the bridge's own).
	BridgeCallTimeout time.Duration
}

// Hub is a running test hub.
type Hub struct {
	*hub.Hub
	DataDir string
	CA      []byte // the CA's PEM with Options.TLS
	// SPKIHash identifies the hub's certificate with Options.TLS (for
	// Chromium's --ignore-certificate-errors-spki-list).
	SPKIHash    string
	tls         *CA
	t           testing.TB
	callTimeout time.Duration
}

// Logger returns a logger that writes to the test log at warn level, or
// everything when WHEELHOUSE_TEST_LOG is set.
func Logger(t testing.TB) *slog.Logger {
	lv := slog.LevelWarn
	if os.Getenv("WHEELHOUSE_TEST_LOG") != "" {
		lv = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: lv}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// Start starts a hub and stops it when the test ends.
func Start(t testing.TB, o Options) *Hub {
	t.Helper()
	if o.DataDir == "" {
		o.DataDir = t.TempDir()
	}
	if o.Logger == nil {
		o.Logger = Logger(t)
	}
	if o.HTTPAddr == "" {
		o.HTTPAddr = "127.0.0.1:0"
	}
	cfg := hub.Config{DataDir: o.DataDir, HTTPAddr: o.HTTPAddr, NATSAddr: "127.0.0.1:0", Logger: o.Logger, WSQueue: o.WSQueue, SteerTimeout: o.SteerTimeout, BridgeSweep: o.BridgeSweep,
		FileMaxBytes: o.FileMaxBytes, FileQuota: o.FileQuota, NATSMaxStore: o.NATSMaxStore, SQLiteWALLimit: o.SQLiteWALLimit, Replicas: o.Replicas,
		PublicURL: o.PublicURL, TrustedProxies: o.TrustedProxies, MetricsAddr: o.MetricsAddr, Now: o.Now, Budgets: o.Budgets}
	if o.NATS != nil {
		cfg.NATSURL, cfg.NATSSecrets, cfg.NATSWebsocket = o.NATS.URL, o.NATS.Secrets, []string{o.NATS.Websocket}
	}
	var leaf Leaf
	if o.TLS != nil {
		leaf = o.TLS.Leaf(t, "127.0.0.1", "localhost")
		cfg.TLSCert, cfg.TLSKey = leaf.CertFile, leaf.KeyFile
	}
	h, err := hub.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := h.Open(ctx); err != nil {
		t.Fatalf("open hub: %v", err)
	}
	th := &Hub{Hub: h, DataDir: o.DataDir, t: t, tls: o.TLS, SPKIHash: leaf.SPKIHash, callTimeout: o.BridgeCallTimeout}
	if o.TLS != nil {
		th.CA = o.TLS.PEM
	}
	t.Cleanup(func() { th.Stop() })
	return th
}

// Stop closes the hub gracefully (idempotent).
func (h *Hub) Stop() {
	if h.Hub == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	h.Hub.Close(ctx)
	h.Hub = nil
}

// Client is an API client with its own cookie jar.
type Client struct {
	t     testing.TB
	Base  string
	HTTP  *http.Client
	Token string // bearer token, if set
	Name  string
	// Device is the owner device this client signs decisions with (the
	// first bridge it starts enrolls one).
	Device *Device
}

// NewClient returns a client for base URL.
func NewClient(t testing.TB, base string) *Client {
	jar, _ := cookiejar.New(nil)
	return &Client{t: t, Base: base, HTTP: &http.Client{Jar: jar, Timeout: 30 * time.Second}}
}

// Response is a decoded answer.
type Response struct {
	Status int
	Body   map[string]any
	Raw    []byte
	Header http.Header
}

// ErrCode returns error.code of an error answer.
func (r Response) ErrCode() string {
	if e, ok := r.Body["error"].(map[string]any); ok {
		s, _ := e["code"].(string)
		return s
	}
	return ""
}

// ErrReason returns error.reason of an error answer.
func (r Response) ErrReason() string {
	if e, ok := r.Body["error"].(map[string]any); ok {
		s, _ := e["reason"].(string)
		return s
	}
	return ""
}

// Do sends a request with a JSON body (or raw string/bytes) and decodes the answer.
func (c *Client) Do(method, path string, body any) Response {
	c.t.Helper()
	return c.DoWith(method, path, body, nil)
}

// DoWith is Do with extra request headers.
func (c *Client) DoWith(method, path string, body any, headers map[string]string) Response {
	c.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			c.t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, c.Base+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	out := Response{Status: resp.StatusCode, Raw: raw, Header: resp.Header}
	if len(raw) > 0 {
		json.Unmarshal(raw, &out.Body)
	}
	return out
}

// Must sends a request and fails the test unless the status is want.
func (c *Client) Must(want int, method, path string, body any) Response {
	c.t.Helper()
	r := c.Do(method, path, body)
	if r.Status != want {
		c.t.Fatalf("%s %s: status %d, want %d: %s", method, path, r.Status, want, r.Raw)
	}
	return r
}

// NewClient returns a client for this hub (trusting its CA with TLS).
func (h *Hub) NewClient() *Client {
	c := NewClient(h.t, h.URL())
	if h.tls != nil {
		c.HTTP.Transport = h.tls.Transport()
	}
	return c
}

// Setup creates the admin on a fresh hub and returns a logged-in client.
func (h *Hub) Setup(name, password string) *Client {
	h.t.Helper()
	c := h.NewClient()
	c.Must(201, "POST", "/api/v1/setup", map[string]string{"token": h.SetupToken(), "name": name, "password": password})
	c.Name = name
	return c
}

// Login logs a user in and returns their client.
func (h *Hub) Login(name, password string) *Client {
	h.t.Helper()
	c := h.NewClient()
	c.Must(201, "POST", "/api/v1/sessions", map[string]string{"name": name, "password": password})
	c.Name = name
	return c
}

// AddUser has admin create a user and returns that user's logged-in client.
func (h *Hub) AddUser(admin *Client, name string) *Client {
	h.t.Helper()
	pw := "pw-" + name + "-secret"
	admin.Must(201, "POST", "/api/v1/users", map[string]string{"name": name, "password": pw})
	return h.Login(name, pw)
}

// Post posts text to room and returns the message id. Words to the
// poster's own agents are signed with the poster's device, as the browser
// signs them (Words); PostUnsigned posts them as an API token does.
func (c *Client) Post(room, text string) int64 {
	c.t.Helper()
	body := map[string]any{"text": text}
	if w := c.Words(room, 0, text, nil); len(w) > 0 {
		body["signed"] = w
	}
	r := c.Must(201, "POST", "/api/v1/rooms/"+room+"/messages", body)
	m := r.Body["message"].(map[string]any)
	return int64(m["id"].(float64))
}

// PostUnsigned posts text to room without signing anything (an owner
// without an enrolled device, or an API token) and returns the message id.
func (c *Client) PostUnsigned(room, text string) int64 {
	c.t.Helper()
	r := c.Must(201, "POST", "/api/v1/rooms/"+room+"/messages", map[string]string{"text": text})
	m := r.Body["message"].(map[string]any)
	return int64(m["id"].(float64))
}

// WaitFor polls cond until it holds or the deadline passes.
func WaitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	CheckFor(t, d, what, func() error {
		if cond() {
			return nil
		}
		return errors.New("not yet")
	})
}

// CheckFor polls check until it returns nil or the deadline passes; on
// timeout it reports the last error (what was still wrong).
func CheckFor(t testing.TB, d time.Duration, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s: %v", d, what, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Metrics scrapes the hub's metrics listener (start it with
// Options.MetricsAddr "127.0.0.1:0").
func (h *Hub) Metrics() string {
	h.t.Helper()
	u := h.MetricsURL()
	if u == "" {
		h.t.Fatal("the hub serves no metrics: start it with Options.MetricsAddr")
	}
	resp, err := http.Get(u)
	if err != nil {
		h.t.Fatalf("scrape %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		h.t.Fatalf("scrape %s: status %d", u, resp.StatusCode)
	}
	return string(b)
}
