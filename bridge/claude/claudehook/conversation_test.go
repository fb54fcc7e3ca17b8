package claudehook

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const sessC = "0ca4b6f0-0000-4000-8000-00000000000c"

var rmBuildC = preTool(sessC, "Bash", `{"command":"rm -rf build"}`)

// allowAll is a bridge that approves everything: a test that sees
// "allow" knows the call went to the owner, and "" that it did not.
func allowAll(t *testing.T, f fixture) *[]PermRequest {
	return bridgeStub(t, f, func(context.Context, PermRequest) PermAnswer { return PermAnswer{Behavior: BehaviorAllow} })
}

// The taint follows the conversation: what Claude Code carries from an
// earlier conversation into a session the hook cannot vouch for counts,
// whatever the session id.
func TestTaintFollowsTheConversation(t *testing.T) {
	t.Run("StartupIsClean", func(t *testing.T) {
		f := newProject(t)
		got := allowAll(t, f)
		f.run(t, event("SessionStart", sessC, `"source":"startup"`))
		if out := f.run(t, rmBuildC); out != "" || len(*got) != 0 || IsTainted(f.p.StateRoot, sessC) {
			t.Fatalf("a clean session was gated: %q %+v", out, *got)
		}
	})
	for _, src := range []string{"resume", "fork", "clear", "compact", "something-new"} {
		t.Run("UnknownSessionStartedFrom_"+src, func(t *testing.T) {
			f := newProject(t)
			got := allowAll(t, f)
			f.run(t, event("SessionStart", sessC, `"source":"`+src+`"`))
			if !IsTainted(f.p.StateRoot, sessC) {
				t.Fatalf("a session first seen with source %s is not tainted", src)
			}
			if h := parse(t, f.run(t, rmBuildC)).HookSpecificOutput; h.PermissionDecision != "allow" || len(*got) != 1 || !(*got)[0].Tainted {
				t.Fatalf("not gated: %+v %+v", h, *got)
			}
		})
	}
	t.Run("KnownSessionResumedStaysClean", func(t *testing.T) {
		f := newProject(t) // sessA started clean
		got := allowAll(t, f)
		f.run(t, event("SessionEnd", sessA, ""))
		f.run(t, event("SessionStart", sessA, `"source":"resume"`))
		if out := f.run(t, preTool(sessA, "Bash", `{"command":"ls"}`)); out != "" || len(*got) != 0 {
			t.Fatalf("the owner's own resumed session was gated: %q", out)
		}
	})
	t.Run("FirstSeenAtAToolCall", func(t *testing.T) {
		f := newProject(t)
		got := allowAll(t, f)
		if h := parse(t, f.run(t, rmBuildC)).HookSpecificOutput; h.PermissionDecision != "allow" || len(*got) != 1 {
			t.Fatalf("a session first seen at a tool call was not gated: %+v", h)
		}
		if !IsTainted(f.p.StateRoot, sessC) {
			t.Fatal("not recorded")
		}
	})
	t.Run("TranscriptWithARelayedNote", func(t *testing.T) {
		f := newProject(t)
		got := allowAll(t, f)
		tr := filepath.Join(t.TempDir(), sessC+".jsonl")
		// As Claude Code writes it: hook output inside a JSON line, after
		// more than one read's worth of other lines.
		var b bytes.Buffer
		for b.Len() < 3<<20 {
			b.WriteString(`{"type":"assistant","message":{"content":"filler filler filler filler"}}` + "\n")
		}
		b.WriteString(`{"type":"attachment","content":"PreToolUse:Bash hook additional context: Message from teammate @mallory, ` + RelayedMarker + `. These are…"}` + "\n")
		os.WriteFile(tr, b.Bytes(), 0o600)
		f.run(t, event("SessionStart", sessC, `"source":"startup","transcript_path":"`+tr+`"`))
		if h := parse(t, f.run(t, rmBuildC)).HookSpecificOutput; h.PermissionDecision != "allow" || len(*got) != 1 {
			t.Fatalf("a session whose transcript holds a relayed note was not gated: %+v", h)
		}
	})
	t.Run("TranscriptNotAFile", func(t *testing.T) {
		f := newProject(t)
		f.run(t, event("SessionStart", sessC, `"source":"startup","transcript_path":"`+t.TempDir()+`"`))
		if !IsTainted(f.p.StateRoot, sessC) {
			t.Fatal("a transcript that cannot be checked left the session clean")
		}
	})
	t.Run("OwnersPasteMarksTheTranscript", func(t *testing.T) {
		for _, n := range []Note{{Sender: "mallory"}, {Sender: "owner", SenderIsOwner: true, Taints: true}} {
			if !strings.Contains(noteHeader(n), RelayedMarker) {
				t.Errorf("the header of a tainting note lacks the marker: %q", noteHeader(n))
			}
		}
		if strings.Contains(noteHeader(Note{Sender: "owner", SenderIsOwner: true}), RelayedMarker) {
			t.Error("the owner's own words carry the marker")
		}
	})
}

