package claude

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/bridge"

	"github.com/wheelhouse-dev/wheelhouse/bridge/claude/claudehook"
)

// Report is what Doctor found about one project's Claude Code hook wiring,
// its notes and the Claude Code settings that decide what runs unasked.
// Problems says, in words the owner can act on, what is wrong; OK means
// there is nothing in it. Warnings are worth knowing and need no action.
type Report struct {
	ProjectDir    string
	StateDir      string   // the project's notes folder
	SettingsFile  string   // the file the hook is wired in ("" if none)
	Wired         bool     // every hook event runs the hook
	MissingEvents []string // events without the hook
	HookCommand   string
	HookBinary    string // the executable the command runs, resolved
	HookBinaryOK  bool
	SideChannel   bool // a bridge set up the notes folder
	BridgeUp      bool // the bridge answers on the permission socket
	KeyOK         bool // the note key exists and only its owner may read it
	Sessions      []claudehook.Session
	BoundSession  string // the session notes go to ("" = the next to take one)
	Rejected      []claudehook.Rejection
	RejectedFiles int  // files the hook set aside in rejected/
	LegacyInbox   bool // <project>/.wheelhouse/inbox exists
	AllowRules    []SettingsRule
	LastHookRun   time.Time
	LastDelivery  time.Time
	LastError     string
	LastErrorAt   time.Time
	Problems      []string
	Warnings      []string
}

// SettingsRule is one Claude Code permission setting that lets a tool run
// without asking: an allow rule, or a permissive default mode.
type SettingsRule struct {
	File string
	Rule string // "Bash(rm:*)", or "defaultMode acceptEdits"
}

// OK reports whether nothing is wrong.
func (r Report) OK() bool { return len(r.Problems) == 0 }

// String is the report as doctor prints it under its "claude hook in
// <project>" line (through termsafe: it quotes files a teammate may have
// written).
func (r Report) String() string {
	var b strings.Builder
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
	fmt.Fprintf(&b, "  notes folder: %s %s\n", yes(r.SideChannel), r.StateDir)
	fmt.Fprintf(&b, "  note key:     %s\n", yes(r.KeyOK))
	fmt.Fprintf(&b, "  bridge:       %s\n", map[bool]string{true: "listening", false: "not listening"}[r.BridgeUp])
	when := func(t time.Time) string {
		if t.IsZero() {
			return "never"
		}
		return t.Format(time.RFC3339)
	}
	for _, s := range r.Sessions {
		mark := ""
		if s.ID == r.BoundSession {
			mark = " (notes go here)"
		}
		fmt.Fprintf(&b, "  session:      %s last hook run %s%s\n", s.ID, when(s.LastSeen), mark)
	}
	fmt.Fprintf(&b, "  last hook run: %s, last delivery: %s\n", when(r.LastHookRun), when(r.LastDelivery))
	if r.LastError != "" {
		fmt.Fprintf(&b, "  last error (%s): %s\n", when(r.LastErrorAt), r.LastError)
	}
	for _, x := range r.Rejected {
		fmt.Fprintf(&b, "  ignored:      %s %s: %s\n", x.At.Format(time.RFC3339), x.File, x.Reason)
	}
	for _, p := range r.Problems {
		fmt.Fprintf(&b, "  problem: %s\n", p)
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(&b, "  warning: %s\n", w)
	}
	return b.String()
}

// DoctorOptions say where to look; empty fields take the defaults of the
// bridge's environment.
type DoctorOptions struct {
	Project   string
	StateDir  string // the shared state root (claudehook.StateRoot)
	ClaudeDir string // the user's Claude Code folder (claudehook.UserClaudeDir)
}

// Doctor checks a project with the defaults of this process's environment.
func Doctor(projectDir string) Report { return DoctorWith(DoctorOptions{Project: projectDir}) }

