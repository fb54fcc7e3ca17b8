package room

import (
	"context"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/authz"
	"github.com/wheelhouse-dev/wheelhouse/chat"
	"github.com/wheelhouse-dev/wheelhouse/eventlog"
	"github.com/wheelhouse-dev/wheelhouse/store"
)

// Config configures a Service.
type Config struct {
	DataDir string // holds the SQLite read model
	JS      jetstream.JetStream
	// Admin creates and updates the stream and the buckets, and removes
	// deleted files' bytes (the hub's ops identity); JS does the rest
	// (log-writer). Default JS.
	Admin jetstream.JetStream
	// Auth authenticates the log's events (eventlog.Config.Auth).
	Auth     *eventlog.Auth
	Replicas int
	Now      func() time.Time
	Logger   *slog.Logger
	// FileMaxBytes bounds one uploaded file (default DefaultFileMaxBytes);
	// FileQuota all of one user's files (default DefaultFileQuota);
	// FilesMaxBytes the files bucket (0: only the server's limits).
	FileMaxBytes, FileQuota, FilesMaxBytes int64
	// Capacity reports the event store's use and limit (eventlog.Config).
	Capacity func() (used, limit uint64, ok bool)
	// Budgets are the per-person limits (limits.go) the hub's flags set;
	// nil: DefaultBudgets. An admin's settings override them.
	Budgets *authz.Budgets
	// WALLimit bounds the SQLite write-ahead log (0: store.DefaultWALLimit).
	WALLimit int64
	// Hold keeps the projector from applying anything until it is closed
	// (eventlog.Config).
	Hold <-chan struct{}
}

// Service is the chat domain: the rules every change passes (who may do
// what, with authz), appended to the event log and read back from the
// store. The store's queries are promoted for the hub's own use.
type Service struct {
	*store.Store
	Log          *eventlog.Log
	now          func() time.Time
	logger       *slog.Logger
	cache        *caches
	js           jetstream.JetStream
	admin        jetstream.JetStream
	repl         int
	logins       *limiter // set by Start
	budgets      *budgets
	loginDevices *limiter // devices that logged in before (set by Start)

	files              *files
	fileMax, fileQuota int64
}

// Open opens the read model and prepares the log. Call Start to project.
func Open(ctx context.Context, cfg Config) (*Service, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	st, err := store.Open(ctx, cfg.DataDir, cfg.Logger, cfg.WALLimit)
	if err != nil {
		return nil, err
	}
	if cfg.FileMaxBytes <= 0 {
		cfg.FileMaxBytes = DefaultFileMaxBytes
	}
	if cfg.FileQuota <= 0 {
		cfg.FileQuota = DefaultFileQuota
	}
	if cfg.Admin == nil {
		cfg.Admin = cfg.JS
	}
	base := DefaultBudgets
	if cfg.Budgets != nil {
		base = *cfg.Budgets
	}
	s := &Service{Store: st, budgets: newBudgets(base), now: cfg.Now, logger: cfg.Logger, cache: newCaches(), js: cfg.JS, admin: cfg.Admin, repl: cfg.Replicas,
		fileMax: cfg.FileMaxBytes, fileQuota: cfg.FileQuota,
		files: &files{js: cfg.JS, admin: cfg.Admin, replicas: max(cfg.Replicas, 1), maxBytes: cfg.FilesMaxBytes}}
	s.Log = eventlog.New(eventlog.Config{JS: cfg.JS, Admin: cfg.Admin, Auth: cfg.Auth, Projector: st, Logger: cfg.Logger, Replicas: cfg.Replicas, Capacity: cfg.Capacity, Hold: cfg.Hold})
	s.Log.OnFeed(s.cache.onFeed)
	return s, nil
}

// Start opens the login attempts bucket and projects the stream.
func (s *Service) Start(ctx context.Context) error {
	l, err := openLimiter(ctx, s.admin, s.js, s.repl, s.now, loginForget)
	if err != nil {
		return err
	}
	s.logins = l
	if s.loginDevices, err = openDevices(ctx, s.admin, s.js, s.repl, s.now); err != nil {
		return err
	}
	if err := s.openBudgets(ctx); err != nil {
		return err
	}
	return s.Log.Start(ctx)
}

// Close stops projecting and closes the database.
func (s *Service) Close() error {
	s.Log.Stop()
	return s.Store.Close()
}

// Now is the service clock.
func (s *Service) Now() time.Time { return s.now() }

// append builds and appends one event.
func (s *Service) append(ctx context.Context, typ string, data any) (uint64, error) {
	ev, err := s.newEvent(ctx, typ, data)
	if err != nil {
		return 0, err
	}
	return s.Log.Append(ctx, ev)
}

// SetAgentStatusOnce records an agent's state under an idempotency key, so
// that several hub nodes noticing the same change record it once.
func (s *Service) SetAgentStatusOnce(ctx context.Context, key, handle, status, turnID, turnRoom string, steeredBy []string) error {
	ev, err := chat.NewEventWithID(key, chat.EvAgentStatus, s.now(), chat.AgentStatus{Handle: handle, Status: status, TurnID: turnID, TurnRoom: turnRoom, SteeredBy: steeredBy})
	if err != nil {
		return wh.Wrap(err, "encode status")
	}
	_, err = s.Log.Append(ctx, ev)
	return err
}
