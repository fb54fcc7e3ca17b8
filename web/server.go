package web

import (
	"context"
	"crypto/subtle"
	"errors"
	"log/slog"
	"net/http"
	"net/netip"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/chat"
	"github.com/wheelhouse-dev/wheelhouse/eventlog"
	"github.com/wheelhouse-dev/wheelhouse/room"
)

// Config configures the web server.
type Config struct {
	Rooms *room.Service
	// Agents is the steering surface (agents, consent, approvals); nil
	// until the hub wires it.
	Agents AgentAPI
	Logger *slog.Logger
	// SetupToken returns the one-time setup token ("" once used).
	SetupToken func() string
	// SetupDone is called after setup succeeded.
	SetupDone func()
	// Ready reports readiness (NATS connected, projection caught up).
	Ready func() error
	// Gate, while it returns an error, answers every API request with it
	// (and Retry-After): the hub is catching up and nothing it would read
	// is current. /readyz, /healthz and the UI's files are served.
	Gate func() error
	// WriteTimeout bounds a change (a post, a decision…) from the moment
	// it is asked for to its answer (default DefaultWriteTimeout): an
	// event log that cannot take it in time answers 503.
	WriteTimeout time.Duration
	// OriginPatterns are extra allowed WebSocket origins (host patterns);
	// the request's own host is always allowed.
	OriginPatterns []string
	// QueueBytes and QueueSize bound each WebSocket client's outgoing
	// queue, in bytes (default 1 MiB) and in items (default 8192).
	QueueBytes int
	QueueSize  int
	// SecureCookies marks the session cookie Secure (and __Host-) on every
	// request: the hub's public URL is https. Without it, a request over
	// TLS, or one a trusted proxy says came over TLS, gets one anyway.
	SecureCookies bool
	// TrustedProxies are the reverse proxies whose X-Forwarded-For and
	// X-Forwarded-Proto count; from anyone else those headers are ignored.
	TrustedProxies []netip.Prefix
	// Registry collects the metrics MetricsHandler serves (on its own
	// listener: the API's listener does not serve them).
	Registry *prometheus.Registry
}

// Server is the HTTP surface of a hub node.
type Server struct {
	notReady atomic.Pointer[string] // the last /readyz reason logged
	cfg      Config
	rooms    *room.Service
	agents   AgentAPI
	log      *slog.Logger
	broker   *broker
	handler  http.Handler
	metrics  *metrics

	mu      sync.Mutex
	conns   map[*wsConn]struct{}
	closing bool           // no new socket requests
	reqs    sync.WaitGroup // socket requests under way
	// cop refuses cross-origin changes: HTTP requests, and the requests of
	// a socket opened cross-origin.
	cop *http.CrossOriginProtection
}

var errCrossOrigin = wh.Errorf(wh.EForbidden, "cross-origin request refused: use the Wheelhouse page itself, or an API token")

// mayChange reports whether r's client may make changes: a change sent the
// way r came would pass the cross-origin protection. A socket whose
// upgrade would not (another site, or an origin allowed only to read the
// live events) reads, and has its requests refused.
func (s *Server) mayChange(r *http.Request) bool {
	post := r.Clone(r.Context())
	post.Method = http.MethodPost
	return s.cop.Check(post) == nil
}

// New builds the server; call Publish from the room log's feed.
func New(cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = defaultQueueItems
	}
	if cfg.QueueBytes <= 0 {
		cfg.QueueBytes = defaultQueueBytes
	}
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
	}
	s := &Server{cfg: cfg, rooms: cfg.Rooms, agents: cfg.Agents, log: cfg.Logger, conns: map[*wsConn]struct{}{}}
	s.metrics = newMetrics(cfg.Registry, cfg.Rooms)
	s.broker = newBroker(s.metrics)
	s.handler = s.routes()
	return s
}

// Handler is the root handler.
func (s *Server) Handler() http.Handler { return s.handler }

// Publish hands projected feed items to live clients, and closes the
// sockets whose credentials an item ended.
func (s *Server) Publish(items []chat.FeedItem) {
	for i := range items {
		if a := items[i].Access; a != nil && len(a.Ended) > 0 {
			s.endSockets(a)
		}
	}
	s.broker.publish(items)
}

// MetricsHandler serves the Prometheus metrics (the hub puts it on its
// own listen address, never on the API's).
func (s *Server) MetricsHandler() http.Handler {
	return promhttp.HandlerFor(s.cfg.Registry, promhttp.HandlerOpts{})
}

