package e2e_test

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/bridge"
	"github.com/wheelhouse-dev/wheelhouse/bridge/claude"
	"github.com/wheelhouse-dev/wheelhouse/bridge/claude/claudehook"
	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
)

// A teammate's mention becomes a note for the owner's attached Claude Code
// session; that session ends before taking it, and no later session takes
// it in time: the owner is shown it on the bridge, and the sender's final
// receipt says so. (Where it reaches the owner's next session, the
// harness's "delivered" receipt says so too — bridge/claude
// TestAttachedNoteForAnEndedSession — but the hub keeps a receipt at
// "started" until a final one, so that one is not shown here.)
func TestAttachedNoteForAnEndedSessionReceipt(t *testing.T) {
	proj, state := t.TempDir(), filepath.Join(t.TempDir(), "state")
	// The hook is wired (the harness takes teammates' words only then);
	// the test runs it in-process as Claude Code would.
	if err := claude.Install(proj, "/usr/bin/true hook claude", io.Discard); err != nil {
		t.Fatal(err)
	}
	tm := newTeam(t)
	tm.h.StartBridge(tm.alice, nil, bridge.AgentConfig{Name: "mine", Harness: "claude-attach", Dir: proj,
		PolicyFile: bridge.PolicyConfig{Address: "users", Allowed: []string{"bob"}}, Options: map[string]string{"state_dir": state, "expiry": "2s"}})
	tm.alice.AddAgent("dev", "alice/mine")
	hook := func(in string) string {
		var out bytes.Buffer
		claude.RunHook(context.Background(), strings.NewReader(in), &out, []string{claudehook.EnvProjectDir + "=" + proj, claudehook.EnvStateDir + "=" + state}, "")
		return out.String()
	}
	const s1 = "0ca4b6f0-0000-4000-8000-0000000000e1"
	testhub.WaitFor(t, 15*time.Second, "the bridge set the project up", func() bool { return claudehook.ForProject(state, proj).Exists() })
	hook(`{"session_id":"` + s1 + `","hook_event_name":"SessionStart","source":"startup"}`)
	id, _ := post(t, tm.bob, "dev", "@alice/mine NOTE-FOR-AN-ENDED-SESSION hello", nil)
	receipt(t, tm.bob, "dev", id, "alice/mine", "started")
	hook(`{"session_id":"` + s1 + `","hook_event_name":"SessionEnd"}`)
	rc := receipt(t, tm.bob, "dev", id, "alice/mine", "expired")
	if d := str(rc["detail"]); !strings.Contains(d, "shown to the owner") || !strings.Contains(d, s1) {
		t.Fatalf("receipt %v", rc)
	}
}
