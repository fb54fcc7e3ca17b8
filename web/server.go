package web

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/chat"
	"github.com/wheelhouse-dev/wheelhouse/eventlog"
	"github.com/wheelhouse-dev/wheelhouse/room"
)

// SessionCookie is the browser session cookie's name.
const SessionCookie = "wh_session"

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
	// OriginPatterns are extra allowed WebSocket origins (host patterns);
	// the request's own host is always allowed.
	OriginPatterns []string
	// QueueBytes and QueueSize bound each WebSocket client's outgoing
	// queue, in bytes (default 1 MiB) and in items (default 8192).
	QueueBytes int
	QueueSize  int
	// SecureCookies marks cookies Secure (behind TLS).
	SecureCookies bool
	Registry      *prometheus.Registry
}

// Server is the HTTP surface of a hub node.
type Server struct {
	cfg     Config
	rooms   *room.Service
	agents  AgentAPI
	log     *slog.Logger
	broker  *broker
	handler http.Handler
	metrics *metrics
	logins  *throttle

	mu    sync.Mutex
	conns map[*wsConn]struct{}
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
	s.metrics = newMetrics(cfg.Registry)
	s.logins = newThrottle(time.Now)
	s.broker = newBroker(s.metrics)
	s.handler = s.routes()
	return s
}

// Handler is the root handler.
func (s *Server) Handler() http.Handler { return s.handler }

// Publish hands projected feed items to live clients.
func (s *Server) Publish(items []chat.FeedItem) { s.broker.publish(items) }

// Close closes every WebSocket with 1001 (going away).
func (s *Server) Close() {
	s.mu.Lock()
	conns := make([]*wsConn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.goingAway()
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
	"POST /api/v1/tokens":                 true,
	"POST /api/v1/bridges/pairing-tokens": true,
	"POST /api/v1/sessions":               true,
	"POST /api/v1/setup":                  true,
	"POST /api/v1/bridges/pair":           true,
}

// writeTimeout bounds a change a client asked for once it is under way.
const writeTimeout = 30 * time.Second

func (s *Server) authed(h authedFunc) http.Handler {
	return s.wrap(func(w http.ResponseWriter, r *http.Request) error {
		u, err := s.user(r)
		if err != nil {
			return err
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			// A change, once asked for, is carried out whether or not the
			// client waits for the answer: no half-done writes.
			ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), writeTimeout)
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

func secretFrom(r *http.Request) string {
	if a := r.Header.Get("Authorization"); a != "" {
		if tok, ok := strings.CutPrefix(a, "Bearer "); ok {
			return strings.TrimSpace(tok)
		}
		return ""
	}
	if c, err := r.Cookie(SessionCookie); err == nil {
		return c.Value
	}
	return ""
}

func (s *Server) user(r *http.Request) (*chat.User, error) {
	return s.rooms.Authenticate(r.Context(), secretFrom(r))
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	api := func(pattern string, h http.Handler) { mux.Handle(pattern, h) }

	api("GET /api/v1/setup", s.wrap(s.getSetup))
	api("POST /api/v1/setup", s.wrap(noRetryKey(s.postSetup)))
	api("POST /api/v1/sessions", s.wrap(noRetryKey(s.postSession)))
	api("DELETE /api/v1/sessions", s.wrap(s.deleteSession))
	api("GET /api/v1/me", s.authed(s.getMe))
	api("GET /api/v1/users", s.authed(s.getUsers))
	api("POST /api/v1/users", s.authed(s.postUser))
	api("POST /api/v1/tokens", s.authed(s.postToken))
	api("GET /api/v1/tokens", s.authed(s.getTokens))
	api("DELETE /api/v1/tokens/{id}", s.authed(s.deleteToken))

	api("GET /api/v1/rooms", s.authed(s.getRooms))
	api("POST /api/v1/rooms", s.authed(s.postRoom))
	api("GET /api/v1/rooms/{room}", s.authed(s.getRoom))
	api("GET /api/v1/rooms/{room}/members", s.authed(s.getMembers))
	api("POST /api/v1/rooms/{room}/members", s.authed(s.postMember))
	api("DELETE /api/v1/rooms/{room}/members/{user}", s.authed(s.deleteMember))
	api("GET /api/v1/rooms/{room}/messages", s.authed(s.getMessages))
	api("POST /api/v1/rooms/{room}/messages", s.authed(s.postMessage))
	api("POST /api/v1/dms", s.authed(s.postDM))
	api("GET /api/v1/events", s.authed(s.events))
	s.agentRoutes(mux)

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
				reason := "not-ready"
				var f *eventlog.Failure
				if errors.As(err, &f) {
					reason = f.Reason
				}
				s.log.Warn("not ready", "reason", reason, "err", err)
				writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "not ready", "reason": reason})
				return
			}
		}
		writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.cfg.Registry, promhttp.HandlerOpts{}))
	mux.Handle("/", staticHandler())

	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, s.log, wh.Errorf(wh.EForbidden, "cross-origin request refused: use the Wheelhouse page itself, or an API token"))
	}))
	return s.metrics.instrument(securityHeaders(cop.Handler(mux)))
}

func securityHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "same-origin")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'")
		h.ServeHTTP(w, r)
	})
}

func (s *Server) setCookie(w http.ResponseWriter, secret string, maxAge time.Duration) {
	http.SetCookie(w, &http.Cookie{
		Name: SessionCookie, Value: secret, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteLaxMode, Secure: s.cfg.SecureCookies, MaxAge: int(maxAge.Seconds()),
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
	secret, _, err := s.rooms.Login(r.Context(), in.Name, in.Password)
	if err != nil {
		return err
	}
	s.setCookie(w, secret, chat.SessionTTL)
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
	if d := s.logins.locked(in.Name); d > 0 {
		return &wh.Error{Code: wh.ERateLimited, Message: fmt.Sprintf("too many wrong passwords for this name; try again in %d seconds", int(d.Seconds())+1)}
	}
	secret, u, err := s.rooms.Login(r.Context(), in.Name, in.Password)
	if wh.ErrorCode(err) == wh.EUnauthenticated {
		s.logins.fail(in.Name)
	}
	if err != nil {
		return err
	}
	s.logins.succeed(in.Name)
	s.setCookie(w, secret, chat.SessionTTL)
	writeJSON(w, http.StatusCreated, map[string]any{"user": u})
	return nil
}

func (s *Server) deleteSession(w http.ResponseWriter, r *http.Request) error {
	if secret := secretFrom(r); secret != "" {
		if err := s.rooms.Revoke(r.Context(), secret); err != nil {
			return err
		}
	}
	s.setCookie(w, "", -time.Second)
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
