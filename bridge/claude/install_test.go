package claude

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func readSettings(t *testing.T, dir string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(settingsLocal(dir))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestInstall(t *testing.T) {
	const cmd = "/opt/bin/wheelhouse hook claude"
	t.Run("FreshProjectWired", func(t *testing.T) {
		dir := t.TempDir()
		var out bytes.Buffer
		if err := Install(dir, cmd, &out); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), "PermissionRequest") || !strings.Contains(out.String(), settingsLocal(dir)) {
			t.Errorf("install did not show what it writes: %s", out.String())
		}
		hooks := readSettings(t, dir)["hooks"].(map[string]any)
		for _, ev := range []string{"SessionStart", "PreToolUse", "Stop", "PermissionRequest", "SessionEnd"} {
			groups := hooks[ev].([]any)
			if len(groups) != 1 {
				t.Fatalf("%s: %d groups", ev, len(groups))
			}
			h := groups[0].(map[string]any)["hooks"].([]any)[0].(map[string]any)
			if h["command"] != cmd || h["type"] != "command" {
				t.Errorf("%s hook %v", ev, h)
			}
		}
		perm := hooks["PermissionRequest"].([]any)[0].(map[string]any)
		if perm["matcher"] != "*" || perm["hooks"].([]any)[0].(map[string]any)["timeout"].(float64) < 600 {
			t.Errorf("PermissionRequest wiring %v", perm)
		}
		pre := hooks["PreToolUse"].([]any)[0].(map[string]any)["hooks"].([]any)[0].(map[string]any)
		if pre["timeout"].(float64) < 600 || pre["onFailure"] != "block" {
			t.Errorf("PreToolUse wiring %v: it must outlast the owner's decision and block if it fails", pre)
		}
		if _, err := os.Stat(filepath.Join(dir, ".claude", "settings.json")); err == nil {
			t.Error("tracked settings.json was created")
		}
	})
	t.Run("MergesAndIsIdempotent", func(t *testing.T) {
		dir := t.TempDir()
		os.MkdirAll(filepath.Join(dir, ".claude"), 0o755)
		tracked := []byte(`{"hooks":{}}`)
		os.WriteFile(filepath.Join(dir, ".claude", "settings.json"), tracked, 0o644)
		os.WriteFile(settingsLocal(dir), []byte(`{"permissions":{"allow":["Bash(ls)"]},
		  "hooks":{"PreToolUse":[{"matcher":"Edit","hooks":[{"type":"command","command":"lint.sh"}]},
		                        {"matcher":"*","hooks":[{"type":"command","command":"/old/wheelhouse hook claude"}]}]}}`), 0o644)
		if err := Install(dir, cmd, nil); err != nil {
			t.Fatal(err)
		}
		first, _ := os.ReadFile(settingsLocal(dir))
		m := readSettings(t, dir)
		if m["permissions"].(map[string]any)["allow"].([]any)[0] != "Bash(ls)" {
			t.Error("permissions lost")
		}
		pre := m["hooks"].(map[string]any)["PreToolUse"].([]any)
		if len(pre) != 2 || !strings.Contains(string(first), "lint.sh") || strings.Contains(string(first), "/old/wheelhouse") {
			t.Errorf("PreToolUse groups %v", pre)
		}
		var out bytes.Buffer
		if err := Install(dir, cmd, &out); err != nil {
			t.Fatal(err)
		}
		second, _ := os.ReadFile(settingsLocal(dir))
		if !bytes.Equal(first, second) || !strings.Contains(out.String(), "nothing changed") {
			t.Errorf("second install changed the file or did not say so: %s", out.String())
		}
		if b, _ := os.ReadFile(filepath.Join(dir, ".claude", "settings.json")); !bytes.Equal(b, tracked) {
			t.Error("tracked settings.json touched")
		}
	})
	t.Run("InvalidSettingsRefused", func(t *testing.T) {
		dir := t.TempDir()
		os.MkdirAll(filepath.Join(dir, ".claude"), 0o755)
		os.WriteFile(settingsLocal(dir), []byte(`{oops`), 0o644)
		if err := Install(dir, cmd, nil); err == nil {
			t.Fatal("overwrote an invalid settings file")
		}
		if b, _ := os.ReadFile(settingsLocal(dir)); string(b) != `{oops` {
			t.Error("file changed")
		}
	})
	t.Run("EmptyCommandRefused", func(t *testing.T) {
		if err := Install(t.TempDir(), " ", nil); err == nil {
			t.Fatal("installed an empty command")
		}
	})
}

