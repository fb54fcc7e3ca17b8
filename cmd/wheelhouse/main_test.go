package main

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/authz"
	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
	"github.com/wheelhouse-dev/wheelhouse/room"
)

// The test binary doubles as the wheelhouse binary: with
// WHEELHOUSE_TEST_AS_MAIN=1 it runs main, so tests start real processes of
// exactly the code under test.
func TestMain(m *testing.M) {
	if os.Getenv("WHEELHOUSE_TEST_AS_MAIN") == "1" {
		os.Args = append([]string{"wheelhouse"}, os.Args[1:]...)
		main()
		return
	}
	// The tests and the processes they start keep their state (bridge
	// journals, sockets, credentials) in a folder of their own, never the
	// user's.
	dir, err := os.MkdirTemp("", "wheelhouse-cmd-test-")
	if err != nil {
		panic(err)
	}
	for _, v := range []string{"XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_RUNTIME_DIR", "XDG_DATA_HOME"} {
		os.Setenv(v, filepath.Join(dir, strings.ToLower(v)))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// proc is a wheelhouse child process.
type proc struct {
	cmd   *exec.Cmd
	lines chan string
}

func startProc(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, args...)
	cmd.Env = append(append(os.Environ(), "WHEELHOUSE_TEST_AS_MAIN=1"), env...)
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = io.Discard
	if testing.Verbose() {
		cmd.Stderr = os.Stderr
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, lines: make(chan string, 100)}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	return p
}

// expect waits for a stdout line matching re and returns its submatches.
func (p *proc) expect(t *testing.T, re string) []string {
	t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.After(60 * time.Second)
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				t.Fatalf("process exited before printing %q", re)
			}
			if m := rx.FindStringSubmatch(l); m != nil {
				return m
			}
		case <-deadline:
			t.Fatalf("timed out waiting for %q", re)
		}
	}
}

func TestHelp(t *testing.T) {
	var out strings.Builder
	if code := run(context.Background(), []string{"--help"}, &out, &out); code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, c := range []string{"up", "hub", "bridge", "approve", "inspect", "hook", "doctor", "bench", "version"} {
		if !strings.Contains(out.String(), "  "+c) {
			t.Errorf("help lacks %s", c)
		}
	}
	out.Reset()
	if code := run(context.Background(), []string{"frobnicate"}, &out, &out); code != 2 || !strings.Contains(out.String(), "unknown command") {
		t.Fatalf("unknown command: exit %d, %s", code, out.String())
	}
}

func TestByteSizeFlag(t *testing.T) {
	for in, want := range map[string]int64{"1048576": 1 << 20, "512MiB": 512 << 20, "20GB": 20e9, "64k": 64e3, "1 TB": 1e12} {
		var b byteSize
		if err := b.Set(in); err != nil || int64(b) != want {
			t.Errorf("%q: %d %v, want %d", in, b, err, want)
		}
	}
	for _, in := range []string{"", "x", "-1", "12PB", "99999999999TB"} {
		var b byteSize
		if err := b.Set(in); err == nil {
			t.Errorf("%q accepted as %d", in, b)
		}
	}
}

func TestHubFlagsFromEnvironment(t *testing.T) {
	t.Setenv("WHEELHOUSE_HTTP", "127.0.0.1:9999")
	fs := newFlags("hub", "hub", io.Discard)
	var f hubFlags
	f.register(fs, "", "x")
	if err := parse(fs, []string{"--data", "/d"}); err != nil {
		t.Fatal(err)
	}
	if f.http != "127.0.0.1:9999" || f.data != "/d" {
		t.Fatalf("http=%q data=%q", f.http, f.data)
	}
	fs = newFlags("hub", "hub", io.Discard)
	f = hubFlags{}
	f.register(fs, "", "x")
	if err := parse(fs, []string{"--http", "127.0.0.1:1"}); err != nil || f.http != "127.0.0.1:1" {
		t.Fatalf("flag must beat the environment: %q %v", f.http, err)
	}
}

// The per-person limits come from flags and the environment; the defaults
// are room.DefaultBudgets; a malformed rate is refused.
func TestHubLimitFlags(t *testing.T) {
	t.Setenv("WHEELHOUSE_LIMIT_SOCKETS", "7")
	fs := newFlags("hub", "hub", io.Discard)
	var f hubFlags
	f.register(fs, "", "x")
	if f.limits != room.DefaultBudgets {
		t.Fatalf("defaults %+v", f.limits)
	}
	if err := parse(fs, []string{"--limit-posts", "10/1m", "--limit-rooms", "off"}); err != nil {
		t.Fatal(err)
	}
	if f.limits.Posts != (authz.Rate{N: 10, Per: time.Minute}) || !f.limits.Rooms.Off() || f.limits.Sockets != 7 || f.limits.Uploads != room.DefaultBudgets.Uploads {
		t.Fatalf("limits %+v", f.limits)
	}
	if cfg := f.config(io.Discard); cfg.Budgets == nil || *cfg.Budgets != f.limits {
		t.Fatalf("config %+v", cfg.Budgets)
	}
	fs = newFlags("hub", "hub", io.Discard)
	f = hubFlags{}
	f.register(fs, "", "x")
	if err := parse(fs, []string{"--limit-posts", "lots"}); err == nil {
		t.Fatal("a malformed rate was accepted")
	}
}

