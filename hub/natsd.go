package hub

import (
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// natsLogger adapts nats-server's logger interface to slog, once.
type natsLogger struct{ l *slog.Logger }

func (n natsLogger) Noticef(format string, v ...any) { n.l.Debug(fmt.Sprintf(format, v...)) }
func (n natsLogger) Warnf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	if strings.HasPrefix(msg, "Websocket not configured with TLS") {
		// By design: TLS ends at the hub's own listener, and the websocket
		// listener is on loopback.
		n.l.Debug(msg)
		return
	}
	n.l.Warn(msg)
}
func (n natsLogger) Fatalf(format string, v ...any) { n.l.Error(fmt.Sprintf(format, v...)) }
func (n natsLogger) Errorf(format string, v ...any) { n.l.Error(fmt.Sprintf(format, v...)) }
func (n natsLogger) Debugf(format string, v ...any) { n.l.Debug(fmt.Sprintf(format, v...)) }
func (n natsLogger) Tracef(format string, v ...any) {}

// Accounts of the embedded server, as in deploy/nats.conf, except that the
// hub and its bridges live in the global account (where earlier versions
// created the event stream) rather than WHEELHOUSE.
const (
	natsAuthAccount = "AUTH"
	natsSysAccount  = "SYS"
)

// embeddedNATS is the hub's own NATS server and the keys of its
// in-process users.
type embeddedNATS struct {
	ns             *server.Server
	secrets        NATSSecrets
	websocketURL   string // ws://127.0.0.1:<port>, what /nats forwards to
	clientListener string // host:port of the plain NATS listener
}

// startNATS starts the embedded server: JetStream (syncing to disk before
// every acknowledgement with syncAlways, else every two minutes), the hub as its auth
// callout (the same mechanism as on a cluster), a plain listener on listen
// ("" or port 0 picks a free loopback port) and a websocket listener on a
// free loopback port for the hub's /nats endpoint. maxStore caps the
// JetStream file store in bytes (0: the server's default).
func startNATS(listen, storeDir string, maxStore int64, syncAlways bool, log *slog.Logger) (*embeddedNATS, error) {
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
	sec, err := newNATSSecrets(NATSSecrets{})
	if err != nil {
		return nil, fmt.Errorf("embedded NATS keys: %w", err)
	}
	k, _ := sec.keys()
	authAcc, sysAcc := server.NewAccount(natsAuthAccount), server.NewAccount(natsSysAccount)
	opts := &server.Options{
		ServerName:             "wheelhouse-hub",
		Host:                   host,
		Port:                   port,
		JetStream:              true,
		StoreDir:               storeDir,
		NoSigs:                 true,
		MaxPayload:             1 << 20,
		DisableJetStreamBanner: true,
		SyncAlways:             syncAlways,
		// Bridges sign the server's nonce with their key.
		AlwaysEnableNonce: true,
		Accounts:          []*server.Account{authAcc, sysAcc},
		SystemAccount:     natsSysAccount,
		Nkeys: []*server.NkeyUser{
			{Nkey: pubKey(k.callout), Account: authAcc},
			// The global account, one user per role (natsroles.go).
			{Nkey: pubKey(k.hub), Permissions: natsPermissions(roleBridgeServing)},
			{Nkey: pubKey(k.log), Permissions: natsPermissions(roleLogWriter)},
			{Nkey: pubKey(k.ops), Permissions: natsPermissions(roleOps)},
			{Nkey: pubKey(k.sys), Account: sysAcc},
		},
		AuthTimeout: 2,
		AuthCallout: &server.AuthCallout{
			Issuer:    pubKey(k.issuer),
			Account:   natsAuthAccount,
			AuthUsers: []string{pubKey(k.callout), pubKey(k.hub), pubKey(k.log), pubKey(k.ops), pubKey(k.sys)},
		},
		Websocket: server.WebsocketOpts{Host: "127.0.0.1", Port: -1, NoTLS: true},
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
	// With accounts configured the server enables JetStream for none of
	// them; the event stream lives in the global account.
	if err := ns.GlobalAccount().EnableJetStream(map[string]server.JetStreamAccountLimits{
		"": {MaxMemory: -1, MaxStore: -1, MaxStreams: -1, MaxConsumers: -1, MaxAckPending: -1},
	}, nil); err != nil {
		ns.Shutdown()
		return nil, fmt.Errorf("embedded NATS: enable JetStream: %w", err)
	}
	e := &embeddedNATS{ns: ns, secrets: sec, websocketURL: ns.WebsocketURL()}
	if a := ns.Addr(); a != nil {
		e.clientListener = a.String()
	}
	return e, nil
}
