package hub

import (
	"encoding/base64"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"

	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// natsLogger adapts nats-server's logger interface to slog, once.
type natsLogger struct{ l *slog.Logger }

func (n natsLogger) Noticef(format string, v ...any) { n.l.Debug(fmt.Sprintf(format, v...)) }
func (n natsLogger) Warnf(format string, v ...any)   { n.l.Warn(fmt.Sprintf(format, v...)) }
func (n natsLogger) Fatalf(format string, v ...any)  { n.l.Error(fmt.Sprintf(format, v...)) }
func (n natsLogger) Errorf(format string, v ...any)  { n.l.Error(fmt.Sprintf(format, v...)) }
func (n natsLogger) Debugf(format string, v ...any)  { n.l.Debug(fmt.Sprintf(format, v...)) }
func (n natsLogger) Tracef(format string, v ...any)  {}

// bridgeLookup resolves a bridge's public nkey to its id, if it is paired
// and not revoked.
type bridgeLookup func(publicKey string) (bridgeID string, ok bool)

// authenticator is the embedded server's custom authentication: the hub's
// own connection by password, bridges by nkey signature, each bridge limited
// to its own subjects.
type authenticator struct {
	hubUser, hubPass string
	lookup           bridgeLookup
	log              *slog.Logger
}

func (a *authenticator) Check(c server.ClientAuthentication) bool {
	if c.Kind() != server.CLIENT {
		return false
	}
	opts := c.GetOpts()
	if opts.Username != "" {
		if opts.Username == a.hubUser && opts.Password == a.hubPass {
			c.RegisterUser(&server.User{Username: a.hubUser})
			return true
		}
		return false
	}
	if opts.Nkey == "" || opts.Sig == "" {
		return false
	}
	kp, err := nkeys.FromPublicKey(opts.Nkey)
	if err != nil {
		return false
	}
	sig, err := base64.RawURLEncoding.DecodeString(opts.Sig)
	if err != nil {
		sig, err = base64.StdEncoding.DecodeString(opts.Sig)
		if err != nil {
			return false
		}
	}
	if err := kp.Verify(c.GetNonce(), sig); err != nil {
		return false
	}
	id, ok := a.lookup(opts.Nkey)
	if !ok {
		a.log.Warn("refused a bridge connection: unknown or revoked key", "key", opts.Nkey)
		return false
	}
	c.RegisterUser(&server.User{Username: "bridge-" + id, Permissions: BridgePermissions(id)})
	return true
}

// BridgePermissions is what one bridge may do on NATS: publish only its own
// hub-bound subjects (and replies to requests it received), subscribe only
// to its own bridge-bound subjects and inbox.
func BridgePermissions(bridgeID string) *server.Permissions {
	return &server.Permissions{
		Publish: &server.SubjectPermission{Allow: []string{
			"wh.hub." + bridgeID + ".>",
		}},
		Subscribe: &server.SubjectPermission{Allow: []string{
			"wh.bridge." + bridgeID + ".>",
			wire.InboxPrefix(bridgeID) + ".>",
		}},
		Response: &server.ResponsePermission{MaxMsgs: 1, Expires: time.Minute},
	}
}

// startNATS starts the embedded server. listen is host:port ("" or port -1
// picks a free loopback port); maxStore caps the JetStream file store in
// bytes (0: the server's default).
func startNATS(listen, storeDir string, maxStore int64, auth *authenticator, log *slog.Logger) (*server.Server, error) {
	host, port := "127.0.0.1", -1
	if listen != "" {
		h, p, err := net.SplitHostPort(listen)
		if err != nil {
			return nil, fmt.Errorf("--nats %q: want host:port: %w", listen, err)
		}
		if h != "" {
			host = h
		}
		if port, err = strconv.Atoi(p); err != nil {
			return nil, fmt.Errorf("--nats %q: bad port", listen)
		}
		if port == 0 {
			port = -1
		}
	}
	opts := &server.Options{
		ServerName:                 "wheelhouse-hub",
		Host:                       host,
		Port:                       port,
		JetStream:                  true,
		StoreDir:                   storeDir,
		NoSigs:                     true,
		AlwaysEnableNonce:          true,
		CustomClientAuthentication: auth,
		MaxPayload:                 1 << 20,
		DisableJetStreamBanner:     true,
	}
	if maxStore > 0 {
		opts.JetStreamMaxStore = maxStore
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("embedded NATS: %w", err)
	}
	ns.SetLoggerV2(natsLogger{log.With("component", "nats")}, false, false, false)
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		ns.Shutdown()
		return nil, fmt.Errorf("embedded NATS did not become ready on %s:%d", host, port)
	}
	return ns, nil
}
