package hub

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/authz"
	"github.com/wheelhouse-dev/wheelhouse/eventlog"
	"github.com/wheelhouse-dev/wheelhouse/internal/netcork"
	"github.com/wheelhouse-dev/wheelhouse/room"
	"github.com/wheelhouse-dev/wheelhouse/web"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// Defaults for Config.
const (
	DefaultHTTPAddr    = "127.0.0.1:8080"
	DefaultNATSAddr    = "127.0.0.1:4222"
	DefaultBridgeSweep = 30 * time.Second
	DefaultCatchUpLog  = 10 * time.Second
)

// When the embedded JetStream store writes what it acknowledged to disk
// (Config.Sync).
const (
	// SyncInterval: the store writes through the operating system's page
	// cache and syncs every two minutes (nats-server's default). A crash of
	// the hub loses nothing; a power loss or kernel crash on this machine
	// can lose what was acknowledged since the last sync.
	SyncInterval = "interval"
	// SyncAlways: the store syncs before it acknowledges each append.
	SyncAlways = "always"
)

// Config configures one hub node.
type Config struct {
	DataDir  string // SQLite file and (embedded) JetStream store
	HTTPAddr string // host:port to serve HTTP on (port 0: any free port)
	// TLSCert and TLSKey (PEM files) make the hub serve HTTPS itself;
	// without them it serves HTTP (behind a TLS proxy, or on loopback).
	TLSCert, TLSKey string
	// NATSAddr is the embedded NATS server's plain listener (host:port;
	// port 0: any free port). Bridges do not need it: they reach NATS
	// through the hub's /nats endpoint. Keep it on loopback. Ignored with
	// NATSURL.
	NATSAddr string
	// NATSURL connects to an external NATS configured from deploy/nats.conf
	// (JetStream, the hub as its auth callout) instead of embedding one.
	NATSURL string
	// NATSSecrets is the hub-auth.json that `wheelhouse nats-secrets`
	// wrote; required with NATSURL.
	NATSSecrets string
	// NATSWebsocket lists the external NATS servers' websocket listeners
	// (ws://host:port) that /nats forwards bridges to; required with
	// NATSURL.
	NATSWebsocket []string
	// Replicas for the event stream (3 in a cluster).
	Replicas int
	// NATSMaxStore caps the embedded JetStream file store, in bytes (0:
	// nats-server's default, 75% of the disk space free at start). When
	// the event log reaches it, or its disk is nearly full, writes are
	// refused with 507 storage_full and /readyz says event-log-full.
	// Ignored with NATSURL.
	NATSMaxStore int64
	// Sync is when the embedded server's store syncs to disk: SyncInterval
	// (default) or SyncAlways. A NATS cluster is configured in its own
	// files (sync_interval); three replicas cover a single machine's power
	// loss.
	Sync string
	// PublicURL is how people and bridges reach this hub
	// (https://chat.example.com): every URL the hub prints and the pairing
	// command use it. Default: the listen address (this machine's name for
	// a wildcard address).
	PublicURL string
	// OriginPatterns are extra allowed WebSocket origins.
	OriginPatterns []string
	// TrustedProxies are the reverse proxies (addresses or CIDR prefixes)
	// whose X-Forwarded-For and X-Forwarded-Proto the hub believes.
	TrustedProxies []string
	// MetricsAddr serves /metrics on its own listener (host:port); "" is
	// off. The public listener never serves metrics.
	MetricsAddr string
	// WSQueueBytes and WSQueue bound each WebSocket client's outgoing
	// queue in bytes (default 1 MiB) and items (default 8192); a client
	// that falls further behind is closed with 1008 and resumes.
	WSQueueBytes int
	WSQueue      int
	// SteerBurst and SteerRefill rate-limit mentions per sender and agent
	// (defaults DefaultSteerBurst, DefaultSteerRefill).
	SteerBurst  int
	SteerRefill time.Duration
	// SteerTimeout is how long the hub waits for a bridge's receipt before
	// the steer ends "rejected: timeout" (default DefaultSteerTimeout).
	SteerTimeout time.Duration
	// BridgeSweep is how often the hub looks for connections of revoked
	// bridges that were missed and closes them (default
	// DefaultBridgeSweep).
	BridgeSweep time.Duration
	// FileMaxBytes and FileQuota bound one uploaded file and all of one
	// user's files (defaults room.DefaultFileMaxBytes, room.DefaultFileQuota).
	FileMaxBytes, FileQuota int64
	// CatchUpLog is how often the hub logs its progress while its
	// projection catches up at start (default DefaultCatchUpLog).
	CatchUpLog time.Duration
	// HoldProjection, when set, keeps the projector from applying
	// anything until it is closed: tests hold it to watch a hub that is
	// catching up.
	HoldProjection <-chan struct{}
	// WriteTimeout bounds a change from the moment it is asked for to its
	// answer (default web.DefaultWriteTimeout).
	WriteTimeout time.Duration
	// SQLiteWALLimit bounds the SQLite write-ahead log in bytes (default
	// store.DefaultWALLimit): past it a checkpoint empties the file.
	SQLiteWALLimit int64
	// Budgets are the per-person limits (default room.DefaultBudgets);
	// an admin's PUT /settings overrides them.
	Budgets *authz.Budgets
	// SnapshotEvery is how often the hub writes a snapshot of its
	// projection when it has changed (default DefaultSnapshotEvery).
	SnapshotEvery time.Duration
	// Retention is the operator's cutoff for the event log (none by
	// default); see Retention.
	Retention Retention
	Logger    *slog.Logger
	Now       func() time.Time
}

