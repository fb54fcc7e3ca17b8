package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/wheelhouse-dev/wheelhouse/chat"
	"github.com/wheelhouse-dev/wheelhouse/deploy"
	"github.com/wheelhouse-dev/wheelhouse/hub"
)

// ClusterResult is the local cluster: three nats-server processes from
// deploy/nats.conf and two hub nodes (in this process), the event stream
// with three replicas.
type ClusterResult struct {
	NATSServer string  `json:"natsServer"` // the binary that ran
	Posts      Rate    `json:"posts"`      // alternately on both hubs
	RawPosts   Rate    `json:"rawPosts"`   // JetStream publishes to an R3 stream of the same cluster
	Ratio      float64 `json:"ratio"`
	// Post on hub 1 → received on a socket of hub 2; and on hub 1 itself.
	Across    Dist `json:"across"`
	Same      Dist `json:"same"`
	RawAcross Dist `json:"rawAcross"` // publish (R3, acknowledged) on node 1 → delivered to a consumer on node 3
	// Mentions of an agent whose bridge is paired with hub 2, posted
	// alternately on both hubs: the post to the steer reaching the harness.
	Mentions Dist `json:"mentions"`
}

func (r *ClusterResult) String() string {
	return fmt.Sprintf("Cluster: three nats-server nodes (%s, deploy/nats.conf) and two hub nodes, the event stream with 3 replicas\n"+
		"  durable posts, alternately on both hubs  %s\n"+
		"  baseline: JetStream publish to an R3 stream of the same cluster  %s\n"+
		"  ratio %.2f\n"+
		"  post on hub 1 → socket on hub 2  %s\n"+
		"  post on hub 1 → socket on hub 1  %s\n"+
		"  baseline: R3 publish on node 1 → consumer on node 3  %s\n"+
		"  mention, posted alternately on both hubs → harness (bridge paired with hub 2)  %s\n",
		r.NATSServer, r.Posts, r.RawPosts, r.Ratio, r.Across, r.Same, r.RawAcross, r.Mentions)
}

// Cluster runs the local cluster and measures durable posts and post →
// receive latency through it.
func Cluster(ctx context.Context, posts, concurrency int) (*ClusterResult, error) {
	bin, err := natsServerBinary(ctx)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "wheelhouse-bench-cluster-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	c, err := startCluster(ctx, bin, dir)
	if err != nil {
		return nil, err
	}
	defer c.stop()
	res := &ClusterResult{NATSServer: bin}

	h1, h2 := c.hubs[0], c.hubs[1]
	rs := h1.Rooms()
	admin, err := rs.Setup(ctx, "bench", "bench-password")
	if err != nil {
		return nil, err
	}
	h1.SetupDone()
	h2.SetupDone()
	token, err := rs.CreateToken(ctx, admin, "bench")
	if err != nil {
		return nil, err
	}
	if _, err := rs.CreateRoom(ctx, admin, "bench", false, ""); err != nil {
		return nil, err
	}
	if err := waitUntil(30*time.Second, "hub 2 to apply hub 1's events", func() bool { return h2.Rooms().Log.Applied() >= rs.Log.Applied() }); err != nil {
		return nil, err
	}
	e1, e2 := &env{h: h1, token: token}, &env{h: h2, token: token}

	// Throughput.
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: concurrency}}
	cpu0 := cpuTime()
	start := time.Now()
	if failed, err := hammer(ctx, posts, concurrency, func(ctx context.Context, i int) error {
		e := e1
		if i%2 == 0 {
			e = e2
		}
		_, err := e.post(ctx, client, token, "bench", fmt.Sprintf("message %d", i))
		return err
	}); err != nil {
		return nil, fmt.Errorf("%d of %d posts failed; the first: %w", failed, posts, err)
	}
	res.Posts = newRate(posts, time.Since(start), cpuTime()-cpu0)
	if res.RawPosts, err = c.rawPublish(ctx, posts, concurrency); err != nil {
		return nil, fmt.Errorf("baseline: %w", err)
	}
	res.Ratio = ratio(res.Posts.PerSecond, res.RawPosts.PerSecond)

	// Latency: one socket on each hub, posts on hub 1.
	const m = 200
	if err := waitUntil(30*time.Second, "hub 2 to catch up", func() bool { return h2.Rooms().Log.Applied() >= rs.Log.Applied() }); err != nil {
		return nil, err
	}
	since := rs.Log.Applied()
	ss, err := dialSockets(ctx, func(i int) (string, string) {
		e := []*env{e1, e2}[i]
		return e.wsURL(fmt.Sprintf("/api/v1/events?since=%d", since)), token
	}, 2, m)
	if err != nil {
		return nil, err
	}
	defer ss.close()
	sent, _, err := schedule(ctx, RoomOptions{Messages: m}, func(_ int, text string) error {
		_, err := e1.post(ctx, client, token, "bench", text)
		return err
	})
	if err != nil {
		return nil, err
	}
	same, _, err := (&sockets{subs: ss.subs[:1]}).collect(sent, nil, time.Minute)
	if err != nil {
		return nil, err
	}
	across, _, err := (&sockets{subs: ss.subs[1:]}).collect(sent, nil, time.Minute)
	if err != nil {
		return nil, err
	}
	res.Same, res.Across = dist(same), dist(across)
	if res.RawAcross, err = c.rawAcross(ctx, m); err != nil {
		return nil, fmt.Errorf("baseline: %w", err)
	}
	if res.Mentions, err = clusterMentions(ctx, e1, e2, admin, client, m); err != nil {
		return nil, fmt.Errorf("mentions: %w", err)
	}
	return res, nil
}

