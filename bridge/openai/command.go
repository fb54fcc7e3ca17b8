package openai

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/internal/procgroup"
)

// commandResult is what a finished command left.
type commandResult struct {
	ExitCode int
	Output   string // stdout and stderr interleaved, capped
	TimedOut bool
	Elapsed  time.Duration
}

// runCommand runs line with sh -c in dir, with env, stdin from /dev/null,
// stdout and stderr captured together (the first and last cap/2 bytes are
// kept). It kills the whole process group at the timeout or when ctx ends.
func runCommand(ctx context.Context, dir, line string, env []string, timeout time.Duration, capBytes int) (commandResult, error) {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.Command("sh", "-c", line)
	cmd.Dir = dir
	cmd.Env = env
	out := &capBuffer{max: capBytes}
	cmd.Stdout, cmd.Stderr = out, out
	procgroup.Own(cmd)
	// A background child that keeps the output open does not hold the
	// result past its shell by more than this.
	cmd.WaitDelay = time.Second
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return commandResult{}, fmt.Errorf("cannot start sh: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-cctx.Done():
		procgroup.Kill(cmd)
		err = <-done
	}
	// The shell is gone; children it left in the background go too.
	procgroup.Kill(cmd)
	res := commandResult{Output: out.String(), Elapsed: time.Since(start)}
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	if errors.Is(cctx.Err(), context.DeadlineExceeded) {
		res.TimedOut, res.ExitCode = true, -1
		return res, nil
	}
	var ee *exec.ExitError
	switch {
	case err == nil, errors.Is(err, exec.ErrWaitDelay):
	case errors.As(err, &ee):
		res.ExitCode = ee.ExitCode()
	default:
		return res, err
	}
	return res, nil
}

// capBuffer keeps the first and last max/2 bytes written to it.
type capBuffer struct {
	max     int
	head    bytes.Buffer
	tail    []byte
	dropped int64
}

func (c *capBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if room := c.max/2 - c.head.Len(); room > 0 {
		k := min(room, len(p))
		c.head.Write(p[:k])
		p = p[k:]
	}
	if len(p) == 0 {
		return n, nil
	}
	keep := c.max - c.max/2
	c.tail = append(c.tail, p...)
	if over := len(c.tail) - keep; over > 0 {
		c.dropped += int64(over)
		c.tail = append(c.tail[:0], c.tail[over:]...)
	}
	return n, nil
}

func (c *capBuffer) String() string {
	if c.dropped == 0 {
		return c.head.String() + string(c.tail)
	}
	return fmt.Sprintf("%s\n… (%d bytes of output left out) …\n%s", c.head.String(), c.dropped, c.tail)
}

// commandEnv is the bridge's environment without what is none of the
// agent's business (the bridge's own settings and the API key), plus the
// agent's env.
func commandEnv(parent []string, apiKeyEnv string, extra map[string]string) []string {
	env := make([]string, 0, len(parent)+len(extra))
	for _, kv := range parent {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "WHEELHOUSE_") || (apiKeyEnv != "" && name == apiKeyEnv) {
			continue
		}
		if _, override := extra[name]; override {
			continue
		}
		env = append(env, kv)
	}
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+extra[k])
	}
	return env
}
