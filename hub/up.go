package hub

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	wh "github.com/wheelhouse-dev/wheelhouse"
)

// UpConfig configures `wheelhouse up`: everything on one machine.
type UpConfig struct {
	Hub   Config
	Admin string // default "admin"
}

// Running is what Up started.
type Running struct {
	Hub          *Hub
	Admin        string
	Password     string // set only on the run that created the admin
	PasswordFile string
	closers      []func(context.Context) error
}

// Close stops everything Up started, last first.
func (r *Running) Close(ctx context.Context) error {
	var errs []error
	for i := len(r.closers) - 1; i >= 0; i-- {
		errs = append(errs, r.closers[i](ctx))
	}
	return errors.Join(errs...)
}

// Up starts a hub, creates the admin (random password, printed once and
// saved 0600 beside the data) and #general on the first run.
func Up(ctx context.Context, cfg UpConfig) (*Running, error) {
	if cfg.Admin == "" {
		cfg.Admin = "admin"
	}
	h, err := New(cfg.Hub)
	if err != nil {
		return nil, err
	}
	if err := h.Open(ctx); err != nil {
		return nil, err
	}
	r := &Running{Hub: h, Admin: cfg.Admin, PasswordFile: filepath.Join(h.cfg.DataDir, "admin-password")}
	r.closers = append(r.closers, h.Close)
	if h.SetupToken() != "" {
		pw := randomHex(12)
		if _, err := h.rooms.Setup(ctx, cfg.Admin, pw); err != nil {
			r.Close(ctx)
			return nil, err
		}
		h.mu.Lock()
		h.setupToken = ""
		h.mu.Unlock()
		if err := os.WriteFile(r.PasswordFile, []byte(pw+"\n"), 0o600); err != nil {
			r.Close(ctx)
			return nil, wh.Wrap(err, "save the admin password")
		}
		r.Password = pw
	}
	admin, err := h.rooms.UserByName(ctx, cfg.Admin)
	if err != nil {
		r.Close(ctx)
		return nil, err
	}
	if _, err := h.rooms.CreateRoom(ctx, admin, "general", false, "Everyone, and the demo agent"); err != nil && wh.ErrorCode(err) != wh.EConflict {
		r.Close(ctx)
		return nil, err
	}
	return r, nil
}
