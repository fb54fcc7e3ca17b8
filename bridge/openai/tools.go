package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/bridge"
)

// Tool names, as the model calls them and as approvals name them (the
// owner's auto_approve list uses these).
const (
	toolList   = "list_files"
	toolRead   = "read_file"
	toolSearch = "search_text"
	toolWrite  = "write_file"
	toolPatch  = "apply_patch"
	toolRun    = "run_command"
)

var (
	allTools      = []string{toolList, toolRead, toolSearch, toolWrite, toolPatch, toolRun}
	readOnlyTools = []string{toolList, toolRead, toolSearch}
)

// Limits of the tools.
const (
	maxListEntries    = 1000
	maxSearchResults  = 500
	defSearchResults  = 100
	maxSearchFileSize = 4 << 20
	maxSearchLine     = 240
	maxWriteBytes     = 128 << 10 // the approval carries the content; NATS messages are 1 MiB
	maxPatchBytes     = 128 << 10
	maxAskDiff        = 64 << 10
)

// toolDef is a function the model may call.
type toolDef struct {
	Type     string  `json:"type"` // "function"
	Function toolFun `json:"function"`
}

type toolFun struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// toolSpecs describes each tool to the model; args lists the argument
// names a call may carry (nothing else is accepted).
var toolSpecs = map[string]struct {
	desc     string
	params   string
	args     []string
	required []string
}{
	toolList: {
		desc:   "List the files in a directory of the project. Directories end in '/'.",
		params: `{"type":"object","properties":{"path":{"type":"string","description":"directory relative to the project root; default \".\""},"recursive":{"type":"boolean","description":"also list subdirectories (skips .git)"}}}`,
		args:   []string{"path", "recursive"},
	},
	toolRead: {
		desc:     "Read a text file of the project, whole or a range of lines (1-based, inclusive).",
		params:   `{"type":"object","properties":{"path":{"type":"string"},"start_line":{"type":"integer","minimum":1},"end_line":{"type":"integer","minimum":1}},"required":["path"]}`,
		args:     []string{"path", "start_line", "end_line"},
		required: []string{"path"},
	},
	toolSearch: {
		desc:     "Search the project's text files for a string (or a regular expression with regex=true). Answers path:line: text.",
		params:   `{"type":"object","properties":{"query":{"type":"string"},"path":{"type":"string","description":"file or directory to search; default \".\""},"regex":{"type":"boolean"},"max_results":{"type":"integer","minimum":1,"maximum":500}},"required":["query"]}`,
		args:     []string{"query", "path", "regex", "max_results"},
		required: []string{"query"},
	},
	toolWrite: {
		desc:     "Create or replace a file of the project with the given content. Needs the owner's approval.",
		params:   `{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path","content"]}`,
		args:     []string{"path", "content"},
		required: []string{"path", "content"},
	},
	toolPatch: {
		desc:     "Change files of the project with a unified diff (--- a/file, +++ b/file, @@ -l,n +l,n @@ hunks; /dev/null to create or delete). Context and removed lines must match the files exactly. Needs the owner's approval.",
		params:   `{"type":"object","properties":{"patch":{"type":"string"}},"required":["patch"]}`,
		args:     []string{"patch"},
		required: []string{"patch"},
	},
	toolRun: {
		desc:     "Run a shell command (sh -c) in the project directory and return its exit code and output. Needs the owner's approval.",
		params:   `{"type":"object","properties":{"command":{"type":"string"},"timeout_seconds":{"type":"integer","minimum":1}},"required":["command"]}`,
		args:     []string{"command", "timeout_seconds"},
		required: []string{"command"},
	},
}

// toolDefs returns the definitions of the named tools.
func toolDefs(names []string) []toolDef {
	out := make([]toolDef, 0, len(names))
	for _, n := range names {
		s := toolSpecs[n]
		out = append(out, toolDef{Type: "function", Function: toolFun{Name: n, Description: s.desc, Parameters: json.RawMessage(s.params)}})
	}
	return out
}

// toolOutcome is what a call gave: the text for the model and a line for
// the room.
type toolOutcome struct {
	Output  string
	Summary string
	Failed  bool
}

func toolError(summary, format string, args ...any) toolOutcome {
	return toolOutcome{Output: "error: " + fmt.Sprintf(format, args...), Summary: summary, Failed: true}
}

// toolEnv is what the tools work with during one turn.
type toolEnv struct {
	ws        *workspace
	cfg       *Config
	gate      bridge.Gate
	turnID    string
	env       []string // run_command's environment
	enabled   []string
	outputCap int
}

