package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/wheelhouse-dev/wheelhouse/authz"
	"github.com/wheelhouse-dev/wheelhouse/bridge"
	"github.com/wheelhouse-dev/wheelhouse/wire"
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
	maxAskSummary     = 4 << 10
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

// gated asks the owner for call and, if approved and the grant redeems for
// exactly this call, runs it.
func (e *toolEnv) gated(ctx context.Context, call bridge.ToolCall, summary, askSummary, diff string, run func() toolOutcome) toolOutcome {
	if e.gate == nil {
		return toolError(summary+": not run", "not run: this agent has no approval gate, so nothing with side effects can run")
	}
	// The hub refuses an approval request over its limits; say so here,
	// where the model can still split the call.
	_, canonical, err := authz.PayloadHash(call.Tool, call.Args)
	if err != nil {
		return toolError(summary+": not run", "not run: the call cannot be approved as written: %v", err)
	}
	if len(canonical) > wire.MaxPayload {
		return toolError(summary+": too large", "not run: the call is %d KiB as JSON, more than the %d KiB an approval can carry; split it into smaller calls",
			len(canonical)>>10, wire.MaxPayload>>10)
	}
	if len(diff) > maxAskDiff {
		diff = clip([]byte(diff), maxAskDiff) + "\n… (diff cut for display; the approval covers the whole call)\n"
	}
	if len(askSummary) > maxAskSummary {
		askSummary = clip([]byte(askSummary), maxAskSummary)
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