// clusterMentions posts n mentions of a probe agent paired with hub 2,
// alternately on hub 1 and hub 2, one after another.
func clusterMentions(ctx context.Context, e1, e2 *env, admin *chat.User, client *http.Client, n int) (Dist, error) {
	p, stop, err := startProbe(ctx, e2.h, admin, false)
	if err != nil {
		return Dist{}, err
	}
	defer stop()
	return p.time(n, func(k int, text string) error {
		e := []*env{e1, e2}[k%2]
		_, err := e.post(ctx, client, e.token, "bench", text)
		return err
	})
}

// natsServerBinary finds the nats-server the tests use (scripts/test-tools.sh
// builds it from the version go.mod pins), or builds that version from the
// module cache.
func natsServerBinary(ctx context.Context) (string, error) {
	if p := os.Getenv("WHEELHOUSE_TEST_NATS_SERVER"); p != "" {
		if _, err := exec.LookPath(p); err != nil {
			return "", notHere{fmt.Sprintf("WHEELHOUSE_TEST_NATS_SERVER=%s: %v", p, err)}
		}
		return p, nil
	}
	version := ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/nats-io/nats-server/v2" {
				version = d.Version
			}
		}
	}
	if version == "" {
		return "", notHere{"cannot tell which nats-server version this binary was built with; set WHEELHOUSE_TEST_NATS_SERVER to a nats-server binary"}
	}
	cache := os.Getenv("WHEELHOUSE_TOOLS_DIR")
	if cache == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return "", notHere{"no cache folder for nats-server (" + err.Error() + "); set WHEELHOUSE_TEST_NATS_SERVER"}
		}
		cache = filepath.Join(base, "wheelhouse-test-tools")
	}
	dir := filepath.Join(cache, "nats-server-"+version)
	bin := filepath.Join(dir, "nats-server")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	// Build it as scripts/test-tools.sh does, offline: from the module cache.
	cmd := exec.CommandContext(ctx, "go", "install", "github.com/nats-io/nats-server/v2@"+version)
	cmd.Env = append(os.Environ(), "GOBIN="+dir, "GOFLAGS=-mod=mod", "GOPROXY=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", notHere{fmt.Sprintf("nats-server %s is not in %s and building it failed (%v: %s); run scripts/test-tools.sh or set WHEELHOUSE_TEST_NATS_SERVER",
			version, dir, err, strings.TrimSpace(lastLine(string(out))))}
	}
	return bin, nil
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

type cluster struct {
	procs   []*exec.Cmd
	clients []string // the nodes' client URLs
	hubs    []*hub.Hub
	secrets hub.NATSSecrets
}

// startCluster starts three nodes as scripts/local-cluster.sh does and two
// hubs on them.
func startCluster(ctx context.Context, bin, dir string) (c *cluster, err error) {
	c = &cluster{}
	defer func() {
		if err != nil {
			c.stop()
		}
	}()
	if _, err := hub.GenerateNATSSecrets(filepath.Join(dir, "secrets")); err != nil {
		return nil, err
	}
	secrets := filepath.Join(dir, "secrets", hub.HubAuthFile)
	if c.secrets, err = hub.LoadNATSSecrets(secrets); err != nil {
		return nil, err
	}
	conf := filepath.Join(dir, "nats.conf")
	if err := os.WriteFile(conf, deploy.NATSConf, 0o600); err != nil {
		return nil, err
	}
	routePort, err := freePort()
	if err != nil {
		return nil, err
	}
	route := fmt.Sprintf("nats://127.0.0.1:%d", routePort)
	var ws []string
	for n := 1; n <= 3; n++ {
		nd := filepath.Join(dir, fmt.Sprintf("nats-%d", n))
		if err := os.MkdirAll(nd, 0o700); err != nil {
			return nil, err
		}
		clusterURL := "nats://127.0.0.1:-1"
		if n == 1 {
			clusterURL = route
		}
		cmd := exec.Command(bin, "-c", conf, "--name", fmt.Sprintf("nats-%d", n), "-a", "127.0.0.1", "-p", "-1", "-sd", nd,
			"--cluster", clusterURL, "--routes", route, "--ports_file_dir", nd, "-l", filepath.Join(nd, "nats.log"))
		cmd.Env = append(os.Environ(), "WH_NATS_WEBSOCKET=127.0.0.1:-1")
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		c.procs = append(c.procs, cmd)
		ports, err := readPorts(nd, cmd)
		if err != nil {
			return nil, fmt.Errorf("nats-%d: %w (see %s)", n, err, filepath.Join(nd, "nats.log"))
		}
		c.clients = append(c.clients, ports.Nats[0])
		ws = append(ws, ports.Websocket[0])
	}
	for i := range 2 {
		rot := func(s []string) []string { return append(append([]string{}, s[i:]...), s[:i]...) }
		h, err := hub.New(hub.Config{DataDir: filepath.Join(dir, fmt.Sprintf("hub-%d", i+1)), HTTPAddr: "127.0.0.1:0", Replicas: 3,
			NATSURL: strings.Join(rot(c.clients), ","), NATSWebsocket: rot(ws), NATSSecrets: secrets, Logger: quietLogger(),
			SteerBurst: 1 << 30, SteerRefill: time.Nanosecond, Budgets: &noBudgets}) // the mention run measures delivery, not the rate limit
		if err != nil {
			return nil, err
		}
		octx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		err = h.Open(octx)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("hub %d: %w", i+1, err)
		}
		c.hubs = append(c.hubs, h)
	}
	return c, nil
}