// DoctorWith checks a project's hook wiring (every event, the executable,
// PreToolUse's timeout and onFailure), the notes folder (key, bridge,
// sessions, files the hook refused, a leftover inbox inside the project),
// what the hook last recorded, and the Claude Code permission settings
// that let tools run unasked.
func DoctorWith(o DoctorOptions) Report {
	env := os.Environ()
	if o.StateDir == "" {
		o.StateDir = claudehook.StateRoot(env)
	}
	if o.ClaudeDir == "" {
		o.ClaudeDir = claudehook.UserClaudeDir(env)
	}
	proj := claudehook.ForProject(o.StateDir, o.Project)
	r := Report{ProjectDir: proj.Dir, StateDir: proj.Root}
	projectFiles := []string{settingsLocal(proj.Dir), filepath.Join(proj.Dir, ".claude", "settings.json")}
	found := map[string]hookEntry{}
	for _, path := range projectFiles {
		hooks, err := hookEntriesIn(path)
		if err != nil {
			if !os.IsNotExist(err) {
				r.Problems = append(r.Problems, fmt.Sprintf("%s is not valid JSON; Claude Code ignores it: %v", path, err))
			}
			continue
		}
		for ev, h := range hooks {
			if _, ok := found[ev]; ok {
				continue
			}
			found[ev] = h
			if r.HookCommand == "" {
				r.HookCommand, r.SettingsFile = h.Command, path
			}
		}
	}
	for _, ev := range hookEvents {
		if _, ok := found[ev.Event]; !ok {
			r.MissingEvents = append(r.MissingEvents, ev.Event)
		}
	}
	r.Wired = len(r.MissingEvents) == 0
	switch {
	case len(found) == 0:
		r.Problems = append(r.Problems, fmt.Sprintf("the Wheelhouse hook is not wired in %s; run the install step (wheelhouse hook claude --install) and restart Claude Code", settingsLocal(proj.Dir)))
	case !r.Wired:
		r.Problems = append(r.Problems, fmt.Sprintf("the hook is missing for %s; run the install step again", strings.Join(r.MissingEvents, ", ")))
	}
	if h, ok := found["PreToolUse"]; ok {
		if h.Timeout > 0 && h.Timeout < 10 {
			r.Problems = append(r.Problems, fmt.Sprintf("the PreToolUse hook's timeout is %gs: too short to ask the owner (the hook denies with no time to wait); run the install step again", h.Timeout))
		}
		if h.OnFailure != "block" {
			r.Warnings = append(r.Warnings, `the PreToolUse hook is not marked onFailure "block": if it ever fails to start, Claude Code lets the call go on; run the install step again`)
		}
	}
	if r.HookCommand != "" {
		r.HookBinary, r.HookBinaryOK = resolveCommand(r.HookCommand)
		if !r.HookBinaryOK {
			r.Problems = append(r.Problems, fmt.Sprintf("the hook command %q does not name an executable file", r.HookCommand))
		}
	}

	r.SideChannel = proj.Exists()
	if r.SideChannel {
		if _, err := proj.ReadKey(); err == nil {
			r.KeyOK = true
		} else {
			r.Problems = append(r.Problems, fmt.Sprintf("the note key: %v", err))
		}
	}
	if err := proj.SocketProblem(); err != nil {
		r.Problems = append(r.Problems, fmt.Sprintf("the permission socket's folder: %v; the hook denies what it would ask there — stop the bridge, remove the folder and start the bridge again", err))
	} else if c, err := net.DialTimeout("unix", proj.Socket(), 500*time.Millisecond); err == nil {
		c.Close()
		r.BridgeUp = true
	}
	r.Sessions, _ = proj.ListSessions()
	if b, err := os.ReadFile(filepath.Join(proj.Root, boundName)); err == nil {
		r.BoundSession = strings.TrimSpace(string(b))
	}
	if r.BoundSession != "" && len(r.Sessions) > 0 && r.Sessions[0].ID != r.BoundSession {
		bound := "has ended"
		for _, s := range r.Sessions {
			if s.ID == r.BoundSession {
				bound = "last ran a hook " + s.LastSeen.Format(time.RFC3339)
			}
		}
		r.Warnings = append(r.Warnings, fmt.Sprintf("notes go to Claude Code session %s, which %s; session %s ran since. If %s is gone, resume it (claude --resume) or name a session in option session",
			r.BoundSession, bound, r.Sessions[0].ID, r.BoundSession))
	}
	if live := liveSessions(r.Sessions); live > 1 {
		r.Warnings = append(r.Warnings, fmt.Sprintf("%d Claude Code sessions ran in this project in the last day; notes go to one of them only (marked), or set option session = \"all\"", live))
	}
	if entries, err := os.ReadDir(proj.Rejected()); err == nil && len(entries) > 0 {
		r.RejectedFiles = len(entries)
		r.Rejected, _ = proj.ReadRejections(5)
		r.Problems = append(r.Problems, fmt.Sprintf("%d file(s) in the notes inbox were not notes signed by this bridge; ignored, never shown to Claude (someone or something wrote them; see %s, then remove them)",
			len(entries), proj.Rejected()))
	}
	if entries, err := os.ReadDir(proj.LegacyInbox()); err == nil {
		r.LegacyInbox = true
		r.Problems = append(r.Problems, fmt.Sprintf("%s holds %d file(s): an old note inbox inside the project, which anyone who can commit could write; nothing reads it any more — remove %s",
			proj.LegacyInbox(), len(entries), filepath.Dir(proj.LegacyInbox())))
	}
	r.LastHookRun, r.LastDelivery = claudehook.MarkerTime(proj.Seen()), claudehook.MarkerTime(proj.Delivered())
	if st, err := claudehook.ReadStatus(proj.Status()); err == nil {
		r.LastError, r.LastErrorAt = st.LastError, st.LastErrorAt
	}

	var userFiles []string
	if o.ClaudeDir != "" {
		userFiles = []string{filepath.Join(o.ClaudeDir, "settings.json")}
	}
	// Claude Code started in a subfolder loads that folder's settings too,
	// and a teammate can commit one anywhere: every .claude/settings*.json
	// under the project counts.
	nested, complete := nestedSettings(proj.Dir)
	if !complete {
		r.Warnings = append(r.Warnings, fmt.Sprintf("the project has more than %d folders; doctor looked for .claude/settings*.json files in the first %d only", maxSettingsWalk, maxSettingsWalk))
	}
	files := append(append(projectFiles, nested...), userFiles...)
	r.AllowRules = PermissiveSettings(files)
	for _, a := range r.AllowRules {
		where := "your own settings"
		switch {
		case a.File == settingsLocal(proj.Dir):
			where = "the project's local settings, which the agent can change"
		case slices.Contains(files[:len(files)-len(userFiles)], a.File):
			where = "settings inside the project, which a teammate can commit and the agent can change"
		}
		if mode, ok := strings.CutPrefix(a.Rule, "defaultMode "); ok && refusedModes[mode] {
			r.Problems = append(r.Problems, fmt.Sprintf("%s in %s (%s): in this mode Claude Code runs calls without asking, so the owner never sees them; the bridge refuses it for the agents it launches — remove it",
				a.Rule, a.File, where))
			continue
		}
		r.Warnings = append(r.Warnings, fmt.Sprintf("%s in %s (%s) lets Claude Code run it without asking in an untainted session; once a teammate's words reach the session the Wheelhouse hook asks the owner anyway",
			a.Rule, a.File, where))
	}
	return r
}

