package e2e_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
)

// TestClusterWithoutQuorum runs the hub on a real three-node nats-server
// cluster (separate processes, the event stream replicated three times),
// stops two nodes, and checks that the hub says why it cannot take
// writes: /readyz event-log-unavailable, writes 503 with that reason.
// With the nodes back the hub is ready again without a restart, and
// nothing acknowledged was lost.
func TestClusterWithoutQuorum(t *testing.T) {
	cl := startCluster(t, 3)
	h := testhub.Start(t, testhub.Options{NATSURL: cl.urls(), Replicas: 3})
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

// cluster is a set of nats-server processes clustered with each other.
type cluster struct {
	bin   string
	dir   string
	ports []int // client ports
	confs []string
	procs []*exec.Cmd
}

func startCluster(t *testing.T, n int) *cluster {
	t.Helper()
	cl := &cluster{bin: natsServerBinary(t), dir: t.TempDir(), procs: make([]*exec.Cmd, n)}
	routes := make([]int, n)
	for i := range n {
		cl.ports = append(cl.ports, freePort(t))
		routes[i] = freePort(t)
	}
	var routeURLs []string
	for _, p := range routes {
		routeURLs = append(routeURLs, fmt.Sprintf("nats-route://127.0.0.1:%d", p))
	}
	for i := range n {
		conf := filepath.Join(cl.dir, fmt.Sprintf("n%d.conf", i))
		body := fmt.Sprintf(`server_name: n%d
listen: 127.0.0.1:%d
jetstream { store_dir: %q }
cluster { name: wh, listen: 127.0.0.1:%d, routes: [%s] }
`, i, cl.ports[i], filepath.Join(cl.dir, fmt.Sprintf("n%d", i)), routes[i], strings.Join(routeURLs, ", "))
		if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		cl.confs = append(cl.confs, conf)
	}
	for i := range n {
		cl.start(t, i)
	}
	t.Cleanup(func() {
		for i := range cl.procs {
			cl.stop(t, i)
		}
	})
	// JetStream is usable once the cluster has elected its meta leader.
	nc, err := nats.Connect(cl.urls())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	testhub.CheckFor(t, 60*time.Second, "the JetStream cluster", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err := js.AccountInfo(ctx)
		return err
	})
	return cl
}

func (cl *cluster) urls() string {
	var u []string
	for _, p := range cl.ports {
		u = append(u, fmt.Sprintf("nats://127.0.0.1:%d", p))
	}
	return strings.Join(u, ",")
}

func (cl *cluster) start(t *testing.T, i int) {
	t.Helper()
	log, err := os.OpenFile(filepath.Join(cl.dir, fmt.Sprintf("n%d.log", i)), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	cmd := exec.Command(cl.bin, "-c", cl.confs[i])
	cmd.Stdout, cmd.Stderr = log, log
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

// natsServerBinary builds nats-server from the module version in go.mod,
// once, into the test tools cache (offline: the module is in the module
// cache as a dependency of the hub).
func natsServerBinary(t *testing.T) string {
	t.Helper()
	version := "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/nats-io/nats-server/v2" {
				version = d.Version
			}
		}
	}
	cache := os.Getenv("WHEELHOUSE_TOOLS_DIR")
	if cache == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			base = os.TempDir()
		}
		cache = filepath.Join(base, "wheelhouse-test-tools")
	}
	bin := filepath.Join(cache, "nats-server-"+version, "nats-server")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := fmt.Sprintf("%s.%d", bin, os.Getpid())
	cmd := exec.Command("go", "build", "-o", tmp, "github.com/nats-io/nats-server/v2")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build nats-server: %v\n%s", err, out)
	}
	if err := os.Rename(tmp, bin); err != nil { // atomic: parallel builds race harmlessly
		t.Fatal(err)
	}
	return bin
}
