package claude

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/bridge"
	"github.com/wheelhouse-dev/wheelhouse/internal/stubmodel"

	"github.com/wheelhouse-dev/wheelhouse/bridge/claude/claudehook"
)

func startAttached(t *testing.T, dir string, opts map[string]string, gate bridge.Gate) (*Attached, *eventLog) {
	t.Helper()
	log := &eventLog{}
	h, err := NewAttached(bridge.Deps{
		Agent:  bridge.AgentConfig{Name: "mine", Harness: "claude-attach", Dir: dir, Options: opts},
		Gate:   gate,
		Events: log.sink,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Start(ctxFor(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h, log
}

func handled(steerID, status string) func(bridge.Event) bool {
	return func(ev bridge.Event) bool {
		return ev.Kind == bridge.EventInputHandled && ev.Text == steerID && ev.Status == status
	}
}

// One real `claude -p` run in a project wired by Install covers the three
// delivery paths (a note between two tool calls, three notes at once, a note
// pending when the model stops) and a permission prompt routed to the gate.
func TestAttachedDeliveryWithClaude(t *testing.T) {
	t.Parallel()
	stub := stubmodel.NewMessagesServer()
	defer stub.Close()
	dir := t.TempDir()
	if err := Install(dir, hookBin, io.Discard); err != nil {
		t.Fatal(err)
	}
	gate := &testGate{decide: func(bridge.ApprovalAsk) error { return nil }}
	h, log := startAttached(t, dir, nil, gate)
	ctx := ctxFor(t, 2*claudeWait)

	holdMid, holdThree, holdStop := make(chan struct{}), make(chan struct{}), make(chan struct{})
	stub.Script(
		stubmodel.MessagesReply{ToolUses: []stubmodel.MessagesToolUse{bash("touch approved-by-gate.txt")}},
		stubmodel.MessagesReply{Hold: holdMid, ToolUses: []stubmodel.MessagesToolUse{bash("echo two")}},
		stubmodel.MessagesReply{Hold: holdThree, ToolUses: []stubmodel.MessagesToolUse{bash("echo three")}},
		stubmodel.MessagesReply{Hold: holdStop, Text: "all done"},
		stubmodel.MessagesReply{Text: "done after the last note"},
	)
	cmd := exec.CommandContext(ctx, claudeBin(t), "-p", "run the three echo steps")
	cmd.Dir = dir
	cmd.Env = envList(claudeEnv(t, stub))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitReq := func(n int) {
		t.Helper()
		if _, err := stub.WaitRequests(ctx, n); err != nil {
			t.Fatalf("%v; claude said: %s", err, out.String())
		}
	}

	waitReq(2) // the model is "thinking" after the first tool call
	turn, err := h.StartTurn(ctx, bridge.Input{Text: "NOTE-MID check the tests", SteerID: "mid", Sender: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	close(holdMid)
	waitReq(3)
	for _, n := range []struct{ id, text, sender string }{{"a", "NOTE-A", "bob"}, {"b", "NOTE-B", "carol"}, {"c", "NOTE-C", "owner"}} {
		if err := h.Steer(ctx, turn, bridge.Input{Text: n.text, SteerID: n.id, Sender: n.sender, SenderIsOwner: n.sender == "owner"}); err != nil {
			t.Fatal(err)
		}
	}
	close(holdThree)
	waitReq(4)
	if err := h.Steer(ctx, turn, bridge.Input{Text: "NOTE-STOP one last thing", SteerID: "stop", Sender: "alice"}); err != nil {
		t.Fatal(err)
	}
	close(holdStop)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("claude: %v: %s", err, out.String())
	}
	reqs := stub.Requests()
	last := reqs[len(reqs)-1]
	t.Logf("%d model requests, %d permission asks", len(reqs), len(gate.Asks()))
	if os.Getenv("WHEELHOUSE_TEST_DUMP") != "" {
		for _, m := range last.Conversation() {
			b, _ := json.Marshal(m)
			t.Logf("%s", b)
		}
	}

	t.Run("PermissionPromptThroughGate", func(t *testing.T) {
		asks := gate.Asks()
		if len(asks) == 0 || asks[0].Call.Args["command"] != "touch approved-by-gate.txt" {
			t.Fatalf("gate asks %+v", asks)
		}
		if _, err := os.Stat(filepath.Join(dir, "approved-by-gate.txt")); err != nil {
			t.Errorf("approved tool did not run: %v", err)
		}
		if len(gate.Redeemed()) != len(asks) {
			t.Errorf("%d asks, %d redeemed", len(asks), len(gate.Redeemed()))
		}
	})
	t.Run("NoteMidTurnAfterNextToolCallOnce", func(t *testing.T) {
		if i := requestWith(reqs, "NOTE-MID"); i != 2 {
			t.Fatalf("note first seen in request %d, want 2 (the one after `echo two`)", i)
		}
		if c := last.Count("NOTE-MID"); c != 1 {
			t.Errorf("note appears %d times in the last request, want 1", c)
		}
		if !strings.Contains(reqs[2].ConversationText(), "teammate @alice") {
			t.Error("note not presented as a teammate's relayed words")
		}
		log.wait(t, 5*time.Second, "input-handled mid", handled("mid", ""))
	})
	t.Run("ThreeNotesBetweenToolCallsOnceInOrder", func(t *testing.T) {
		for _, m := range []string{"NOTE-A", "NOTE-B", "NOTE-C"} {
			if i := requestWith(reqs, m); i != 3 {
				t.Errorf("%s first seen in request %d, want 3", m, i)
			}
			if c := last.Count(m); c != 1 {
				t.Errorf("%s appears %d times, want 1", m, c)
			}
		}
		txt := reqs[3].ConversationText()
		if a, b, c := strings.Index(txt, "NOTE-A"), strings.Index(txt, "NOTE-B"), strings.Index(txt, "NOTE-C"); !(a < b && b < c) {
			t.Errorf("out of order: A@%d B@%d C@%d", a, b, c)
		}
		for _, id := range []string{"a", "b", "c"} {
			log.wait(t, 5*time.Second, "input-handled "+id, handled(id, ""))
		}
	})
	t.Run("NotePendingAtStopDeliveredByBlock", func(t *testing.T) {
		if i := requestWith(reqs, "NOTE-STOP"); i != 4 {
			t.Fatalf("stop note first seen in request %d, want 4", i)
		}
		log.wait(t, 5*time.Second, "input-handled stop", handled("stop", ""))
	})
	t.Run("EachNoteHandledOnce", func(t *testing.T) {
		count := map[string]int{}
		for _, ev := range log.all() {
			if ev.Kind == bridge.EventInputHandled {
				count[ev.Text]++
			}
		}
		for _, id := range []string{"mid", "a", "b", "c", "stop"} {
			if count[id] != 1 {
				t.Errorf("steer %s handled %d times", id, count[id])
			}
		}
		if rep := Doctor(dir); !rep.OK() || rep.LastDelivery.IsZero() || rep.LastHookRun.IsZero() {
			t.Errorf("doctor after a run: %s", rep)
		}
	})
}

func TestAttachedTurnSemantics(t *testing.T) {
	h, _ := startAttached(t, t.TempDir(), nil, nil)
	ctx := ctxFor(t, 5*time.Second)
	if err := h.Steer(ctx, "x", bridge.Input{Text: "n"}); !errors.Is(err, bridge.ErrNoActiveTurn) {
		t.Errorf("steer before a turn: %v", err)
	}
	turn, err := h.StartTurn(ctx, bridge.Input{Text: "n", SteerID: "1"})
	if err != nil || !strings.HasPrefix(turn, "a-") {
		t.Fatalf("turn %q err %v", turn, err)
	}
	if _, err := h.StartTurn(ctx, bridge.Input{Text: "n"}); !errors.Is(err, bridge.ErrBusy) {
		t.Errorf("second StartTurn: %v", err)
	}
	if err := h.Steer(ctx, "a-0-stale", bridge.Input{Text: "n"}); !errors.Is(err, bridge.ErrStaleTurn) {
		t.Errorf("stale steer: %v", err)
	}
	if err := h.Interrupt(ctx, turn); err == nil {
		t.Error("interrupt of the owner's session claimed to work")
	}
}

func TestAttachedReceipts(t *testing.T) {
	t.Run("ConsumedNoteReported", func(t *testing.T) {
		dir := t.TempDir()
		h, log := startAttached(t, dir, nil, nil)
		turn, err := h.StartTurn(ctxFor(t, time.Second), bridge.Input{Text: "hello", SteerID: "s1"})
		if err != nil {
			t.Fatal(err)
		}
		if out, _ := runHook(t, dir, preToolUse); !strings.Contains(out, "hello") {
			t.Fatalf("hook out %q", out)
		}
		ev := log.wait(t, 5*time.Second, "input handled", handled("s1", ""))
		if ev.TurnID != turn {
			t.Errorf("turn %q, want %q", ev.TurnID, turn)
		}
	})
	t.Run("UnconsumedNoteExpires", func(t *testing.T) {
		dir := t.TempDir()
		h, log := startAttached(t, dir, map[string]string{"expiry": "150ms"}, nil)
		if _, err := h.StartTurn(ctxFor(t, time.Second), bridge.Input{Text: "hello", SteerID: "s1"}); err != nil {
			t.Fatal(err)
		}
		log.wait(t, 5*time.Second, "expired receipt", handled("s1", "expired"))
		if entries, _ := os.ReadDir(claudehook.ForProject(dir).Inbox()); len(entries) != 0 {
			t.Errorf("expired note left in inbox: %v", entries)
		}
		if out, _ := runHook(t, dir, preToolUse); out != "" {
			t.Errorf("expired note delivered: %q", out)
		}
	})
	t.Run("RestartAdoptsPendingAndReportsTaken", func(t *testing.T) {
		dir := t.TempDir()
		h, _ := startAttached(t, dir, nil, nil)
		turn, err := h.StartTurn(ctxFor(t, time.Second), bridge.Input{Text: "first", SteerID: "s1"})
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Steer(ctxFor(t, time.Second), turn, bridge.Input{Text: "second", SteerID: "s2"}); err != nil {
			t.Fatal(err)
		}
		h.Close()
		sc := claudehook.ForProject(dir)
		entries, _ := os.ReadDir(sc.Inbox())
		if len(entries) != 2 {
			t.Fatalf("inbox %v", entries)
		}
		// While no bridge runs, a hook takes the first note.
		if err := os.Rename(filepath.Join(sc.Inbox(), entries[0].Name()), filepath.Join(sc.Claimed(), entries[0].Name())); err != nil {
			t.Fatal(err)
		}
		_, log := startAttached(t, dir, map[string]string{"expiry": "10m"}, nil)
		log.wait(t, 5*time.Second, "taken note reported", handled("s1", ""))
		if out, _ := runHook(t, dir, preToolUse); !strings.Contains(out, "second") {
			t.Fatalf("hook out %q", out)
		}
		log.wait(t, 5*time.Second, "adopted note reported", handled("s2", ""))
	})
	t.Run("BadExpiryRejected", func(t *testing.T) {
		_, err := NewAttached(bridge.Deps{Agent: bridge.AgentConfig{Name: "m", Dir: t.TempDir(), Options: map[string]string{"expiry": "soon"}}})
		if err == nil {
			t.Fatal("accepted expiry=soon")
		}
	})
	t.Run("SecondBridgeRefused", func(t *testing.T) {
		dir := t.TempDir()
		startAttached(t, dir, nil, nil)
		h2, err := NewAttached(bridge.Deps{Agent: bridge.AgentConfig{Name: "m2", Dir: dir}})
		if err != nil {
			t.Fatal(err)
		}
		defer h2.Close()
		if err := h2.Start(ctxFor(t, time.Second)); err == nil {
			t.Fatal("two bridges attached to one project")
		}
	})
}

func TestAttachedPermissionThroughSocket(t *testing.T) {
	permReq := `{"hook_event_name":"PermissionRequest","session_id":"s","tool_name":"Bash","tool_input":{"command":"rm -rf build","description":"clean"}}`
	decision := func(t *testing.T, out string) map[string]any {
		t.Helper()
		var got struct {
			HookSpecificOutput struct {
				HookEventName string         `json:"hookEventName"`
				Decision      map[string]any `json:"decision"`
			} `json:"hookSpecificOutput"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil || got.HookSpecificOutput.HookEventName != "PermissionRequest" {
			t.Fatalf("out %q: %v", out, err)
		}
		return got.HookSpecificOutput.Decision
	}
	t.Run("ApproveAllowsExactInput", func(t *testing.T) {
		dir := t.TempDir()
		gate := &testGate{decide: func(bridge.ApprovalAsk) error { return nil }}
		startAttached(t, dir, nil, gate)
		out, _ := runHook(t, dir, permReq)
		d := decision(t, out)
		if d["behavior"] != "allow" {
			t.Fatalf("decision %v", d)
		}
		if in, _ := d["updatedInput"].(map[string]any); in["command"] != "rm -rf build" {
			t.Errorf("updatedInput %v", d["updatedInput"])
		}
		if asks := gate.Asks(); len(asks) != 1 || asks[0].Call.Args["command"] != "rm -rf build" {
			t.Errorf("asks %+v", asks)
		}
		if len(gate.Redeemed()) != 1 {
			t.Error("grant not redeemed before allowing")
		}
	})
	t.Run("DenyDenies", func(t *testing.T) {
		dir := t.TempDir()
		startAttached(t, dir, nil, &testGate{decide: func(bridge.ApprovalAsk) error { return errors.New("denied by @owner") }})
		d := decision(t, mustHook(t, dir, permReq))
		if d["behavior"] != "deny" || !strings.Contains(d["message"].(string), "denied by @owner") {
			t.Fatalf("decision %v", d)
		}
	})
	t.Run("NoGateDenies", func(t *testing.T) {
		dir := t.TempDir()
		startAttached(t, dir, nil, nil)
		if d := decision(t, mustHook(t, dir, permReq)); d["behavior"] != "deny" {
			t.Fatalf("decision %v", d)
		}
	})
	t.Run("NoDecisionInTimeDenies", func(t *testing.T) {
		dir := t.TempDir()
		release := make(chan struct{})
		defer close(release)
		startAttached(t, dir, nil, &testGate{decide: func(bridge.ApprovalAsk) error { <-release; return nil }})
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		var out bytes.Buffer
		RunHook(ctx, strings.NewReader(permReq), &out, []string{claudehook.EnvProjectDir + "=" + dir}, "")
		if d := decision(t, out.String()); d["behavior"] != "deny" {
			t.Fatalf("decision %v", d)
		}
	})
	t.Run("TerminalOptionLeavesPromptToClaude", func(t *testing.T) {
		dir := t.TempDir()
		gate := &testGate{decide: func(bridge.ApprovalAsk) error { return nil }}
		startAttached(t, dir, map[string]string{"permissions": "terminal"}, gate)
		if out := mustHook(t, dir, permReq); out != "" {
			t.Fatalf("out %q", out)
		}
		if len(gate.Asks()) != 0 {
			t.Error("gate asked")
		}
	})
	t.Run("BridgeDownFailsOpen", func(t *testing.T) {
		dir, sc := newProject(t)
		if out, _ := runHook(t, dir, permReq); out != "" {
			t.Fatalf("out %q", out)
		}
		if st, _ := claudehook.ReadStatus(sc.Status()); !strings.Contains(st.LastError, "not listening") {
			t.Errorf("status %+v", st)
		}
	})
}

func mustHook(t *testing.T, dir, in string) string {
	t.Helper()
	out, code := runHook(t, dir, in)
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	return out
}
