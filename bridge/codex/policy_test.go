package codex

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParsePolicy(t *testing.T) {
	cases := []struct {
		name, approval, sandbox string
		want                    policy
		err                     bool
	}{
		{"OnRequestWorkspace", `"on-request"`, `{"type":"workspaceWrite","writableRoots":[],"networkAccess":true}`, policy{"on-request", "workspace-write"}, false},
		{"UntrustedFull", `"untrusted"`, `{"type":"dangerFullAccess"}`, strictPolicy, false},
		{"ReadOnly", `"never"`, `{"type":"readOnly","networkAccess":false}`, policy{"never", "read-only"}, false},
		{"Granular", `{"granular":{"rules":true}}`, `{"type":"readOnly"}`, policy{"granular", "read-only"}, false},
		{"ErrNoSandbox", `"never"`, `null`, policy{}, true},
		{"ErrNumberPolicy", `7`, `{"type":"readOnly"}`, policy{}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := parsePolicy([]byte(c.approval), []byte(c.sandbox))
			if (err != nil) != c.err || (!c.err && got != c.want) {
				t.Fatalf("got %v, %v; want %v (error %v)", got, err, c.want, c.err)
			}
		})
	}
	if !strictPolicy.asksFirst() || strictPolicy.sandboxed() || strictPolicy.ownerTurns() != "" {
		t.Fatal("strictPolicy must ask first and have no sandbox to leave")
	}
	if got := (policy{"on-request", "workspace-write"}).ownerTurns(); !strings.Contains(got, "inside the workspace-write sandbox without asking") {
		t.Fatal(got)
	}
}

func TestAllowRulesParsing(t *testing.T) {
	cases := []struct {
		name, rules string
		want        []string // substrings of the findings, in order; nil = none
	}{
		{"NoFolder", "", nil},
		{"PromptAndForbiddenAreFine", `prefix_rule(pattern = ["git", "push"], decision = "prompt")` + "\n" + `prefix_rule(pattern=["ls"], decision="forbidden")`, nil},
		{"DefaultDecisionIsAllow", `prefix_rule(pattern = ["rm"])`, []string{`prefix_rule ["rm"] is "allow"`}},
		{"ExplicitAllowMultiLine", "prefix_rule(\n    pattern = [\"npm\", [\"test\", \"run\"]],\n    decision = \"allow\",  # ) tricky\n)", []string{`["npm", ["test", "run"]] is "allow"`}},
		{"CommentedOutIgnoredButStringsRespected", "# prefix_rule(pattern=[\"rm\"])\nprefix_rule(pattern=[\"echo\", \")\"], decision=\"prompt\")", nil},
		{"SingleQuotes", `prefix_rule(pattern = ['rm'], decision = 'allow')`, []string{`['rm'] is "allow"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			home := t.TempDir()
			if c.rules != "" {
				os.MkdirAll(filepath.Join(home, "rules"), 0o700)
				os.WriteFile(filepath.Join(home, "rules", "default.rules"), []byte(c.rules), 0o600)
			}
			got, err := allowRules(home)
			if err != nil || len(got) != len(c.want) {
				t.Fatalf("findings %q, %v; want %q", got, err, c.want)
			}
			for i, w := range c.want {
				if !strings.Contains(got[i], w) {
					t.Fatalf("finding %q lacks %q", got[i], w)
				}
			}
		})
	}
	t.Run("OthersMayWrite", func(t *testing.T) {
		home := t.TempDir()
		os.MkdirAll(filepath.Join(home, "rules"), 0o777)
		os.Chmod(filepath.Join(home, "rules"), 0o777)
		got, _ := allowRules(home)
		if len(got) != 1 || !strings.Contains(got[0], "can be written by other users") {
			t.Fatalf("%q", got)
		}
	})
	t.Run("HomeInsideAgentDir", func(t *testing.T) {
		dir := t.TempDir()
		s := settings{dir: dir, codexHome: filepath.Join(dir, ".codex-home")}
		if why := homeProblem(s); !strings.Contains(why, "inside its working directory") {
			t.Fatal(why)
		}
		s.codexHome = t.TempDir()
		if why := homeProblem(s); why != "" {
			t.Fatal(why)
		}
	})
}

// Recorded lines: codex refusing a command (a forbidden rule) makes no
// item; the adapter reports it from the model's function_call_output. A
// command that runs unasked in a turn that must ask stops the turn.
func TestRawItemsAndUnasked(t *testing.T) {
	raw := func(item string) string {
		return note(noteRawItem, `{"threadId":"T","turnId":"U","item":`+item+`}`)
	}
	t.Run("RefusedCommandReported", func(t *testing.T) {
		_, p, ev := newTestSession(t, nil)
		p.send(turnStartedLine,
			raw(`{"type":"function_call","name":"exec_command","call_id":"c1","arguments":"{\"cmd\":\"ls\"}"}`),
			raw(`{"type":"function_call_output","call_id":"c1","output":"exec_command failed: CreateProcess { message: \"Rejected(\\\"`+"`/bin/bash -lc ls`"+` rejected: policy forbids commands starting with `+"`ls`"+`\\\")\" }"}`))
		p.sync()
		got := ev.all()
		if len(got) != 2 || got[1].Text != "$ ls → refused: policy forbids commands starting with `ls`" {
			t.Fatalf("events %+v", got)
		}
	})
	t.Run("CompletedCommandNotReportedTwice", func(t *testing.T) {
		_, p, ev := newTestSession(t, nil)
		p.send(turnStartedLine,
			itemLine(noteItemStarted, "T", `{"type":"commandExecution","id":"c2","command":"echo hi","status":"inProgress"}`),
			raw(`{"type":"function_call","name":"exec_command","call_id":"c2","arguments":"{\"cmd\":\"echo hi\"}"}`),
			itemLine(noteItemCompleted, "T", `{"type":"commandExecution","id":"c2","command":"echo hi","status":"completed","exitCode":0}`),
			raw(`{"type":"function_call_output","call_id":"c2","output":"Process exited with code 0"}`))
		p.sync()
		if got := ev.all(); len(got) != 2 || got[1].Text != "$ echo hi → exit 0" {
			t.Fatalf("events %+v", got)
		}
	})
	t.Run("UnaskedInStrictTurnStops", func(t *testing.T) {
		s, p, ev := newTestSession(t, nil)
		s.mu.Lock()
		s.turn = "U"
		s.noteTurnPolicy("U", strictPolicy)
		s.mu.Unlock()
		p.send(itemLine(noteItemCompleted, "T", `{"type":"commandExecution","id":"c3","command":"rm notes.txt","status":"completed","exitCode":0}`))
		if m := p.recv(); m["method"] != methodTurnInterrupt {
			t.Fatalf("expected an interrupt, got %v", m)
		}
		got := ev.all()
		if len(got) != 1 || !strings.Contains(got[0].Text, "ran this without asking") {
			t.Fatalf("events %+v", got)
		}
	})
}