// decodeArgs reads a call's arguments: a JSON object with only the tool's
// argument names (exactly spelled), into out. It returns the object as a
// map: the approval is bound to it.
func decodeArgs(name, raw string, out any) (map[string]any, error) {
	spec := toolSpecs[name]
	raw = strings.TrimSpace(raw)
	if raw == "" {
		raw = "{}"
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(raw), &m); err != nil || m == nil {
		return nil, fmt.Errorf("the arguments are not a JSON object (%s): %s", jsonProblem(err), clip([]byte(raw), 120))
	}
	for k := range m {
		if !slices.Contains(spec.args, k) {
			return nil, fmt.Errorf("unknown argument %q (%s takes %s)", k, name, strings.Join(spec.args, ", "))
		}
	}
	for _, k := range spec.required {
		if _, ok := m[k]; !ok {
			return nil, fmt.Errorf("the argument %q is required", k)
		}
	}
	// Typed, from the very object the approval is bound to.
	b, _ := json.Marshal(m)
	if err := json.Unmarshal(b, out); err != nil {
		return nil, fmt.Errorf("bad arguments: %s", jsonProblem(err))
	}
	return m, nil
}

func jsonProblem(err error) string {
	if err == nil {
		return "null"
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("%s must be a %s, not a %s", te.Field, jsonKind(te.Type.Kind().String()), te.Value)
	}
	return err.Error()
}

func jsonKind(k string) string {
	switch {
	case strings.HasPrefix(k, "int"):
		return "whole number"
	case k == "bool":
		return "boolean"
	}
	return k
}

// run executes one tool call of the model.
func (e *toolEnv) run(ctx context.Context, call toolCall) toolOutcome {
	name := call.Function.Name
	if name == "" {
		return toolError("a tool call without a name", "the tool call has no function name; the tools are %s", strings.Join(e.enabled, ", "))
	}
	if !slices.Contains(e.enabled, name) {
		return toolError("unknown tool "+clip([]byte(name), 60), "there is no tool %q; the tools are %s", clip([]byte(name), 60), strings.Join(e.enabled, ", "))
	}
	var out toolOutcome
	switch name {
	case toolList:
		out = e.list(call)
	case toolRead:
		out = e.read(call)
	case toolSearch:
		out = e.search(ctx, call)
	case toolWrite:
		out = e.write(ctx, call)
	case toolPatch:
		out = e.patch(ctx, call)
	case toolRun:
		out = e.command(ctx, call)
	}
	if len(out.Output) > e.outputCap {
		out.Output = clip([]byte(out.Output), e.outputCap) +
			fmt.Sprintf("\n… (output cut at %d bytes; ask for less, e.g. a line range or a narrower search)", e.outputCap)
	}
	return out
}

func (e *toolEnv) list(call toolCall) toolOutcome {
	var a struct {
		Path      string `json:"path"`
		Recursive bool   `json:"recursive"`
	}
	if _, err := decodeArgs(toolList, call.Function.Arguments, &a); err != nil {
		return toolError("list_files: bad arguments", "%v", err)
	}
	rel, err := e.ws.rel(a.Path)
	if err != nil {
		return toolError("list_files "+a.Path+": refused", "%v", err)
	}
	summary := "list_files " + rel
	fi, err := e.ws.root.Stat(rel)
	if err != nil {
		return toolError(summary, "%v", e.ws.explain(rel, err))
	}
	if !fi.IsDir() {
		return toolError(summary, "%s is not a directory", rel)
	}
	var lines []string
	more := 0
	add := func(p string, d fs.DirEntry) {
		if len(lines) >= maxListEntries {
			more++
			return
		}
		switch {
		case d.IsDir():
			lines = append(lines, p+"/")
		case d.Type()&fs.ModeSymlink != 0:
			lines = append(lines, p+" (symbolic link)")
		default:
			size := ""
			if info, err := d.Info(); err == nil {
				size = fmt.Sprintf(" (%d bytes)", info.Size())
			}
			lines = append(lines, p+size)
		}
	}
	fsys := e.ws.root.FS()
	if a.Recursive {
		err = fs.WalkDir(fsys, rel, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if p == rel {
					return err
				}
				return nil // unreadable below: skip it
			}
			if p == rel {
				return nil
			}
			if d.IsDir() && d.Name() == ".git" {
				return fs.SkipDir
			}
			add(p, d)
			return nil
		})
	} else {
		var ents []fs.DirEntry
		ents, err = fs.ReadDir(fsys, rel)
		for _, d := range ents {
			add(pathJoin(rel, d.Name()), d)
		}
	}
	if err != nil {
		return toolError(summary, "%v", e.ws.explain(rel, err))
	}
	if len(lines) == 0 {
		return toolOutcome{Output: rel + " is empty", Summary: summary}
	}
	sort.Strings(lines)
	if more > 0 {
		lines = append(lines, fmt.Sprintf("… and %d more", more))
	}
	return toolOutcome{Output: strings.Join(lines, "\n"), Summary: fmt.Sprintf("%s (%d entries)", summary, len(lines))}
}

