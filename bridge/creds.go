package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
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

// Credentials are what pairing stores on the bridge machine (0600).
type Credentials struct {
	Hub      string `json:"hub"`
	NATSURL  string `json:"natsUrl"`
	BridgeID string `json:"bridgeId"`
	Owner    string `json:"owner"`
	Seed     string `json:"seed"` // the bridge's nkey seed: its identity
}

// DefaultCredentialsPath is where pairing stores credentials.
func DefaultCredentialsPath() string {
	dir, err := os.UserConfigDir()
	if err != nil {
		dir = "."
	}
	return filepath.Join(dir, "wheelhouse", "bridge.json")
}

// LoadCredentials reads a credentials file.
func LoadCredentials(path string) (*Credentials, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, wh.Errorf(wh.EInvalid, "no bridge credentials at %s: pair this machine first (wheelhouse bridge pair --hub URL --token TOKEN)", path)
	}
	var c Credentials
	if err := json.Unmarshal(b, &c); err != nil || c.Seed == "" || c.BridgeID == "" {
		return nil, wh.Errorf(wh.EInvalid, "the bridge credentials at %s are damaged: pair again", path)
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

// Pair generates this machine's nkey, registers its public key with the hub
// using a one-time pairing token, and returns the credentials to save.
func Pair(ctx context.Context, hubURL, token, name string) (*Credentials, error) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		return nil, wh.Wrap(err, "generate the bridge key")
	}
	pub, _ := kp.PublicKey()
	seed, _ := kp.Seed()
	body, _ := json.Marshal(map[string]string{"token": token, "publicKey": pub, "name": name})
	hubURL = strings.TrimRight(hubURL, "/")
	req, err := http.NewRequestWithContext(ctx, "POST", hubURL+"/api/v1/bridges/pair", bytes.NewReader(body))
	if err != nil {
		return nil, wh.Errorf(wh.EInvalid, "--hub %q is not a URL", hubURL)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return nil, wh.Errorf(wh.EUnavailable, "cannot reach the hub at %s: %v", hubURL, err)
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
		NATSURL  string `json:"natsUrl"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, wh.Wrap(err, "decode the hub's answer")
	}
	return &Credentials{Hub: hubURL, NATSURL: out.NATSURL, BridgeID: out.BridgeID, Owner: out.Owner, Seed: string(seed)}, nil
}

// Connect opens a NATS connection with the bridge's identity (for the
// owner's CLI commands on this machine).
func (c *Credentials) Connect() (*nats.Conn, error) {
	kp, err := nkeys.FromSeed([]byte(c.Seed))
	if err != nil {
		return nil, wh.Errorf(wh.EInvalid, "the bridge credentials hold a bad key: pair again")
	}
	pub, _ := kp.PublicKey()
	nc, err := nats.Connect(c.NATSURL, nats.Name("wheelhouse-cli-"+c.BridgeID), nats.Nkey(pub, kp.Sign), nats.CustomInboxPrefix(wire.InboxPrefix(c.BridgeID)))
	if err != nil {
		return nil, wh.Errorf(wh.EUnavailable, "cannot connect to the hub's NATS at %s: %v", c.NATSURL, err)
	}
	return nc, nil
}

// Invitations lists or answers the owner's invitations through the hub.
func (c *Credentials) Invitations(ctx context.Context, req wire.InvitationsRequest) ([]wire.Invitation, error) {
	nc, err := c.Connect()
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	data, _ := json.Marshal(req)
	m, err := nc.RequestWithContext(ctx, wire.FromBridge(c.BridgeID, wire.KindInvitations), data)
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

func configDir() string {
	d, err := os.UserConfigDir()
	if err != nil {
		return "."
	}
	return d
}