// TLS12Suites are the only TLS 1.2 suites the hub's own listener offers:
// ECDHE with AEAD, no CBC (LUCKY13 and its kin). TLS 1.3 has only AEAD.
var TLS12Suites = []uint16{
	tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
	tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384, tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
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
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return wh.Errorf(wh.EInvalid, "--tls-cert and --tls-key go together: the certificate (chain) and its private key, PEM files")
	}
	if err := checkPublicURL(c.PublicURL); err != nil {
		return wh.Errorf(wh.EInvalid, "%v", err)
	}
	if _, err := ParseTrustedProxies(c.TrustedProxies); err != nil {
		return err
	}
	if c.NATSAddr == "" {
		c.NATSAddr = DefaultNATSAddr
	}
	if c.NATSURL != "" {
		if c.NATSSecrets == "" {
			return wh.Errorf(wh.EInvalid, "--nats-url needs --nats-secrets: the hub-auth.json written by wheelhouse nats-secrets, whose other half configures the NATS servers (see deploy/nats.conf)")
		}
		if _, err := parseWebsocketTargets(c.NATSWebsocket); err != nil {
			return wh.Errorf(wh.EInvalid, "%v", err)
		}
	}
	if c.Replicas == 0 {
		c.Replicas = 1
	}
	if c.WriteTimeout < 0 {
		return wh.Errorf(wh.EInvalid, "--write-timeout must not be negative")
	}
	if c.SQLiteWALLimit < 0 {
		return wh.Errorf(wh.EInvalid, "--sqlite-wal-limit must not be negative")
	}
	if c.NATSMaxStore < 0 {
		return wh.Errorf(wh.EInvalid, "--nats-max-store must not be negative")
	}
	switch c.Sync {
	case "":
		c.Sync = SyncInterval
	case SyncInterval, SyncAlways:
	default:
		return wh.Errorf(wh.EInvalid, "--sync %q: want %s (sync before every acknowledgement) or %s (the default: sync every two minutes)", c.Sync, SyncAlways, SyncInterval)
	}
	if c.NATSURL != "" && c.Sync == SyncAlways {
		return wh.Errorf(wh.EInvalid, "--sync applies to the embedded NATS server; with --nats-url, set sync_interval: always in the NATS servers' configuration (three replicas already survive one machine's power loss)")
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
	if c.BridgeSweep <= 0 {
		c.BridgeSweep = DefaultBridgeSweep
	}
	if c.SnapshotEvery <= 0 {
		c.SnapshotEvery = DefaultSnapshotEvery
	}
	if c.Retention.Age < 0 || c.Retention.Bytes < 0 {
		return wh.Errorf(wh.EInvalid, "--retain-age and --retain-bytes must not be negative")
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
	cfg Config
	log *slog.Logger
	ns  *embeddedNATS // nil with an external NATS
	nc  *nats.Conn    // the hub's bridge-serving connection (the Link's)
	// lognc writes and reads the event log, the login KV and the files;
	// opsnc creates and updates streams and buckets (natsroles.go).
	lognc, opsnc *nats.Conn
	// authnc serves the auth callout; sysnc, in the system account,
	// disconnects revoked bridges.
	authnc, sysnc *nats.Conn
	natsProxy     *natsProxy
	natsSecrets   NATSSecrets
	natsAccount   string // the account the hub (and so its bridges) is in
	hostname      string
	sweepStop     chan struct{}
	sweepDone     chan struct{}
	upkeepStop    chan struct{}
	upkeepDone    chan struct{}
	js            jetstream.JetStream // log-writer
	opsjs         jetstream.JetStream // ops
	rooms         *room.Service
	web           *web.Server
	link          *Link
	http          *http.Server
	ln            net.Listener
	tls           *tls.Config
	reg           *prometheus.Registry

	metricsLn  net.Listener
	metricsSrv *http.Server

	listening chan struct{} // closed once the HTTP listener serves
	serving   atomic.Bool   // caught up and routing: the API is open

	mu         sync.Mutex
	setupToken string
}

// New returns a hub that Open starts.
func New(cfg Config) (*Hub, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Hub{cfg: cfg, log: cfg.Logger, listening: make(chan struct{})}, nil
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
	if err := h.connectNATS(); err != nil {
		return err
	}
	h.js, err = jetstream.New(h.lognc)
	if err != nil {
		return wh.Wrap(err, "JetStream")
	}
	h.opsjs, err = jetstream.New(h.opsnc)
	if err != nil {
		return wh.Wrap(err, "JetStream")
	}
	if h.ns == nil {
		if err := h.waitJetStream(ctx); err != nil {
			return err
		}
	}
	auth, err := h.logAuth(ctx)
	if err != nil {
		return err
	}
	for deadline := time.Now().Add(time.Minute); ; {
		err := h.prepareProjection(ctx, auth)
		if err == nil {
			break
		}
		if !transientJetStream(err) || time.Now().After(deadline) {
			return err
		}
		h.log.Info("JetStream is not ready for the event stream yet; trying again", "err", err)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(500 * time.Millisecond):
		}
	}
	h.rooms, err = room.Open(ctx, room.Config{DataDir: h.cfg.DataDir, JS: h.js, Admin: h.opsjs, Auth: auth, Replicas: h.cfg.Replicas, Now: h.cfg.Now, Logger: h.log,
		FileMaxBytes: h.cfg.FileMaxBytes, FileQuota: h.cfg.FileQuota, Capacity: h.storeCapacity,
		Budgets: h.cfg.Budgets, WALLimit: h.cfg.SQLiteWALLimit, Hold: h.cfg.HoldProjection})
	if err != nil {
		return err
	}
	h.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "wheelhouse_projection_applied_seq", Help: "Last event applied to this node's read model."},
		func() float64 { return float64(h.rooms.Log.Applied()) }))
	h.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "wheelhouse_projection_batches_total", Help: "Transactions the projector committed (every waiting event joins one)."},
		func() float64 { b, _ := h.rooms.Log.Batches(); return float64(b) }))
	h.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "wheelhouse_projection_events_total", Help: "Events the projector applied."},
		func() float64 { _, e := h.rooms.Log.Batches(); return float64(e) }))
	h.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "wheelhouse_projection_unauthentic_events_total", Help: "Entries of the event log that were not the hub's own events (no valid MAC): refused, never applied."},
		func() float64 { return float64(h.rooms.Log.Forged()) }))
	h.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "wheelhouse_projection_reapplied_batches_total", Help: "Batches applied again with a savepoint per event because one of their events was refused."},
		func() float64 { return float64(h.rooms.SavepointRuns()) }))
	h.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "wheelhouse_sqlite_wal_bytes", Help: "Size of this node's SQLite write-ahead log file."},
		func() float64 { return float64(h.rooms.DB().WALBytes()) }))
	h.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "wheelhouse_sqlite_wal_limit_bytes", Help: "The size past which a checkpoint empties the write-ahead log (--sqlite-wal-limit)."},
		func() float64 { return float64(h.rooms.DB().WALLimit()) }))
	h.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "wheelhouse_sqlite_wal_truncations_total", Help: "Checkpoints that emptied the write-ahead log because it passed its limit."},
		func() float64 { n, _ := h.rooms.DB().Truncations(); return float64(n) }))

	proxies, _ := ParseTrustedProxies(h.cfg.TrustedProxies)
	h.web = web.New(web.Config{
		Rooms:          h.rooms,
		Agents:         h.link.api(),
		Logger:         h.log,
		SetupToken:     h.SetupToken,
		SetupDone:      h.SetupDone,
		Ready:          h.ready,
		Gate:           h.gate,
		WriteTimeout:   h.cfg.WriteTimeout,
		OriginPatterns: h.cfg.OriginPatterns,
		QueueSize:      h.cfg.WSQueue,
		QueueBytes:     h.cfg.WSQueueBytes,
		Registry:       h.reg,
		SecureCookies:  httpsPublicURL(h.cfg.PublicURL),
		TrustedProxies: proxies,
	})
	h.rooms.Log.OnFeed(h.web.Publish)
	if err := h.link.start(ctx, h); err != nil {
		return err
	}
	if err := h.startLog(ctx); err != nil {
		return err
	}
	if err := h.serveCallout(); err != nil {
		return err
	}
	h.sweepStop, h.sweepDone = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(h.sweepDone)
		h.sweepBridges(h.cfg.BridgeSweep, h.sweepStop)
	}()
	// Serve at once: while the projection catches up, /readyz says so
	// with its progress, /metrics and the UI's files are served, and the
	// API answers 503 catching-up (the gate).
	if err := h.startOps(); err != nil {
		return err
	}
	if err := h.listen(); err != nil {
		return err
	}
	if err := h.catchUp(ctx); err != nil {
		return err
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
	if h.ns != nil {
		if err := h.writeOpsAccess(); err != nil {
			return err
		}
	}
	// Snapshots and retention read the caught-up projection.
	h.upkeepStop, h.upkeepDone = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(h.upkeepDone)
		h.upkeep(h.upkeepStop)
	}()
	h.serving.Store(true)
	h.log.Info("hub ready", "url", h.URL(), "bridges", h.NATSURL(), "data", h.cfg.DataDir)
	return nil
}