// Close closes every WebSocket with 1001 (going away), then waits until
// the sockets are closed and the requests they had under way carried out,
// or ctx ends.
func (s *Server) Close(ctx context.Context) {
	s.mu.Lock()
	s.closing = true
	conns := make([]*wsConn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	// At once: a client that does not answer the close handshake holds
	// its own close for seconds, not everyone's.
	var closing sync.WaitGroup
	for _, c := range conns {
		closing.Go(c.goingAway)
	}
	done := make(chan struct{})
	go func() { closing.Wait(); s.reqs.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

type handlerFunc func(w http.ResponseWriter, r *http.Request) error
type authedFunc func(w http.ResponseWriter, r *http.Request, u *chat.User) error

func (s *Server) wrap(h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			writeError(w, r, s.log, err)
		}
	})
}

// IdempotencyHeader names the client's retry key on creates and posts.
const IdempotencyHeader = "Idempotency-Key"

// secretRoutes answer with a secret shown once: a retry cannot return the
// first answer, so they refuse an idempotency key rather than pretend.
var secretRoutes = map[string]bool{
	"POST /api/v1/tokens":                      true,
	"POST /api/v1/bridges/pairing-tokens":      true,
	"POST /api/v1/sessions":                    true,
	"POST /api/v1/setup":                       true,
	"POST /api/v1/bridges/pair":                true,
	"POST /api/v1/users/{name}/password-reset": true,
	"POST /api/v1/password-reset":              true,
}

// DefaultWriteTimeout bounds a change a client asked for once it is under
// way (Config.WriteTimeout): past it the client gets a 503, never a wait.
const DefaultWriteTimeout = 10 * time.Second

// writeTimeout is the configured bound on a change.
func (s *Server) writeTimeout() time.Duration {
	if s.cfg.WriteTimeout > 0 {
		return s.cfg.WriteTimeout
	}
	return DefaultWriteTimeout
}

func (s *Server) authed(h authedFunc) http.Handler {
	return s.wrap(func(w http.ResponseWriter, r *http.Request) error {
		secret, legacy := secretFrom(r)
		u, err := s.rooms.Authenticate(r.Context(), secret)
		if err != nil {
			return err
		}
		if legacy && s.secure(r) {
			// A cookie from before the hub knew it was behind TLS:
			// carry the session over to the __Host- cookie.
			s.setSession(w, r, secret, chat.SessionTTL)
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			// A change, once asked for, is carried out whether or not the
			// client waits for the answer: no half-done writes.
			ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), s.writeTimeout())
			defer cancel()
			r = r.WithContext(ctx)
		}
		if key := r.Header.Get(IdempotencyHeader); key != "" && r.Method != http.MethodGet {
			if secretRoutes[r.Pattern] {
				return errSecretRetry
			}
			// A retry from the same user of the same request, within the
			// log's deduplication window, gets the first answer.
			ctx, err := room.WithIdempotencyKey(r.Context(), u.Name, r.Method+" "+r.URL.Path, key)
			if err != nil {
				return err
			}
			r = r.WithContext(ctx)
		}
		return h(w, r, u)
	})
}

var errSecretRetry = wh.Errorf(wh.EInvalid, "this request returns a secret that is shown once, so it cannot be retried with an Idempotency-Key: send it without one (a retry creates another; revoke the spare)")

// noRetryKey refuses an idempotency key on the unauthenticated secret routes.
func noRetryKey(h handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		if r.Header.Get(IdempotencyHeader) != "" {
			return errSecretRetry
		}
		return h(w, r)
	}
}

// user authenticates r (for handlers that cannot go through authed).
func (s *Server) user(r *http.Request) (*chat.User, error) {
	secret, _ := secretFrom(r)
	return s.rooms.Authenticate(r.Context(), secret)
}

