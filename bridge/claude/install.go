package claude

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	wheelhouse "github.com/wheelhouse-dev/wheelhouse"

	"github.com/wheelhouse-dev/wheelhouse/bridge/claude/claudehook"
)

// The hook events Install wires, with their Claude Code timeouts (seconds).
// PreToolUse and PermissionRequest may wait for the owner: their timeouts
// are long, and the hook answers by itself before them (claudehook.MaxWait).
// PreToolUse is also marked onFailure "block": should the hook ever fail to
// start or be killed at its timeout, Claude Code blocks the call instead of
// going on as if the hook had allowed it.
var hookEvents = []struct {
	Event   string
	Matcher string // "" = no matcher key
	Timeout int
	Block   bool
}{
	{"SessionStart", "", 10, false},
	{"PreToolUse", "*", HookWaitTimeout, true},
	{"Stop", "", 10, false},
	{"PermissionRequest", "*", HookWaitTimeout, false},
	{"SessionEnd", "", 10, false},
}

// HookWaitTimeout is the Claude Code timeout (seconds) Install writes for
// the hooks that wait for the owner.
const HookWaitTimeout = 600

// settingsLocal is the file Install writes: the per-user, untracked settings
// of a project. The tracked .claude/settings.json is never touched.
func settingsLocal(projectDir string) string {
	return filepath.Join(projectDir, ".claude", "settings.local.json")
}

// Install wires hookCommand (for example "/usr/local/bin/wheelhouse hook
// claude") into <project>/.claude/settings.local.json for SessionStart,
// PreToolUse (all tools), Stop, PermissionRequest and SessionEnd, keeping
// everything else in the file. Earlier Wheelhouse hook entries are replaced, so running it
// twice changes nothing. It writes what it does to w. Claude Code reads hooks
// when a session starts: restart a running session afterwards.
func Install(projectDir, hookCommand string, w io.Writer) error {
	if w == nil {
		w = io.Discard
	}
	hookCommand = strings.TrimSpace(hookCommand)
	if hookCommand == "" {
		return wheelhouse.Errorf(wheelhouse.EInvalid, "install: the hook command is empty")
	}
	if fi, err := os.Stat(projectDir); err != nil || !fi.IsDir() {
		return wheelhouse.Errorf(wheelhouse.EInvalid, "install: %s is not a project folder", projectDir)
	}
	path := settingsLocal(projectDir)
	settings := map[string]any{}
	old, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return wheelhouse.Wrap(err, "install: cannot read %s", path)
	case len(bytes.TrimSpace(old)) > 0:
		if err := json.Unmarshal(old, &settings); err != nil || settings == nil {
			return wheelhouse.Errorf(wheelhouse.EInvalid, "install: %s is not a JSON object; fix or remove it first (%v)", path, err)
		}
	}
	if err := mergeHooks(settings, hookCommand); err != nil {
		return wheelhouse.Errorf(wheelhouse.EInvalid, "install: %s: %v", path, err)
	}
	out, err := json.MarshalIndent(settings, "", "  ")
	if err != nil {
		return wheelhouse.Wrap(err, "install: cannot encode settings")
	}
	out = append(out, '\n')
	var check map[string]any
	if err := json.Unmarshal(out, &check); err != nil {
		return wheelhouse.Wrap(err, "install: produced invalid JSON")
	}
	hooksOnly, _ := json.MarshalIndent(map[string]any{"hooks": settings["hooks"]}, "", "  ")
	fmt.Fprintf(w, "Wiring the Wheelhouse hook into %s:\n%s\n", path, hooksOnly)
	if bytes.Equal(old, out) {
		fmt.Fprintf(w, "Already wired; nothing changed.\n")
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return wheelhouse.Wrap(err, "install: cannot create %s", filepath.Dir(path))
	}
	if err := claudehook.WriteFileAtomic(filepath.Dir(path), filepath.Base(path), out); err != nil {
		return wheelhouse.Wrap(err, "install: cannot write %s", path)
	}
	fmt.Fprintf(w, "Done. Restart Claude Code in %s so it loads the hook.\n", projectDir)
	return nil
}

// mergeHooks removes earlier Wheelhouse entries and adds ours.
func mergeHooks(settings map[string]any, cmd string) error {
	hooks, _ := settings["hooks"].(map[string]any)
	if settings["hooks"] != nil && hooks == nil {
		return errors.New(`"hooks" is not an object`)
	}
	if hooks == nil {
		hooks = map[string]any{}
	}
	for _, ev := range hookEvents {
		var groups []any
		if v := hooks[ev.Event]; v != nil {
			g, ok := v.([]any)
			if !ok {
				return fmt.Errorf("hooks.%s is not a list", ev.Event)
			}
			groups = g
		}
		kept := []any{}
		for _, g := range groups {
			gm, ok := g.(map[string]any)
			if !ok {
				kept = append(kept, g)
				continue
			}
			entries, _ := gm["hooks"].([]any)
			var rest []any
			for _, e := range entries {
				em, _ := e.(map[string]any)
				if c, _ := em["command"].(string); em != nil && isOurHook(c, cmd) {
					continue
				}
				rest = append(rest, e)
			}
			if len(entries) > 0 && len(rest) == 0 {
				continue // a group that only held our hook
			}
			if len(rest) != len(entries) {
				gm["hooks"] = rest
			}
			kept = append(kept, gm)
		}
		entry := map[string]any{"type": "command", "command": cmd, "timeout": ev.Timeout}
		if ev.Block {
			entry["onFailure"] = "block"
		}
		group := map[string]any{"hooks": []any{entry}}
		if ev.Matcher != "" {
			group["matcher"] = ev.Matcher
		}
		hooks[ev.Event] = append(kept, group)
	}
	settings["hooks"] = hooks
	return nil
}

// isOurHook recognises a Wheelhouse hook entry: the command being installed,
// or any command that looks like one (claudehook.LooksLikeWheelhouseHook).
func isOurHook(c, cmd string) bool {
	c = strings.TrimSpace(c)
	if c == cmd {
		return true
	}
	return claudehook.LooksLikeWheelhouseHook(c)
}
