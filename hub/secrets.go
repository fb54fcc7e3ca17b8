package hub

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/nats-io/nkeys"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/eventlog"
)

// Names of the files GenerateNATSSecrets writes.
const (
	// NATSAuthFile is included by deploy/nats.conf: public keys only.
	NATSAuthFile = "nats-auth.conf"
	// HubAuthFile is what a hub reads with --nats-secrets: the seeds it
	// connects and signs with.
	HubAuthFile = "hub-auth.json"
)

// NATSSecrets are the keys of a hub's NATS users, one per role (see
// natsRoles): bridge-serving (hubSeed: the link that answers bridges),
// log-writer (logSeed: the event log, the KV and the object store) and ops
// (opsSeed: creating and updating streams and buckets), the system
// account's (to disconnect revoked bridges) and the auth callout
// service's; the account key that signs the bridges' user JWTs; and, on a
// cluster, the key that authenticates the hubs' events (LogKey, with the
// sequence up to which the stream holds events of earlier versions, which
// carry no MAC). The servers know only the public halves of the nkeys.
type NATSSecrets struct {
	HubSeed     string `json:"hubSeed"`     // nkey user seed (SU…), the hub's account: bridge-serving
	LogSeed     string `json:"logSeed"`     // nkey user seed, the hub's account: log-writer
	OpsSeed     string `json:"opsSeed"`     // nkey user seed, the hub's account: ops
	SysSeed     string `json:"sysSeed"`     // nkey user seed, the system account
	CalloutSeed string `json:"calloutSeed"` // nkey user seed, account AUTH
	IssuerSeed  string `json:"issuerSeed"`  // nkey account seed (SA…), auth_callout.issuer
	// LogKey (hex, 32 bytes) and LogLegacyHorizon are the cluster's
	// eventlog.Auth; the embedded hub keeps its own in LogKeyFile.
	LogKey           string  `json:"logKey,omitempty"`
	LogLegacyHorizon *uint64 `json:"logLegacyHorizon,omitempty"`
}

// newNATSSecrets generates fresh keys (the embedded server uses a new set
// on every start; a cluster shares one set from GenerateNATSSecrets). It
// fills only the seeds that are empty.
func newNATSSecrets(s NATSSecrets) (NATSSecrets, error) {
	for _, k := range []struct {
		dst    *string
		create func() (nkeys.KeyPair, error)
	}{{&s.HubSeed, nkeys.CreateUser}, {&s.LogSeed, nkeys.CreateUser}, {&s.OpsSeed, nkeys.CreateUser}, {&s.SysSeed, nkeys.CreateUser}, {&s.CalloutSeed, nkeys.CreateUser}, {&s.IssuerSeed, nkeys.CreateAccount}} {
		if *k.dst != "" {
			continue
		}
		kp, err := k.create()
		if err != nil {
			return s, err
		}
		seed, _ := kp.Seed()
		*k.dst = string(seed)
	}
	return s, nil
}

// natsKeys are the decoded NATSSecrets.
type natsKeys struct {
	hub, log, ops, sys, callout, issuer nkeys.KeyPair
}

func (s NATSSecrets) keys() (natsKeys, error) {
	var k natsKeys
	var err error
	for _, d := range []struct {
		dst    *nkeys.KeyPair
		seed   string
		prefix byte
		name   string
	}{{&k.hub, s.HubSeed, 'U', "hubSeed"}, {&k.log, s.LogSeed, 'U', "logSeed"}, {&k.ops, s.OpsSeed, 'U', "opsSeed"}, {&k.sys, s.SysSeed, 'U', "sysSeed"}, {&k.callout, s.CalloutSeed, 'U', "calloutSeed"}, {&k.issuer, s.IssuerSeed, 'A', "issuerSeed"}} {
		if *d.dst, err = seedOf(d.seed, d.prefix); err != nil {
			kind := "user seed (SU…)"
			if d.prefix == 'A' {
				kind = "account seed (SA…)"
			}
			return k, fmt.Errorf("%s is not an nkey %s", d.name, kind)
		}
	}
	return k, nil
}