// credential is the hash of the credential r was authenticated with.
func credential(r *http.Request) string {
	secret, _ := secretFrom(r)
	return room.HashSecret(secret)
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	api := func(pattern string, h http.Handler) { mux.Handle(pattern, h) }

	api("GET /api/v1/setup", s.wrap(s.getSetup))
	api("POST /api/v1/setup", s.wrap(noRetryKey(s.postSetup)))
	api("POST /api/v1/sessions", s.wrap(noRetryKey(s.postSession)))
	api("DELETE /api/v1/sessions", s.wrap(s.deleteSession))
	s.peopleRoutes(mux)
	api("GET /api/v1/me", s.authed(s.getMe))
	api("GET /api/v1/users", s.authed(s.getUsers))
	api("POST /api/v1/users", s.authed(s.postUser))
	api("POST /api/v1/tokens", s.authed(s.postToken))
	api("GET /api/v1/tokens", s.authed(s.getTokens))
	api("DELETE /api/v1/tokens/{id}", s.authed(s.deleteToken))

	api("GET /api/v1/rooms", s.authed(s.getRooms))
	api("POST /api/v1/rooms", s.authed(s.postRoom))
	api("GET /api/v1/rooms/{room}", s.authed(s.getRoom))
	api("PATCH /api/v1/rooms/{room}", s.authed(s.patchRoom))
	api("GET /api/v1/rooms/{room}/members", s.authed(s.getMembers))
	api("POST /api/v1/rooms/{room}/members", s.authed(s.postMember))
	api("DELETE /api/v1/rooms/{room}/members/{user}", s.authed(s.deleteMember))
	api("GET /api/v1/rooms/{room}/messages", s.authed(s.getMessages))
	api("POST /api/v1/rooms/{room}/messages", s.authed(s.postMessage))
	api("POST /api/v1/dms", s.authed(s.postDM))
	api("GET /api/v1/events", s.authed(s.events))
	s.agentRoutes(mux)
	s.chatRoutes(mux)

	mux.Handle("/api/", s.wrap(func(w http.ResponseWriter, r *http.Request) error {
		return wh.Errorf(wh.ENotFound, "no API endpoint %s %s; see docs/api.md", r.Method, r.URL.Path)
	}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.Ready != nil {
			if err := s.cfg.Ready(); err != nil {
				// A short reason code for the world; the detail is logged.
				reason := readyReason(err)
				// Logged when the reason changes, not on every probe.
				if old := s.notReady.Swap(&reason); old == nil || *old != reason {
					s.log.Warn("not ready", "reason", reason, "err", err)
				}
				body := map[string]any{"status": "not ready", "reason": reason}
				var f *eventlog.Failure
				if errors.As(err, &f) && f.Reason == eventlog.ReasonCatchingUp {
					// Progress: the events applied of those to catch up.
					body["applied"], body["of"] = f.Applied, f.Of
				}
				writeJSON(w, http.StatusServiceUnavailable, body)
				return
			}
		}
		if s.notReady.Swap(nil) != nil {
			s.log.Info("ready again")
		}
		writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	})
	mux.Handle("GET /metrics", s.wrap(func(w http.ResponseWriter, r *http.Request) error {
		return wh.Errorf(wh.ENotFound, "metrics are not served here: start the hub with --metrics ADDR and scrape that address")
	}))
	mux.Handle("/", staticHandler())

	var h http.Handler = mux
	if s.cfg.Gate != nil {
		h = s.gated(mux)
	}

	s.cop = http.NewCrossOriginProtection()
	s.cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, s.log, errCrossOrigin)
	}))
	return s.metrics.instrument(securityHeaders(s.cop.Handler(h)))
}

// RetryAfterCatchingUp is the Retry-After (seconds) of an answer refused
// while the hub catches up.
const RetryAfterCatchingUp = "5"

// gated answers API requests with the gate's error while it has one.
func (s *Server) gated(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/api/") {
			if err := s.cfg.Gate(); err != nil {
				w.Header().Set("Retry-After", RetryAfterCatchingUp)
				var b ErrorBody // not logged: every request until the hub serves
				b.Error.Code, b.Error.Message, b.Error.Reason = wh.ErrorCode(err), wh.ErrorMessage(err), wh.ErrorReason(err)
				writeJSON(w, HTTPStatus(b.Error.Code), b)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// readyReason is the reason code /readyz shows: a failure's own code when
// it is one (lowercase words and dashes), never an error's text.
func readyReason(err error) string {
	var f *eventlog.Failure
	if errors.As(err, &f) && reasonCode.MatchString(f.Reason) {
		return f.Reason
	}
	return "not-ready"
}

var reasonCode = regexp.MustCompile(`^[a-z][a-z0-9-]{0,39}$`)

func securityHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "same-origin")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'")
		if r.TLS != nil { // the hub's own TLS listener: browsers keep to https (a proxy in front sets its own)
			hd.Set("Strict-Transport-Security", "max-age=31536000")
		}
		h.ServeHTTP(w, r)
	})
}