// refusedModes are the permission modes in which Claude Code approves
// calls itself (the launched harness refuses them as permission_mode).
var refusedModes = map[string]bool{"acceptEdits": true, "auto": true, "bypassPermissions": true}

// maxSettingsWalk bounds the folders nestedSettings looks in.
const maxSettingsWalk = 100000

// nestedSettings lists the .claude/settings*.json files in the folders
// below dir (not dir's own, nor anything under .git); complete is false
// if the walk stopped at maxSettingsWalk folders.
func nestedSettings(dir string) (files []string, complete bool) {
	n := 0
	complete = true
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if d.Name() == ".git" {
			return filepath.SkipDir
		}
		if n++; n > maxSettingsWalk {
			complete = false
			return filepath.SkipAll
		}
		if d.Name() != ".claude" || filepath.Dir(path) == dir {
			return nil
		}
		entries, _ := os.ReadDir(path)
		for _, e := range entries {
			if name := e.Name(); strings.HasPrefix(name, "settings") && strings.HasSuffix(name, ".json") && e.Type().IsRegular() {
				files = append(files, filepath.Join(path, name))
			}
		}
		return filepath.SkipDir
	})
	return files, complete
}

// LaunchedSettings says, for doctor, which Claude Code settings a launched
// agent loads and which of their rules let tools run unasked (until a
// teammate's words reach the session: then every side effect asks).
func LaunchedSettings(a bridge.AgentConfig) string {
	var b strings.Builder
	sources := strings.TrimSpace(a.Options["setting_sources"])
	if sources == "" {
		sources = DefaultSettingSources
	}
	fmt.Fprintf(&b, "claude settings loaded: %s (--setting-sources)\n", sources)
	var files []string
	for _, s := range strings.Split(sources, ",") {
		switch strings.TrimSpace(s) {
		case "user":
			env := os.Environ()
			if h, ok := a.Env["HOME"]; ok {
				env = append(env, "HOME="+h)
			}
			if d, ok := a.Env["CLAUDE_CONFIG_DIR"]; ok {
				env = append(env, "CLAUDE_CONFIG_DIR="+d)
			}
			if d := claudehook.UserClaudeDir(env); d != "" {
				files = append(files, filepath.Join(d, "settings.json"))
			}
		case "project":
			files = append(files, filepath.Join(a.Dir, ".claude", "settings.json"))
			b.WriteString("warning: the project's .claude/settings.json is loaded: a commit or the agent can change it\n")
		case "local":
			files = append(files, settingsLocal(a.Dir))
			b.WriteString("warning: the project's .claude/settings.local.json is loaded: the agent can change it\n")
		}
	}
	if v := strings.TrimSpace(a.Options["allowed_tools"]); v != "" {
		fmt.Fprintf(&b, "allowed without asking (bridge config allowed_tools): %s\n", v)
	}
	for _, r := range PermissiveSettings(files) {
		fmt.Fprintf(&b, "allowed without asking (%s): %s\n", r.File, r.Rule)
	}
	b.WriteString("once a teammate's words reach the session, every tool call with side effects asks the owner\n")
	return b.String()
}

