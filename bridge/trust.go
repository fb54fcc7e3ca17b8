package bridge

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/authz"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// The trust store is what the bridge believes about its owner's wishes
// without asking the hub: the owner's enrolled devices, the rooms each
// agent may act in and their ceilings, each agent's effective policy, and
// the nonces of the signed decisions it already used. It lives on the
// owner's machine (0600, beside the credentials); the hub can change none
// of it, only relay signed decisions that the bridge checks against it.

// TrustPath is the trust store beside a credentials file:
// bridge.json → bridge.trust.json.
func TrustPath(credentialsPath string) string {
	return strings.TrimSuffix(credentialsPath, ".json") + ".trust.json"
}

type trustFile struct {
	Version int                    `json:"version"`
	Devices []trustedDevice        `json:"devices"`
	Agents  map[string]*agentTrust `json:"agents"`
	// Nonces of used signed statements, with their expiry: until then a
	// second use is a replay.
	Nonces map[string]time.Time `json:"nonces"`
}

// trustedDevice is a device as the trust store keeps it: what the hub is
// told of it, and what a passkey's signatures are checked against.
type trustedDevice struct {
	wire.Device
	CredentialID string `json:"credentialId,omitempty"`
	RPID         string `json:"rpId,omitempty"`
	Origin       string `json:"origin,omitempty"`
}

func (d trustedDevice) wire() wire.Device { return d.Device }

func (d trustedDevice) key() *authz.Device {
	spki, _ := base64.StdEncoding.DecodeString(d.PublicKey)
	return &authz.Device{ID: d.ID, Kind: d.Kind, PublicKey: spki, RPID: d.RPID, Origin: d.Origin, Revoked: d.Revoked}
}

// agentTrust is one agent's part of the store.
type agentTrust struct {
	// Config is a digest of the agent's policy and rooms in the bridge's
	// config file when Policy and the overrides were recorded; an edited
	// config starts over from the file.
	Config string                `json:"config"`
	Policy *wire.Policy          `json:"policy,omitempty"` // nil: the config's
	Rooms  map[string]*roomGrant `json:"rooms"`
}

// roomGrant is one room an agent may act in (or, Removed, may not any
// more although the config lists it).
type roomGrant struct {
	Ceiling string    `json:"ceiling"`
	By      string    `json:"by"` // a device id, "bridge" (the owner on this machine) or "hub" (a narrowing)
	At      time.Time `json:"at"`
	Removed bool      `json:"removed,omitempty"`
	// FromConfig marks an override of a room the config lists; dropped
	// when the config changes.
	FromConfig bool `json:"fromConfig,omitempty"`
}

type trustStore struct {
	mu   sync.Mutex
	path string // "" keeps it in memory only
	// bridge is this bridge's id: every signed statement must name it, so
	// one signed for another of the owner's bridges does nothing here.
	bridge string
	now    func() time.Time
	f      trustFile
	// config is each agent's rooms from the config file.
	config map[string]map[string]string
	// listed is grants' answer per agent until setGrant changes it: every
	// heartbeat (after every steer) lists every agent's rooms.
	listed map[string][]wire.RoomGrant
}

// openTrust reads the store at path (a missing file is an empty store) and
// reconciles it with the agents' config: an agent whose config changed
// starts over from it.
func openTrust(path string, now func() time.Time, agents []AgentConfig) (*trustStore, error) {
	t := &trustStore{path: path, now: now, config: map[string]map[string]string{}}
	t.f = trustFile{Version: 1, Agents: map[string]*agentTrust{}, Nonces: map[string]time.Time{}}
	if path != "" {
		b, err := os.ReadFile(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return nil, wh.Wrap(err, "read the bridge's trust store %s", path)
		default:
			if err := json.Unmarshal(b, &t.f); err != nil {
				return nil, wh.Errorf(wh.EInvalid, "the bridge's trust store %s is damaged (%v): move it away to start over; you will enroll your devices again", path, err)
			}
			if t.f.Agents == nil {
				t.f.Agents = map[string]*agentTrust{}
			}
			if t.f.Nonces == nil {
				t.f.Nonces = map[string]time.Time{}
			}
		}
	}
	if agents == nil {
		return t, nil // the owner's CLI reading it: nothing reconciled, nothing to write
	}
	for _, ac := range agents {
		rooms := map[string]string{}
		for room, c := range ac.Rooms {
			if c == "" {
				c = authz.CeilingNormal
			}
			rooms[room] = c
		}
		t.config[ac.Name] = rooms
		sum := configDigest(ac)
		at := t.f.Agents[ac.Name]
		if at == nil {
			at = &agentTrust{Rooms: map[string]*roomGrant{}}
			t.f.Agents[ac.Name] = at
		}
		if at.Rooms == nil {
			at.Rooms = map[string]*roomGrant{}
		}
		if at.Config != sum {
			at.Config, at.Policy = sum, nil
			for room, g := range at.Rooms {
				if g.FromConfig {
					delete(at.Rooms, room)
				}
			}
		}
	}
	return t, t.saveLocked()
}

