package codex

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/wheelhouse-dev/wheelhouse/bridge"
)

// Codex's own allow-list is $CODEX_HOME/rules/*.rules (execpolicy): a
// prefix_rule whose decision is "allow" — the default when none is given —
// runs matching commands without asking, even under untrusted. So the
// rules, and CODEX_HOME itself, must be out of every agent's reach, and
// with an allow rule in place codex cannot run a strict turn. The project's
// own .codex folder is never read: the adapter opens every thread with the
// project marked untrusted.

// HomeCheck is one finding about an agent's CODEX_HOME.
type HomeCheck struct {
	OK     bool
	What   string
	Detail string
}

// codexHomeOf is the CODEX_HOME the agent's process gets.
func codexHomeOf(s settings) string {
	if s.codexHome != "" {
		return s.codexHome
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".codex")
	}
	return ""
}

// CheckHome checks a codex agent's CODEX_HOME for wheelhouse doctor: that
// it (and its rules folder) lies outside every agent's directory in
// agentDirs, that no one but the owner can write the rules, and that no
// rule lets a command run without asking.
func CheckHome(a bridge.AgentConfig, agentDirs []string) []HomeCheck {
	s, err := resolve(a)
	if err != nil {
		return []HomeCheck{{What: "codex config", Detail: err.Error()}}
	}
	home := codexHomeOf(s)
	var out []HomeCheck
	if in := insideAny(home, agentDirs); in != "" {
		out = append(out, HomeCheck{What: "CODEX_HOME " + home, Detail: "it is inside " + in + ", where an agent can write; an agent could add rules or change codex's config. Move it (options.codex_home) outside every agent's dir"})
	} else if in := insideAny(home, []string{os.TempDir(), "/tmp"}); in != "" && s.owner().sandbox == "workspace-write" && !s.owner().asksFirst() {
		out = append(out, HomeCheck{What: "CODEX_HOME " + home, Detail: "it is under " + in + ", which the workspace-write sandbox lets commands write without asking (approval_policy = " +
			s.approvalPolicy + "); an agent could add rules or change codex's config. Move it (options.codex_home) out of the temporary folder"})
	} else {
		out = append(out, HomeCheck{OK: true, What: "CODEX_HOME " + home, Detail: "outside every agent's dir"})
	}
	findings, err := allowRules(home)
	switch {
	case err != nil:
		out = append(out, HomeCheck{What: "codex rules", Detail: err.Error()})
	case len(findings) > 0:
		out = append(out, HomeCheck{What: "codex rules", Detail: strings.Join(findings, "; ") +
			". Codex runs such commands without asking, even in a turn that must ask before every command, so teammates' words are refused. Change the decision to \"prompt\" or remove the rule"})
	default:
		out = append(out, HomeCheck{OK: true, What: "codex rules", Detail: "no rule lets a command run without asking"})
	}
	if s.approvalPolicy == "untrusted" && s.configuredSandbox != "" && s.configuredSandbox != "danger-full-access" {
		out = append(out, HomeCheck{OK: true, What: "codex sandbox", Detail: sandboxNote(s.configuredSandbox)})
	}
	return out
}

// sandboxNote explains why a configured sandbox is not used under untrusted.
func sandboxNote(configured string) string {
	return fmt.Sprintf("sandbox = %q is not used with approval_policy = \"untrusted\": codex re-runs an approved command outside the sandbox whenever the sandbox blocks it, without asking again, so Wheelhouse runs untrusted turns without one and every approval card says so", configured)
}

// homeProblem is why codex cannot run a strict turn with this CODEX_HOME
// right now ("" if it can).
func homeProblem(s settings) string {
	home := codexHomeOf(s)
	if in := insideAny(home, []string{s.dir}); in != "" {
		return "its CODEX_HOME (" + home + ") is inside its working directory, where the agent can change codex's rules"
	}
	findings, err := allowRules(home)
	if err != nil {
		return "codex's rules cannot be checked: " + err.Error()
	}
	if len(findings) > 0 {
		return "codex's rules let commands run without asking (" + strings.Join(findings, "; ") + ")"
	}
	return ""
}

// insideAny returns the dir of dirs that holds path (or is it), or "".
func insideAny(path string, dirs []string) string {
	p := realPath(path)
	for _, d := range dirs {
		if d == "" {
			continue
		}
		rd := realPath(d)
		if rel, err := filepath.Rel(rd, p); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return d
		}
	}
	return ""
}

func realPath(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}

var (
	ruleCall     = regexp.MustCompile(`(?m)^\s*([A-Za-z_]+)\s*\(`)
	ruleDecision = regexp.MustCompile(`decision\s*=\s*["']([A-Za-z_-]+)["']`)
	rulePattern  = regexp.MustCompile(`pattern\s*=\s*\[`)
)

// allowRules lists the rules under home/rules that let a command run
// without asking, and rules files others may write. A missing folder has
// none.
func allowRules(home string) ([]string, error) {
	dir := filepath.Join(home, "rules")
	fi, err := os.Stat(dir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	if fi.Mode().Perm()&0o022 != 0 {
		out = append(out, dir+" can be written by other users ("+fi.Mode().Perm().String()+")")
	}
	var files []string
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".rules") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		if fi, err := os.Stat(f); err == nil && fi.Mode().Perm()&0o022 != 0 {
			out = append(out, f+" can be written by other users")
		}
		for _, call := range ruleCalls(string(b)) {
			name, args := call[0], call[1]
			if name != "prefix_rule" {
				continue
			}
			d := "allow" // codex's default
			if m := ruleDecision.FindStringSubmatch(args); m != nil {
				d = m[1]
			}
			if d != "prompt" && d != "forbidden" {
				pat := "?"
				if loc := rulePattern.FindStringIndex(args); loc != nil {
					pat = bracketed(args[loc[1]-1:])
				}
				out = append(out, fmt.Sprintf("%s: prefix_rule %s is %q", filepath.Base(f), pat, d))
			}
		}
	}
	return out, nil
}

// ruleCalls splits a rules file into top-level calls: name and the text
// between its parentheses (strings and comments respected).
func ruleCalls(src string) [][2]string {
	var out [][2]string
	for _, loc := range ruleCall.FindAllStringSubmatchIndex(src, -1) {
		name := src[loc[2]:loc[3]]
		start := loc[1]
		depth, i := 1, start
		for ; i < len(src) && depth > 0; i++ {
			switch c := src[i]; c {
			case '(':
				depth++
			case ')':
				depth--
			case '"', '\'':
				for i++; i < len(src) && src[i] != c; i++ {
					if src[i] == '\\' {
						i++
					}
				}
			case '#':
				for i < len(src) && src[i] != '\n' {
					i++
				}
			}
		}
		out = append(out, [2]string{name, src[start:max(start, i-1)]})
	}
	return out
}

// bracketed is the balanced [...] that s starts with (all of s if unbalanced).
func bracketed(s string) string {
	depth := 0
	for i, c := range s {
		switch c {
		case '[':
			depth++
		case ']':
			if depth--; depth == 0 {
				return s[:i+1]
			}
		}
	}
	return s
}
