package bridge

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// Credentials are what pairing stores on the bridge machine (0600): the
// bridge's key and the hub's identity.
type Credentials struct {
	// Hub is the hub's URL as given to pair. The bridge reaches NATS
	// through it (wss://host/nats, also shown as NATSURL), and nowhere else.
	Hub     string `json:"hub"`
	NATSURL string `json:"natsUrl"`
	// CA is the private CA (PEM) the hub's certificate must chain to, from
	// pair --ca. Empty: the system's roots.
	CA string `json:"ca,omitempty"`
	// Insecure allows a plaintext hub on another machine (pair --insecure).
	Insecure bool   `json:"insecure,omitempty"`
	BridgeID string `json:"bridgeId"`
	Owner    string `json:"owner"`
	Seed     string `json:"seed"` // the bridge's nkey seed: its identity
}

// DefaultCredentialsPath is where pairing stores credentials.
func DefaultCredentialsPath() string {
	return filepath.Join(configDir(), "wheelhouse", "bridge.json")
}

// LoadCredentials reads a credentials file. Files written before bridges
// reached NATS through the hub's URL carry a raw nats:// URL; it is
// replaced by the one derived from the hub's URL.
func LoadCredentials(path string) (*Credentials, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, wh.Errorf(wh.EInvalid, "no bridge credentials at %s: pair this machine first (wheelhouse bridge pair --hub URL --token TOKEN)", path)
	}
	var c Credentials
	if err := json.Unmarshal(b, &c); err != nil || c.Seed == "" || c.BridgeID == "" {
		return nil, wh.Errorf(wh.EInvalid, "the bridge credentials at %s are damaged: pair again", path)
	}
	if c.NATSURL, err = wire.NATSURL(c.Hub); err != nil {
		return nil, wh.Errorf(wh.EInvalid, "the bridge credentials at %s name no usable hub URL (%v): pair again", path, err)
	}
	return &c, nil
}

// Save writes credentials 0600 (the folder 0700).
func (c *Credentials) Save(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return wh.Wrap(err, "create %s", filepath.Dir(path))
	}
	b, _ := json.MarshalIndent(c, "", "  ")
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return wh.Wrap(err, "write credentials")
	}
	return os.Rename(tmp, path)
}

// PairConfig is what pairing needs.
type PairConfig struct {
	Hub   string // the hub's URL: https://host[:port], or http:// on this machine
	Token string // the one-time pairing token
	Name  string // a name for this machine
	// CA is a private CA (PEM) to trust for the hub's certificate instead
	// of the system's roots; it is kept in the credentials.
	CA []byte
	// Insecure allows a plaintext (http://) hub on another machine.
	Insecure bool
}

