package e2e_test

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/hub"
	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
)

// TestClusterWithoutQuorum runs the hub on a real three-node nats-server
// cluster (separate processes configured by deploy/nats.conf, the event
// stream replicated three times),
// stops two nodes, and checks that the hub says why it cannot take
// writes: /readyz event-log-unavailable, writes 503 with that reason.
// With the nodes back the hub is ready again without a restart, and
// nothing acknowledged was lost.
func TestClusterWithoutQuorum(t *testing.T) {
	cl := startCluster(t, 3)
	h := testhub.Start(t, testhub.Options{NATS: cl.nats(), Replicas: 3})
	admin := h.Setup("root", "correct horse")
	admin.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "r"})
	admin.Post("r", "with quorum")

	cl.stop(t, 1)
	cl.stop(t, 2)
	t.Run("NotReady", func(t *testing.T) {
		testhub.CheckFor(t, 30*time.Second, "readyz event-log-unavailable", func() error {
			r := testhub.NewClient(t, h.URL()).Do("GET", "/readyz", nil)
			if r.Status != 503 || r.Body["reason"] != "event-log-unavailable" {
				return fmt.Errorf("%d %s", r.Status, r.Raw)
			}
			return nil
		})
	})
	t.Run("WritesRefused", func(t *testing.T) {
		r := admin.Do("POST", "/api/v1/rooms/r/messages", map[string]string{"text": "without quorum"})
		if r.Status != 503 || r.ErrCode() != "unavailable" || r.ErrReason() != "event-log-unavailable" {
			t.Fatalf("%d %s", r.Status, r.Raw)
		}
	})

	cl.start(t, 1)
	cl.start(t, 2)
	t.Run("Recovers", func(t *testing.T) {
		testhub.CheckFor(t, 60*time.Second, "readyz 200", func() error {
			r := testhub.NewClient(t, h.URL()).Do("GET", "/readyz", nil)
			if r.Status != 200 {
				return fmt.Errorf("%d %s", r.Status, r.Raw)
			}
			return nil
		})
		testhub.CheckFor(t, 30*time.Second, "a write", func() error {
			if r := admin.Do("POST", "/api/v1/rooms/r/messages", map[string]string{"text": "quorum again"}); r.Status != 201 {
				return fmt.Errorf("%d %s", r.Status, r.Raw)
			}
			return nil
		})
		if texts := roomTexts(t, admin, "r"); strings.Join(texts, "|") != "with quorum|quorum again" {
			t.Fatalf("messages %q", texts)
		}
	})
}

// cluster is a set of real nats-server processes configured by the shipped
// deploy/nats.conf, clustered with each other on loopback.
type cluster struct {
	bin, dir, secrets string
	ports, ws         []int // client and websocket ports
	args              [][]string
	procs             []*exec.Cmd
}

func startCluster(t *testing.T, n int) *cluster {
	t.Helper()
	cl := &cluster{bin: testhub.NATSServerBinary(t), dir: t.TempDir(), procs: make([]*exec.Cmd, n)}
	if _, err := hub.GenerateNATSSecrets(filepath.Join(cl.dir, "secrets")); err != nil {
		t.Fatal(err)
	}
	cl.secrets = filepath.Join(cl.dir, "secrets", hub.HubAuthFile)
	conf := filepath.Join(cl.dir, "nats.conf")
	if err := os.Symlink(testhub.RepoFile("deploy/nats.conf"), conf); err != nil {
		t.Fatal(err)
	}
	routes := make([]string, n)
	routePorts := make([]int, n)
	for i := range n {
		cl.ports = append(cl.ports, freePort(t))
		cl.ws = append(cl.ws, freePort(t))
		routePorts[i] = freePort(t)
		routes[i] = fmt.Sprintf("nats://127.0.0.1:%d", routePorts[i])
	}
	for i := range n {
		cl.args = append(cl.args, []string{"-c", conf, "--name", fmt.Sprintf("n%d", i), "-a", "127.0.0.1", "-p", fmt.Sprint(cl.ports[i]),
			"-sd", filepath.Join(cl.dir, fmt.Sprintf("n%d", i)), "--cluster", routes[i], "--routes", strings.Join(routes, ","),
			"-l", filepath.Join(cl.dir, fmt.Sprintf("n%d.log", i))})
	}
	for i := range n {
		cl.start(t, i)
	}
	t.Cleanup(func() {
		for i := range cl.procs {
			cl.stop(t, i)
		}
		if t.Failed() {
			for i := range n {
				b, _ := os.ReadFile(filepath.Join(cl.dir, fmt.Sprintf("n%d.log", i)))
				t.Logf("n%d.log:\n%s", i, b)
			}
		}
	})
	return cl
}

// nats is how a hub reaches the cluster (the hub waits for JetStream).
func (cl *cluster) nats() *testhub.NATS {
	var u []string
	for _, p := range cl.ports {
		u = append(u, fmt.Sprintf("nats://127.0.0.1:%d", p))
	}
	return &testhub.NATS{URL: strings.Join(u, ","), Websocket: fmt.Sprintf("ws://127.0.0.1:%d", cl.ws[0]), Secrets: cl.secrets}
}

func (cl *cluster) start(t *testing.T, i int) {
	t.Helper()
	cmd := exec.Command(cl.bin, cl.args[i]...)
	cmd.Env = append(os.Environ(), fmt.Sprintf("WH_NATS_WEBSOCKET=127.0.0.1:%d", cl.ws[i]))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cl.procs[i] = cmd
	testhub.CheckFor(t, 30*time.Second, fmt.Sprintf("nats-server n%d listening", i), func() error {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", cl.ports[i]), time.Second)
		if err == nil {
			c.Close()
		}
		return err
	})
}

// stop kills node i (a crash, not a goodbye) and waits for it to exit.
func (cl *cluster) stop(t *testing.T, i int) {
	t.Helper()
	cmd := cl.procs[i]
	if cmd == nil {
		return
	}
	cl.procs[i] = nil
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
