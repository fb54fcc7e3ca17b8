package bench

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// StartResult is how long `wheelhouse up` takes from exec to printing its
// URL, from a built binary.
type StartResult struct {
	Binary string  `json:"binary"`
	First  float64 `json:"firstSeconds"` // fresh data: admin, room, bridge key made
	Again  float64 `json:"againSeconds"` // the same data, started again
	Floor  float64 `json:"floorSeconds"` // the binary printing its usage and exiting
}

func (r *StartResult) String() string {
	return fmt.Sprintf("Start-up, a built binary (%s): exec → `wheelhouse up` prints its URL\n"+
		"  first start (fresh data)  %.3f s\n  again (same data)         %.3f s\n  baseline: `wheelhouse --help`, exec to exit  %.3f s\n",
		r.Binary, r.First, r.Again, r.Floor)
}

// StartTime times `wheelhouse up` on loopback with its data, config and
// state in a temporary folder, twice (fresh, then again).
func StartTime(ctx context.Context, bin string) (*StartResult, error) {
	if bin == "" {
		self, err := os.Executable()
		if err != nil || strings.HasSuffix(filepath.Base(self), ".test") {
			return nil, notHere{"the start-up time needs the wheelhouse binary: run `wheelhouse bench` (or pass Options.Binary)"}
		}
		bin = self
	}
	dir, err := os.MkdirTemp("", "wheelhouse-bench-up-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	env := append(os.Environ(), "HOME="+dir, "XDG_CONFIG_HOME="+filepath.Join(dir, "config"), "XDG_STATE_HOME="+filepath.Join(dir, "state"),
		"XDG_DATA_HOME="+filepath.Join(dir, "share"), "XDG_RUNTIME_DIR="+filepath.Join(dir, "run"))
	os.MkdirAll(filepath.Join(dir, "run"), 0o700)
	res := &StartResult{Binary: bin}
	t0 := time.Now()
	help := exec.CommandContext(ctx, bin, "--help")
	help.Env = env
	if out, err := help.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("%s --help: %v: %s", bin, err, lastLine(string(out)))
	}
	res.Floor = time.Since(t0).Seconds()
	for i, p := range []*float64{&res.First, &res.Again} {
		d, err := timeUp(ctx, bin, filepath.Join(dir, "data"), env)
		if err != nil {
			return nil, fmt.Errorf("start %d: %w", i+1, err)
		}
		*p = d.Seconds()
	}
	return res, nil
}

func timeUp(ctx context.Context, bin, data string, env []string) (time.Duration, error) {
	cmd := exec.CommandContext(ctx, bin, "up", "--data", data, "--http", "127.0.0.1:0", "--nats", "127.0.0.1:0")
	cmd.Env = env
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	defer func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}()
	found := make(chan time.Duration, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "Wheelhouse is running: ") {
				found <- time.Since(t0)
			}
		}
		close(found)
	}()
	select {
	case d, ok := <-found:
		if !ok {
			return 0, fmt.Errorf("wheelhouse up exited without printing its URL: %s", lastLine(stderr.String()))
		}
		return d, nil
	case <-time.After(2 * time.Minute):
		return 0, fmt.Errorf("wheelhouse up printed no URL within two minutes: %s", lastLine(stderr.String()))
	}
}