// Claude Code started in a subfolder hands the hook the subfolder as
// CLAUDE_PROJECT_DIR; a .claude folder committed there does not hide the
// attached project above it.
func TestSubfolderFindsTheProject(t *testing.T) {
	f := newProject(t)
	got := allowAll(t, f)
	sub := filepath.Join(f.dir, "pkg", "deep")
	os.MkdirAll(filepath.Join(f.dir, "pkg", ".claude"), 0o755)
	os.WriteFile(filepath.Join(f.dir, "pkg", ".claude", "settings.json"), []byte(`{"permissions":{"allow":["Bash(rm:*)"]}}`), 0o644)
	os.MkdirAll(sub, 0o755)
	MarkTainted(f.p.StateRoot, sessA)
	var out bytes.Buffer
	env := []string{"PATH=/usr/bin", EnvProjectDir + "=" + sub, EnvStateDir + "=" + f.p.StateRoot}
	Run(context.Background(), strings.NewReader(preTool(sessA, "Bash", `{"command":"rm -rf build"}`)), &out, env, "")
	if h := parse(t, out.String()).HookSpecificOutput; h.PermissionDecision != "allow" || len(*got) != 1 {
		t.Fatalf("a tainted session in a subfolder was not gated: %q", out.String())
	}
	// Notes for the project reach a session started in the subfolder.
	f.queue(t, Note{SteerID: "n", Session: sessB, SenderIsOwner: true, Text: "SUBFOLDER-NOTE"})
	out.Reset()
	Run(context.Background(), strings.NewReader(preTool(sessB, "Read", `{"file_path":"x"}`)), &out, env, "")
	if !strings.Contains(out.String(), "SUBFOLDER-NOTE") {
		t.Fatalf("out %q", out.String())
	}
}

// A tainted session that moves where no bridge attached a project still
// cannot act unasked.
func TestTaintedSessionOutsideAnyProjectDenied(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, claudeDirName, taintDirName), 0o700)
	MarkTainted(root, sessA)
	var out bytes.Buffer
	Run(context.Background(), strings.NewReader(preTool(sessA, "Bash", `{"command":"rm -rf build"}`)), &out,
		[]string{EnvProjectDir + "=" + t.TempDir(), EnvStateDir + "=" + root}, "")
	if h := parse(t, out.String()).HookSpecificOutput; h.PermissionDecision != "deny" {
		t.Fatalf("out %q", out.String())
	}
	out.Reset()
	Run(context.Background(), strings.NewReader(preTool(sessB, "Bash", `{"command":"ls"}`)), &out,
		[]string{EnvProjectDir + "=" + t.TempDir(), EnvStateDir + "=" + root}, "")
	if out.Len() != 0 {
		t.Fatalf("an untainted session outside any project: %q", out.String())
	}
}

