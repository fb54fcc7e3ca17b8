package hub

import (
	"context"
	"errors"
	"net/url"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// connectNATS starts the embedded server (or reads the cluster's secrets)
// and opens the hub's connections: one per role of its own account
// (natsroles.go: bridge-serving, log-writer, ops), the auth callout
// service's and the system account's.
func (h *Hub) connectNATS() error {
	var (
		url     string
		targets []string
		extra   []nats.Option
		err     error
	)
	if h.cfg.NATSURL == "" {
		h.ns, err = startNATS(h.cfg.NATSAddr, filepath.Join(h.cfg.DataDir, "jetstream"), h.cfg.NATSMaxStore, h.cfg.Sync == SyncAlways, h.log)
		if err != nil {
			return err
		}
		if !wire.IsLoopbackHost(h.ns.clientListener) {
			h.log.Warn("the embedded NATS listener is plaintext and reachable from other machines; bridges do not need it (they connect through the hub's URL)", "nats", h.ns.clientListener)
		}
		h.natsSecrets = h.ns.secrets
		extra = append(extra, nats.InProcessServer(h.ns.ns))
		targets = []string{hostOf(h.ns.websocketURL)}
	} else {
		url = h.cfg.NATSURL
		if h.natsSecrets, err = LoadNATSSecrets(h.cfg.NATSSecrets); err != nil {
			return err
		}
		if targets, err = parseWebsocketTargets(h.cfg.NATSWebsocket); err != nil {
			return wh.Errorf(wh.EInvalid, "%v", err)
		}
	}
	k, err := h.natsSecrets.keys()
	if err != nil {
		return wh.Wrap(err, "NATS keys")
	}
	connect := func(name string, kp nkeys.KeyPair, more ...nats.Option) (*nats.Conn, error) {
		opts := append([]nats.Option{nats.Nkey(pubKey(kp), kp.Sign), nats.Name(name), nats.MaxReconnects(-1), nats.Timeout(10 * time.Second)}, extra...)
		opts = append(opts, more...)
		nc, err := nats.Connect(url, opts...)
		if err != nil {
			where := "the embedded NATS"
			if url != "" {
				where = "NATS at " + url
			}
			return nil, wh.Errorf(wh.EUnavailable, "connect to %s as %s: %v", where, name, err)
		}
		return nc, nil
	}
	if h.nc, err = connect("wheelhouse-hub", k.hub, nats.CustomInboxPrefix(inboxOf(roleBridgeServing))); err != nil {
		return err
	}
	if h.lognc, err = connect("wheelhouse-hub-log", k.log, nats.CustomInboxPrefix(inboxOf(roleLogWriter))); err != nil {
		return err
	}
	if h.opsnc, err = connect("wheelhouse-hub-ops", k.ops, nats.CustomInboxPrefix(inboxOf(roleOps))); err != nil {
		return err
	}
	if h.authnc, err = connect("wheelhouse-hub-callout", k.callout); err != nil {
		return err
	}
	if h.sysnc, err = connect("wheelhouse-hub-sys", k.sys); err != nil {
		return err
	}
	if h.natsAccount, err = accountOf(h.opsnc); err != nil {
		return wh.Errorf(wh.EUnavailable, "ask NATS for the hub's account: %v", err)
	}
	h.natsProxy = newNATSProxy(targets, h.log)
	return nil
}

func hostOf(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return rawURL
	}
	return u.Host
}

