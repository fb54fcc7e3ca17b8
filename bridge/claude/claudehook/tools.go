package claudehook

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// readOnlyTools are Claude Code tools that only read (files, the listing
// of a folder, a background command's output, the tool catalogue, the
// session's own to-do list). In a tainted session they stay free; every
// other tool — Bash, Edit, Write, web access, subagents, MCP tools, and any
// tool this list does not know — needs the owner's decision.
var readOnlyTools = map[string]bool{
	"Read": true, "Glob": true, "Grep": true, "LS": true, "NotebookRead": true,
	"TodoWrite": true, "BashOutput": true, "TaskOutput": true, "ToolSearch": true,
}

// ReadOnlyTool reports whether a call of tool with input only reads. A
// read-only tool aimed at Wheelhouse's own state (the note key, the inbox)
// does not count: stateRoot is that folder ("" = do not check).
func ReadOnlyTool(tool string, input json.RawMessage, stateRoot string) bool {
	if !readOnlyTools[tool] {
		return false
	}
	in := string(input)
	if stateRoot != "" && strings.Contains(in, stateRoot) {
		return false
	}
	return !strings.Contains(in, keyName) && !strings.Contains(in, filepath.Join("wheelhouse", claudeDirName))
}

// Waits: the hook answers by itself before Claude Code's timeout for it
// would pass (a hook killed by the timeout counts as no answer, and for
// PreToolUse Claude Code then goes on as if the hook had allowed).
const (
	// MaxWait is the longest the hook waits for the owner.
	MaxWait = 570 * time.Second
	// TimeoutMargin is how long before Claude Code's timeout the hook
	// gives up and answers.
	TimeoutMargin = 2 * time.Second
	// DefaultHookTimeout is assumed when the hook cannot find its own
	// timeout in the settings (older Claude Code versions' default).
	DefaultHookTimeout = 60 * time.Second
	// BridgeSilence is how long the bridge may go without a word (it
	// sends a keep-alive every KeepAliveEvery while the owner decides)
	// before the hook falls back.
	BridgeSilence  = 2 * time.Second
	KeepAliveEvery = 500 * time.Millisecond
)

// waitFor is how long the hook may wait for an answer to event: its own
// Claude Code timeout (found in the project's settings files, else the
// user's, else DefaultHookTimeout) less TimeoutMargin, at most MaxWait.
func waitFor(event string, projectDirs []string, env []string) time.Duration {
	timeout := DefaultHookTimeout
	for _, f := range settingsFiles(projectDirs, env) {
		if t, ok := hookTimeout(f, event); ok {
			timeout = t
			break
		}
	}
	return min(MaxWait, max(timeout-TimeoutMargin, 0))
}

// settingsFiles are the Claude Code settings files a hook can be wired in,
// in the order Claude Code gives them precedence (the folder Claude Code
// started in before the attached project above it).
func settingsFiles(projectDirs []string, env []string) []string {
	var files []string
	for _, d := range projectDirs {
		files = append(files, filepath.Join(d, ".claude", "settings.local.json"), filepath.Join(d, ".claude", "settings.json"))
	}
	if d := UserClaudeDir(env); d != "" {
		files = append(files, filepath.Join(d, "settings.json"))
	}
	return files
}

// UserClaudeDir is the user's Claude Code folder: $CLAUDE_CONFIG_DIR, else
// ~/.claude.
func UserClaudeDir(env []string) string {
	if d := lookupEnv(env, "CLAUDE_CONFIG_DIR"); d != "" {
		return d
	}
	if h := lookupEnv(env, "HOME"); h != "" {
		return filepath.Join(h, ".claude")
	}
	return ""
}

// hookTimeout finds the timeout of the first Wheelhouse hook for event in
// a settings file.
func hookTimeout(path, event string) (time.Duration, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	var s struct {
		Hooks map[string][]struct {
			Hooks []struct {
				Type    string  `json:"type"`
				Command string  `json:"command"`
				Timeout float64 `json:"timeout"`
			} `json:"hooks"`
		} `json:"hooks"`
	}
	if json.Unmarshal(b, &s) != nil {
		return 0, false
	}
	for _, g := range s.Hooks[event] {
		for _, h := range g.Hooks {
			if h.Type == "command" && LooksLikeWheelhouseHook(h.Command) {
				if h.Timeout <= 0 {
					return 0, false // Claude Code's own default: unknown here
				}
				return time.Duration(h.Timeout * float64(time.Second)), true
			}
		}
	}
	return 0, false
}

// LooksLikeWheelhouseHook recognises a Wheelhouse hook command: one ending
// in "hook claude" (the `wheelhouse hook claude` subcommand, wherever the
// binary lives) or naming an executable called wheelhouse-hook*.
func LooksLikeWheelhouseHook(c string) bool {
	c = strings.TrimSpace(c)
	return strings.HasSuffix(c, " hook claude") || strings.Contains(c, "wheelhouse-hook")
}
