package testhub

import (
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/wheelhouse-dev/wheelhouse/hub"
)

// RepoFile is the path of a file of this repository (deploy/nats.conf,
// scripts/local-cluster.sh).
func RepoFile(rel string) string {
	_, self, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(self), "..", "..", rel)
}

// NATS is a separate NATS server configured from the shipped
// deploy/nats.conf, as an operator runs one beside the hubs.
type NATS struct {
	*server.Server
	URL       string // the hubs' --nats-url
	Websocket string // the hubs' --nats-websocket
	Secrets   string // the hubs' --nats-secrets
	// Options are the server's, with the ports it took (for a reload).
	Options *server.Options
}

var setWebsocketEnv sync.Once

// StartNATS runs one node from deploy/nats.conf (no routes) on random
// loopback ports, with freshly generated secrets.
func StartNATS(t testing.TB) *NATS { t.Helper(); return StartNATSWith(t, nil) }

// StartNATSWith is StartNATS with tune applied to the options first (a
// store limit, say).
func StartNATSWith(t testing.TB, tune func(*server.Options)) *NATS {
	t.Helper()
	dir := t.TempDir()
	if _, err := hub.GenerateNATSSecrets(filepath.Join(dir, "secrets")); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "nats.conf")
	if err := os.Symlink(RepoFile("deploy/nats.conf"), conf); err != nil {
		t.Fatal(err)
	}
	// deploy/nats.conf takes the websocket address from the environment;
	// every test server uses the same value.
	setWebsocketEnv.Do(func() { os.Setenv("WH_NATS_WEBSOCKET", "127.0.0.1:-1") })
	opts, err := server.ProcessConfigFile(conf)
	if err != nil {
		t.Fatalf("deploy/nats.conf: %v", err)
	}
	opts.ServerName, opts.Host, opts.Port, opts.StoreDir = "test-nats", "127.0.0.1", -1, filepath.Join(dir, "js")
	opts.NoSigs, opts.NoLog = true, true
	if tune != nil {
		tune(opts)
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	t.Cleanup(ns.Shutdown)
	ws := ns.WebsocketURL()
	opts.Port = ns.Addr().(*net.TCPAddr).Port
	if u, err := url.Parse(ws); err == nil {
		opts.Websocket.Port, _ = strconv.Atoi(u.Port())
	}
	return &NATS{Server: ns, URL: ns.ClientURL(), Websocket: ws, Secrets: filepath.Join(dir, "secrets", hub.HubAuthFile), Options: opts}
}

// NATSServerBinary is the real nats-server the cluster tests run:
// WHEELHOUSE_TEST_NATS_SERVER, which scripts/test-tools.sh builds from the
// version go.mod pins.
func NATSServerBinary(t testing.TB) string {
	t.Helper()
	p := os.Getenv("WHEELHOUSE_TEST_NATS_SERVER")
	if p == "" {
		t.Fatal(`WHEELHOUSE_TEST_NATS_SERVER is not set: run eval "$(scripts/test-tools.sh)", which builds nats-server from go.mod's version`)
	}
	if _, err := exec.LookPath(p); err != nil {
		t.Fatalf("WHEELHOUSE_TEST_NATS_SERVER=%s: %v (run scripts/test-tools.sh)", p, err)
	}
	return p
}

// DialAsHub connects to n with the hub's own bridge-serving NATS identity
// (its seed from the secrets file), as a compromised hub or whoever stole
// its secrets would: it may publish on any bridge's subjects and hears
// answers on the hub's inbox.
func (n *NATS) DialAsHub(t testing.TB, name string) *nats.Conn {
	t.Helper()
	sec, err := hub.LoadNATSSecrets(n.Secrets)
	if err != nil {
		t.Fatal(err)
	}
	kp, err := nkeys.FromSeed([]byte(sec.HubSeed))
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	nc, err := nats.Connect(n.URL, nats.Nkey(pub, kp.Sign), nats.Name(name), nats.CustomInboxPrefix(hub.HubInbox))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}