func (s *Server) getSetup(w http.ResponseWriter, r *http.Request) error {
	has, err := s.rooms.HasUsers(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]bool{"needed": !has})
	return nil
}

func (s *Server) postSetup(w http.ResponseWriter, r *http.Request) error {
	var in struct {
		Token    string `json:"token"`
		Name     string `json:"name"`
		Password string `json:"password"`
	}
	if err := decode(w, r, &in); err != nil {
		return err
	}
	has, err := s.rooms.HasUsers(r.Context())
	if err != nil {
		return err
	}
	want := ""
	if s.cfg.SetupToken != nil {
		want = s.cfg.SetupToken()
	}
	if has || want == "" {
		return wh.Errorf(wh.EConflict, "setup is already done: log in instead")
	}
	if subtle.ConstantTimeCompare([]byte(in.Token), []byte(want)) != 1 {
		return wh.Errorf(wh.EForbidden, "wrong setup token: use the one the hub printed when it started")
	}
	u, err := s.rooms.Setup(r.Context(), in.Name, in.Password)
	if err != nil {
		return err
	}
	if s.cfg.SetupDone != nil {
		s.cfg.SetupDone()
	}
	from := s.loginClient(r)
	secret, _, err := s.rooms.Login(r.Context(), in.Name, in.Password, from)
	if err != nil {
		return err
	}
	s.setSession(w, r, secret, chat.SessionTTL)
	s.keepDevice(w, r, from)
	writeJSON(w, http.StatusCreated, map[string]any{"user": u})
	return nil
}

func (s *Server) postSession(w http.ResponseWriter, r *http.Request) error {
	var in struct {
		Name     string `json:"name"`
		Password string `json:"password"`
	}
	if err := decode(w, r, &in); err != nil {
		return err
	}
	from := s.loginClient(r)
	secret, u, err := s.rooms.Login(r.Context(), in.Name, in.Password, from)
	if err != nil {
		return err
	}
	s.setSession(w, r, secret, chat.SessionTTL)
	s.keepDevice(w, r, from)
	writeJSON(w, http.StatusCreated, map[string]any{"user": u})
	return nil
}

func (s *Server) deleteSession(w http.ResponseWriter, r *http.Request) error {
	if secret, _ := secretFrom(r); secret != "" {
		// Carried out even if the client hangs up.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), s.writeTimeout())
		defer cancel()
		if err := s.rooms.Revoke(ctx, secret, chat.EndLogout); err != nil {
			return err
		}
	}
	s.clearSession(w, r)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) getMe(w http.ResponseWriter, r *http.Request, u *chat.User) error {
	// head is the last event this node has applied: a client that loads
	// history now and then connects with since=head misses nothing.
	writeJSON(w, http.StatusOK, map[string]any{"user": u, "head": s.rooms.Log.Applied()})
	return nil
}

func (s *Server) getUsers(w http.ResponseWriter, r *http.Request, u *chat.User) error {
	us, err := s.rooms.Users(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"users": us})
	return nil
}

func (s *Server) postUser(w http.ResponseWriter, r *http.Request, u *chat.User) error {
	var in struct {
		Name     string `json:"name"`
		Display  string `json:"display"`
		Password string `json:"password"`
		Admin    bool   `json:"admin"`
	}
	if err := decode(w, r, &in); err != nil {
		return err
	}
	nu, err := s.rooms.CreateUser(r.Context(), u, in.Name, in.Display, in.Password, in.Admin)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, map[string]any{"user": nu})
	return nil
}

func (s *Server) getTokens(w http.ResponseWriter, r *http.Request, u *chat.User) error {
	ts, err := s.rooms.Tokens(r.Context(), u)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"tokens": ts})
	return nil
}

func (s *Server) deleteToken(w http.ResponseWriter, r *http.Request, u *chat.User) error {
	if err := s.rooms.RevokeToken(r.Context(), u, r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) postToken(w http.ResponseWriter, r *http.Request, u *chat.User) error {
	var in struct {
		Label string `json:"label"`
	}
	if err := decode(w, r, &in); err != nil {
		return err
	}
	tok, err := s.rooms.CreateToken(r.Context(), u, in.Label)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, map[string]any{"token": tok, "label": in.Label})
	return nil
}