// seedOf decodes an nkey seed whose public key starts with prefix.
func seedOf(seed string, prefix byte) (nkeys.KeyPair, error) {
	kp, err := nkeys.FromSeed([]byte(seed))
	if err != nil {
		return nil, err
	}
	pub, err := kp.PublicKey()
	if err != nil || pub[0] != prefix {
		return nil, errors.New("wrong kind of key")
	}
	return kp, nil
}

func pubKey(kp nkeys.KeyPair) string {
	pub, _ := kp.PublicKey()
	return pub
}

// LoadNATSSecrets reads the file GenerateNATSSecrets wrote for hubs.
func LoadNATSSecrets(path string) (NATSSecrets, error) {
	var s NATSSecrets
	b, err := os.ReadFile(path)
	if err != nil {
		return s, wh.Errorf(wh.EInvalid, "--nats-secrets: cannot read %s: %v (generate it with: wheelhouse nats-secrets DIR)", path, err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, wh.Errorf(wh.EInvalid, "--nats-secrets: %s is not the JSON wheelhouse nats-secrets writes: %v", path, err)
	}
	if missing := s.missing(); len(missing) > 0 {
		return s, wh.Errorf(wh.EInvalid, "--nats-secrets: %s was written by an earlier wheelhouse and lacks %s (this version gives the hub one NATS user per role and authenticates its events). "+
			"With every hub stopped, run: wheelhouse nats-secrets --upgrade --legacy-horizon N %s — N is the event stream's last sequence (`nats stream info WHEELHOUSE`, or wheelhouse_projection_applied_seq of a caught-up hub before it stopped; never lower). "+
			"It keeps the existing keys, adds the new ones to both files, and the NATS servers must then be restarted with the new %s; copy the new %s to every hub (docs/operations.md)",
			path, strings.Join(missing, ", "), filepath.Dir(path), NATSAuthFile, HubAuthFile)
	}
	if _, err := s.keys(); err != nil {
		return s, wh.Errorf(wh.EInvalid, "--nats-secrets: %s: %v", path, err)
	}
	if _, err := s.logAuth(); err != nil {
		return s, wh.Errorf(wh.EInvalid, "--nats-secrets: %s: %v", path, err)
	}
	return s, nil
}

// missing names the fields an earlier version's file lacks.
func (s NATSSecrets) missing() []string {
	var out []string
	for _, f := range []struct {
		name string
		ok   bool
	}{{"logSeed", s.LogSeed != ""}, {"opsSeed", s.OpsSeed != ""}, {"logKey", s.LogKey != ""}, {"logLegacyHorizon", s.LogLegacyHorizon != nil}} {
		if !f.ok {
			out = append(out, f.name)
		}
	}
	return out
}

// logAuth is the cluster's key for the hubs' events.
func (s NATSSecrets) logAuth() (eventlog.Auth, error) {
	key, err := hex.DecodeString(s.LogKey)
	if err != nil || len(key) != eventlog.KeySize {
		return eventlog.Auth{}, fmt.Errorf("logKey is not %d bytes in hex", eventlog.KeySize)
	}
	var horizon uint64
	if s.LogLegacyHorizon != nil {
		horizon = *s.LogLegacyHorizon
	}
	return eventlog.Auth{Key: key, LegacyHorizon: horizon}, nil
}

// GenerateNATSSecrets writes a new set of cluster secrets into dir (0700):
// NATSAuthFile for the NATS servers and HubAuthFile for the hubs, both
// 0600. If both files exist it keeps them and reports created=false, so
// it is safe to run on every start.
func GenerateNATSSecrets(dir string) (created bool, err error) {
	natsPath, hubPath := filepath.Join(dir, NATSAuthFile), filepath.Join(dir, HubAuthFile)
	_, e1 := os.Stat(natsPath)
	_, e2 := os.Stat(hubPath)
	if e1 == nil && e2 == nil {
		if _, err := LoadNATSSecrets(hubPath); err != nil {
			return false, err
		}
		return false, nil
	}
	if e1 == nil || e2 == nil {
		return false, wh.Errorf(wh.EConflict, "%s holds only one of %s and %s: move it away and generate both again", dir, NATSAuthFile, HubAuthFile)
	}
	if !errors.Is(e1, fs.ErrNotExist) || !errors.Is(e2, fs.ErrNotExist) {
		return false, wh.Errorf(wh.EInvalid, "cannot read %s: %v", dir, errors.Join(e1, e2))
	}
	if err := writeNATSSecrets(dir, NATSSecrets{LogLegacyHorizon: new(uint64)}, true); err != nil {
		return false, err
	}
	return true, nil
}

// UpgradeNATSSecrets adds what this version needs to the secrets an
// earlier one wrote into dir: the log-writer's and ops' keys and the
// events' key, with horizon, the event stream's last sequence (its events
// carry no MAC). The existing keys are kept; both files are rewritten.
// upgraded is false when there was nothing to add.
func UpgradeNATSSecrets(dir string, horizon uint64) (upgraded bool, err error) {
	hubPath := filepath.Join(dir, HubAuthFile)
	b, err := os.ReadFile(hubPath)
	if err != nil {
		return false, wh.Errorf(wh.EInvalid, "cannot read %s: %v", hubPath, err)
	}
	var s NATSSecrets
	if err := json.Unmarshal(b, &s); err != nil {
		return false, wh.Errorf(wh.EInvalid, "%s is not the JSON wheelhouse nats-secrets writes: %v", hubPath, err)
	}
	if len(s.missing()) == 0 {
		return false, nil
	}
	if s.LogKey != "" || s.LogLegacyHorizon != nil {
		return false, wh.Errorf(wh.EInvalid, "%s holds logKey or logLegacyHorizon but not both: restore the file from its backup", hubPath)
	}
	s.LogLegacyHorizon = &horizon
	if err := writeNATSSecrets(dir, s, false); err != nil {
		return false, err
	}
	return true, nil
}

// writeNATSSecrets fills what s lacks and writes both files; fresh: they
// did not exist (a failure removes what was written).
func writeNATSSecrets(dir string, s NATSSecrets, fresh bool) error {
	natsPath, hubPath := filepath.Join(dir, NATSAuthFile), filepath.Join(dir, HubAuthFile)
	s, err := newNATSSecrets(s)
	if err != nil {
		return wh.Wrap(err, "generate keys")
	}
	if s.LogKey == "" {
		key := make([]byte, eventlog.KeySize)
		if _, err := rand.Read(key); err != nil {
			return wh.Wrap(err, "generate the events' key")
		}
		s.LogKey = hex.EncodeToString(key)
	}
	k, err := s.keys()
	if err != nil {
		return wh.Errorf(wh.EInvalid, "%s: %v", hubPath, err)
	}
	conf := fmt.Sprintf(`# Written by "wheelhouse nats-secrets" for deploy/nats.conf, which includes it:
# the public keys of the hubs' NATS users (one per role: bridge-serving,
# log-writer, ops; the system account's; the auth callout's) and of the
# account that signs bridges' logins. The seeds are in %s, for the hubs
# only.
WH_HUB_USER: %q
WH_LOG_USER: %q
WH_OPS_USER: %q
WH_SYS_USER: %q
WH_CALLOUT_USER: %q
WH_CALLOUT_ISSUER: %q
`, HubAuthFile, pubKey(k.hub), pubKey(k.log), pubKey(k.ops), pubKey(k.sys), pubKey(k.callout), pubKey(k.issuer))
	hub, _ := json.MarshalIndent(s, "", "  ")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return wh.Wrap(err, "create %s", dir)
	}
	// Hubs' file last: its presence with the other marks a complete set.
	if err := writeFileAtomic(natsPath, []byte(conf)); err != nil {
		return err
	}
	if err := writeFileAtomic(hubPath, append(hub, '\n')); err != nil {
		if fresh {
			os.Remove(natsPath)
		}
		return err
	}
	return nil
}

func writeFileAtomic(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return wh.Wrap(err, "write %s", path)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return wh.Wrap(err, "write %s", path)
	}
	return nil
}
