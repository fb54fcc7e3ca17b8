package room

import (
	"context"
	"log/slog"
	"path/filepath"
	"regexp"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	wh "github.com/wheelhouse-dev/wheelhouse"
)

// Kinds, roles and authors.
const (
	KindRoom   = "room"
	KindDM     = "dm"
	RoleAdmin  = "admin"
	RoleMember = "member"

	AuthorUser   = "user"
	AuthorAgent  = "agent"
	AuthorSystem = "system"

	// MaxMessageBytes bounds a message's text.
	MaxMessageBytes = 16 << 10
)

// Config configures a Service.
type Config struct {
	DataDir  string // holds wheelhouse.db
	JS       jetstream.JetStream
	Replicas int
	Now      func() time.Time
	Logger   *slog.Logger
}

// Service is the chat domain over the log and its projection.
type Service struct {
	db       *DB
	Log      *Log
	now      func() time.Time
	logger   *slog.Logger
	appliers map[string]applier
	cache    *caches
}

// DBFile is the SQLite file name under the data directory.
const DBFile = "wheelhouse.db"

// Open opens the read model and prepares the log. Call Start to project.
func Open(ctx context.Context, cfg Config) (*Service, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	db, err := OpenDB(ctx, filepath.Join(cfg.DataDir, DBFile))
	if err != nil {
		return nil, err
	}
	s := &Service{db: db, now: cfg.Now, logger: cfg.Logger, appliers: map[string]applier{}, cache: newCaches()}
	s.registerCoreAppliers()
	s.registerAgentAppliers()
	s.Log = newLog(cfg.JS, db, s.applyEvent, cfg.Logger, cfg.Replicas)
	s.Log.OnFeed(s.cache.onFeed)
	return s, nil
}

// Start projects the stream.
func (s *Service) Start(ctx context.Context) error { return s.Log.Start(ctx) }

// Close stops projecting and closes the database.
func (s *Service) Close() error {
	s.Log.Stop()
	return s.db.Close()
}

// Now is the service clock.
func (s *Service) Now() time.Time { return s.now() }

// append builds and appends one event.
func (s *Service) append(ctx context.Context, typ string, data any) (uint64, error) {
	ev, err := NewEvent(typ, s.now(), data)
	if err != nil {
		return 0, wh.Wrap(err, "encode %s", typ)
	}
	return s.Log.Append(ctx, ev)
}

// SetAgentStatusOnce records an agent's state under an idempotency key, so
// that several hub nodes noticing the same change record it once.
func (s *Service) SetAgentStatusOnce(ctx context.Context, key, handle, status, turnID, turnRoom string, steeredBy []string) error {
	ev, err := NewEventWithID(key, EvAgentStatus, s.now(), agentStatus{Handle: handle, Status: status, TurnID: turnID, TurnRoom: turnRoom, SteeredBy: steeredBy})
	if err != nil {
		return wh.Wrap(err, "encode status")
	}
	_, err = s.Log.Append(ctx, ev)
	return err
}

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,31}$`)
var roomRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// ValidUserName reports whether name is a valid user (or agent) name.
func ValidUserName(name string) bool { return nameRE.MatchString(name) }

func validRoomName(name string) bool { return roomRE.MatchString(name) }
