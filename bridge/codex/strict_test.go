package codex

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wheelhouse-dev/wheelhouse/bridge"
	"github.com/wheelhouse-dev/wheelhouse/internal/stubmodel"
)

// These drive the real codex against the obedient stub model: every
// imperative in a turn's input becomes an exec_command call.

// strictTurn starts a turn with in.Strict and returns its id.
func (r *rig) startStrict(text string) string {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	id, err := r.h.StartTurn(ctx, bridge.Input{Text: text, Strict: true})
	if err != nil {
		r.t.Fatalf("start strict turn: %v", err)
	}
	return id
}

func (r *rig) exists(name string) bool {
	_, err := os.Stat(filepath.Join(r.dir, name))
	return err == nil
}

func (r *rig) write(name string) {
	r.t.Helper()
	if err := os.WriteFile(filepath.Join(r.dir, name), []byte("keep me\n"), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

func toolEvents(r *rig, turn string) []string {
	var out []string
	for _, e := range r.events.all() {
		if e.Kind == bridge.EventTool && e.TurnID == turn {
			out = append(out, e.Text)
		}
	}
	return out
}

// TestStrictTurns: under the owner's on-request policy codex runs commands
// inside the workspace without asking; a strict turn asks before every
// command, states no sandbox on the card, and the owner's next turn runs
// under the owner's policy again (overrides stick, so it is restored).
func TestStrictTurns(t *testing.T) {
	t.Parallel()
	r := newRig(t, map[string]string{OptApprovalPolicy: "on-request", OptSandbox: "workspace-write"})
	r.stub.SetFallback(stubmodel.Obedient())
	if err := r.h.StrictTurns(); err != nil {
		t.Fatalf("StrictTurns: %v", err)
	}
	if got := r.h.OwnerTurns(); !strings.Contains(got, "without asking") {
		t.Fatalf("OwnerTurns %q", got)
	}
	r.gate.decide = func(context.Context, bridge.ApprovalAsk) error { return errors.New("denied by the owner") }

	t.Run("StrictTurnAsksBeforeEveryCommand", func(t *testing.T) {
		r.write("notes.txt")
		turn := r.startStrict("| delete notes.txt\n| run: ls")
		if !r.h.TurnStrict(turn) {
			t.Fatal("the strict turn does not report strict")
		}
		r.events.wait(t, "turn end", turnEnded(turn))
		asks := r.gate.asked()
		if len(asks) != 2 || !strings.Contains(asks[0].Summary, "rm notes.txt") || !strings.Contains(asks[1].Summary, "ls") {
			t.Fatalf("asks %+v, want rm and ls", asks)
		}
		if asks[0].Call.Args["sandbox"] != "none" || !strings.Contains(asks[0].Sandbox, "full access") {
			t.Fatalf("the card does not state the sandbox: %v %q", asks[0].Call.Args["sandbox"], asks[0].Sandbox)
		}
		if !r.exists("notes.txt") {
			t.Fatal("notes.txt was deleted although the owner denied it")
		}
	})
	t.Run("OwnersNextTurnRunsUnderOwnersPolicy", func(t *testing.T) {
		before := len(r.gate.asked())
		turn := r.startTurn("delete notes.txt")
		if r.h.TurnStrict(turn) {
			t.Fatal("an on-request turn reports strict")
		}
		r.events.wait(t, "turn end", turnEnded(turn))
		if n := len(r.gate.asked()); n != before {
			t.Fatalf("the owner's turn asked %d times; on-request runs it unasked", n-before)
		}
		if r.exists("notes.txt") {
			t.Fatal("the owner's own on-request turn did not run the command")
		}
	})
	t.Run("StrictAgainAfterOwner", func(t *testing.T) {
		r.write("again.txt")
		before := len(r.gate.asked())
		turn := r.startStrict("| delete again.txt")
		r.events.wait(t, "turn end", turnEnded(turn))
		if len(r.gate.asked()) != before+1 || !r.exists("again.txt") {
			t.Fatalf("asks %d→%d, file kept %v", before, len(r.gate.asked()), r.exists("again.txt"))
		}
	})
}

// TestRefusedBlockedEscalated: under on-request with a read-only sandbox,
// a command codex's rules forbid never becomes an item, a write the sandbox
// blocks fails, an approved dangerous command the sandbox blocks never
// completes, and the model's request to leave the sandbox is its own
// approval stating "none". Each reaches the bridge as a tool event.
func TestRefusedBlockedEscalated(t *testing.T) {
	t.Parallel()
	r := newRigWith(t, map[string]string{OptApprovalPolicy: "on-request", OptSandbox: "read-only"}, func(h *Harness) {
		rules := filepath.Join(h.cfg.codexHome, "rules")
		if err := os.MkdirAll(rules, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(rules, "default.rules"), []byte(`prefix_rule(pattern = ["ls"], decision = "forbidden")`+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	})
	r.stub.SetFallback(stubmodel.Obedient())
	r.write("keep")
	var asks []bridge.ApprovalAsk
	r.gate.decide = func(_ context.Context, a bridge.ApprovalAsk) error {
		if strings.Contains(a.Summary, "rm -rf") {
			return nil // the owner approves; the sandbox still blocks it
		}
		return errors.New("denied")
	}
	turn := r.startTurn("run: ls\ncreate blocked.txt\nwipe keep\nescalate: touch escaped.txt")
	r.events.wait(t, "turn end", turnEnded(turn))
	asks = r.gate.asked()
	tools := toolEvents(r, turn)
	t.Logf("tool events: %q", tools)
	// An approved command the sandbox blocks ends "exit 1" or, when codex
	// drops its item, "did not complete"; either way with the sandbox's error.
	// codex words the blocked touch either as the command's failure or as a
	// refusal, depending on whether it ran it through the shell.
	want := [][]string{{"ls → refused: policy forbids commands starting with `ls`"}, {"touch blocked.txt", "Read-only file system"},
		{"rm -rf keep' → ", "rm: cannot remove 'keep': Read-only file system"}, {"touch escaped.txt' → declined"}}
	for _, w := range want {
		if !slices.ContainsFunc(tools, func(e string) bool { return strings.Contains(e, w[0]) && strings.Contains(e, w[len(w)-1]) }) {
			t.Errorf("no tool event with %q in %q", w, tools)
		}
	}
	if len(asks) != 2 {
		t.Fatalf("asks %+v, want the dangerous rm and the escalation", asks)
	}
	if asks[0].Call.Args["sandbox"] != "read-only" || asks[1].Call.Args["sandbox"] != "none" || !strings.Contains(asks[1].Sandbox, "asks to run it outside") {
		t.Fatalf("sandboxes %v %v / %q", asks[0].Call.Args["sandbox"], asks[1].Call.Args["sandbox"], asks[1].Sandbox)
	}
	if !r.exists("keep") || r.exists("blocked.txt") || r.exists("escaped.txt") {
		t.Fatalf("keep %v blocked %v escaped %v", r.exists("keep"), r.exists("blocked.txt"), r.exists("escaped.txt"))
	}
}

// TestAllowRules: a rule in $CODEX_HOME/rules that lets rm run unasked
// makes strict turns impossible (codex would run rm without asking even
// under untrusted); one in the project's own .codex folder is never read.
func TestAllowRules(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	r.stub.SetFallback(stubmodel.Obedient())
	r.gate.decide = func(context.Context, bridge.ApprovalAsk) error { return errors.New("denied") }

	t.Run("ProjectRulesIgnored", func(t *testing.T) {
		if err := os.MkdirAll(filepath.Join(r.dir, ".codex", "rules"), 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(r.dir, ".codex", "rules", "default.rules"), []byte(`prefix_rule(pattern = ["rm"])`+"\n"), 0o644)
		r.write("notes.txt")
		turn := r.startStrict("delete notes.txt")
		r.events.wait(t, "turn end", turnEnded(turn))
		if !r.exists("notes.txt") || len(r.gate.asked()) != 1 {
			t.Fatalf("the project's allow rule was honoured: kept %v, asks %d", r.exists("notes.txt"), len(r.gate.asked()))
		}
		cfg, _ := os.ReadFile(filepath.Join(r.h.cfg.codexHome, "config.toml"))
		if strings.Contains(string(cfg), "trusted") {
			t.Fatalf("codex recorded the project as trusted:\n%s", cfg)
		}
	})
	t.Run("HomeAllowRuleForbidsStrictTurns", func(t *testing.T) {
		rules := filepath.Join(r.h.cfg.codexHome, "rules")
		os.MkdirAll(rules, 0o700)
		if err := os.WriteFile(filepath.Join(rules, "default.rules"), []byte("# owner's shortcut\nprefix_rule(\n  pattern = [\"rm\", [\"-f\", \"-rf\"]],\n)\nprefix_rule(pattern = [\"git\", \"push\"], decision = \"prompt\")\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		err := r.h.StrictTurns()
		if err == nil || !strings.Contains(err.Error(), `prefix_rule ["rm", ["-f", "-rf"]] is "allow"`) {
			t.Fatalf("StrictTurns = %v", err)
		}
		_, err = r.h.StartTurn(context.Background(), bridge.Input{Text: "delete notes.txt", Strict: true})
		if !errors.Is(err, bridge.ErrNotStrict) {
			t.Fatalf("strict StartTurn = %v, want ErrNotStrict", err)
		}
		checks := CheckHome(bridge.AgentConfig{Name: "a", Harness: "codex", Dir: r.dir, Options: map[string]string{OptCodexHome: r.h.cfg.codexHome}}, []string{r.dir})
		var failed []string
		for _, c := range checks {
			if !c.OK {
				failed = append(failed, c.What+": "+c.Detail)
			}
		}
		if len(failed) != 1 || !strings.Contains(failed[0], "codex rules") {
			t.Fatalf("CheckHome failures %q", failed)
		}
	})
}