// listen opens the HTTP listener and serves on it, behind the gate.
func (h *Hub) listen() (err error) {
	if h.cfg.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(h.cfg.TLSCert, h.cfg.TLSKey)
		if err != nil {
			return wh.Errorf(wh.EInvalid, "--tls-cert/--tls-key: %v", err)
		}
		h.tls = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}, CipherSuites: TLS12Suites}
	}
	ln, err := net.Listen("tcp", h.cfg.HTTPAddr)
	if err != nil {
		return wh.Wrap(err, "listen on %s", h.cfg.HTTPAddr)
	}
	h.hostname, _ = os.Hostname()
	if h.hostname == "" {
		h.hostname = "localhost"
	}
	// Connections are corkable: a WebSocket writer sends a lagging
	// client's queued frames in one write.
	h.ln = netcork.Listener{Listener: ln}
	if w := h.URLWarning(); w != "" {
		h.log.Warn(w)
	}
	mux := http.NewServeMux()
	mux.Handle(wire.NATSPath, h.gateBridges(h.natsProxy))
	mux.Handle("/", h.web.Handler())
	h.http = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, TLSConfig: h.tls, ErrorLog: slog.NewLogLogger(h.log.Handler(), slog.LevelWarn),
		ConnContext: netcork.ConnContext}
	go func() {
		var err error
		if h.tls != nil {
			err = h.http.ServeTLS(h.ln, "", "")
		} else {
			err = h.http.Serve(h.ln)
		}
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			h.log.Error("http server stopped", "err", err)
		}
	}()
	close(h.listening)
	h.log.Info("hub listening", "url", h.URL())
	return nil
}