type portsFile struct {
	Nats      []string `json:"nats"`
	Websocket []string `json:"websocket"`
}

// readPorts waits for a node's ports file.
func readPorts(dir string, cmd *exec.Cmd) (portsFile, error) {
	name := filepath.Join(dir, fmt.Sprintf("%s_%d.ports", filepath.Base(cmd.Path), cmd.Process.Pid))
	var p portsFile
	err := waitUntil(10*time.Second, "its ports file", func() bool {
		b, err := os.ReadFile(name)
		return err == nil && json.Unmarshal(b, &p) == nil && len(p.Nats) > 0 && len(p.Websocket) > 0
	})
	return p, err
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (c *cluster) stop() {
	for _, h := range c.hubs {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		h.Close(ctx)
		cancel()
	}
	for _, p := range c.procs {
		p.Process.Signal(os.Interrupt)
	}
	for _, p := range c.procs {
		done := make(chan struct{})
		go func() { p.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			p.Process.Kill()
			<-done
		}
	}
}

// connect connects to node i as the hubs' ops user, the one that may
// create a stream (and publish on the baseline's subjects, wh.bench.>).
func (c *cluster) connect(i int) (*nats.Conn, error) {
	kp, err := nkeys.FromSeed([]byte(c.secrets.OpsSeed))
	if err != nil {
		return nil, err
	}
	pub, _ := kp.PublicKey()
	return nats.Connect(c.clients[i], nats.Nkey(pub, kp.Sign), nats.CustomInboxPrefix(hub.OpsInbox))
}

func (c *cluster) benchStream(ctx context.Context, js jetstream.JetStream) error {
	_, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: "BENCH", Subjects: []string{"wh.bench.>"}, Storage: jetstream.FileStorage, Replicas: 3})
	return err
}

// rawPublish is n acknowledged publishes to an R3 stream through node 1.
func (c *cluster) rawPublish(ctx context.Context, n, conc int) (Rate, error) {
	nc, err := c.connect(0)
	if err != nil {
		return Rate{}, err
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	if err := c.benchStream(ctx, js); err != nil {
		return Rate{}, err
	}
	payload := sampleFrame(1, "bench", "message")
	cpu0 := cpuTime()
	start := time.Now()
	if _, err := hammer(ctx, n, conc, func(ctx context.Context, _ int) error {
		_, err := js.Publish(ctx, "wh.bench.x", payload)
		return err
	}); err != nil {
		return Rate{}, err
	}
	return newRate(n, time.Since(start), cpuTime()-cpu0), nil
}

// rawAcross is publish on node 1 → delivery to an ordered consumer on
// node 3, one message after another.
func (c *cluster) rawAcross(ctx context.Context, m int) (Dist, error) {
	pub, err := c.connect(0)
	if err != nil {
		return Dist{}, err
	}
	defer pub.Close()
	sub, err := c.connect(2)
	if err != nil {
		return Dist{}, err
	}
	defer sub.Close()
	jp, _ := jetstream.New(pub)
	js, _ := jetstream.New(sub)
	if err := c.benchStream(ctx, jp); err != nil {
		return Dist{}, err
	}
	st, err := js.Stream(ctx, "BENCH")
	if err != nil {
		return Dist{}, err
	}
	cons, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverNewPolicy, FilterSubjects: []string{"wh.bench.lat"}})
	if err != nil {
		return Dist{}, err
	}
	got := make(chan time.Time, m)
	cc, err := cons.Consume(func(jetstream.Msg) { got <- time.Now() })
	if err != nil {
		return Dist{}, err
	}
	defer cc.Stop()
	payload := sampleFrame(1, "bench", "message")
	ds := make([]time.Duration, 0, m)
	for range m {
		t0 := time.Now()
		if _, err := jp.Publish(ctx, "wh.bench.lat", payload); err != nil {
			return Dist{}, err
		}
		select {
		case at := <-got:
			ds = append(ds, at.Sub(t0))
		case <-time.After(10 * time.Second):
			return Dist{}, fmt.Errorf("the consumer on node 3 received %d of %d", len(ds), m)
		}
	}
	return dist(ds), nil
}
