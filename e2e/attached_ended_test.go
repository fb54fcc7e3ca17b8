package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/bridge"
	"github.com/wheelhouse-dev/wheelhouse/bridge/claude"
	"github.com/wheelhouse-dev/wheelhouse/bridge/claude/claudehook"
	"github.com/wheelhouse-dev/wheelhouse/internal/stubmodel"
	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
)

// A teammate's mention becomes a note for the owner's attached Claude Code
// session; that session ends before taking it. Where the owner's next
// session in the project takes it, the sender's receipt (API and live
// events) says it was delivered there (the next session run in-process as
// Claude Code runs the hook, and the genuine Claude Code CLI with its
// installed hook); where no later session takes it in time, the owner is
// shown it on the bridge, and the sender's final receipt says so.
func TestAttachedNoteForAnEndedSessionReceipt(t *testing.T) {
	const s1, s2 = "0ca4b6f0-0000-4000-8000-0000000000e1", "0ca4b6f0-0000-4000-8000-0000000000e2"
	setup := func(t *testing.T, expiry string) (*team, func(string) string) {
		proj, state := t.TempDir(), filepath.Join(t.TempDir(), "state")
		// The hook is wired (the harness takes teammates' words only then);
		// the test runs it in-process as Claude Code would.
		if err := claude.Install(proj, "/usr/bin/true hook claude", io.Discard); err != nil {
			t.Fatal(err)
		}
		tm := newTeam(t)
		tm.h.StartBridge(tm.alice, nil, bridge.AgentConfig{Name: "mine", Harness: "claude-attach", Dir: proj,
			PolicyFile: bridge.PolicyConfig{Address: "users", Allowed: []string{"bob"}}, Options: map[string]string{"state_dir": state, "expiry": expiry}})
		tm.alice.AddAgent("dev", "alice/mine")
		hook := func(in string) string {
			var out bytes.Buffer
			claude.RunHook(context.Background(), strings.NewReader(in), &out, []string{claudehook.EnvProjectDir + "=" + proj, claudehook.EnvStateDir + "=" + state}, "")
			return out.String()
		}
		testhub.WaitFor(t, 15*time.Second, "the bridge set the project up", func() bool { return claudehook.ForProject(state, proj).Exists() })
		hook(`{"session_id":"` + s1 + `","hook_event_name":"SessionStart","source":"startup"}`)
		return tm, hook
	}
	t.Run("NextSessionGetsIt", func(t *testing.T) {
		tm, hook := setup(t, "60s")
		live := tm.bob.Events(0, false)
		live.Ready()
		id, _ := post(t, tm.bob, "dev", "@alice/mine NOTE-FOR-THE-NEXT-SESSION hello", nil)
		receipt(t, tm.bob, "dev", id, "alice/mine", "started")
		hook(`{"session_id":"` + s1 + `","hook_event_name":"SessionEnd"}`)
		hook(`{"session_id":"` + s2 + `","hook_event_name":"SessionStart","source":"startup"}`)
		testhub.WaitFor(t, 15*time.Second, "the next session gets the note", func() bool {
			return strings.Contains(hook(`{"session_id":"`+s2+`","hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{"file_path":"/p/x"}}`), "NOTE-FOR-THE-NEXT-SESSION")
		})
		redirected := func(detail string) bool {
			return strings.Contains(detail, "next Claude Code session") && strings.Contains(detail, s1) && strings.Contains(detail, s2)
		}
		// The API: the receipt keeps its status (the note reached a
		// session) and says which session took it.
		var rc map[string]any
		testhub.WaitFor(t, 15*time.Second, "the receipt says where the note went", func() bool {
			rc = receipt(t, tm.bob, "dev", id, "alice/mine", "started")
			return redirected(str(rc["detail"]))
		})
		if rc["status"] != "started" {
			t.Fatalf("receipt %v", rc)
		}
		// The live events: the sender's receipt event says so too.
		testhub.WaitFor(t, 15*time.Second, "a live receipt event says where the note went", func() bool {
			for _, e := range live.Events() {
				var r struct{ SteerID, Status, Detail string }
				if e.Type == "receipt" && json.Unmarshal(e.Data, &r) == nil && r.Status == "started" && redirected(r.Detail) {
					return true
				}
			}
			return false
		})
	})
	t.Run("TheRealClaudeCodeIsTheNextSession", func(t *testing.T) {
		// The owner's next session is the genuine Claude Code CLI (claude
		// -p, behind an obedient stub model), whose own hook (the built
		// wheelhouse-hook) takes the readdressed note.
		bin, hookBin := claudeBinary(t), buildHook(t)
		stub := stubmodel.NewMessagesServer() // started first, stopped last
		t.Cleanup(stub.Close)
		stub.SetResponder(stubmodel.ObedientMessages)
		root := t.TempDir()
		home, proj := filepath.Join(root, "home"), filepath.Join(root, "proj")
		state := filepath.Join(home, ".local", "state", "wheelhouse")
		os.MkdirAll(home, 0o700)
		claudeProject(t, home, proj)
		if err := claude.Install(proj, hookBin, io.Discard); err != nil {
			t.Fatal(err)
		}
		tm := newTeam(t)
		tm.h.StartBridge(tm.alice, nil, bridge.AgentConfig{Name: "mine", Harness: "claude-attach", Dir: proj,
			PolicyFile: bridge.PolicyConfig{Address: "users", Allowed: []string{"bob"}}, Options: map[string]string{"state_dir": state, "expiry": "2m"}})
		tm.alice.AddAgent("dev", "alice/mine")
		testhub.WaitFor(t, 15*time.Second, "the bridge set the project up", func() bool { return claudehook.ForProject(state, proj).Exists() })
		// The session the note is for: started and ended before taking it.
		hook := func(in string) {
			claude.RunHook(context.Background(), strings.NewReader(in), io.Discard, []string{claudehook.EnvProjectDir + "=" + proj, claudehook.EnvStateDir + "=" + state}, "")
		}
		hook(`{"session_id":"` + s1 + `","hook_event_name":"SessionStart","source":"startup"}`)
		id, _ := post(t, tm.bob, "dev", "@alice/mine NOTE-FOR-THE-REAL-NEXT-SESSION please say hello", nil)
		receipt(t, tm.bob, "dev", id, "alice/mine", "started")
		hook(`{"session_id":"` + s1 + `","hook_event_name":"SessionEnd"}`)
		ctx, cancel := context.WithTimeout(context.Background(), 2*claudeWait)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, "-p", "read `"+filepath.Join(proj, "README.md")+"`")
		cmd.Dir = proj
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "ANTHROPIC_BASE_URL=" + stub.URL(), "ANTHROPIC_API_KEY=sk-ant-test-dummy",
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1"}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("claude: %v: %s", err, out)
		}
		var rc map[string]any
		testhub.WaitFor(t, claudeWait, "the receipt says the next session took the note", func() bool {
			rc = receipt(t, tm.bob, "dev", id, "alice/mine", "started")
			d := str(rc["detail"])
			return strings.Contains(d, "next Claude Code session") && strings.Contains(d, s1)
		})
		if rc["status"] != "started" {
			t.Fatalf("receipt %v", rc)
		}
		// The model got the note: the stub saw its words.
		seen := false
		for _, r := range stub.Requests() {
			seen = seen || bytes.Contains(r.Body, []byte("NOTE-FOR-THE-REAL-NEXT-SESSION"))
		}
		if !seen {
			t.Errorf("the model never saw the note")
		}
	})
	t.Run("NoSessionShownToTheOwner", func(t *testing.T) {
		tm, hook := setup(t, "2s")
		id, _ := post(t, tm.bob, "dev", "@alice/mine NOTE-FOR-AN-ENDED-SESSION hello", nil)
		receipt(t, tm.bob, "dev", id, "alice/mine", "started")
		hook(`{"session_id":"` + s1 + `","hook_event_name":"SessionEnd"}`)
		rc := receipt(t, tm.bob, "dev", id, "alice/mine", "expired")
		if d := str(rc["detail"]); !strings.Contains(d, "shown to the owner") || !strings.Contains(d, s1) {
			t.Fatalf("receipt %v", rc)
		}
	})
}
