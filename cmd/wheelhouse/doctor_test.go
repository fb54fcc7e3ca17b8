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
}