// Every command answers --help with exit 0; a mistake in the command line
// is reported once, with exit 2; enum flags refuse unknown values.
func TestCommandLine(t *testing.T) {
	for _, args := range [][]string{{"hook", "--help"}, {"hook", "claude", "--help"}, {"bridge", "--help"},
		{"bridge", "pair", "--help"}, {"bridge", "run", "--help"}, {"bridge", "invitations", "--help"}, {"bridge", "accept", "--help"}} {
		if out, code := runCmd(t, args...); code != 0 || !strings.Contains(out, "Usage: wheelhouse") {
			t.Errorf("%v: exit %d\n%s", args, code, out)
		}
	}
	for _, c := range commands() {
		if out, code := runCmd(t, c.name, "--help"); code != 0 {
			t.Errorf("%s --help: exit %d\n%s", c.name, code, out)
		}
	}
	t.Run("EnvironmentHintNamesOwnFlag", func(t *testing.T) {
		out, _ := runCmd(t, "approve", "--help")
		if strings.Contains(out, "WHEELHOUSE_HTTP") || !strings.Contains(out, "--hash as WHEELHOUSE_HASH") || !strings.Contains(out, "  --socket path") {
			t.Fatalf("approve --help:\n%s", out)
		}
	})
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"UnknownFlag", []string{"hub", "--nats-port", "1"}, "flag provided but not defined: -nats-port"},
		{"HubNeedsData", []string{"hub"}, "--data is required"},
		{"LogLevel", []string{"hub", "--data", "x", "--log-level", "loud"}, `"loud" is not one of debug, info, warn, error`},
		{"Sync", []string{"hub", "--data", "x", "--sync", "never"}, `"never" is not one of interval, always`},
		{"BridgeLogLevel", []string{"bridge", "run", "--log-level", "verbose"}, `"verbose" is not one of`},
		{"BenchPosts", []string{"bench", "--posts", "-1"}, "--posts must be 1 or more"},
		{"BenchCompareMissing", []string{"bench", "--only", "start", "--compare", "/nonexistent/last.json"}, "--compare: open /nonexistent/last.json"},
		{"BenchCompareNotARun", []string{"bench", "--only", "start", "--compare", testhub.RepoFile("docs/openapi.json")}, "is JSON but not a run of wheelhouse bench --json"},
		{"UnknownBridgeCommand", []string{"bridge", "fly"}, `unknown bridge command "fly"`},
		{"HookWithoutHarness", []string{"hook"}, "name the harness"},
		{"NATSSecretsWithoutDir", []string{"nats-secrets"}, "name the folder"},
		{"NATSSecretsUpgradeWithoutHorizon", []string{"nats-secrets", "--upgrade", "/nonexistent"}, "--upgrade needs --legacy-horizon N"},
		{"NATSSecretsHorizonWithoutUpgrade", []string{"nats-secrets", "--legacy-horizon", "3", "/nonexistent"}, "--legacy-horizon goes with --upgrade"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, code := runCmd(t, tc.args...)
			if code != 2 || strings.Count(out, tc.want) != 1 || strings.Contains(out, "Usage:") {
				t.Fatalf("exit %d, want 2 and %q once:\n%s", code, tc.want, out)
			}
		})
	}
	t.Run("LogLevelFromEnvironment", func(t *testing.T) {
		t.Setenv("WHEELHOUSE_LOG_LEVEL", "chatty")
		if out, code := runCmd(t, "hub", "--data", "x"); code != 2 || !strings.Contains(out, `WHEELHOUSE_LOG_LEVEL="chatty"`) {
			t.Fatalf("%d %s", code, out)
		}
	})
	t.Run("ErrorsNameTheSubcommand", func(t *testing.T) {
		out, code := runCmd(t, "bridge", "pair", "--hub", "https://127.0.0.1:1", "--token", "x", "--ca", "/nonexistent")
		if code != 1 || !strings.HasPrefix(out, "wheelhouse bridge pair: --ca:") {
			t.Fatalf("%d %s", code, out)
		}
	})
}
