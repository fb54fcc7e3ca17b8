package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An attached Claude Code project without the hook wired makes doctor say
// so (and fail); after hook claude --install it is wired.
func TestDoctorClaudeWiring(t *testing.T) {
	proj := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "bridge.toml")
	os.WriteFile(cfg, []byte("[[agent]]\nname = \"mine\"\nharness = \"claude-attach\"\ndir = \""+proj+"\"\n"), 0o600)
	out, code := runCmd(t, "doctor", "--config", cfg, "--credentials", filepath.Join(t.TempDir(), "none.json"), "--socket", filepath.Join(t.TempDir(), "none.sock"))
	if code == 0 || !strings.Contains(out, "FAIL claude hook in "+proj) || !strings.Contains(out, "wired:        NO") || !strings.Contains(out, "FAIL credentials") {
		t.Fatalf("doctor on an unwired project: %d\n%s", code, out)
	}
	if out, code := runCmd(t, "hook", "claude", "--install", "--project", proj, "--command", "/usr/bin/true hook claude"); code != 0 {
		t.Fatalf("install: %d %s", code, out)
	}
	out, _ = runCmd(t, "doctor", "--config", cfg, "--credentials", filepath.Join(t.TempDir(), "none.json"), "--socket", filepath.Join(t.TempDir(), "none.sock"))
	if !strings.Contains(out, "wired:        ok") {
		t.Fatalf("doctor after --install:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(proj, ".claude", "settings.json")); err == nil {
		t.Fatal("--install touched the tracked settings.json")
	}
	// The project's section is printed once, also when --project names
	// the config's project again.
	out, _ = runCmd(t, "doctor", "--config", cfg, "--project", proj, "--credentials", filepath.Join(t.TempDir(), "none.json"), "--socket", filepath.Join(t.TempDir(), "none.sock"))
	if n := strings.Count(out, "claude hook in "); n != 1 {
		t.Fatalf("the project section is printed %d times:\n%s", n, out)
	}
}

// A codex agent that teammates may address under on-request gets the rule
// explained; an allow rule in its CODEX_HOME, or a CODEX_HOME an agent can
// write (inside an agent's dir, or /tmp under workspace-write), fails the
// check.
func TestDoctorCodexGating(t *testing.T) {
	proj, home := t.TempDir(), t.TempDir()
	cfg := filepath.Join(t.TempDir(), "bridge.toml")
	write := func(codexHome, sandbox string) {
		os.WriteFile(cfg, []byte(`[[agent]]
name = "cx"
harness = "codex"
dir = "`+proj+`"
binary = "/bin/sh"
[agent.options]
approval_policy = "on-request"
sandbox = "`+sandbox+`"
codex_home = "`+codexHome+`"
[agent.policy]
address = "members"

[[agent]]
name = "sh"
harness = "exec"
command = ["cat"]
[agent.policy]
address = "users"
allowed = ["bob"]
`), 0o600)
	}
	doctor := func() (string, int) {
		return runCmd(t, "doctor", "--config", cfg, "--credentials", filepath.Join(t.TempDir(), "none.json"), "--socket", filepath.Join(t.TempDir(), "none.sock"))
	}
	write(home, "read-only")
	out, _ := doctor()
	for _, want := range []string{
		"info agent cx: your own turns run commands inside the read-only sandbox without asking (approval_policy = on-request), so messages from teammates (address = members)",
		"info agent sh: messages from teammates (address = users) are refused: it runs its configured command without asking",
		"info agent sh: your own words reach it only when one of your enrolled devices signed them",
		"ok   agent cx CODEX_HOME " + home + ": outside every agent's dir",
		"ok   agent cx codex rules: no rule lets a command run without asking",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor lacks %q:\n%s", want, out)
		}
	}
	os.MkdirAll(filepath.Join(home, "rules"), 0o700)
	os.WriteFile(filepath.Join(home, "rules", "default.rules"), []byte(`prefix_rule(pattern = ["rm"])`), 0o600)
	if out, _ := doctor(); !strings.Contains(out, `FAIL agent cx codex rules: default.rules: prefix_rule ["rm"] is "allow"`) {
		t.Errorf("an allow rule was not flagged:\n%s", out)
	}
	write(filepath.Join(proj, ".codex"), "read-only")
	if out, _ := doctor(); !strings.Contains(out, "FAIL agent cx CODEX_HOME "+filepath.Join(proj, ".codex")+": it is inside "+proj) {
		t.Errorf("a CODEX_HOME inside the agent's dir was not flagged:\n%s", out)
	}
	// The test's temporary folder stands for /tmp, which workspace-write
	// lets on-request commands write unasked.
	write(home, "workspace-write")
	if out, _ := doctor(); !strings.Contains(out, "FAIL agent cx CODEX_HOME "+home+": it is under") {
		t.Errorf("a CODEX_HOME in the temporary folder under workspace-write was not flagged:\n%s", out)
	}
}
