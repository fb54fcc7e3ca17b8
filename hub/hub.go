package hub

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"

	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/eventlog"
	"github.com/wheelhouse-dev/wheelhouse/room"
	"github.com/wheelhouse-dev/wheelhouse/web"
)

// Defaults for Config.
const (
	DefaultHTTPAddr = "127.0.0.1:8080"
	DefaultNATSAddr = "127.0.0.1:4222"
)

// Config configures one hub node.
type Config struct {
	DataDir  string // SQLite file and (embedded) JetStream store
	HTTPAddr string // host:port to serve HTTP on (port 0: any free port)
	// NATSAddr is where the embedded NATS server listens for bridges
	// (host:port; port 0: any free port). Ignored with NATSURL.
	NATSAddr string
	// NATSURL connects to an external NATS (JetStream enabled) instead of
	// embedding one.
	NATSURL string
	// Replicas for the event stream (3 in a cluster).
	Replicas int
	// PublicURL is how people reach this hub (printed, used in pairing
	// commands); defaults to http://<HTTPAddr>.
	PublicURL string
	// OriginPatterns are extra allowed WebSocket origins.
	OriginPatterns []string
	// TrustedProxies are the reverse proxies (addresses or CIDR prefixes)
	// whose X-Forwarded-For and X-Forwarded-Proto the hub believes.
	TrustedProxies []string
	// MetricsAddr serves /metrics on its own listener (host:port); "" is
	// off. The public listener never serves metrics.
	MetricsAddr string
	// WSQueue bounds each WebSocket client's outgoing queue (default 512).
	WSQueue int
	// SteerBurst and SteerRefill rate-limit mentions per sender and agent
	// (defaults DefaultSteerBurst, DefaultSteerRefill).
	SteerBurst  int
	SteerRefill time.Duration
	// SteerTimeout is how long the hub waits for a bridge's receipt before
	// the steer ends "rejected: timeout" (default DefaultSteerTimeout).
	SteerTimeout time.Duration
	Logger       *slog.Logger
	Now          func() time.Time
}

// Validate checks the config and fills defaults.
func (c *Config) Validate() error {
	if c.DataDir == "" {
		return wh.Errorf(wh.EInvalid, "--data is required: the folder that holds the hub's database and event log")
	}
	if c.HTTPAddr == "" {
		c.HTTPAddr = DefaultHTTPAddr
	}
	if _, _, err := net.SplitHostPort(c.HTTPAddr); err != nil {
		return wh.Errorf(wh.EInvalid, "--http %q: want host:port, for example 127.0.0.1:8080", c.HTTPAddr)
	}
	if _, err := ParseTrustedProxies(c.TrustedProxies); err != nil {
		return err
	}
	if c.NATSAddr == "" {
		c.NATSAddr = DefaultNATSAddr
	}
	if c.Replicas == 0 {
		c.Replicas = 1
	}
	if c.SteerBurst <= 0 {
		c.SteerBurst = DefaultSteerBurst
	}
	if c.SteerRefill <= 0 {
		c.SteerRefill = DefaultSteerRefill
	}
	if c.SteerTimeout <= 0 {
		c.SteerTimeout = DefaultSteerTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return nil
}

// Hub is one running hub node.
type Hub struct {
	cfg   Config
	log   *slog.Logger
	ns    *server.Server // nil with an external NATS
	nc    *nats.Conn
	js    jetstream.JetStream
	rooms *room.Service
	web   *web.Server
	link  *Link
	http  *http.Server
	ln    net.Listener
	reg   *prometheus.Registry

	metricsLn  net.Listener
	metricsSrv *http.Server

	mu         sync.Mutex
	setupToken string
}

// New returns a hub that Open starts.
func New(cfg Config) (*Hub, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Hub{cfg: cfg, log: cfg.Logger}, nil
}

// Open starts NATS, the log and projection, the bridge link and HTTP. It
// returns once the hub serves requests.
func (h *Hub) Open(ctx context.Context) (err error) {
	defer func() {
		if err != nil {
			h.Close(context.Background())
		}
	}()
	if err := os.MkdirAll(h.cfg.DataDir, 0o700); err != nil {
		return wh.Wrap(err, "create data directory %s", h.cfg.DataDir)
	}
	h.reg = prometheus.NewRegistry()
	h.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	h.link = newLink(h.log, h.reg)
	if h.cfg.NATSURL != "" {
		h.nc, err = nats.Connect(h.cfg.NATSURL, nats.Name("wheelhouse-hub"), nats.MaxReconnects(-1))
		if err != nil {
			return wh.Wrap(err, "connect to NATS at %s", h.cfg.NATSURL)
		}
	} else {
		pass := randomHex(24)
		auth := &authenticator{hubUser: "hub", hubPass: pass, lookup: h.link.lookupBridge, log: h.log}
		h.ns, err = startNATS(h.cfg.NATSAddr, filepath.Join(h.cfg.DataDir, "jetstream"), auth, h.log)
		if err != nil {
			return err
		}
		h.nc, err = nats.Connect("", nats.InProcessServer(h.ns), nats.UserInfo("hub", pass), nats.Name("wheelhouse-hub"), nats.MaxReconnects(-1))
		if err != nil {
			return wh.Wrap(err, "connect to the embedded NATS")
		}
	}
	h.js, err = jetstream.New(h.nc)
	if err != nil {
		return wh.Wrap(err, "JetStream")
	}
	h.rooms, err = room.Open(ctx, room.Config{DataDir: h.cfg.DataDir, JS: h.js, Replicas: h.cfg.Replicas, Now: h.cfg.Now, Logger: h.log})
	if err != nil {
		return err
	}
	h.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "wheelhouse_projection_applied_seq", Help: "Last event applied to this node's read model."},
		func() float64 { return float64(h.rooms.Log.Applied()) }))

	proxies, _ := ParseTrustedProxies(h.cfg.TrustedProxies)
	h.web = web.New(web.Config{
		Rooms:          h.rooms,
		Agents:         h.link.api(),
		Logger:         h.log,
		SetupToken:     h.SetupToken,
		SetupDone:      h.SetupDone,
		Ready:          h.ready,
		OriginPatterns: h.cfg.OriginPatterns,
		QueueSize:      h.cfg.WSQueue,
		Registry:       h.reg,
		SecureCookies:  httpsPublicURL(h.cfg.PublicURL),
		TrustedProxies: proxies,
	})
	h.rooms.Log.OnFeed(h.web.Publish)
	if err := h.link.start(ctx, h); err != nil {
		return err
	}
	if err := h.rooms.Start(ctx); err != nil {
		return err
	}
	// Wait for the projection to catch up before serving.
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for h.rooms.Log.Ready() != nil {
		if err := h.rooms.Log.WaitApplied(wctx, h.rooms.Log.Applied()+1); err != nil {
			return wh.Errorf(wh.EUnavailable, "the projection did not catch up: %v", h.rooms.Log.Ready())
		}
	}
	// Routing and expiry are consumers of the log: start them once the
	// projection they read is current.
	if err := h.link.startRouter(ctx); err != nil {
		return err
	}
	if h.link.enter() {
		go h.link.sweeper()
	}
	has, err := h.rooms.HasUsers(ctx)
	if err != nil {
		return err
	}
	if !has {
		h.mu.Lock()
		h.setupToken = randomHex(16)
		h.mu.Unlock()
	}
	h.ln, err = net.Listen("tcp", h.cfg.HTTPAddr)
	if err != nil {
		return wh.Wrap(err, "listen on %s", h.cfg.HTTPAddr)
	}
	h.http = &http.Server{Handler: h.web.Handler(), ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(h.log.Handler(), slog.LevelWarn)}
	go func() {
		if err := h.http.Serve(h.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			h.log.Error("http server stopped", "err", err)
		}
	}()
	if err := h.startOps(); err != nil {
		return err
	}
	h.log.Info("hub ready", "url", h.URL(), "nats", h.NATSURL(), "data", h.cfg.DataDir)
	return nil
}