// configDigest is a digest of what the config file says of an agent's
// limits.
func configDigest(ac AgentConfig) string {
	b, _ := json.Marshal(struct {
		P PolicyConfig
		R map[string]string
	}{ac.PolicyFile, ac.Rooms})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// saveLocked writes the store (0600, folder 0700), dropping nonces past
// their expiry. Callers hold t.mu (or own t).
func (t *trustStore) saveLocked() error {
	now := t.now()
	for n, exp := range t.f.Nonces {
		if now.After(exp) {
			delete(t.f.Nonces, n)
		}
	}
	if t.path == "" {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(t.path), 0o700); err != nil {
		return wh.Wrap(err, "create %s", filepath.Dir(t.path))
	}
	b, _ := json.MarshalIndent(t.f, "", "  ")
	tmp := t.path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return wh.Wrap(err, "write the trust store")
	}
	return os.Rename(tmp, t.path)
}

// devices lists the devices, enrolled order.
func (t *trustStore) devices() []wire.Device {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]wire.Device, 0, len(t.f.Devices))
	for _, d := range t.f.Devices {
		out = append(out, d.wire())
	}
	return out
}

// device is the device named id, nil if none.
func (t *trustStore) device(id string) *trustedDevice {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := range t.f.Devices {
		if t.f.Devices[i].ID == id {
			d := t.f.Devices[i]
			return &d
		}
	}
	return nil
}

// enroll adds (or renews, un-revoking) a device.
func (t *trustStore) enroll(d trustedDevice) (wire.Device, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	d.AddedAt = t.now().UTC()
	i := slices.IndexFunc(t.f.Devices, func(x trustedDevice) bool { return x.ID == d.ID })
	if i >= 0 {
		t.f.Devices[i] = d
	} else {
		t.f.Devices = append(t.f.Devices, d)
	}
	return d.wire(), t.saveLocked()
}

// revoke revokes a device; its signatures are refused from now on.
func (t *trustStore) revoke(id string) (wire.Device, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := range t.f.Devices {
		if t.f.Devices[i].ID == id {
			if !t.f.Devices[i].Revoked {
				t.f.Devices[i].Revoked, t.f.Devices[i].RevokedAt = true, t.now().UTC()
			}
			return t.f.Devices[i].wire(), t.saveLocked()
		}
	}
	return wire.Device{}, wh.Errorf(wh.ENotFound, "no device %s on this bridge (see wheelhouse bridge devices)", id)
}

// checkSigned verifies a signed decision against the store and, when it
// holds, uses its nonce up: a statement works once. Whatever the kind, the
// statement must name this bridge.
func (t *trustStore) checkSigned(s *wire.Signed, want authz.Statement) (authz.Statement, authz.Decision) {
	want.Bridge = t.bridge
	if want.Bridge == "" {
		return authz.Statement{}, authz.Decision{Reason: authz.ReasonWrongStatement, Message: "the bridge has no id to check the statement against"}
	}
	c := authz.SignedCheck{Want: want, Now: t.now()}
	if s != nil {
		c.Raw = []byte(s.Statement)
		sig, err := s.Signature()
		if err != nil {
			return authz.Statement{}, authz.Decision{Reason: authz.ReasonBadSignature, Message: wh.ErrorMessage(err)}
		}
		c.Sig = sig
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if s != nil {
		for i := range t.f.Devices {
			if t.f.Devices[i].ID == s.Device {
				c.Device = t.f.Devices[i].key()
			}
		}
	}
	c.NonceUsed = func(n string) bool { _, ok := t.f.Nonces[n]; return ok }
	st, d := authz.CheckSigned(c)
	if d.Allow {
		t.f.Nonces[st.Nonce] = st.ExpiresAt()
		if err := t.saveLocked(); err != nil {
			// Without a record of the nonce the decision could be replayed
			// after a restart: refuse it.
			return st, authz.Decision{Reason: authz.ReasonReplayed, Message: "the bridge could not record the signed decision: " + err.Error()}
		}
	}
	return st, d
}

// policy is the agent's effective policy as the store holds it (nil: the
// config's).
func (t *trustStore) policy(agent string) *wire.Policy {
	t.mu.Lock()
	defer t.mu.Unlock()
	if at := t.f.Agents[agent]; at != nil && at.Policy != nil {
		p := *at.Policy
		return &p
	}
	return nil
}

func (t *trustStore) setPolicy(agent string, p wire.Policy) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	at := t.agent(agent)
	at.Policy = &p
	return t.saveLocked()
}

