package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/bridge/claude/claudehook"
	"github.com/wheelhouse-dev/wheelhouse/internal/stubmodel"
	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
)

func sessionUUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// The hub process is stopped (SIGSTOP) while the owner's attached Claude
// Code session runs: a tainted session's destructive call is denied at
// once — not after the approval's expiry — and nothing runs; a prompt in
// a session only the owner's words reached falls back to Claude Code's
// own (in -p: denied); and with `wheelhouse approvals --watch` running,
// the request waits for the owner, who approves it on the machine.
func TestAttachedClaudeWithFrozenHub(t *testing.T) {
	claudeBin := os.Getenv("WHEELHOUSE_TEST_CLAUDE")
	if claudeBin == "" {
		var err error
		if claudeBin, err = exec.LookPath("claude"); err != nil {
			t.Fatal("the claude CLI is missing: set WHEELHOUSE_TEST_CLAUDE (scripts/test-tools.sh)")
		}
	}
	self, _ := os.Executable()
	r := &faultRig{t: t, data: t.TempDir(), http: freePort(t), ns: freePort(t), bridgeDir: t.TempDir()}
	r.startHub()
	tok := r.hub.expect(t, `setup token (\S+)`)[1]
	admin := testhub.NewClient(t, r.url)
	admin.Must(201, "POST", "/api/v1/setup", map[string]string{"token": tok, "name": "root", "password": "correct horse"})
	admin.Must(201, "POST", "/api/v1/users", map[string]any{"name": "alice", "password": "alice password"})
	r.alice = testhub.NewClient(t, r.url)
	r.alice.Must(201, "POST", "/api/v1/sessions", map[string]string{"name": "alice", "password": "alice password"})
	pair := r.alice.Must(201, "POST", "/api/v1/bridges/pairing-tokens", nil).Body["token"].(string)
	creds := filepath.Join(r.bridgeDir, "bridge.json")
	if out, code := runCmd(t, "bridge", "pair", "--hub", r.url, "--token", pair, "--name", "laptop", "--credentials", creds); code != 0 {
		t.Fatalf("pair: %s", out)
	}

	proj, home, state := t.TempDir(), t.TempDir(), filepath.Join(t.TempDir(), "state")
	os.MkdirAll(filepath.Join(proj, "build"), 0o755)
	os.WriteFile(filepath.Join(proj, "README.md"), []byte("a project\n"), 0o644)
	os.MkdirAll(filepath.Join(proj, ".claude"), 0o755)
	os.WriteFile(filepath.Join(proj, ".claude", "settings.json"), []byte(`{"permissions":{"allow":["Bash(rm:*)","Bash(touch:*)"]}}`), 0o644)
	b, _ := json.Marshal(map[string]any{"projects": map[string]any{proj: map[string]any{"hasTrustDialogAccepted": true}}})
	os.WriteFile(filepath.Join(home, ".claude.json"), b, 0o600)
	if out, code := runCmd(t, "hook", "claude", "--install", "--project", proj, "--command", "WHEELHOUSE_TEST_AS_MAIN=1 "+self+" hook claude"); code != 0 {
		t.Fatalf("install: %s", out)
	}
	conf := filepath.Join(r.bridgeDir, "bridge.toml")
	os.WriteFile(conf, []byte(fmt.Sprintf(`credentials = %q
[[agent]]
name = "mine"
harness = "claude-attach"
dir = %q
  [agent.options]
  state_dir = %q
  [agent.policy]
  approval_timeout = "5m"
`, creds, proj, state)), 0o600)
	r.bridge = startProc(t, []string{"XDG_RUNTIME_DIR=" + r.bridgeDir}, "bridge", "run", "--config", conf)
	r.bridge.expect(t, `connected to`)
	sock := filepath.Join(r.bridgeDir, "wheelhouse", "bridge.sock")

	stub := stubmodel.NewMessagesServer()
	defer stub.Close()
	stub.SetResponder(stubmodel.ObedientMessages)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	claude := func(prompt string, args ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, claudeBin, append([]string{"-p", prompt}, args...)...)
		cmd.Dir = proj
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "ANTHROPIC_BASE_URL=" + stub.URL(), "ANTHROPIC_API_KEY=sk-ant-test-dummy",
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1",
			claudehook.EnvStateDir + "=" + state}
		return cmd
	}
	run := func(prompt string, args ...string) {
		t.Helper()
		if out, err := claude(prompt, args...).CombinedOutput(); err != nil {
			t.Fatalf("claude: %v: %s", err, out)
		}
	}
	// answered is how long the model waited for the result of the call
	// whose command is cmd (from the request that made it to the next).
	answered := func(t *testing.T, cmd string) (time.Duration, string) {
		t.Helper()
		reqs := stub.Requests()
		for i := 1; i < len(reqs); i++ {
			if !reqs[i-1].Contains(cmd) && reqs[i].Contains(cmd) {
				return reqs[i].At.Sub(reqs[i-1].At), strings.Join(reqs[i].ToolResults(), " ")
			}
		}
		t.Fatalf("no answer to %s", cmd)
		return 0, ""
	}

	tainted, clean := sessionUUID(), sessionUUID()
	run("read `README.md`", "--session-id", tainted)
	run("read `README.md`", "--session-id", clean)
	if err := claudehook.MarkTainted(state, tainted); err != nil { // a teammate's note reached it
		t.Fatal(err)
	}

	if err := r.hub.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.hub.cmd.Process.Signal(syscall.SIGCONT) })

	t.Run("TaintedCallDeniedAtOnce", func(t *testing.T) {
		run("delete `build`", "--resume", tainted)
		d, res := answered(t, "rm -rf build")
		t.Logf("tainted rm -rf build with the hub stopped: denied after %v (approval timeout 5m)", d.Round(time.Millisecond))
		if _, err := os.Stat(filepath.Join(proj, "build")); err != nil {
			t.Fatal("rm -rf build ran with the hub stopped")
		}
		if !strings.Contains(res, "hub is unreachable") {
			t.Errorf("the model got %q", res)
		}
		if d > time.Minute {
			t.Errorf("the hook waited %v for a hub that cannot answer", d)
		}
	})
	t.Run("OwnersPromptFallsBackToTheTerminal", func(t *testing.T) {
		run("run `mkdir made-by-owner`", "--resume", clean)
		d, res := answered(t, "mkdir made-by-owner")
		t.Logf("the owner's prompt with the hub stopped: answered after %v", d.Round(time.Millisecond))
		if _, err := os.Stat(filepath.Join(proj, "made-by-owner")); err == nil {
			t.Fatal("mkdir ran with nobody's decision")
		}
		if strings.Contains(res, "Denied through Wheelhouse") || d > time.Minute {
			t.Errorf("after %v the model got %q; want Claude Code's own prompt (in -p: its denial)", d, res)
		}
	})
	t.Run("WatchingOwnerDecides", func(t *testing.T) {
		w := startProc(t, nil, "approvals", "--watch", "--socket", sock)
		w.expect(t, `^Watching for approval requests`)
		cmd := claude("run `touch approved-while-hub-stopped`", "--resume", tainted)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		m := w.expect(t, `approve: wheelhouse approve (\S+) --hash (\S+)`)
		// The bridge's log names the taint in words (it once read
		// "[tainted: steered by @]": the session's own record has no names).
		if l := r.bridge.expect(t, `approval needed `+m[1]+`.*`)[0]; !strings.Contains(l, "[tainted: words from someone other than the owner reached the session]") {
			t.Errorf("the bridge logged %q", l)
		}
		if out, code := runCmd(t, "approve", m[1], "--hash", m[2], "--socket", sock); code != 0 {
			t.Fatalf("approve: %s", out)
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("claude: %v: %s", err, out.String())
		}
		if _, err := os.Stat(filepath.Join(proj, "approved-while-hub-stopped")); err != nil {
			t.Fatalf("the owner's approval on the machine did not let the call run: %s", out.String())
		}
		w.cmd.Process.Signal(os.Interrupt)
		w.cmd.Wait()
	})
	// The owner stops watching while a request waits for them: with the
	// hub still unreachable, no decision can come, and it is denied then.
	t.Run("WatcherLeavingDenies", func(t *testing.T) {
		w := startProc(t, nil, "approvals", "--watch", "--socket", sock)
		w.expect(t, `^Watching for approval requests`)
		cmd := claude("run `touch after-the-watcher-left`", "--resume", tainted)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		w.expect(t, `approve: wheelhouse approve (\S+) --hash (\S+)`)
		w.cmd.Process.Signal(os.Interrupt)
		w.cmd.Wait()
		left := time.Now()
		if err := cmd.Wait(); err != nil {
			t.Fatalf("claude: %v: %s", err, out.String())
		}
		t.Logf("denied %v after the watcher left", time.Since(left).Round(time.Millisecond))
		if time.Since(left) > time.Minute {
			t.Errorf("the request waited %v after the owner stopped watching", time.Since(left))
		}
		if _, err := os.Stat(filepath.Join(proj, "after-the-watcher-left")); err == nil {
			t.Fatal("ran with no one to decide")
		}
	})
}
