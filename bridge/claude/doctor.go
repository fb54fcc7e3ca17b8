package claude

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/bridge/claude/claudehook"
)

// Report is what Doctor found about one project's Claude Code hook wiring.
// Problems says, in words the owner can act on, what is wrong; OK means
// there is nothing in it.
type Report struct {
	ProjectDir    string
	SettingsFile  string   // the file the hook is wired in ("" if none)
	Wired         bool     // PreToolUse, Stop and PermissionRequest all run the hook
	MissingEvents []string // events without the hook
	HookCommand   string
	HookBinary    string // the executable the command runs, resolved
	HookBinaryOK  bool
	SideChannel   bool // <project>/.wheelhouse/inbox exists (a bridge set it up)
	BridgeUp      bool // the bridge answers on the permission socket
	LastHookRun   time.Time
	LastDelivery  time.Time
	LastError     string
	LastErrorAt   time.Time
	Problems      []string
}

// OK reports whether nothing is wrong.
func (r Report) OK() bool { return len(r.Problems) == 0 }

// String is the report as doctor prints it.
func (r Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "claude hook in %s\n", r.ProjectDir)
	yes := func(ok bool) string {
		if ok {
			return "ok"
		}
		return "NO"
	}
	fmt.Fprintf(&b, "  wired:        %s %s\n", yes(r.Wired), r.SettingsFile)
	if r.HookCommand != "" {
		fmt.Fprintf(&b, "  hook command: %s (%s)\n", r.HookCommand, yes(r.HookBinaryOK))
	}
	fmt.Fprintf(&b, "  side channel: %s\n", yes(r.SideChannel))
	fmt.Fprintf(&b, "  bridge:       %s\n", map[bool]string{true: "listening", false: "not listening"}[r.BridgeUp])
	when := func(t time.Time) string {
		if t.IsZero() {
			return "never"
		}
		return t.Format(time.RFC3339)
	}
	fmt.Fprintf(&b, "  last hook run: %s, last delivery: %s\n", when(r.LastHookRun), when(r.LastDelivery))
	if r.LastError != "" {
		fmt.Fprintf(&b, "  last error (%s): %s\n", when(r.LastErrorAt), r.LastError)
	}
	for _, p := range r.Problems {
		fmt.Fprintf(&b, "  problem: %s\n", p)
	}
	return b.String()
}

// Doctor checks a project's hook wiring: the hook is in the project's
// Claude Code settings for every event, its executable exists, and what the
// hook last recorded (run, delivery, error).
func Doctor(projectDir string) Report {
	r := Report{ProjectDir: projectDir}
	found := map[string]bool{}
	for _, path := range []string{settingsLocal(projectDir), filepath.Join(projectDir, ".claude", "settings.json")} {
		cmds, err := hookCommandsIn(path)
		if err != nil {
			if !os.IsNotExist(err) {
				r.Problems = append(r.Problems, fmt.Sprintf("%s is not valid JSON; Claude Code ignores it: %v", path, err))
			}
			continue
		}
		for ev, c := range cmds {
			if found[ev] {
				continue
			}
			found[ev] = true
			if r.HookCommand == "" {
				r.HookCommand, r.SettingsFile = c, path
			}
		}
	}
	for _, ev := range hookEvents {
		if !found[ev.Event] {
			r.MissingEvents = append(r.MissingEvents, ev.Event)
		}
	}
	r.Wired = len(r.MissingEvents) == 0
	switch {
	case len(found) == 0:
		r.Problems = append(r.Problems, fmt.Sprintf("the Wheelhouse hook is not wired in %s; run the install step (wheelhouse doctor prints it) and restart Claude Code", settingsLocal(projectDir)))
	case !r.Wired:
		r.Problems = append(r.Problems, fmt.Sprintf("the hook is missing for %s; run the install step again", strings.Join(r.MissingEvents, ", ")))
	}
	if r.HookCommand != "" {
		r.HookBinary, r.HookBinaryOK = resolveCommand(r.HookCommand)
		if !r.HookBinaryOK {
			r.Problems = append(r.Problems, fmt.Sprintf("the hook command %q does not name an executable file", r.HookCommand))
		}
	}
	sc := claudehook.ForProject(projectDir)
	if fi, err := os.Stat(sc.Inbox()); err == nil && fi.IsDir() {
		r.SideChannel = true
	}
	if c, err := net.DialTimeout("unix", sc.Socket(), 500*time.Millisecond); err == nil {
		c.Close()
		r.BridgeUp = true
	}
	r.LastHookRun, r.LastDelivery = claudehook.MarkerTime(sc.Seen()), claudehook.MarkerTime(sc.Delivered())
	if st, err := claudehook.ReadStatus(sc.Status()); err == nil {
		r.LastError, r.LastErrorAt = st.LastError, st.LastErrorAt
	}
	return r
}

// hookCommandsIn returns, per wired event, the first Wheelhouse hook command
// in a settings file.
func hookCommandsIn(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s struct {
		Hooks map[string][]struct {
			Hooks []struct {
				Type    string `json:"type"`
				Command string `json:"command"`
			} `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for ev, groups := range s.Hooks {
		for _, g := range groups {
			for _, h := range g.Hooks {
				if _, ok := out[ev]; !ok && h.Type == "command" && looksLikeWheelhouseHook(h.Command) {
					out[ev] = h.Command
				}
			}
		}
	}
	return out, nil
}

// resolveCommand finds the executable a shell command line starts with
// (skipping VAR=value words; plain or quoted) and reports whether it exists
// and is executable.
func resolveCommand(cmd string) (string, bool) {
	for _, w := range shellWords(cmd) {
		if strings.Contains(w, "=") && !strings.Contains(w, "/") {
			continue
		}
		p, err := exec.LookPath(w)
		if err != nil {
			return w, false
		}
		abs, _ := filepath.Abs(p)
		return abs, true
	}
	return "", false
}

// shellWords splits a simple command line: whitespace, with '…' and "…"
// quoting. It is enough for the commands Install writes.
func shellWords(s string) []string {
	var words []string
	var cur strings.Builder
	in := false
	var q rune
	for _, r := range s {
		switch {
		case q != 0 && r == q:
			q = 0
		case q != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			q, in = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if in {
		words = append(words, cur.String())
	}
	return words
}