// ready reports readiness: a short reason the world may see (details go to
// the log).
func (h *Hub) ready() error {
	if h.nc == nil || !h.nc.IsConnected() {
		return &eventlog.Failure{Reason: "nats-disconnected", Err: errors.New("not connected to NATS")}
	}
	return h.rooms.Log.Ready()
}

// Close shuts down in order: HTTP, WebSockets (1001), NATS drain, NATS
// server, database — under ctx's deadline.
func (h *Hub) Close(ctx context.Context) error {
	h.stopOps(ctx)
	if h.http != nil {
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		h.http.Shutdown(sctx)
		cancel()
	}
	if h.web != nil {
		h.web.Close()
	}
	if h.link != nil {
		h.link.stop()
	}
	if h.rooms != nil {
		h.rooms.Log.Stop()
	}
	if h.nc != nil {
		done := make(chan struct{})
		h.nc.SetClosedHandler(func(*nats.Conn) { close(done) })
		if err := h.nc.Drain(); err == nil {
			select {
			case <-done:
			case <-ctx.Done():
			case <-time.After(5 * time.Second):
			}
		}
		h.nc.Close()
	}
	if h.ns != nil {
		h.ns.Shutdown()
		h.ns.WaitForShutdown()
	}
	if h.rooms != nil {
		return h.rooms.Close()
	}
	return nil
}

// URL is the hub's HTTP base URL.
func (h *Hub) URL() string {
	if h.cfg.PublicURL != "" {
		return h.cfg.PublicURL
	}
	if h.ln == nil {
		return ""
	}
	return "http://" + h.ln.Addr().String()
}

// NATSURL is where bridges connect.
func (h *Hub) NATSURL() string {
	if h.ns != nil {
		return h.ns.ClientURL()
	}
	return h.cfg.NATSURL
}

// SetupToken is the one-time setup token, "" once setup is done.
func (h *Hub) SetupToken() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.setupToken
}

// SetupDone forgets the setup token once the admin exists.
func (h *Hub) SetupDone() {
	h.mu.Lock()
	h.setupToken = ""
	h.mu.Unlock()
}

// Rooms is the chat service (tests and `up` use it).
func (h *Hub) Rooms() *room.Service { return h.rooms }

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