func pathJoin(dir, name string) string {
	if dir == "." {
		return name
	}
	return dir + "/" + name
}

func (e *toolEnv) read(call toolCall) toolOutcome {
	var a struct {
		Path      string `json:"path"`
		StartLine int    `json:"start_line"`
		EndLine   int    `json:"end_line"`
	}
	if _, err := decodeArgs(toolRead, call.Function.Arguments, &a); err != nil {
		return toolError("read_file: bad arguments", "%v", err)
	}
	rel, err := e.ws.rel(a.Path)
	if err != nil {
		return toolError("read_file "+a.Path+": refused", "%v", err)
	}
	summary := "read_file " + rel
	b, err := e.ws.readFile(rel)
	if err != nil {
		return toolError(summary, "%v", err)
	}
	if isBinary(b) {
		return toolOutcome{Output: fmt.Sprintf("%s is a binary file of %d bytes; not shown", rel, len(b)), Summary: summary + " (binary)"}
	}
	lines, _ := fileLines(b)
	n := len(lines)
	from, to := 1, n
	if a.StartLine > 0 {
		from = a.StartLine
	}
	if a.EndLine > 0 {
		to = min(a.EndLine, n)
	}
	if a.StartLine < 0 || a.EndLine < 0 || (a.EndLine > 0 && a.EndLine < from) {
		return toolError(summary, "start_line and end_line are 1-based, with start_line ≤ end_line")
	}
	if n == 0 {
		return toolOutcome{Output: rel + " is empty", Summary: summary + " (empty)"}
	}
	if from > n {
		return toolError(summary, "%s has %d lines; start_line %d is past the end", rel, n, from)
	}
	text := strings.Join(lines[from-1:to], "\n")
	head := fmt.Sprintf("%s, lines %d-%d of %d:\n", rel, from, to, n)
	if from != 1 || to != n {
		summary += fmt.Sprintf(" (lines %d-%d)", from, to)
	}
	return toolOutcome{Output: head + text, Summary: summary}
}

func (e *toolEnv) search(ctx context.Context, call toolCall) toolOutcome {
	var a struct {
		Query      string `json:"query"`
		Path       string `json:"path"`
		Regex      bool   `json:"regex"`
		MaxResults int    `json:"max_results"`
	}
	if _, err := decodeArgs(toolSearch, call.Function.Arguments, &a); err != nil {
		return toolError("search_text: bad arguments", "%v", err)
	}
	summary := fmt.Sprintf("search_text %q", clip([]byte(a.Query), 60))
	if a.Query == "" {
		return toolError(summary, "the query is empty")
	}
	match := func(s string) bool { return strings.Contains(s, a.Query) }
	if a.Regex {
		re, err := regexp.Compile(a.Query)
		if err != nil {
			return toolError(summary, "bad regular expression (Go RE2 syntax): %v", err)
		}
		match = re.MatchString
	}
	limit := defSearchResults
	if a.MaxResults > 0 {
		limit = min(a.MaxResults, maxSearchResults)
	}
	rel, err := e.ws.rel(a.Path)
	if err != nil {
		return toolError(summary+": refused", "%v", err)
	}
	if rel != "." {
		summary += " in " + rel
	}
	var hits []string
	truncated := false
	searchFile := func(p string) {
		b, err := e.ws.readFile(p)
		if err != nil || len(b) > maxSearchFileSize || isBinary(b) {
			return
		}
		for i, line := range bytes.Split(b, []byte("\n")) {
			if match(string(line)) {
				if len(hits) >= limit {
					truncated = true
					return
				}
				hits = append(hits, fmt.Sprintf("%s:%d: %s", p, i+1, clip(bytes.TrimRight(line, "\r"), maxSearchLine)))
			}
		}
	}
	fi, err := e.ws.root.Stat(rel)
	if err != nil {
		return toolError(summary, "%v", e.ws.explain(rel, err))
	}
	if !fi.IsDir() {
		searchFile(rel)
	} else {
		err = fs.WalkDir(e.ws.root.FS(), rel, func(p string, d fs.DirEntry, err error) error {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err != nil {
				if p == rel {
					return err
				}
				return nil
			}
			if d.IsDir() && d.Name() == ".git" {
				return fs.SkipDir
			}
			if d.Type().IsRegular() {
				searchFile(p)
			}
			if truncated {
				return fs.SkipAll
			}
			return nil
		})
		if err != nil {
			return toolError(summary, "%v", e.ws.explain(rel, err))
		}
	}
	if len(hits) == 0 {
		return toolOutcome{Output: "no matches", Summary: summary + " (no matches)"}
	}
	out := strings.Join(hits, "\n")
	if truncated {
		out += fmt.Sprintf("\n… more matches left out (max_results %d)", limit)
	}
	return toolOutcome{Output: out, Summary: fmt.Sprintf("%s (%d matches)", summary, len(hits))}
}