// Pair generates this machine's nkey, registers its public key with the hub
// using a one-time pairing token, and returns the credentials to save.
func Pair(ctx context.Context, pc PairConfig) (*Credentials, error) {
	u, err := wire.ParseHubURL(pc.Hub)
	if err != nil {
		return nil, wh.Errorf(wh.EInvalid, "--hub: %v", err)
	}
	c := &Credentials{Hub: u.String(), CA: string(pc.CA), Insecure: pc.Insecure}
	if c.NATSURL, err = wire.NATSURL(c.Hub); err != nil {
		return nil, wh.Errorf(wh.EInvalid, "--hub: %v", err)
	}
	tc, err := c.tlsConfig()
	if err != nil {
		return nil, err
	}
	kp, err := nkeys.CreateUser()
	if err != nil {
		return nil, wh.Wrap(err, "generate the bridge key")
	}
	pub, _ := kp.PublicKey()
	seed, _ := kp.Seed()
	body, _ := json.Marshal(map[string]string{"token": pc.Token, "publicKey": pub, "name": pc.Name})
	req, err := http.NewRequestWithContext(ctx, "POST", c.Hub+"/api/v1/bridges/pair", bytes.NewReader(body))
	if err != nil {
		return nil, wh.Errorf(wh.EInvalid, "--hub %q is not a URL", pc.Hub)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.httpClient(tc, 30*time.Second).Do(req)
	if err != nil {
		return nil, c.reachError(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusCreated {
		var e struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		json.Unmarshal(raw, &e)
		if e.Error.Message == "" {
			e.Error.Message = resp.Status
		}
		return nil, wh.Errorf(wh.EForbidden, "the hub refused pairing: %s", e.Error.Message)
	}
	var out struct {
		BridgeID string `json:"bridgeId"`
		Owner    string `json:"owner"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || out.BridgeID == "" {
		return nil, wh.Errorf(wh.EUnavailable, "the hub's answer to pairing was not readable: is %s a Wheelhouse hub?", c.Hub)
	}
	c.BridgeID, c.Owner, c.Seed = out.BridgeID, out.Owner, string(seed)
	return c, nil
}

// tlsConfig checks the hub URL against the plaintext rule and returns the
// TLS settings for it (nil for a plaintext hub).
func (c *Credentials) tlsConfig() (*tls.Config, error) {
	u, err := wire.ParseHubURL(c.Hub)
	if err != nil {
		return nil, wh.Errorf(wh.EInvalid, "the hub URL in the credentials: %v: pair again", err)
	}
	if u.Scheme == "http" {
		if !c.Insecure && !wire.IsLoopbackHost(u.Host) {
			return nil, wh.Errorf(wh.EInvalid, "refusing the plaintext hub %s: on another machine, anyone on the way could read and change what the bridge exchanges with it. Use the hub's https:// URL (see docs/operations.md), or pair with --insecure on a network you trust", c.Hub)
		}
		if c.CA != "" {
			return nil, wh.Errorf(wh.EInvalid, "--ca is for an https:// hub; %s is plaintext", c.Hub)
		}
		return nil, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.CA != "" {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM([]byte(c.CA)) {
			return nil, wh.Errorf(wh.EInvalid, "the CA for the hub holds no PEM certificate")
		}
		tc.RootCAs = pool
	}
	return tc, nil
}

// HTTPClient talks to the hub's HTTP API with the same trust as the
// bridge's NATS connection.
func (c *Credentials) HTTPClient(timeout time.Duration) (*http.Client, error) {
	tc, err := c.tlsConfig()
	if err != nil {
		return nil, err
	}
	return c.httpClient(tc, timeout), nil
}

func (c *Credentials) httpClient(tc *tls.Config, timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: &http.Transport{TLSClientConfig: tc, Proxy: http.ProxyFromEnvironment}}
}

// ReachError explains a failure to reach the hub, in particular an
// untrusted certificate.
func (c *Credentials) ReachError(err error) error { return c.reachError(err) }

// reachError explains a failure to reach the hub, in particular an
// untrusted certificate.
func (c *Credentials) reachError(err error) error {
	var verr *tls.CertificateVerificationError
	var uerr x509.UnknownAuthorityError
	var herr x509.HostnameError
	switch {
	case errors.As(err, &herr):
		return wh.Errorf(wh.EUnavailable, "the hub at %s presented a certificate for another name (%v): use the URL its certificate is for", c.Hub, herr)
	case errors.As(err, &verr) || errors.As(err, &uerr) || strings.Contains(err.Error(), "x509:"):
		hint := "if the hub uses a private CA, pair with --ca FILE"
		if c.CA != "" {
			hint = "it does not chain to the CA this bridge was paired with: if the hub's CA changed, pair again"
		}
		return wh.Errorf(wh.EUnavailable, "refusing the hub at %s: its certificate is not trusted (%v); %s", c.Hub, err, hint)
	}
	return wh.Errorf(wh.EUnavailable, "cannot reach the hub at %s: %v", c.Hub, err)
}

// Dial opens a NATS connection to the hub with the bridge's identity,
// through the hub's /nats endpoint and verified TLS. opts come after the
// identity options.
func (c *Credentials) Dial(name string, opts ...nats.Option) (*nats.Conn, error) {
	kp, err := nkeys.FromSeed([]byte(c.Seed))
	if err != nil {
		return nil, wh.Errorf(wh.EInvalid, "the bridge credentials hold a bad key: pair again")
	}
	pub, _ := kp.PublicKey()
	tc, err := c.tlsConfig()
	if err != nil {
		return nil, err
	}
	natsURL, _ := wire.NATSURL(c.Hub) // checked by tlsConfig
	base := []nats.Option{
		nats.Name(name),
		nats.Nkey(pub, kp.Sign),
		nats.CustomInboxPrefix(wire.InboxPrefix(c.BridgeID)),
		// Only ever the hub this bridge paired with, never an address a
		// server advertises.
		nats.IgnoreDiscoveredServers(),
		// Below the idle timeout of proxies in front of the hub (nginx
		// and most load balancers: 60 s).
		nats.PingInterval(bridgePing),
	}
	if tc != nil {
		base = append(base, nats.Secure(tc))
	}
	nc, err := nats.Connect(natsURL, append(base, opts...)...)
	if err != nil {
		if isAuthError(err) {
			return nil, wh.Errorf(wh.EUnauthenticated, "the hub refused this bridge's key: it was revoked or never paired; pair again")
		}
		if strings.Contains(err.Error(), "invalid websocket connection") || strings.Contains(err.Error(), "bad handshake") {
			return nil, wh.Errorf(wh.EUnavailable, "the hub at %s has no NATS endpoint at %s: upgrade the hub, or check the proxy in front of it passes WebSocket upgrades", c.Hub, wire.NATSPath)
		}
		return nil, c.reachError(err)
	}
	return nc, nil
}

// Connect opens a NATS connection with the bridge's identity (for the
// owner's CLI commands on this machine).
func (c *Credentials) Connect() (*nats.Conn, error) {
	return c.Dial("wheelhouse-cli-" + c.BridgeID)
}

// bridgePing is how often a bridge's connection proves it is alive.
const bridgePing = 25 * time.Second

func isAuthError(err error) bool {
	return err != nil && strings.Contains(strings.ToLower(err.Error()), "authorization")
}

// reconnectDelay backs off from a tenth of a second to half a minute,
// with jitter: a brief drop heals at once, a refused bridge does not
// hammer the hub.
func reconnectDelay(attempts int) time.Duration {
	d := 100 * time.Millisecond << min(max(attempts-1, 0), 9)
	d = min(d, 30*time.Second)
	return d + rand.N(d/4+1)
}

// Invitations lists or answers the owner's invitations through the hub.
func (c *Credentials) Invitations(ctx context.Context, req wire.InvitationsRequest) ([]wire.Invitation, error) {
	nc, err := c.Connect()
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	return askInvitations(ctx, nc, c.BridgeID, req)
}

// askInvitations lists or answers invitations over a bridge's connection.
func askInvitations(ctx context.Context, nc *nats.Conn, bridgeID string, req wire.InvitationsRequest) ([]wire.Invitation, error) {
	data, _ := json.Marshal(req)
	m, err := nc.RequestWithContext(ctx, wire.FromBridge(bridgeID, wire.KindInvitations), data)
	if err != nil {
		return nil, wh.Errorf(wh.EUnavailable, "the hub did not answer: %v", err)
	}
	var rep wire.InvitationsReply
	if err := json.Unmarshal(m.Data, &rep); err != nil {
		return nil, wh.Wrap(err, "decode the hub's answer")
	}
	if !rep.OK {
		return nil, wh.Errorf(rep.Code, "%s", rep.Message)
	}
	return rep.Invitations, nil
}

// String describes where the credentials point, for doctor and logs.
func (c *Credentials) String() string {
	trust := "the system's CAs"
	if c.CA != "" {
		trust = "a private CA"
	}
	if u, err := wire.ParseHubURL(c.Hub); err == nil && u.Scheme == "http" {
		trust = "plaintext, this machine only"
		if !wire.IsLoopbackHost(u.Host) {
			trust = "plaintext, allowed with --insecure"
		}
	}
	return fmt.Sprintf("%s (NATS %s, %s)", c.Hub, c.NATSURL, trust)
}

func configDir() string {
	d, err := os.UserConfigDir()
	if err != nil {
		return "."
	}
	return d
}
