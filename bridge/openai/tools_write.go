package openai

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/bridge"
)

// The tools with side effects: each call goes to the gate first and runs
// only with a grant redeemed for exactly that call.

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