func (t *trustStore) agent(name string) *agentTrust {
	at := t.f.Agents[name]
	if at == nil {
		at = &agentTrust{Rooms: map[string]*roomGrant{}}
		t.f.Agents[name] = at
	}
	return at
}

// grant is the room's grant for agent: its ceiling, and whether the agent
// may act there at all.
func (t *trustStore) grant(agent, room string) (ceiling string, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if at := t.f.Agents[agent]; at != nil {
		if g := at.Rooms[room]; g != nil {
			return g.Ceiling, !g.Removed
		}
	}
	c, ok := t.config[agent][room]
	return c, ok
}

// grants lists the rooms agent may act in, sorted.
func (t *trustStore) grants(agent string) []wire.RoomGrant {
	t.mu.Lock()
	defer t.mu.Unlock()
	if out, ok := t.listed[agent]; ok {
		return out // never changed by callers: they only send it
	}
	rooms := map[string]string{}
	for r, c := range t.config[agent] {
		rooms[r] = c
	}
	if at := t.f.Agents[agent]; at != nil {
		for r, g := range at.Rooms {
			if g.Removed {
				delete(rooms, r)
			} else {
				rooms[r] = g.Ceiling
			}
		}
	}
	out := make([]wire.RoomGrant, 0, len(rooms))
	for r, c := range rooms {
		out = append(out, wire.RoomGrant{Room: r, Ceiling: c})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Room < out[j].Room })
	if t.listed == nil {
		t.listed = map[string][]wire.RoomGrant{}
	}
	t.listed[agent] = out
	return out
}

// setGrant records that agent may act in room at ceiling (by names who
// decided), or, removed, that it may not.
func (t *trustStore) setGrant(agent, room, ceiling, by string, removed bool) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.listed, agent)
	_, inConfig := t.config[agent][room]
	if removed && !inConfig {
		delete(t.agent(agent).Rooms, room)
		return t.saveLocked()
	}
	t.agent(agent).Rooms[room] = &roomGrant{Ceiling: ceiling, By: by, At: t.now().UTC(), Removed: removed, FromConfig: inConfig}
	return t.saveLocked()
}

// The owner's CLI reads and changes the trust store directly when no
// bridge runs (a lost laptop is revoked whether or not the bridge is up).

// DevicesOffline revokes device revokeID ("" for none), then lists the
// devices, of the bridge whose credentials are at credsPath while it does
// not run: its trust store is beside its credentials.
func DevicesOffline(credsPath, revokeID string) ([]wire.Device, error) {
	trust := TrustPath(credsPath)
	if revokeID != "" {
		if _, err := RevokeTrusted(trust, revokeID); err != nil {
			return nil, err
		}
	}
	return TrustedDevices(trust)
}

// TrustedDevices lists the devices in the trust store at path.
func TrustedDevices(path string) ([]wire.Device, error) {
	t, err := openTrust(path, time.Now, nil)
	if err != nil {
		return nil, err
	}
	return t.devices(), nil
}

// RevokeTrusted revokes a device in the trust store at path.
func RevokeTrusted(path, id string) (wire.Device, error) {
	t, err := openTrust(path, time.Now, nil)
	if err != nil {
		return wire.Device{}, err
	}
	return t.revoke(id)
}