// waitJetStream waits until the cluster's JetStream answers (a node that
// starts with its cluster has no meta leader for a few seconds).
func (h *Hub) waitJetStream(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	logged := false
	for {
		actx, acancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := h.js.AccountInfo(actx)
		acancel()
		if err == nil {
			return nil
		}
		if !logged {
			h.log.Info("waiting for JetStream", "err", err)
			logged = true
		}
		select {
		case <-ctx.Done():
			return wh.Errorf(wh.EUnavailable, "JetStream did not answer within a minute: %v (is the NATS cluster up, with JetStream enabled for the hub's account?)", err)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// startLog creates (or checks) the event stream and starts projecting. On
// a cluster that has just elected its JetStream leader, creating the
// replicated stream fails for a moment ("no suitable peers") or goes
// unanswered, notably when several hubs create it at once; a new attempt
// then succeeds. So it tries again for up to a minute.
func (h *Hub) startLog(ctx context.Context) error {
	deadline := time.Now().Add(time.Minute)
	for {
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := h.rooms.Start(actx)
		cancel()
		if err == nil || !transientJetStream(err) || time.Now().After(deadline) {
			return err
		}
		h.log.Info("JetStream is not ready for the event stream yet; trying again", "err", err)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// jsErrClusterNoPeers is nats-server's "no suitable peers for placement".
const jsErrClusterNoPeers jetstream.ErrorCode = 10005

func transientJetStream(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return apiErr.Code == 503 || apiErr.ErrorCode == jsErrClusterNoPeers
	}
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) || errors.Is(err, jetstream.ErrJetStreamNotEnabled)
}

// serveCallout starts answering the servers' authorization requests for
// bridges (once the pairing records can be read).
func (h *Hub) serveCallout() error {
	k, err := h.natsSecrets.keys()
	if err != nil {
		return wh.Wrap(err, "the auth callout keys")
	}
	co := &callout{issuer: k.issuer, account: h.natsAccount, log: h.log.With("component", "callout"), now: h.cfg.Now,
		lookup: func(ctx context.Context, key string) (string, error) {
			b, err := h.rooms.BridgeByKey(ctx, key)
			if err != nil {
				return "", err
			}
			return b.ID, nil
		}}
	_, err = startCallout(h.authnc, co)
	return err
}

// DisconnectBridge closes a (revoked) bridge's NATS connections on every
// server, and asks again moments later (in the background) for a bridge
// that logged in again through a hub node that had not yet applied the
// revocation.
func (h *Hub) DisconnectBridge(ctx context.Context, bridgeID string) {
	sys := h.sysnc
	if sys == nil {
		return
	}
	h.kickBridge(ctx, bridgeID, "disconnected a revoked bridge")
	go func() {
		time.Sleep(2 * time.Second)
		if !sys.IsClosed() {
			h.kickBridge(context.Background(), bridgeID, "disconnected a revoked bridge that had logged in again")
		}
	}()
}

func (h *Hub) kickBridge(ctx context.Context, bridgeID, what string) {
	conns, err := bridgeConns(ctx, h.sysnc, bridgeUser(bridgeID))
	if err != nil {
		h.log.Warn("disconnect a revoked bridge: list its connections", "bridge", bridgeID, "err", err)
		return
	}
	if n := kick(h.sysnc, conns, h.log); n > 0 {
		h.log.Info(what, "bridge", bridgeID, "connections", n)
	}
}

// sweepBridges is the backstop for a disconnect that was missed (a hub
// stopped between recording a revocation and kicking): every interval it
// lists the bridges' connections on every server and closes those of
// bridges this node knows to be revoked. A bridge it does not know yet
// (paired on another node a moment ago) is left alone.
func (h *Hub) sweepBridges(interval time.Duration, stop <-chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { <-stop; cancel() }()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		conns, err := bridgeConns(ctx, h.sysnc, "")
		if err != nil {
			h.log.Debug("bridge sweep: list connections", "err", err)
			continue
		}
		var revoked []bridgeConn
		known := map[string]bool{} // bridge id → revoked
		for _, c := range conns {
			r, seen := known[c.bridgeID]
			if !seen {
				lctx, lcancel := context.WithTimeout(ctx, 5*time.Second)
				b, err := h.rooms.BridgeByID(lctx, c.bridgeID)
				lcancel()
				r = err == nil && b.Revoked
				known[c.bridgeID] = r
			}
			if r {
				revoked = append(revoked, c)
			}
		}
		if n := kick(h.sysnc, revoked, h.log); n > 0 {
			h.log.Info("bridge sweep: disconnected revoked bridges", "connections", n)
		}
	}
}
