package hub

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
)

// TestDeployPermissions: deploy/nats.conf gives a cluster's hub users the
// same rights as the embedded server's (natsPermissions).
func TestDeployPermissions(t *testing.T) {
	dir := t.TempDir()
	if _, err := GenerateNATSSecrets(filepath.Join(dir, "secrets")); err != nil {
		t.Fatal(err)
	}
	conf, _ := filepath.Abs("../deploy/nats.conf")
	if err := os.Symlink(conf, filepath.Join(dir, "nats.conf")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("WH_NATS_WEBSOCKET", "127.0.0.1:-1")
	opts, err := server.ProcessConfigFile(filepath.Join(dir, "nats.conf"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := LoadNATSSecrets(filepath.Join(dir, "secrets", HubAuthFile))
	if err != nil {
		t.Fatal(err)
	}
	k, _ := s.keys()
	byKey := map[string]*server.Permissions{}
	for _, u := range opts.Nkeys {
		byKey[u.Nkey] = u.Permissions
	}
	same := func(a, b *server.SubjectPermission) bool {
		if a == nil || b == nil {
			return a == b
		}
		return slices.Equal(a.Allow, b.Allow) && slices.Equal(a.Deny, b.Deny)
	}
	for role, pub := range map[natsRole]string{roleBridgeServing: pubKey(k.hub), roleLogWriter: pubKey(k.log), roleOps: pubKey(k.ops)} {
		got, want := byKey[pub], natsPermissions(role)
		if got == nil || !same(got.Publish, want.Publish) || !same(got.Subscribe, want.Subscribe) {
			t.Errorf("%s in deploy/nats.conf: %+v %+v, want %+v %+v", role, got.Publish, got.Subscribe, want.Publish, want.Subscribe)
		}
	}
	if !slices.Contains(opts.AuthCallout.AuthUsers, pubKey(k.log)) || !slices.Contains(opts.AuthCallout.AuthUsers, pubKey(k.ops)) {
		t.Error("the log-writer and ops are not auth_users: the callout would be asked about them")
	}
}

// An earlier version's hub-auth.json is refused with what to run, and
// UpgradeNATSSecrets keeps its keys and adds the new ones.
func TestUpgradeNATSSecrets(t *testing.T) {
	dir := t.TempDir()
	if _, err := GenerateNATSSecrets(dir); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, HubAuthFile)
	s, _ := LoadNATSSecrets(path)
	old := NATSSecrets{HubSeed: s.HubSeed, SysSeed: s.SysSeed, CalloutSeed: s.CalloutSeed, IssuerSeed: s.IssuerSeed}
	if err := writeFileAtomic(path, mustJSON(t, old)); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadNATSSecrets(path); err == nil || !contains(err.Error(), "wheelhouse nats-secrets --upgrade --legacy-horizon N") {
		t.Fatalf("an earlier version's file: %v", err)
	}
	if _, err := GenerateNATSSecrets(dir); err == nil {
		t.Fatal("nats-secrets accepted an earlier version's file as complete")
	}
	if up, err := UpgradeNATSSecrets(dir, 42); err != nil || !up {
		t.Fatalf("upgrade: %v %v", up, err)
	}
	n, err := LoadNATSSecrets(path)
	if err != nil {
		t.Fatal(err)
	}
	if n.HubSeed != old.HubSeed || n.IssuerSeed != old.IssuerSeed || n.LogSeed == "" || n.OpsSeed == "" || *n.LogLegacyHorizon != 42 || len(n.LogKey) != 64 {
		t.Fatalf("upgraded: %+v", n)
	}
	if up, err := UpgradeNATSSecrets(dir, 42); err != nil || up {
		t.Fatalf("a second upgrade: %v %v", up, err)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
