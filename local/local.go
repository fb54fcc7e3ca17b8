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

// Files `wheelhouse up` keeps in its data directory besides the hub's: the
// local bridge's credentials and, when the standard control socket is
// taken, its control socket. The owner's commands look there too.
const (
	CredentialsFile = "bridge.json"
	// JournalDir is the folder, under the data directory, of the local
	// bridge's journals.
	JournalDir = "journal"
	SocketFile = "bridge.sock"
)

// Config configures `wheelhouse up`.
type Config struct {
	Hub   hub.Config
	Admin string    // default "admin"
	Out   io.Writer // the bridge's live log
	// DemoStep paces the demo agent (default: its own, a few seconds a turn).
	DemoStep string
	// ControlSocket is where the local bridge listens for `wheelhouse
	// approvals/approve/deny`. Default: the standard socket those commands
	// use, or DataDir/bridge.sock if another bridge is running there.
	ControlSocket string
}

// Running is what Up started.
type Running struct {
	Hub          *hub.Hub
	Admin        string
	Password     string // set only on the run that created the admin
	PasswordFile string
	// ControlSocket is where the local bridge listens for the owner's
	// commands; DefaultSocket says whether it is the one they use by
	// default.
	ControlSocket string
	DefaultSocket bool
	// Bridge is the local bridge (its devices, enrollment codes).
	Bridge     *bridge.Bridge
	cancel     context.CancelFunc
	bridgeDone chan error
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
	credsPath := filepath.Join(cfg.Hub.DataDir, CredentialsFile)
	hubURL := h.LocalURL()
	var ca []byte
	if cfg.Hub.TLSCert != "" {
		// Trust the hub's own certificate (it must name the loopback address).
		if ca, err = os.ReadFile(cfg.Hub.TLSCert); err != nil {
			return fail(wh.Wrap(err, "read %s", cfg.Hub.TLSCert))
		}
	}
	creds, err := bridge.LoadCredentials(credsPath)
	if err == nil {
		if _, err := rooms.BridgeByKey(ctx, publicKey(creds)); err != nil {
			creds = nil
		}
	}
	if creds == nil {
		tok, _, err := rooms.CreatePairingToken(ctx, admin)
		if err != nil {
			return fail(err)
		}
		if creds, err = bridge.Pair(ctx, bridge.PairConfig{Hub: hubURL, Token: tok, Name: "local", CA: ca}); err != nil {
			return fail(err)
		}
	}
	// The port may differ from the last run; the owner's commands read
	// this file too.
	creds.Hub, creds.CA = hubURL, string(ca)
	if err := creds.Save(credsPath); err != nil {
		return fail(err)
	}
	if creds, err = bridge.LoadCredentials(credsPath); err != nil {
		return fail(err)
	}
	r.ControlSocket = cfg.ControlSocket
	if r.ControlSocket == "" {
		r.ControlSocket, r.DefaultSocket = bridge.DefaultControlSocket(), true
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		if _, err := bridge.Control(cctx, r.ControlSocket, bridge.ControlRequest{Op: "list"}); err == nil {
			// Another bridge answers there: keep out of its way.
			r.ControlSocket, r.DefaultSocket = filepath.Join(cfg.Hub.DataDir, SocketFile), false
		}
		cancel()
	}
	// The owner consents on this machine: the demo may act in #general.
	demo := bridge.AgentConfig{Name: "demo", Harness: "demo", Options: map[string]string{},
		PolicyFile: bridge.PolicyConfig{Address: "members", ApprovalTimeout: "10m"}, Rooms: map[string]string{"general": "normal"}}
	if cfg.DemoStep != "" {
		demo.Options["step"] = cfg.DemoStep
	}
	b, err := bridge.New(bridge.Config{Creds: creds, Agents: []bridge.AgentConfig{demo}, Harnesses: harnesses.All(), Out: cfg.Out,
		ControlSocket: r.ControlSocket, Logger: cfg.Hub.Logger, JournalDir: filepath.Join(cfg.Hub.DataDir, JournalDir),
		TrustFile: bridge.TrustPath(credsPath)})
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
	r.Bridge = b
	return r, nil
}