// gated asks the owner for call and, if approved and the grant redeems for
// exactly this call, runs it.
func (e *toolEnv) gated(ctx context.Context, call bridge.ToolCall, summary, askSummary, diff string, run func() toolOutcome) toolOutcome {
	if e.gate == nil {
		return toolError(summary+": not run", "not run: this agent has no approval gate, so nothing with side effects can run")
	}
	if len(diff) > maxAskDiff {
		diff = clip([]byte(diff), maxAskDiff) + "\n… (diff cut for display; the approval covers the whole call)\n"
	}
	grant, err := e.gate.Ask(ctx, bridge.ApprovalAsk{TurnID: e.turnID, Call: call, Summary: askSummary, Diff: diff})
	if ctx.Err() != nil {
		return toolError(summary+": not run (turn interrupted)", "not run: the turn was interrupted")
	}
	if err != nil {
		return toolError(summary+": not approved", "not run: the owner did not approve it (%v)", err)
	}
	if grant == nil {
		return toolError(summary+": not run", "not run: the approval came without a grant")
	}
	if err := grant.Redeem(call); err != nil {
		return toolError(summary+": not run", "not run: %v", err)
	}
	return run()
}

func (e *toolEnv) write(ctx context.Context, call toolCall) toolOutcome {
	var a struct {
		Path    string `json:"path"`
		Content string `json:"content"`
	}
	args, err := decodeArgs(toolWrite, call.Function.Arguments, &a)
	if err != nil {
		return toolError("write_file: bad arguments", "%v", err)
	}
	rel, err := e.ws.rel(a.Path)
	if err != nil {
		return toolError("write_file "+clip([]byte(a.Path), 80)+": refused", "%v", err)
	}
	summary := "write_file " + rel
	if len(a.Content) > maxWriteBytes {
		return toolError(summary, "the content is %d bytes; write_file takes at most %d KiB: write a smaller file or change it with apply_patch", len(a.Content), maxWriteBytes>>10)
	}
	if err := e.ws.checkWritable(rel); err != nil {
		return toolError(summary+": refused", "%v", err)
	}
	old, err := e.ws.readFile(rel)
	exists := err == nil
	if _, there, _ := e.ws.lstat(rel); there && !exists {
		return toolError(summary, "%v", err)
	}
	diff := unifiedDiff(rel, old, []byte(a.Content), exists)
	verb := "create"
	if exists {
		verb = "overwrite"
	}
	ask := fmt.Sprintf("%s %s (%d bytes)", verb, rel, len(a.Content))
	return e.gated(ctx, bridge.ToolCall{Tool: toolWrite, Args: args}, summary, ask, diff, func() toolOutcome {
		if err := e.ws.writeFile(rel, []byte(a.Content)); err != nil {
			return toolError(summary+": failed", "%v", err)
		}
		return toolOutcome{Output: fmt.Sprintf("wrote %s (%d bytes)", rel, len(a.Content)), Summary: summary + " (written)"}
	})
}

// patchPlan is a checked patch: each file's path and new content (nil:
// delete it).
type patchPlan struct {
	files []plannedFile
}

type plannedFile struct {
	rel     string
	content []byte
	delete  bool
	create  bool
}

// planPatch parses text and applies it in memory to the current files.
func (e *toolEnv) planPatch(text string) (patchPlan, error) {
	fps, err := parsePatch(text)
	if err != nil {
		return patchPlan{}, err
	}
	var plan patchPlan
	for _, fp := range fps {
		rel, err := e.ws.rel(fp.Path())
		if err != nil {
			return patchPlan{}, err
		}
		if err := e.ws.checkWritable(rel); err != nil {
			return patchPlan{}, err
		}
		var cur []byte
		_, exists, err := e.ws.lstat(rel)
		if err != nil {
			return patchPlan{}, err
		}
		switch {
		case fp.Create() && exists:
			return patchPlan{}, fmt.Errorf("%s already exists; the patch creates it (--- /dev/null)", rel)
		case !fp.Create() && !exists:
			return patchPlan{}, fmt.Errorf("%s does not exist; to create it, use --- /dev/null", rel)
		case exists:
			if cur, err = e.ws.readFile(rel); err != nil {
				return patchPlan{}, err
			}
		}
		next, err := applyFile(cur, fp)
		if err != nil {
			return patchPlan{}, fmt.Errorf("%s: %v", rel, err)
		}
		plan.files = append(plan.files, plannedFile{rel: rel, content: next, delete: fp.Delete(), create: fp.Create()})
	}
	return plan, nil
}