func liveSessions(ss []claudehook.Session) int {
	n := 0
	for _, s := range ss {
		if time.Since(s.LastSeen) < liveSession {
			n++
		}
	}
	return n
}

// PermissiveSettings lists, from Claude Code settings files, the allow
// rules and permissive default modes that let a tool run without a prompt.
func PermissiveSettings(files []string) []SettingsRule {
	var out []SettingsRule
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var s struct {
			Permissions struct {
				Allow       []string `json:"allow"`
				DefaultMode string   `json:"defaultMode"`
			} `json:"permissions"`
		}
		if json.Unmarshal(b, &s) != nil {
			continue
		}
		for _, a := range s.Permissions.Allow {
			out = append(out, SettingsRule{File: f, Rule: a})
		}
		switch s.Permissions.DefaultMode {
		case "acceptEdits", "auto", "bypassPermissions", "dontAsk":
			out = append(out, SettingsRule{File: f, Rule: "defaultMode " + s.Permissions.DefaultMode})
		}
	}
	return out
}

// hookEntry is a Wheelhouse hook as a settings file wires it.
type hookEntry struct {
	Command   string
	Timeout   float64
	OnFailure string
}

// hookEntriesIn returns, per wired event, the first Wheelhouse hook in a
// settings file.
func hookEntriesIn(path string) (map[string]hookEntry, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s struct {
		Hooks map[string][]struct {
			Hooks []struct {
				Type      string  `json:"type"`
				Command   string  `json:"command"`
				Timeout   float64 `json:"timeout"`
				OnFailure string  `json:"onFailure"`
			} `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, err
	}
	out := map[string]hookEntry{}
	for ev, groups := range s.Hooks {
		for _, g := range groups {
			for _, h := range g.Hooks {
				if _, ok := out[ev]; !ok && h.Type == "command" && claudehook.LooksLikeWheelhouseHook(h.Command) {
					out[ev] = hookEntry{Command: h.Command, Timeout: h.Timeout, OnFailure: h.OnFailure}
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