// A signed note copied back into the inbox after its delivery (it still
// verifies, under its own name) is refused.
func TestDeliveredNoteCopyRefused(t *testing.T) {
	f := newProject(t)
	name := f.queue(t, Note{SteerID: "once", Session: sessA, SenderIsOwner: true, Text: "ONCE-ONLY run `touch x`"})
	b, _ := os.ReadFile(filepath.Join(f.p.Inbox(), name))
	read := preTool(sessA, "Read", `{"file_path":"x"}`)
	if out := f.run(t, read); !strings.Contains(out, "ONCE-ONLY") {
		t.Fatalf("first delivery: %q", out)
	}
	// The bridge reports the receipt and removes the claimed record.
	os.Remove(filepath.Join(f.p.Claimed(), ClaimedName(name, sessA)))
	os.WriteFile(filepath.Join(f.p.Inbox(), name), b, 0o600)
	if out := f.run(t, read); strings.Contains(out, "ONCE-ONLY") {
		t.Fatalf("the copy was delivered again: %q", out)
	}
	if st, _ := ReadStatus(f.p.Status()); !strings.Contains(st.LastError, ErrDelivered.Error()) {
		t.Errorf("status %+v", st)
	}
	f.p.SweepDelivered(time.Now().Add(2 * time.Hour))
	if count(t, f.p.DeliveredDir()) != 0 {
		t.Error("the record of an expired note was kept")
	}
}

// The socket's folder must be the owner's own: one someone else made,
// even with mode 0700, means deny, never "no gate".
func TestSocketFolderOfAnotherUserDenied(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to give a folder to another user")
	}
	f := newProject(t)
	MarkTainted(f.p.StateRoot, sessA)
	sock, err := f.p.PrepareSocket()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.p.ReleaseSocket)
	if err := os.Chown(filepath.Dir(sock), 65534, 65534); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chown(filepath.Dir(sock), 0, 0) })
	if _, err := Listen(sock, nil); err == nil || !strings.Contains(err.Error(), "another user") {
		t.Fatalf("the bridge listened in another user's folder: %v", err)
	}
	if h := parse(t, f.run(t, preTool(sessA, "Bash", `{"command":"rm -rf build"}`))).HookSpecificOutput; h.PermissionDecision != "deny" ||
		!strings.Contains(h.PermissionDecisionReason, "not the owner's bridge") {
		t.Fatalf("tainted call: %+v", h)
	}
	h := parse(t, f.run(t, event("PermissionRequest", sessB, `"tool_name":"Bash","tool_input":{"command":"touch x"}`))).HookSpecificOutput
	if h.Decision["behavior"] != "deny" {
		t.Fatalf("untainted permission prompt with a squatted socket: %+v", h)
	}
}

func TestSocketProblemReported(t *testing.T) {
	f := newProject(t)
	sock, err := f.p.PrepareSocket()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.p.ReleaseSocket)
	if err := f.p.SocketProblem(); err != nil {
		t.Fatalf("a fresh socket folder: %v", err)
	}
	os.Chmod(filepath.Dir(sock), 0o755)
	if err := f.p.SocketProblem(); err == nil || !strings.Contains(err.Error(), "not a private folder") {
		t.Fatalf("a folder others may enter: %v", err)
	}
	os.Chmod(filepath.Dir(sock), 0o700)
}

// A session an earlier version saw start (its session record says
// startup, and there is no known/ record yet) is not tainted by the
// upgrade.
func TestSessionSeenStartingByAnEarlierVersion(t *testing.T) {
	f := newProject(t)
	got := allowAll(t, f)
	b, _ := json.Marshal(Session{ID: sessC, FirstSeen: time.Now(), Source: "startup"})
	os.WriteFile(filepath.Join(f.p.Sessions(), sessC+".json"), b, 0o600)
	if out := f.run(t, rmBuildC); out != "" || len(*got) != 0 || IsTainted(f.p.StateRoot, sessC) {
		t.Fatalf("the upgrade tainted a session seen starting clean: %q", out)
	}
	// One first seen mid-way (no source) is tainted.
	b, _ = json.Marshal(Session{ID: sessC, FirstSeen: time.Now()})
	os.Remove(KnownFile(f.p.StateRoot, sessC))
	os.WriteFile(filepath.Join(f.p.Sessions(), sessC+".json"), b, 0o600)
	if f.run(t, rmBuildC); !IsTainted(f.p.StateRoot, sessC) {
		t.Fatal("a session an earlier version first saw at a tool call is clean")
	}
}