func (e *toolEnv) patch(ctx context.Context, call toolCall) toolOutcome {
	var a struct {
		Patch string `json:"patch"`
	}
	args, err := decodeArgs(toolPatch, call.Function.Arguments, &a)
	if err != nil {
		return toolError("apply_patch: bad arguments", "%v", err)
	}
	if len(a.Patch) > maxPatchBytes {
		return toolError("apply_patch", "the patch is %d bytes; apply_patch takes at most %d KiB: split it", len(a.Patch), maxPatchBytes>>10)
	}
	plan, err := e.planPatch(a.Patch)
	if err != nil {
		return toolError("apply_patch: does not apply", "the patch does not apply, nothing was changed: %v", err)
	}
	var names []string
	for _, f := range plan.files {
		names = append(names, f.rel)
	}
	summary := "apply_patch " + strings.Join(names, ", ")
	var ask []string
	for _, f := range plan.files {
		switch {
		case f.delete:
			ask = append(ask, "delete "+f.rel)
		case f.create:
			ask = append(ask, "create "+f.rel)
		default:
			ask = append(ask, "change "+f.rel)
		}
	}
	return e.gated(ctx, bridge.ToolCall{Tool: toolPatch, Args: args}, summary, strings.Join(ask, ", "), a.Patch, func() toolOutcome {
		// The files may have changed while the owner decided: apply anew.
		plan, err := e.planPatch(a.Patch)
		if err != nil {
			return toolError(summary+": does not apply", "the patch no longer applies, nothing was changed: %v", err)
		}
		for i, f := range plan.files {
			if f.delete {
				err = e.ws.remove(f.rel)
			} else {
				err = e.ws.writeFile(f.rel, f.content)
			}
			if err != nil {
				done := ""
				if i > 0 {
					done = fmt.Sprintf(" (the changes to %s were made)", strings.Join(names[:i], ", "))
				}
				return toolError(summary+": failed", "%s: %v%s", f.rel, err, done)
			}
		}
		return toolOutcome{Output: "applied the patch to " + strings.Join(names, ", "), Summary: summary + " (applied)"}
	})
}

func (e *toolEnv) command(ctx context.Context, call toolCall) toolOutcome {
	var a struct {
		Command        string `json:"command"`
		TimeoutSeconds int    `json:"timeout_seconds"`
	}
	args, err := decodeArgs(toolRun, call.Function.Arguments, &a)
	if err != nil {
		return toolError("run_command: bad arguments", "%v", err)
	}
	if strings.TrimSpace(a.Command) == "" {
		return toolError("run_command", "the command is empty")
	}
	if strings.ContainsRune(a.Command, 0) {
		return toolError("run_command", "the command contains a NUL byte")
	}
	timeout := e.cfg.CommandTimeout
	if a.TimeoutSeconds > 0 {
		timeout = min(timeout, time.Duration(a.TimeoutSeconds)*time.Second)
	}
	shown := clip([]byte(a.Command), 200)
	summary := "run_command `" + shown + "`"
	ask := fmt.Sprintf("%s  (in %s, time limit %s)", a.Command, e.ws.dir, timeout)
	return e.gated(ctx, bridge.ToolCall{Tool: toolRun, Args: args}, summary, ask, "", func() toolOutcome {
		res, err := runCommand(ctx, e.ws.dir, a.Command, e.env, timeout, e.outputCap)
		if ctx.Err() != nil {
			return toolError(summary+": interrupted", "the turn was interrupted; the command was killed")
		}
		if err != nil {
			return toolError(summary+": failed", "%v", err)
		}
		out := res.Output
		if out == "" {
			out = "(no output)"
		}
		if res.TimedOut {
			return toolOutcome{Output: fmt.Sprintf("timed out after %s and was killed; output so far:\n%s", timeout, out),
				Summary: summary + " (timed out)", Failed: true}
		}
		return toolOutcome{Output: fmt.Sprintf("exit code %d\n%s", res.ExitCode, out),
			Summary: fmt.Sprintf("%s (exit %d, %s)", summary, res.ExitCode, res.Elapsed.Round(time.Millisecond))}
	})
}
