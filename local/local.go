// Package local runs everything on one machine for `wheelhouse up`: a hub
// with embedded NATS and SQLite, and a bridge paired to it running the demo
// agent in #general. It imports hub and bridge; nothing imports it but cmd.
package local

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"time"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/bridge"
	"github.com/wheelhouse-dev/wheelhouse/bridge/harnesses"
	"github.com/wheelhouse-dev/wheelhouse/hub"
)

// Config configures `wheelhouse up`.
type Config struct {
	Hub   hub.Config
	Admin string    // default "admin"
	Out   io.Writer // the bridge's live log
	// DemoStep paces the demo agent (default: its own, a few seconds a turn).
	DemoStep string
}

// Running is what Up started.
type Running struct {
	Hub          *hub.Hub
	Admin        string
	Password     string // set only on the run that created the admin
	PasswordFile string
	cancel       context.CancelFunc
	bridgeDone   chan error
}

// Close stops the bridge, then the hub.
func (r *Running) Close(ctx context.Context) error {
	var errs []error
	if r.cancel != nil {
		r.cancel()
		select {
		case err := <-r.bridgeDone:
			errs = append(errs, err)
		case <-ctx.Done():
		}
	}
	errs = append(errs, r.Hub.Close(ctx))
	return errors.Join(errs...)
}

// Up starts a hub, creates the admin (random password, printed once and
// saved 0600 beside the data) and #general on the first run, and a local
// bridge with the demo agent @admin/demo in #general.
func Up(ctx context.Context, cfg Config) (*Running, error) {
	if cfg.Admin == "" {
		cfg.Admin = "admin"
	}
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	h, err := hub.New(cfg.Hub)
	if err != nil {
		return nil, err
	}
	if err := h.Open(ctx); err != nil {
		return nil, err
	}
	r := &Running{Hub: h, Admin: cfg.Admin, PasswordFile: filepath.Join(cfg.Hub.DataDir, "admin-password")}
	fail := func(err error) (*Running, error) {
		r.Close(context.Background())
		return nil, err
	}
	rooms := h.Rooms()
	if h.SetupToken() != "" {
		pw := randomPassword()
		if _, err := rooms.Setup(ctx, cfg.Admin, pw); err != nil {
			return fail(err)
		}
		h.SetupDone()
		if err := os.WriteFile(r.PasswordFile, []byte(pw+"\n"), 0o600); err != nil {
			return fail(wh.Wrap(err, "save the admin password"))
		}
		r.Password = pw
	}
	admin, err := rooms.UserByName(ctx, cfg.Admin)
	if err != nil {
		return fail(err)
	}
	if _, err := rooms.CreateRoom(ctx, admin, "general", false, "Everyone, and the demo agent"); err != nil && wh.ErrorCode(err) != wh.EConflict {
		return fail(err)
	}
	// Every new user lands in #general (unless the admin chose other rooms).
	if err := rooms.EnsureDefaultRoom(ctx, admin, "general"); err != nil {
		return fail(err)
	}

	// The local bridge keeps its key beside the data, so restarts reuse it.
	credsPath := filepath.Join(cfg.Hub.DataDir, "bridge.json")
	creds, err := bridge.LoadCredentials(credsPath)
	if err == nil {
		creds.NATSURL, creds.Hub = h.NATSURL(), h.URL() // ports may change between runs
		if _, err := rooms.BridgeByKey(ctx, publicKey(creds)); err != nil {
			creds = nil
		}
	}
	if creds == nil {
		tok, _, err := rooms.CreatePairingToken(ctx, admin)
		if err != nil {
			return fail(err)
		}
		if creds, err = bridge.Pair(ctx, h.URL(), tok, "local"); err != nil {
			return fail(err)
		}
		creds.NATSURL = h.NATSURL()
		if err := creds.Save(credsPath); err != nil {
			return fail(err)
		}
	}
	demo := bridge.AgentConfig{Name: "demo", Harness: "demo", Options: map[string]string{},
		PolicyFile: bridge.PolicyConfig{Address: "members", ApprovalTimeout: "10m"}}
	if cfg.DemoStep != "" {
		demo.Options["step"] = cfg.DemoStep
	}
	b, err := bridge.New(bridge.Config{Creds: creds, Agents: []bridge.AgentConfig{demo}, Harnesses: harnesses.All(), Out: cfg.Out,
		ControlSocket: filepath.Join(cfg.Hub.DataDir, "bridge.sock"), Logger: cfg.Hub.Logger, JournalDir: filepath.Join(cfg.Hub.DataDir, "journal")})
	if err != nil {
		return fail(err)
	}
	bctx, cancel := context.WithCancel(context.Background())
	r.cancel, r.bridgeDone = cancel, make(chan error, 1)
	go func() { r.bridgeDone <- b.Run(bctx) }()

	handle := cfg.Admin + "/demo"
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := rooms.AgentByHandle(ctx, handle); err == nil {
			break
		}
		select {
		case err := <-r.bridgeDone:
			r.cancel = nil
			return fail(wh.Wrap(err, "the local bridge stopped"))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fail(wh.Errorf(wh.EUnavailable, "the local bridge did not announce the demo agent"))
		}
	}
	if _, _, err := rooms.AddAgent(ctx, admin, "general", handle); err != nil && wh.ErrorCode(err) != wh.EConflict {
		return fail(err)
	}
	return r, nil
}