// ready reports readiness: a short reason the world may see (details go to
// the log).
func (h *Hub) ready() error {
	if h.nc == nil || !h.nc.IsConnected() || !h.lognc.IsConnected() {
		return &eventlog.Failure{Reason: "nats-disconnected", Err: errors.New("not connected to NATS")}
	}
	if err := h.rooms.Log.Ready(); err != nil {
		return err
	}
	if !h.serving.Load() {
		// Caught up, and starting the router.
		a := h.rooms.Log.Applied()
		return &eventlog.Failure{Reason: eventlog.ReasonCatchingUp, Applied: a, Of: a, Err: errors.New("starting the router")}
	}
	return nil
}

// Listening is closed once the HTTP listener serves (before Open returns,
// while the projection catches up).
func (h *Hub) Listening() <-chan struct{} { return h.listening }

// gate is why the API cannot answer yet (nil once the hub serves): the
// projection is catching up, and nothing read from it would be current.
func (h *Hub) gate() error {
	if h.serving.Load() {
		return nil
	}
	msg := "the hub is starting: it is catching up with its event log"
	var f *eventlog.Failure
	if errors.As(h.rooms.Log.Ready(), &f) && f.Reason == eventlog.ReasonCatchingUp {
		msg = fmt.Sprintf("%s (%d of %d events applied)", msg, f.Applied, f.Of)
	}
	e := wh.Errorf(wh.EUnavailable, "%s; try again in a few seconds", msg)
	e.Reason = eventlog.ReasonCatchingUp
	return e
}

