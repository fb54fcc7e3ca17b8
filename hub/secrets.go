package hub

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/nats-io/nkeys"

	wh "github.com/wheelhouse-dev/wheelhouse"
)

// Names of the files GenerateNATSSecrets writes.
const (
	// NATSAuthFile is included by deploy/nats.conf: public keys only.
	NATSAuthFile = "nats-auth.conf"
	// HubAuthFile is what a hub reads with --nats-secrets: the seeds it
	// connects and signs with.
	HubAuthFile = "hub-auth.json"
)

// NATSSecrets are the keys of a hub's NATS users: its own connection,
// the system account's (to disconnect revoked bridges) and the auth
// callout service's, and the account key that signs the bridges' user
// JWTs. The servers know only the public halves.
type NATSSecrets struct {
	HubSeed     string `json:"hubSeed"`     // nkey user seed (SU…), the hub's account
	SysSeed     string `json:"sysSeed"`     // nkey user seed, the system account
	CalloutSeed string `json:"calloutSeed"` // nkey user seed, account AUTH
	IssuerSeed  string `json:"issuerSeed"`  // nkey account seed (SA…), auth_callout.issuer
}

// newNATSSecrets generates fresh keys (the embedded server uses a new set
// on every start; a cluster shares one set from GenerateNATSSecrets).
func newNATSSecrets() (NATSSecrets, error) {
	var s NATSSecrets
	for _, k := range []struct {
		dst    *string
		create func() (nkeys.KeyPair, error)
	}{{&s.HubSeed, nkeys.CreateUser}, {&s.SysSeed, nkeys.CreateUser}, {&s.CalloutSeed, nkeys.CreateUser}, {&s.IssuerSeed, nkeys.CreateAccount}} {
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
	hub, sys, callout, issuer nkeys.KeyPair
}

func (s NATSSecrets) keys() (natsKeys, error) {
	var k natsKeys
	var err error
	for _, d := range []struct {
		dst    *nkeys.KeyPair
		seed   string
		prefix byte
		name   string
	}{{&k.hub, s.HubSeed, 'U', "hubSeed"}, {&k.sys, s.SysSeed, 'U', "sysSeed"}, {&k.callout, s.CalloutSeed, 'U', "calloutSeed"}, {&k.issuer, s.IssuerSeed, 'A', "issuerSeed"}} {
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
	if _, err := s.keys(); err != nil {
		return s, wh.Errorf(wh.EInvalid, "--nats-secrets: %s: %v", path, err)
	}
	return s, nil
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
	s, err := newNATSSecrets()
	if err != nil {
		return false, wh.Wrap(err, "generate keys")
	}
	k, _ := s.keys()
	conf := fmt.Sprintf(`# Written by "wheelhouse nats-secrets" for deploy/nats.conf, which includes it:
# the public keys of the hubs' NATS users and of the account that signs
# bridges' logins. The seeds are in %s, for the hubs only.
WH_HUB_USER: %q
WH_SYS_USER: %q
WH_CALLOUT_USER: %q
WH_CALLOUT_ISSUER: %q
`, HubAuthFile, pubKey(k.hub), pubKey(k.sys), pubKey(k.callout), pubKey(k.issuer))
	hub, _ := json.MarshalIndent(s, "", "  ")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return false, wh.Wrap(err, "create %s", dir)
	}
	// Hubs' file last: its presence with the other marks a complete set.
	if err := writeFileAtomic(natsPath, []byte(conf)); err != nil {
		return false, err
	}
	if err := writeFileAtomic(hubPath, append(hub, '\n')); err != nil {
		os.Remove(natsPath)
		return false, err
	}
	return true, nil
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
