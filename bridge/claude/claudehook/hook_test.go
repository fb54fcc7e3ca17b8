package claudehook

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

const preToolUse = `{"session_id":"s","cwd":"/p","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"toolu_1"}`

// newProject is a project with the side channel a bridge would create.
func newProject(t testing.TB) (string, Dir) {
	t.Helper()
	dir := t.TempDir()
	sc := ForProject(dir)
	if err := sc.Create(); err != nil {
		t.Fatal(err)
	}
	return dir, sc
}

var noteSeq atomic.Uint64

func queueNote(t testing.TB, sc Dir, n Note) string {
	t.Helper()
	if n.QueuedAt.IsZero() {
		n.QueuedAt = time.Now()
	}
	name := NoteName(time.Now(), noteSeq.Add(1), n.SteerID)
	if err := sc.WriteNote(name, n); err != nil {
		t.Fatal(err)
	}
	return name
}

func runHook(t testing.TB, proj, stdin string) (string, int) {
	t.Helper()
	var out bytes.Buffer
	env := []string{"PATH=/usr/bin"}
	if proj != "" {
		env = append(env, EnvProjectDir+"="+proj)
	}
	code := Run(context.Background(), strings.NewReader(stdin), &out, env, "")
	return out.String(), code
}

func TestRun(t *testing.T) {
	t.Run("NoProjectDirNoOp", func(t *testing.T) {
		out, code := runHook(t, "", preToolUse)
		if out != "" || code != 0 {
			t.Fatalf("out %q code %d", out, code)
		}
	})
	t.Run("UnmanagedProjectNoOp", func(t *testing.T) {
		dir := t.TempDir()
		out, code := runHook(t, dir, preToolUse)
		if out != "" || code != 0 {
			t.Fatalf("out %q code %d", out, code)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Fatalf("hook created %v in an unmanaged project", entries)
		}
	})
	t.Run("MalformedStdinFailsOpenAndRecords", func(t *testing.T) {
		dir, sc := newProject(t)
		queueNote(t, sc, Note{SteerID: "s1", Text: "kept"})
		out, code := runHook(t, dir, `{"hook_event_name":`)
		if out != "" || code != 0 {
			t.Fatalf("out %q code %d", out, code)
		}
		st, err := ReadStatus(sc.Status())
		if err != nil || !strings.Contains(st.LastError, "not JSON") || st.LastErrorAt.IsZero() {
			t.Fatalf("status %+v, %v", st, err)
		}
		if entries, _ := os.ReadDir(sc.Inbox()); len(entries) != 1 {
			t.Fatal("a note was consumed by a malformed call")
		}
	})
	t.Run("NoNoteNoOutput", func(t *testing.T) {
		dir, sc := newProject(t)
		out, _ := runHook(t, dir, preToolUse)
		if out != "" {
			t.Fatalf("out %q", out)
		}
		if MarkerTime(sc.Seen()).IsZero() {
			t.Error("hook-seen not touched")
		}
		if !MarkerTime(sc.Delivered()).IsZero() {
			t.Error("a delivery was recorded with nothing delivered")
		}
	})
	t.Run("PreToolUseDeliversInOrderWithSender", func(t *testing.T) {
		dir, sc := newProject(t)
		queueNote(t, sc, Note{SteerID: "s1", Sender: "alice", Text: "FIRST note"})
		queueNote(t, sc, Note{SteerID: "s2", Sender: "owner", SenderIsOwner: true, Text: "SECOND note"})
		out, _ := runHook(t, dir, preToolUse)
		var got struct {
			HookSpecificOutput struct {
				HookEventName     string `json:"hookEventName"`
				AdditionalContext string `json:"additionalContext"`
			} `json:"hookSpecificOutput"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("output %q: %v", out, err)
		}
		ctx := got.HookSpecificOutput.AdditionalContext
		if got.HookSpecificOutput.HookEventName != "PreToolUse" {
			t.Errorf("event %q", got.HookSpecificOutput.HookEventName)
		}
		i1, i2 := strings.Index(ctx, "FIRST note"), strings.Index(ctx, "SECOND note")
		if i1 < 0 || i2 < i1 {
			t.Fatalf("notes missing or out of order: %q", ctx)
		}
		if !strings.Contains(ctx[:i1], "teammate @alice") || !strings.Contains(ctx[:i1], "not your user's") {
			t.Errorf("teammate note not labelled as relayed: %q", ctx[:i1])
		}
		if !strings.Contains(ctx[i1:i2], "from your user @owner") {
			t.Errorf("owner note not labelled as the user's: %q", ctx[i1:i2])
		}
		if entries, _ := os.ReadDir(sc.Inbox()); len(entries) != 0 {
			t.Errorf("inbox still holds %d entries", len(entries))
		}
		if entries, _ := os.ReadDir(sc.Claimed()); len(entries) != 2 {
			t.Errorf("claimed holds %d entries, want 2", len(entries))
		}
		if out2, _ := runHook(t, dir, preToolUse); out2 != "" {
			t.Errorf("second run delivered again: %q", out2)
		}
		if MarkerTime(sc.Delivered()).IsZero() {
			t.Error("delivery not recorded")
		}
	})
	t.Run("ExpiredNoteNotDelivered", func(t *testing.T) {
		dir, sc := newProject(t)
		queueNote(t, sc, Note{SteerID: "old", Text: "stale", Expires: time.Now().Add(-time.Second)})
		if out, _ := runHook(t, dir, preToolUse); out != "" {
			t.Fatalf("delivered an expired note: %q", out)
		}
	})
	t.Run("StopBlocksWithPendingNote", func(t *testing.T) {
		dir, sc := newProject(t)
		queueNote(t, sc, Note{SteerID: "s1", Sender: "bob", Text: "one more thing"})
		out, _ := runHook(t, dir, `{"hook_event_name":"Stop","stop_hook_active":false}`)
		var got struct{ Decision, Reason string }
		if err := json.Unmarshal([]byte(out), &got); err != nil || got.Decision != "block" || !strings.Contains(got.Reason, "one more thing") {
			t.Fatalf("out %q (%v)", out, err)
		}
	})
	t.Run("StopHookActiveLeavesNote", func(t *testing.T) {
		dir, sc := newProject(t)
		queueNote(t, sc, Note{SteerID: "s1", Text: "later"})
		if out, _ := runHook(t, dir, `{"hook_event_name":"Stop","stop_hook_active":true}`); out != "" {
			t.Fatalf("out %q", out)
		}
		if entries, _ := os.ReadDir(sc.Inbox()); len(entries) != 1 {
			t.Fatal("note consumed")
		}
	})
	t.Run("DisabledByEnv", func(t *testing.T) {
		dir, sc := newProject(t)
		queueNote(t, sc, Note{SteerID: "s1", Text: "x"})
		var out bytes.Buffer
		Run(context.Background(), strings.NewReader(preToolUse), &out,
			[]string{EnvProjectDir + "=" + dir, EnvDisable + "=1"}, "")
		if out.Len() != 0 {
			t.Fatalf("out %q", out.String())
		}
	})
	t.Run("StateDirGetsStatus", func(t *testing.T) {
		dir, _ := newProject(t)
		state := t.TempDir()
		Run(context.Background(), strings.NewReader("nope"), &bytes.Buffer{}, []string{EnvProjectDir + "=" + dir}, state)
		if st, err := ReadStatus(filepath.Join(state, "claude-hook-status.json")); err != nil || st.LastError == "" {
			t.Fatalf("state status %+v %v", st, err)
		}
	})
}

func FuzzRun(f *testing.F) {
	f.Add(preToolUse)
	f.Add(`{"hook_event_name":"Stop","stop_hook_active":false}`)
	f.Add(`{"hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":"x"}}`)
	f.Add(`[1,2`)
	f.Fuzz(func(t *testing.T, in string) {
		dir, sc := newProject(t)
		queueNote(t, sc, Note{SteerID: "f", Text: "fuzz note"})
		var out bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		if code := Run(ctx, strings.NewReader(in), &out, []string{EnvProjectDir + "=" + dir}, ""); code != 0 {
			t.Fatalf("exit %d", code)
		}
		if out.Len() > 0 && !json.Valid(out.Bytes()) {
			t.Fatalf("printed invalid JSON %q", out.String())
		}
	})
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, os.ErrClosed }

func TestRunPutsNotesBackWhenOutputFails(t *testing.T) {
	dir, sc := newProject(t)
	queueNote(t, sc, Note{SteerID: "s1", Text: "keep me"})
	Run(context.Background(), strings.NewReader(preToolUse), failWriter{}, []string{EnvProjectDir + "=" + dir}, "")
	if entries, _ := os.ReadDir(sc.Inbox()); len(entries) != 1 {
		t.Fatalf("inbox %v: the undelivered note was not put back", entries)
	}
	if out, _ := runHook(t, dir, preToolUse); !strings.Contains(out, "keep me") {
		t.Fatalf("next call got %q", out)
	}
}