// gateBridges keeps bridges out while the projection catches up: what
// they announce is checked against it.
func (h *Hub) gateBridges(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h.gate(); err != nil {
			w.Header().Set("Retry-After", web.RetryAfterCatchingUp)
			http.Error(w, wh.ErrorMessage(err), http.StatusServiceUnavailable)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// catchUp waits, however long it takes, until the projection has applied
// what the stream held at start, logging its progress.
func (h *Hub) catchUp(ctx context.Context) error {
	every := h.cfg.CatchUpLog
	if every <= 0 {
		every = DefaultCatchUpLog
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	start, from := time.Now(), h.rooms.Log.Applied()
	logged := false
	for {
		// The channel first: a batch applied between the check and the
		// wait (the last one, with no event after it) still wakes us.
		changed := h.rooms.Log.Changed()
		notReady := h.rooms.Log.Ready()
		if notReady == nil {
			if logged {
				n := h.rooms.Log.Applied() - from
				h.log.Info("the projection caught up", "events", n, "took", time.Since(start).Round(time.Millisecond),
					"events_per_second", int(float64(n)/max(time.Since(start).Seconds(), 1e-3)))
			}
			return nil
		}
		select {
		case <-changed:
		case <-tick.C:
			logged = true
			var f *eventlog.Failure
			if errors.As(notReady, &f) && f.Reason == eventlog.ReasonCatchingUp {
				n := f.Applied - from
				h.log.Info("catching up the projection", "applied", f.Applied, "of", f.Of,
					"events_per_second", int(float64(n)/max(time.Since(start).Seconds(), 1e-3)))
			} else {
				h.log.Warn("waiting for the event log before serving", "err", notReady)
			}
		case <-ctx.Done():
			return wh.Errorf(wh.EUnavailable, "stopped while the projection was catching up: %v", notReady)
		}
	}
}

// diskReserve is the space the embedded store leaves free on its disk:
// more than the largest message and the store's own bookkeeping.
const diskReserve = 16 << 20

// storeCapacity is the embedded JetStream store's use and limit: its
// configured limit, or less when its disk fills first (other files, the
// SQLite projection). nats-server stops storing into a stream whose write
// failed for want of space until it restarts, so the hub refuses writes
// before the disk is full.
func (h *Hub) storeCapacity() (used, limit uint64, ok bool) {
	if h.ns == nil {
		return 0, 0, false
	}
	info, err := h.ns.ns.Jsz(nil)
	if err != nil || info.Config.MaxStore <= 0 {
		return 0, 0, false
	}
	used, limit = info.Store, uint64(info.Config.MaxStore)
	if free, ok := diskFree(h.ns.ns.StoreDir()); ok {
		room := uint64(0)
		if free > diskReserve {
			room = free - diskReserve
		}
		limit = min(limit, used+room)
	}
	return used, limit, true
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
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		h.web.Close(wctx)
		cancel()
	}
	if h.link != nil {
		h.link.stop()
	}
	if h.sweepStop != nil {
		close(h.sweepStop)
		<-h.sweepDone
	}
	if h.upkeepStop != nil {
		close(h.upkeepStop)
		<-h.upkeepDone
	}
	if h.ns != nil {
		os.Remove(filepath.Join(h.cfg.DataDir, OpsAccessFile))
	}
	if h.rooms != nil {
		h.rooms.Log.Stop()
	}
	for _, c := range []*nats.Conn{h.authnc, h.sysnc} {
		if c != nil {
			c.Close()
		}
	}
	for _, c := range []*nats.Conn{h.nc, h.lognc, h.opsnc} {
		if c == nil {
			continue
		}
		done := make(chan struct{})
		c.SetClosedHandler(func(*nats.Conn) { close(done) })
		if err := c.Drain(); err == nil {
			select {
			case <-done:
			case <-ctx.Done():
			case <-time.After(5 * time.Second):
			}
		}
		c.Close()
	}
	if h.ns != nil {
		h.ns.ns.Shutdown()
		h.ns.ns.WaitForShutdown()
	}
	if h.rooms != nil {
		return h.rooms.Close()
	}
	return nil
}

// URL is the hub's base URL for people and bridges: --public-url, or the
// listen address (this machine's name for a wildcard address).
func (h *Hub) URL() string {
	if h.ln == nil && h.cfg.PublicURL == "" {
		return ""
	}
	var addr net.Addr
	if h.ln != nil {
		addr = h.ln.Addr()
	}
	return publicURL(h.cfg.PublicURL, addr, h.tls != nil, h.hostname)
}

// LocalURL is the hub's URL on this machine: the listener's address,
// loopback for a wildcard (what `wheelhouse up`'s own bridge uses).
func (h *Hub) LocalURL() string {
	if h.ln == nil {
		return ""
	}
	scheme := "http"
	if h.tls != nil {
		scheme = "https"
	}
	host, port, _ := net.SplitHostPort(h.ln.Addr().String())
	if isWildcard(host) {
		host = "127.0.0.1"
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}

// URLWarning explains what people and bridges on other machines will
// meet at the printed URL, when it is not what they can use: a wildcard
// listen address with no --public-url (the hub prints this machine's
// name), or a plaintext URL that is not loopback (bridges refuse it). ""
// otherwise.
func (h *Hub) URLWarning() string {
	if h.ln == nil {
		return ""
	}
	if h.cfg.PublicURL == "" {
		if host, _, _ := net.SplitHostPort(h.ln.Addr().String()); isWildcard(host) {
			return fmt.Sprintf("listening on every interface (%s) without --public-url: printed URLs and pairing commands use this machine's name, %s; set --public-url to the URL teammates use", h.ln.Addr(), h.URL())
		}
	}
	if u, err := wire.ParseHubURL(h.URL()); err == nil && u.Scheme == "http" && !wire.IsLoopbackHost(u.Host) {
		return fmt.Sprintf("%s is plaintext: bridges on other machines refuse it unless paired with --insecure. Serve HTTPS (--tls-cert/--tls-key), or put a TLS proxy in front and set --public-url https://…", h.URL())
	}
	return ""
}

// NATSURL is where bridges reach NATS: the hub's own /nats endpoint.
func (h *Hub) NATSURL() string {
	u, err := wire.NATSURL(h.URL())
	if err != nil {
		return ""
	}
	return u
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
