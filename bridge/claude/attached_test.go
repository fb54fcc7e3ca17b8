package claude

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

func startAttached(t *testing.T, m machine, opts map[string]string, gate bridge.Gate) (*Attached, *eventLog) {
	t.Helper()
	log := &eventLog{}
	h, err := NewAttached(bridge.Deps{
		Agent:  bridge.AgentConfig{Name: "mine", Harness: "claude-attach", Dir: m.dir, Options: m.opts(opts)},
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

// runClaude starts `claude -p prompt` in m's project against stub.
func runClaude(t *testing.T, ctx context.Context, m machine, stub *stubmodel.MessagesServer, prompt string, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.CommandContext(ctx, claudeBin(t), append([]string{"-p", prompt}, args...)...)
	cmd.Dir = m.dir
	cmd.Env = envList(m.env(stub))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, &out
}

// One real `claude -p` run in a project wired by Install covers the three
// delivery paths (a note between two tool calls, three notes at once, a note
// pending when the model stops) and a permission prompt routed to the gate.
func TestAttachedDeliveryWithClaude(t *testing.T) {
	t.Parallel()
	stub := stubmodel.NewMessagesServer()
	defer stub.Close()
	m := newMachine(t)
	if err := Install(m.dir, hookBin, io.Discard); err != nil {
		t.Fatal(err)
	}
	gate := &testGate{decide: func(bridge.ApprovalAsk) error { return nil }}
	h, log := startAttached(t, m, nil, gate)
	ctx := ctxFor(t, 2*claudeWait)

	holdMid, holdThree, holdStop := make(chan struct{}), make(chan struct{}), make(chan struct{})
	stub.Script(
		stubmodel.MessagesReply{ToolUses: []stubmodel.MessagesToolUse{bash("touch approved-by-gate.txt")}},
		stubmodel.MessagesReply{Hold: holdMid, ToolUses: []stubmodel.MessagesToolUse{bash("echo two")}},
		stubmodel.MessagesReply{Hold: holdThree, ToolUses: []stubmodel.MessagesToolUse{bash("echo three")}},
		stubmodel.MessagesReply{Hold: holdStop, Text: "all done"},
		stubmodel.MessagesReply{Text: "done after the last note"},
	)
	cmd, out := runClaude(t, ctx, m, stub, "run the three echo steps")
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
		if len(asks) == 0 || asks[0].Call.Args["command"] != "touch approved-by-gate.txt" || asks[0].Tainted {
			t.Fatalf("gate asks %+v", asks)
		}
		if _, err := os.Stat(filepath.Join(m.dir, "approved-by-gate.txt")); err != nil {
			t.Errorf("approved tool did not run: %v", err)
		}
		if len(gate.Redeemed()) != len(asks) {
			t.Errorf("%d asks, %d redeemed", len(asks), len(gate.Redeemed()))
		}
	})
	t.Run("TaintedSessionAsksForEveryBash", func(t *testing.T) {
		// alice's note reached the session before `echo three`: from then
		// on every Bash call went to the gate, marked tainted.
		var tainted []string
		for _, a := range gate.Asks() {
			if a.Tainted {
				tainted = append(tainted, a.Call.Args["command"].(string))
			}
		}
		if strings.Join(tainted, ",") != "echo three" {
			t.Fatalf("tainted asks %v, want [echo three]", tainted)
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
		rep := DoctorWith(DoctorOptions{Project: m.dir, StateDir: m.state, ClaudeDir: filepath.Join(m.home, ".claude")})
		if !rep.OK() || rep.LastDelivery.IsZero() || rep.LastHookRun.IsZero() {
			t.Errorf("doctor after a run: %s", rep)
		}
	})
}

func TestAttachedTurnSemantics(t *testing.T) {
	h, _ := startAttached(t, newMachine(t), nil, nil)
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

func TestAttachedNotesLiveOutsideTheProject(t *testing.T) {
	m := newMachine(t)
	h, _ := startAttached(t, m, nil, nil)
	if _, err := h.StartTurn(ctxFor(t, time.Second), bridge.Input{Text: "hello", SteerID: "s1", SenderIsOwner: true}); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(m.dir); len(entries) != 0 {
		t.Fatalf("the bridge wrote %v into the project", entries)
	}
	p := h.Project()
	if !strings.HasPrefix(p.Root, m.state) {
		t.Fatalf("notes folder %s is not under the state root %s", p.Root, m.state)
	}
	for _, d := range []string{m.state, filepath.Dir(p.KeyFile()), p.Root, p.Inbox()} {
		if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v %v, want a 0700 folder", d, fi.Mode(), err)
		}
	}
	if fi, err := os.Stat(p.KeyFile()); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("key %v %v, want 0600", fi.Mode(), err)
	}
	entries, _ := os.ReadDir(p.Inbox())
	if len(entries) != 1 {
		t.Fatalf("inbox %v", entries)
	}
	b, _ := os.ReadFile(filepath.Join(p.Inbox(), entries[0].Name()))
	key, _ := p.ReadKey()
	if n, err := p.OpenNote(key, entries[0].Name(), b); err != nil || n.Text != "hello" || n.Project != p.Dir {
		t.Fatalf("note %+v %v", n, err)
	}
}

func TestAttachedReceipts(t *testing.T) {
	t.Run("ConsumedNoteReportedAndBindsSession", func(t *testing.T) {
		m := newMachine(t)
		h, log := startAttached(t, m, nil, nil)
		turn, err := h.StartTurn(ctxFor(t, time.Second), bridge.Input{Text: "hello", SteerID: "s1", SenderIsOwner: true})
		if err != nil {
			t.Fatal(err)
		}
		if out, _ := runHook(t, m, preToolUse); !strings.Contains(out, "hello") {
			t.Fatalf("hook out %q", out)
		}
		ev := log.wait(t, 5*time.Second, "input handled", handled("s1", ""))
		if ev.TurnID != turn {
			t.Errorf("turn %q, want %q", ev.TurnID, turn)
		}
		waitFor(t, 5*time.Second, "the session bound", func() bool {
			b, _ := os.ReadFile(filepath.Join(h.Project().Root, boundName))
			return strings.TrimSpace(string(b)) == testSession
		})
	})
	t.Run("UnconsumedNoteExpires", func(t *testing.T) {
		m := newMachine(t)
		h, log := startAttached(t, m, map[string]string{"expiry": "150ms"}, nil)
		if _, err := h.StartTurn(ctxFor(t, time.Second), bridge.Input{Text: "hello", SteerID: "s1"}); err != nil {
			t.Fatal(err)
		}
		log.wait(t, 5*time.Second, "expired receipt", handled("s1", "expired"))
		if entries, _ := os.ReadDir(h.Project().Inbox()); len(entries) != 0 {
			t.Errorf("expired note left in inbox: %v", entries)
		}
		if out, _ := runHook(t, m, preToolUse); out != "" {
			t.Errorf("expired note delivered: %q", out)
		}
	})
	t.Run("RestartAdoptsPendingAndReportsTaken", func(t *testing.T) {
		m := newMachine(t)
		h, _ := startAttached(t, m, nil, nil)
		turn, err := h.StartTurn(ctxFor(t, time.Second), bridge.Input{Text: "first", SteerID: "s1", SenderIsOwner: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Steer(ctxFor(t, time.Second), turn, bridge.Input{Text: "second", SteerID: "s2", SenderIsOwner: true}); err != nil {
			t.Fatal(err)
		}
		h.Close()
		p := h.Project()
		entries, _ := os.ReadDir(p.Inbox())
		if len(entries) != 2 {
			t.Fatalf("inbox %v", entries)
		}
		// While no bridge runs, a hook takes the first note.
		if err := os.Rename(filepath.Join(p.Inbox(), entries[0].Name()), filepath.Join(p.Claimed(), claudehook.ClaimedName(entries[0].Name(), testSession))); err != nil {
			t.Fatal(err)
		}
		_, log := startAttached(t, m, map[string]string{"expiry": "10m"}, nil)
		log.wait(t, 5*time.Second, "taken note reported", handled("s1", ""))
		if out, _ := runHook(t, m, preToolUse); !strings.Contains(out, "second") {
			t.Fatalf("hook out %q", out)
		}
		log.wait(t, 5*time.Second, "adopted note reported", handled("s2", ""))
	})
	t.Run("BadOptionsRejected", func(t *testing.T) {
		for _, o := range []map[string]string{{"expiry": "soon"}, {"session": "../x"}, {"permissions": "maybe"}} {
			if _, err := NewAttached(bridge.Deps{Agent: bridge.AgentConfig{Name: "m", Dir: t.TempDir(), Options: o}}); err == nil {
				t.Errorf("accepted %v", o)
			}
		}
	})
	t.Run("SecondBridgeRefused", func(t *testing.T) {
		m := newMachine(t)
		startAttached(t, m, nil, nil)
		h2, err := NewAttached(bridge.Deps{Agent: bridge.AgentConfig{Name: "m2", Dir: m.dir, Options: m.opts(nil)}})
		if err != nil {
			t.Fatal(err)
		}
		defer h2.Close()
		if err := h2.Start(ctxFor(t, time.Second)); err == nil {
			t.Fatal("two bridges attached to one project")
		}
	})
}

const (
	sessOld = "0ca4b6f0-0000-4000-8000-0000000000a1"
	sessNew = "0ca4b6f0-0000-4000-8000-0000000000b2"
	sessC   = "0ca4b6f0-0000-4000-8000-0000000000c3"
)

func sessionEvent(ev, session string) string {
	return `{"session_id":"` + session + `","hook_event_name":"` + ev + `","source":"startup"}`
}

func readAs(session string) string {
	return `{"session_id":"` + session + `","hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{"file_path":"/p/x"}}`
}

// Notes go to one session: two sessions in a project never split a
// conversation.
func TestAttachedAddressing(t *testing.T) {
	// register starts sessions in order: the last is the most recently active.
	register := func(t *testing.T, m machine, sessions ...string) {
		p := claudehook.ForProject(m.state, m.dir)
		for i, s := range sessions {
			runHook(t, m, sessionEvent("SessionStart", s))
			at := time.Now().Add(time.Duration(i-len(sessions)) * time.Second)
			if err := os.Chtimes(filepath.Join(p.Sessions(), s+".json"), at, at); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Run("NewestSessionBoundAndKept", func(t *testing.T) {
		m := newMachine(t)
		h, log := startAttached(t, m, nil, nil)
		register(t, m, sessOld, sessNew)
		turn, _ := h.StartTurn(ctxFor(t, time.Second), bridge.Input{Text: "NOTE-1", SteerID: "1", SenderIsOwner: true})
		if out, _ := runHook(t, m, readAs(sessOld)); out != "" {
			t.Fatalf("the older session took the note: %q", out)
		}
		if out, _ := runHook(t, m, readAs(sessNew)); !strings.Contains(out, "NOTE-1") {
			t.Fatalf("the newest session did not get the note: %q", out)
		}
		log.wait(t, 5*time.Second, "handled", handled("1", ""))
		// The old session is busier now; the conversation stays where it is.
		runHook(t, m, readAs(sessOld))
		h.Steer(ctxFor(t, time.Second), turn, bridge.Input{Text: "NOTE-2", SteerID: "2", SenderIsOwner: true})
		if out, _ := runHook(t, m, readAs(sessOld)); out != "" {
			t.Fatalf("the conversation moved: %q", out)
		}
		if out, _ := runHook(t, m, readAs(sessNew)); !strings.Contains(out, "NOTE-2") {
			t.Fatalf("bound session missed NOTE-2: %q", out)
		}
		runHook(t, m, readAs(sessOld))
		if rep := doctorOn(m); rep.BoundSession != sessNew || !strings.Contains(rep.String(), "notes go to Claude Code session "+sessNew) {
			t.Errorf("doctor does not say where notes go while another session is busier:\n%s", rep)
		}
	})
	t.Run("EndedSessionRebindsPendingNotes", func(t *testing.T) {
		m := newMachine(t)
		h, _ := startAttached(t, m, nil, nil)
		register(t, m, sessOld)
		h.StartTurn(ctxFor(t, time.Second), bridge.Input{Text: "NOTE-1", SteerID: "1", Sender: "bob"})
		runHook(t, m, sessionEvent("SessionEnd", sessOld))
		register(t, m, sessC)
		h.mu.Lock()
		h.addressLocked() // the next note would rebind; pending ones follow
		h.mu.Unlock()
		if out, _ := runHook(t, m, readAs(sessC)); !strings.Contains(out, "NOTE-1") {
			t.Fatalf("the new session did not get the pending note: %q", out)
		}
		if !claudehook.IsTainted(m.state, sessC) || claudehook.IsTainted(m.state, sessOld) {
			t.Fatal("the teammate's note did not taint exactly the session it reached")
		}
	})
	t.Run("OptionAll", func(t *testing.T) {
		m := newMachine(t)
		h, log := startAttached(t, m, map[string]string{"session": "all"}, nil)
		register(t, m, sessOld, sessNew)
		h.StartTurn(ctxFor(t, time.Second), bridge.Input{Text: "NOTE-ALL", SteerID: "1", Sender: "bob"})
		for _, s := range []string{sessOld, sessNew} {
			if out, _ := runHook(t, m, readAs(s)); !strings.Contains(out, "NOTE-ALL") {
				t.Fatalf("%s: %q", s, out)
			}
			if !claudehook.IsTainted(m.state, s) {
				t.Errorf("%s not tainted by the teammate's note", s)
			}
			if out, _ := runHook(t, m, readAs(s)); out != "" {
				t.Fatalf("%s twice: %q", s, out)
			}
		}
		log.wait(t, 5*time.Second, "handled", handled("1", ""))
		h.sweep() // further sweeps see the markers again: still one receipt
		h.sweep()
		n := 0
		for _, ev := range log.all() {
			if ev.Kind == bridge.EventInputHandled {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("%d receipts for one note", n)
		}
	})
	t.Run("OptionSessionID", func(t *testing.T) {
		m := newMachine(t)
		h, _ := startAttached(t, m, map[string]string{"session": sessOld}, nil)
		register(t, m, sessOld, sessNew)
		h.StartTurn(ctxFor(t, time.Second), bridge.Input{Text: "NOTE-X", SteerID: "1", SenderIsOwner: true})
		if out, _ := runHook(t, m, readAs(sessNew)); out != "" {
			t.Fatalf("wrong session: %q", out)
		}
		if out, _ := runHook(t, m, readAs(sessOld)); !strings.Contains(out, "NOTE-X") {
			t.Fatalf("named session: %q", out)
		}
	})
}

func TestAttachedPermissionThroughSocket(t *testing.T) {
	permReq := `{"hook_event_name":"PermissionRequest","session_id":"` + testSession + `","tool_name":"Bash","tool_input":{"command":"rm -rf build","description":"clean"}}`
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
		m := newMachine(t)
		gate := &testGate{decide: func(bridge.ApprovalAsk) error { return nil }}
		startAttached(t, m, nil, gate)
		startSession(t, m, testSession)
		out, _ := runHook(t, m, permReq)
		d := decision(t, out)
		if d["behavior"] != "allow" {
			t.Fatalf("decision %v", d)
		}
		if in, _ := d["updatedInput"].(map[string]any); in["command"] != "rm -rf build" {
			t.Errorf("updatedInput %v", d["updatedInput"])
		}
		if asks := gate.Asks(); len(asks) != 1 || asks[0].Call.Args["command"] != "rm -rf build" || asks[0].Tainted {
			t.Errorf("asks %+v", asks)
		}
		if len(gate.Redeemed()) != 1 {
			t.Error("grant not redeemed before allowing")
		}
	})
	t.Run("TaintedSessionMarkedInAsk", func(t *testing.T) {
		m := newMachine(t)
		gate := &testGate{decide: func(bridge.ApprovalAsk) error { return nil }}
		startAttached(t, m, nil, gate)
		claudehook.MarkTainted(m.state, testSession)
		mustHook(t, m, permReq)
		if asks := gate.Asks(); len(asks) != 1 || !asks[0].Tainted {
			t.Errorf("asks %+v", asks)
		}
	})
	t.Run("DenyDenies", func(t *testing.T) {
		m := newMachine(t)
		startAttached(t, m, nil, &testGate{decide: func(bridge.ApprovalAsk) error { return errors.New("denied by @owner") }})
		d := decision(t, mustHook(t, m, permReq))
		if d["behavior"] != "deny" || !strings.Contains(d["message"].(string), "denied by @owner") {
			t.Fatalf("decision %v", d)
		}
	})
	t.Run("NoGateDenies", func(t *testing.T) {
		m := newMachine(t)
		startAttached(t, m, nil, nil)
		if d := decision(t, mustHook(t, m, permReq)); d["behavior"] != "deny" {
			t.Fatalf("decision %v", d)
		}
	})
	t.Run("HubUnreachableLeavesPromptToClaude", func(t *testing.T) {
		m := newMachine(t)
		gate := &offlineGate{testGate{decide: func(bridge.ApprovalAsk) error { return nil }}}
		startAttached(t, m, nil, gate)
		startSession(t, m, testSession)
		if out := mustHook(t, m, permReq); out != "" {
			t.Fatalf("out %q", out)
		}
		claudehook.MarkTainted(m.state, testSession)
		if d := decision(t, mustHook(t, m, permReq)); d["behavior"] != "deny" || !strings.Contains(d["message"].(string), "unreachable") {
			t.Fatalf("tainted session with no hub: %v", d)
		}

	})
	t.Run("TerminalOptionLeavesPromptToClaude", func(t *testing.T) {
		m := newMachine(t)
		gate := &testGate{decide: func(bridge.ApprovalAsk) error { return nil }}
		startAttached(t, m, map[string]string{"permissions": "terminal"}, gate)
		startSession(t, m, testSession)
		if out := mustHook(t, m, permReq); out != "" {
			t.Fatalf("out %q", out)
		}
		if len(gate.Asks()) != 0 {
			t.Error("gate asked")
		}
	})
	t.Run("BridgeDownFallsBackToClaudePrompt", func(t *testing.T) {
		m, p, _ := newProject(t)
		startSession(t, m, testSession)
		if out, _ := runHook(t, m, permReq); out != "" {
			t.Fatalf("out %q", out)
		}
		if st, _ := claudehook.ReadStatus(p.Status()); !strings.Contains(st.LastError, "did not answer") {
			t.Errorf("status %+v", st)
		}
	})
}

// offlineGate is a gate whose bridge has lost the hub (and no one
// watches for approvals on the machine): it answers at once.
type offlineGate struct{ testGate }

func (g *offlineGate) Ask(ctx context.Context, ask bridge.ApprovalAsk) (bridge.Grant, error) {
	return nil, fmt.Errorf("%w: not connected", bridge.ErrHubUnreachable)
}

func mustHook(t *testing.T, m machine, in string) string {
	t.Helper()
	out, code := runHook(t, m, in)
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	return out
}

// startSession runs the hook's SessionStart for a fresh session, as
// Claude Code does when it starts one: a session the hook never saw start
// counts as tainted.
func startSession(t *testing.T, m machine, sid string) {
	t.Helper()
	mustHook(t, m, `{"session_id":"`+sid+`","cwd":"/p","hook_event_name":"SessionStart","source":"startup"}`)
}
