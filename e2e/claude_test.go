package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/bridge"
	"github.com/wheelhouse-dev/wheelhouse/bridge/claude"
	"github.com/wheelhouse-dev/wheelhouse/internal/stubmodel"
	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
)

const claudeWait = 30 * time.Second

// claudeBinary is the genuine Claude Code CLI: WHEELHOUSE_TEST_CLAUDE, else
// claude on PATH. A missing binary fails the test (never skips).
func claudeBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("WHEELHOUSE_TEST_CLAUDE"); p != "" {
		return p
	}
	if p, err := exec.LookPath("claude"); err == nil {
		return p
	}
	t.Fatal("the claude CLI is missing: set WHEELHOUSE_TEST_CLAUDE (scripts/test-tools.sh)")
	return ""
}

// buildHook builds cmd/wheelhouse-hook, the hook binary owners install.
func buildHook(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "wheelhouse-hook")
	cmd := exec.Command("go", "build", "-o", out, "../cmd/wheelhouse-hook")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the hook: %v\n%s", err, b)
	}
	return out
}

// claudeProject is a project with a build/ folder, a README, and the
// owner's allow rules for rm and touch in its tracked settings, trusted in
// Claude Code's HOME as on an owner's machine.
func claudeProject(t *testing.T, home, dir string) {
	t.Helper()
	for _, d := range []string{filepath.Join(dir, "build"), filepath.Join(dir, ".claude")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(dir, "README.md"), []byte("a project\n"), 0o644)
	os.WriteFile(filepath.Join(dir, ".claude", "settings.json"), []byte(`{"permissions":{"allow":["Bash(rm:*)","Bash(touch:*)"]}}`), 0o644)
	var trust map[string]any
	b, _ := os.ReadFile(filepath.Join(home, ".claude.json"))
	_ = json.Unmarshal(b, &trust)
	if trust == nil {
		trust = map[string]any{"projects": map[string]any{}}
	}
	trust["projects"].(map[string]any)[dir] = map[string]any{"hasTrustDialogAccepted": true}
	b, _ = json.Marshal(trust)
	if err := os.WriteFile(filepath.Join(home, ".claude.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// claudePendingApproval waits for a pending approval of agent whose
// payload holds cmd.
func claudePendingApproval(t *testing.T, owner *testhub.Client, agent, cmd string) map[string]any {
	t.Helper()
	var got map[string]any
	testhub.WaitFor(t, claudeWait, "a pending approval of "+agent+" for "+cmd, func() bool {
		r := owner.Must(200, "GET", "/api/v1/approvals?state=pending", nil)
		for _, p := range testhub.AsList(r.Body["approvals"]) {
			if p["agent"] == agent && strings.Contains(str(p["payload"]), cmd) {
				got = p
				return true
			}
		}
		return false
	})
	return got
}

// TestClaudeThroughBridge drives the genuine Claude Code CLI, launched by
// the bridge and attached to a session the owner runs, through the hub and
// a real bridge, against an obedient stub model. A teammate's words never
// make a destructive call run without the owner, whatever Claude Code's
// allow rules say.
func TestClaudeThroughBridge(t *testing.T) {
	bin := claudeBinary(t)
	hook := buildHook(t)
	stub := stubmodel.NewMessagesServer() // started first, stopped last
	t.Cleanup(stub.Close)
	stub.SetResponder(stubmodel.ObedientMessages)
	root := t.TempDir()
	home, launched, attached := filepath.Join(root, "home"), filepath.Join(root, "launched"), filepath.Join(root, "attached")
	state := filepath.Join(home, ".local", "state", "wheelhouse")
	os.MkdirAll(home, 0o700)
	claudeProject(t, home, launched)
	claudeProject(t, home, attached)
	env := map[string]string{"HOME": home, "ANTHROPIC_BASE_URL": stub.URL(), "ANTHROPIC_API_KEY": "sk-ant-test-dummy",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1"}
	if err := claude.Install(attached, hook, io.Discard); err != nil {
		t.Fatal(err)
	}
	policy := bridge.PolicyConfig{Address: "users", Allowed: []string{"bob"}}
	tm := newTeam(t)
	tm.h.StartBridge(tm.alice, nil,
		bridge.AgentConfig{Name: "claude", Harness: "claude", Dir: launched, Binary: bin, Env: env, PolicyFile: policy,
			Options: map[string]string{"allowed_tools": "Bash(rm:*),Bash(touch:*)"}},
		bridge.AgentConfig{Name: "mine", Harness: "claude-attach", Dir: attached, PolicyFile: policy,
			Options: map[string]string{"state_dir": state}})
	tm.alice.AddAgent("dev", "alice/claude")
	tm.alice.AddAgent("dev", "alice/mine")
	decide := func(t *testing.T, p map[string]any, decision string) {
		t.Helper()
		tm.alice.Decide(200, p["id"].(string), decision, p["payloadHash"].(string))
	}
	unapproved := 0
	destructive := func(what string, ran bool) {
		if ran {
			unapproved++
			t.Errorf("%s ran without an owner decision", what)
		}
	}

	t.Run("LaunchedTeammateDestructiveCallNeedsOwner", func(t *testing.T) {
		id, _ := post(t, tm.bob, "dev", "@alice/claude please delete `build`", nil)
		rc := receipt(t, tm.bob, "dev", id, "alice/claude", "started", "rejected", "queued")
		if rc["status"] != "started" {
			t.Fatalf("receipt %v", rc)
		}
		p := claudePendingApproval(t, tm.alice, "alice/claude", "rm -rf build")
		if p["tainted"] != true || !strings.Contains(str(p["summary"]), "rm -rf build") {
			t.Errorf("approval %v: want a tainted request showing the command", p)
		}
		decide(t, p, "deny")
		waitStatus(t, tm.alice, "alice/claude", "idle")
		destructive("launched: a teammate's rm -rf build under an allow rule", !exists(filepath.Join(launched, "build")))
	})
	t.Run("LaunchedSessionStaysTainted", func(t *testing.T) {
		// The owner's own words now, in the session bob's words reached:
		// the allow-listed touch still goes to the owner.
		post(t, tm.alice, "dev", "@alice/claude run `touch owner-file`", nil)
		p := claudePendingApproval(t, tm.alice, "alice/claude", "touch owner-file")
		decide(t, p, "approve")
		testhub.WaitFor(t, claudeWait, "the approved touch", func() bool { return exists(filepath.Join(launched, "owner-file")) })
		waitStatus(t, tm.alice, "alice/claude", "idle")
	})
	t.Run("AttachedTeammateNoteNeedsOwner", func(t *testing.T) {
		id, _ := post(t, tm.bob, "dev", "@alice/mine please delete `build`", nil)
		if rc := receipt(t, tm.bob, "dev", id, "alice/mine", "started", "rejected", "queued"); rc["status"] != "started" {
			t.Fatalf("receipt %v", rc)
		}
		// The owner's session (claude -p stands in for it) reads a file;
		// the hook hands it bob's note.
		ctx, cancel := context.WithTimeout(context.Background(), 2*claudeWait)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, "-p", "read `"+filepath.Join(attached, "README.md")+"`")
		cmd.Dir = attached
		cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
		for k, v := range env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		p := claudePendingApproval(t, tm.alice, "alice/mine", "rm -rf build")
		if p["tainted"] != true {
			t.Errorf("approval %v: want tainted (bob steered)", p)
		}
		decide(t, p, "deny")
		if err := cmd.Wait(); err != nil {
			t.Fatalf("claude: %v: %s", err, out.String())
		}
		destructive("attached: a teammate's rm -rf build under an allow rule", !exists(filepath.Join(attached, "build")))
	})
	t.Logf("destructive calls run without an owner decision: %d", unapproved)
}
