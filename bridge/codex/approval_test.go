package codex

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/bridge"
	"github.com/wheelhouse-dev/wheelhouse/internal/stubmodel"
)

// untrusted + danger-full-access: codex asks before running a mutating
// command and runs it unsandboxed once accepted.
var askForCommands = map[string]string{OptApprovalPolicy: "untrusted", OptSandbox: "danger-full-access"}

func TestCommandApproval(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		decide     func(ctx context.Context, ask bridge.ApprovalAsk) error
		tamper     bool // the grant was for another call: Redeem fails
		wantFile   bool
		wantOutput string // in the function_call_output the model gets back
	}{
		{name: "ApprovedRuns", decide: func(context.Context, bridge.ApprovalAsk) error { return nil },
			wantFile: true, wantOutput: "hi-from-stub"},
		{name: "DeniedIsDeclined", decide: func(context.Context, bridge.ApprovalAsk) error { return errors.New("denied by owner") },
			wantOutput: "rejected"},
		{name: "GrantForOtherCallIsDeclined", decide: func(context.Context, bridge.ApprovalAsk) error { return nil },
			tamper: true, wantOutput: "rejected"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, askForCommands,
				stubmodel.Exec("touch stub-was-here.txt && echo hi-from-stub"), stubmodel.Text("done"))
			r.gate.decide = tc.decide
			r.gate.tamper = tc.tamper
			turn := r.startTurn("make a file")
			end := r.events.wait(t, "turn end", turnEnded(turn))
			if end.Status != "completed" {
				t.Fatalf("turn ended %+v", end)
			}
			asks := r.gate.asked()
			if len(asks) != 1 {
				t.Fatalf("asks %+v", asks)
			}
			ask := asks[0]
			cmd, _ := ask.Call.Args["command"].(string)
			if ask.Call.Tool != ToolExec || !strings.Contains(cmd, "touch stub-was-here.txt") ||
				ask.Call.Args["cwd"] != r.dir || ask.TurnID != turn || !strings.Contains(ask.Summary, "touch") {
				t.Fatalf("ask %+v", ask)
			}
			if tc.wantFile {
				r.gate.mu.Lock()
				used := r.gate.grants[0].redeemed
				r.gate.mu.Unlock()
				if used != 1 {
					t.Fatalf("grant redeemed %d times", used)
				}
			}
			_, err := os.Stat(filepath.Join(r.dir, "stub-was-here.txt"))
			if created := err == nil; created != tc.wantFile {
				t.Fatalf("file created %v, want %v", created, tc.wantFile)
			}
			req := r.stub.WaitRequest(t, 2, waitTimeout)
			outs := strings.Join(req.FunctionCallOutputs(), "\n")
			if !strings.Contains(outs, tc.wantOutput) {
				t.Fatalf("function_call_output %q lacks %q", outs, tc.wantOutput)
			}
			tool := r.events.wait(t, "tool", kindIs(bridge.EventTool))
			if !strings.Contains(tool.Text, "touch stub-was-here.txt") {
				t.Fatalf("tool event %+v", tool)
			}
		})
	}
}

func TestFileChangeApproval(t *testing.T) {
	t.Parallel()
	patch := "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: patched.txt\n+hello from stub patch\n*** End Patch\nEOF\n"
	tests := []struct {
		name     string
		decide   func(context.Context, bridge.ApprovalAsk) error
		wantFile bool
	}{
		{"ApprovedApplies", func(context.Context, bridge.ApprovalAsk) error { return nil }, true},
		{"DeniedLeavesTreeAlone", func(context.Context, bridge.ApprovalAsk) error { return errors.New("no") }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, map[string]string{OptApprovalPolicy: "untrusted", OptSandbox: "workspace-write"},
				stubmodel.Exec(patch), stubmodel.Text("patched"))
			r.gate.decide = tc.decide
			turn := r.startTurn("add a file")
			r.events.wait(t, "turn end", turnEnded(turn))
			asks := r.gate.asked()
			if len(asks) != 1 {
				t.Fatalf("asks %+v", asks)
			}
			ask := asks[0]
			changes, _ := ask.Call.Args["changes"].([]any)
			if ask.Call.Tool != ToolApplyPatch || len(changes) != 1 {
				t.Fatalf("ask %+v", ask)
			}
			c := changes[0].(map[string]any)
			if c["path"] != filepath.Join(r.dir, "patched.txt") || c["kind"] != "add" ||
				!strings.Contains(c["diff"].(string), "hello from stub patch") {
				t.Fatalf("change %+v", c)
			}
			if !strings.Contains(ask.Diff, "hello from stub patch") || !strings.Contains(ask.Summary, "add patched.txt") {
				t.Fatalf("summary %q diff %q", ask.Summary, ask.Diff)
			}
			data, err := os.ReadFile(filepath.Join(r.dir, "patched.txt"))
			if created := err == nil; created != tc.wantFile {
				t.Fatalf("file created %v, want %v", created, tc.wantFile)
			}
			if tc.wantFile && string(data) != "hello from stub patch\n" {
				t.Fatalf("file content %q", data)
			}
			tool := r.events.wait(t, "tool", kindIs(bridge.EventTool))
			if !strings.Contains(tool.Text, "add patched.txt") {
				t.Fatalf("tool event %+v", tool)
			}
		})
	}
}

func TestInterruptDuringApproval(t *testing.T) {
	t.Parallel()
	r := newRig(t, askForCommands, stubmodel.Exec("touch never.txt"))
	asked := make(chan struct{})
	dropped := make(chan error, 1)
	r.gate.decide = func(ctx context.Context, _ bridge.ApprovalAsk) error {
		close(asked)
		<-ctx.Done() // the owner never answers
		dropped <- ctx.Err()
		return ctx.Err()
	}
	turn := r.startTurn("make a file")
	select {
	case <-asked:
	case <-time.After(waitTimeout):
		t.Fatal("gate never asked")
	}
	if err := r.h.Interrupt(context.Background(), turn); err != nil {
		t.Fatal(err)
	}
	end := r.events.wait(t, "turn end", turnEnded(turn))
	if end.Status != "interrupted" {
		t.Fatalf("turn ended %+v", end)
	}
	select {
	case err := <-dropped: // serverRequest/resolved withdrew the pending ask
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("ask ended with %v", err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("pending approval not withdrawn after the interrupt")
	}
	if _, err := os.Stat(filepath.Join(r.dir, "never.txt")); err == nil {
		t.Fatal("command ran")
	}
}