func TestDoctor(t *testing.T) {
	t.Run("UnwiredProjectSaysSo", func(t *testing.T) {
		dir := t.TempDir()
		r := Doctor(dir)
		if r.Wired || r.OK() || !strings.Contains(strings.Join(r.Problems, " "), "not wired") {
			t.Fatalf("report %+v", r)
		}
		if len(r.MissingEvents) != 5 {
			t.Errorf("missing %v", r.MissingEvents)
		}
	})
	t.Run("WiredProjectOK", func(t *testing.T) {
		m := newMachine(t)
		dir := m.dir
		if err := Install(dir, hookBin, nil); err != nil {
			t.Fatal(err)
		}
		r := doctorOn(m)
		if !r.Wired || !r.HookBinaryOK || r.HookBinary != hookBin || !r.OK() {
			t.Fatalf("report %s", r)
		}
		if r.SideChannel || r.BridgeUp || !r.LastHookRun.IsZero() {
			t.Errorf("no bridge ran, report says otherwise: %s", r)
		}
	})
	t.Run("MissingBinaryFlagged", func(t *testing.T) {
		dir := t.TempDir()
		if err := Install(dir, "/nonexistent/wheelhouse hook claude", nil); err != nil {
			t.Fatal(err)
		}
		if r := Doctor(dir); !r.Wired || r.HookBinaryOK || r.OK() {
			t.Fatalf("report %s", r)
		}
	})
	t.Run("PartialWiringFlagged", func(t *testing.T) {
		dir := t.TempDir()
		os.MkdirAll(filepath.Join(dir, ".claude"), 0o755)
		os.WriteFile(settingsLocal(dir), []byte(`{"hooks":{"PreToolUse":[{"matcher":"*","hooks":[{"type":"command","command":"`+hookBin+`"}]}]}}`), 0o644)
		r := Doctor(dir)
		if r.Wired || strings.Join(r.MissingEvents, ",") != "SessionStart,Stop,PermissionRequest,SessionEnd" {
			t.Fatalf("report %s", r)
		}
	})
	t.Run("BridgeAndHookRunSeen", func(t *testing.T) {
		m := newMachine(t)
		if err := Install(m.dir, hookBin, nil); err != nil {
			t.Fatal(err)
		}
		startAttached(t, m, nil, nil)
		runHook(t, m, preToolUse)
		r := doctorOn(m)
		if !r.SideChannel || !r.BridgeUp || !r.KeyOK || r.LastHookRun.IsZero() || len(r.Sessions) != 1 || !r.OK() {
			t.Fatalf("report %s", r)
		}
	})
	t.Run("ShortPreToolUseTimeoutAndNoBlockFlagged", func(t *testing.T) {
		m := newMachine(t)
		if err := Install(m.dir, hookBin, nil); err != nil {
			t.Fatal(err)
		}
		setHookTimeout(t, m, "PreToolUse", 5)
		s := readSettings(t, m.dir)
		delete(s["hooks"].(map[string]any)["PreToolUse"].([]any)[0].(map[string]any)["hooks"].([]any)[0].(map[string]any), "onFailure")
		b, _ := json.Marshal(s)
		os.WriteFile(settingsLocal(m.dir), b, 0o644)
		r := doctorOn(m)
		if r.OK() || !strings.Contains(r.String(), "timeout is 5s") || !strings.Contains(r.String(), `not marked onFailure "block"`) {
			t.Fatalf("report %s", r)
		}
	})
	t.Run("AllowRulesReported", func(t *testing.T) {
		m := newMachine(t)
		if err := Install(m.dir, hookBin, nil); err != nil {
			t.Fatal(err)
		}
		m.trustWithAllowRules(t, "Bash(rm:*)")
		os.MkdirAll(filepath.Join(m.home, ".claude"), 0o700)
		os.WriteFile(filepath.Join(m.home, ".claude", "settings.json"), []byte(`{"permissions":{"allow":["Bash(git push:*)"],"defaultMode":"acceptEdits"}}`), 0o600)
		r := doctorOn(m)
		text := r.String()
		if len(r.AllowRules) != 3 || len(r.Problems) != 1 {
			t.Fatalf("report %s", text)
		}
		for _, want := range []string{"Bash(rm:*) in " + filepath.Join(m.dir, ".claude", "settings.json") + " (settings inside the project, which a teammate can commit",
			"Bash(git push:*) in " + filepath.Join(m.home, ".claude", "settings.json") + " (your own settings"} {
			if !strings.Contains(text, want) {
				t.Errorf("report lacks %q:\n%s", want, text)
			}
		}
		if !strings.Contains(r.Problems[0], "defaultMode acceptEdits in "+filepath.Join(m.home, ".claude", "settings.json")) {
			t.Errorf("the refused mode is not a problem: %s", text)
		}
	})
	// A teammate commits allow rules, or a mode the bridge refuses, into a
	// subfolder's settings (Claude Code started there loads them): doctor
	// names each, and the refused modes are problems.
	t.Run("NestedSettingsReported", func(t *testing.T) {
		m := newMachine(t)
		if err := Install(m.dir, hookBin, nil); err != nil {
			t.Fatal(err)
		}
		for _, d := range []string{"pkg/.claude", "cmd/tool/.claude", ".git/.claude"} {
			os.MkdirAll(filepath.Join(m.dir, d), 0o755)
		}
		os.WriteFile(filepath.Join(m.dir, "pkg", ".claude", "settings.json"), []byte(`{"permissions":{"allow":["Bash(rm:*)"]}}`), 0o644)
		os.WriteFile(filepath.Join(m.dir, "cmd", "tool", ".claude", "settings.local.json"), []byte(`{"permissions":{"defaultMode":"bypassPermissions"}}`), 0o644)
		os.WriteFile(filepath.Join(m.dir, ".git", ".claude", "settings.json"), []byte(`{"permissions":{"allow":["Bash(git:*)"]}}`), 0o644)
		r := doctorOn(m)
		text := r.String()
		if !strings.Contains(text, "Bash(rm:*) in "+filepath.Join(m.dir, "pkg", ".claude", "settings.json")+" (settings inside the project, which a teammate can commit") {
			t.Errorf("the subfolder's allow rule is not named:\n%s", text)
		}
		if r.OK() || !strings.Contains(strings.Join(r.Problems, "\n"), "defaultMode bypassPermissions in "+filepath.Join(m.dir, "cmd", "tool", ".claude", "settings.local.json")) {
			t.Errorf("bypassPermissions in a subfolder is not a problem:\n%s", text)
		}
		if strings.Contains(text, "Bash(git:*)") {
			t.Errorf("read a file under .git:\n%s", text)
		}
		for _, mode := range []string{"acceptEdits", "auto"} {
			os.WriteFile(filepath.Join(m.dir, "cmd", "tool", ".claude", "settings.local.json"), []byte(`{"permissions":{"defaultMode":"`+mode+`"}}`), 0o644)
			if r := doctorOn(m); !strings.Contains(strings.Join(r.Problems, "\n"), "defaultMode "+mode) {
				t.Errorf("%s is not a problem:\n%s", mode, r)
			}
		}
	})
	t.Run("LegacyInboxFlagged", func(t *testing.T) {
		m := newMachine(t)
		if err := Install(m.dir, hookBin, nil); err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Join(m.dir, ".wheelhouse", "inbox"), 0o755)
		os.WriteFile(filepath.Join(m.dir, ".wheelhouse", "inbox", "x.json"), []byte(`{}`), 0o644)
		if r := doctorOn(m); r.OK() || !r.LegacyInbox {
			t.Fatalf("report %s", r)
		}
	})
}

func doctorOn(m machine) Report {
	return DoctorWith(DoctorOptions{Project: m.dir, StateDir: m.state, ClaudeDir: filepath.Join(m.home, ".claude")})
}
