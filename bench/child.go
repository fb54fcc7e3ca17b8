package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/wheelhouse-dev/wheelhouse/hub"
)

// The idle-socket run measures a server's memory apart from its clients:
// the server runs in a child process (this same program, started with
// childEnv set), the clients in the parent. The child prints "url URL",
// answers "stats" on stdin with "stats RSS HEAP STACKS GOROUTINES" (after a
// garbage collection that returns free memory to the system), and stops
// when its stdin closes.

const (
	childEnv    = "WHEELHOUSE_BENCH_CHILD" // "hub" or "raw"
	childDirEnv = "WHEELHOUSE_BENCH_DATA"  // the hub's data directory
	// childTLSEnv is "CERT.pem KEY.pem": the hub child serves HTTPS with them.
	childTLSEnv = "WHEELHOUSE_BENCH_TLS"
)

// ChildMain plays a child's part when this process was started as one, and
// reports whether it was (the caller then exits). Call it first thing in
// the programs that run the suite.
func ChildMain() bool {
	role := os.Getenv(childEnv)
	if role == "" {
		return false
	}
	if err := runChild(role, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "bench child %s: %v\n", role, err)
		os.Exit(1)
	}
	return true
}

func runChild(role string, in io.Reader, out io.Writer) error {
	var url string
	var stop func()
	switch role {
	case "hub":
		cfg := hub.Config{DataDir: os.Getenv(childDirEnv), HTTPAddr: "127.0.0.1:0", NATSAddr: "127.0.0.1:0", Logger: quietLogger(), Budgets: &noBudgets}
		if f := strings.Fields(os.Getenv(childTLSEnv)); len(f) == 2 {
			cfg.TLSCert, cfg.TLSKey = f[0], f[1]
		}
		h, err := hub.New(cfg)
		if err != nil {
			return err
		}
		if err := h.Open(context.Background()); err != nil {
			return err
		}
		url = h.URL()
		stop = func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			h.Close(ctx)
		}
	case "raw":
		srv := httptest.NewServer(http.HandlerFunc(rawIdleSocket))
		url, stop = srv.URL, srv.Close
	default:
		return fmt.Errorf("unknown role %q", role)
	}
	defer stop()
	fmt.Fprintf(out, "url %s\n", url)
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		if sc.Text() == "stats" {
			runtime.GC()
			debug.FreeOSMemory()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			fmt.Fprintf(out, "stats %d %d %d %d\n", rss(), ms.HeapInuse, ms.StackInuse, runtime.NumGoroutine())
		}
	}
	return nil
}

// rawIdleSocket is the least an idle WebSocket can cost with coder/websocket:
// accepted, a ready frame, one goroutine reading (answering pings).
func rawIdleSocket(w http.ResponseWriter, r *http.Request) {
	ws, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	ws.Write(r.Context(), websocket.MessageText, []byte(`{"type":"ready"}`))
	go func() {
		for {
			if _, _, err := ws.Read(context.Background()); err != nil {
				return
			}
		}
	}()
}

// rss is this process's resident memory in bytes (Linux), else what the
// Go runtime got from the system.
func rss() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
				kb, _ := strconv.ParseUint(f[1], 10, 64)
				return kb << 10
			}
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.Sys
}

// child is a running child process.
type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines *bufio.Scanner
	URL   string
}

// startChild runs this program as a child in role, with extra environment.
func startChild(role string, env ...string) (*child, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, "bench")
	cmd.Env = append(append(os.Environ(), childEnv+"="+role), env...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &child{cmd: cmd, stdin: stdin, lines: bufio.NewScanner(stdout)}
	f, err := c.expect("url")
	if err != nil {
		c.stop()
		return nil, fmt.Errorf("the %s child did not start: %w", role, err)
	}
	c.URL = f[0]
	return c, nil
}

func (c *child) expect(word string) ([]string, error) {
	for c.lines.Scan() {
		if f := strings.Fields(c.lines.Text()); len(f) > 0 && f[0] == word {
			return f[1:], nil
		}
	}
	if err := c.lines.Err(); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("it exited (%v)", c.cmd.Wait())
}

// memStats is a child's memory after a garbage collection.
type memStats struct {
	RSS, Heap  uint64
	Stack      uint64
	Goroutines int
}

func (c *child) stats() (memStats, error) {
	if _, err := io.WriteString(c.stdin, "stats\n"); err != nil {
		return memStats{}, err
	}
	f, err := c.expect("stats")
	if err != nil || len(f) != 4 {
		return memStats{}, fmt.Errorf("child stats: %v %q", err, f)
	}
	var s memStats
	s.RSS, _ = strconv.ParseUint(f[0], 10, 64)
	s.Heap, _ = strconv.ParseUint(f[1], 10, 64)
	s.Stack, _ = strconv.ParseUint(f[2], 10, 64)
	s.Goroutines, _ = strconv.Atoi(f[3])
	return s, nil
}

func (c *child) stop() {
	c.stdin.Close()
	done := make(chan struct{})
	go func() { c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		c.cmd.Process.Kill()
		<-done
	}
}
