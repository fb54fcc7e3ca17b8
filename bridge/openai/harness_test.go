package openai

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wheelhouse-dev/wheelhouse/bridge"
	"github.com/wheelhouse-dev/wheelhouse/internal/stubmodel"
)

func TestTurnStreamsReply(t *testing.T) {
	r := newRig(t, map[string]string{"api_key_env": "STUB_KEY", "temperature": "0.3"})
	r.stub.Push(text("Hello from the stub model, streamed word by word."))
	id, end := r.run("say hello")
	if end.Status != "completed" || end.Text != "" {
		t.Fatalf("end %+v", end)
	}
	msgs := r.rec.of(id, bridge.EventMessage)
	if len(msgs) < 3 {
		t.Fatalf("want partial updates and a final message, got %+v", msgs)
	}
	final := msgs[len(msgs)-1]
	if final.Partial || final.Text != "Hello from the stub model, streamed word by word." {
		t.Fatalf("final message %+v", final)
	}
	for _, m := range msgs[:len(msgs)-1] {
		if !m.Partial || m.ItemID != final.ItemID || !strings.HasPrefix(final.Text, m.Text) {
			t.Fatalf("partial %+v does not lead to the final %+v", m, final)
		}
	}
	if end.Usage == nil || end.Usage.ModelCalls != 1 || end.Usage.InputTokens == 0 || end.Usage.OutputTokens == 0 || end.Usage.Estimated {
		t.Fatalf("usage %+v", end.Usage)
	}
	req := r.stub.WaitRequest(t, 1, waitTimeout)
	if req.Model != "stub-model" || !req.Stream || !req.IncludeUsage || req.Temperature == nil || *req.Temperature != 0.3 {
		t.Fatalf("request %+v", req)
	}
	if got := req.Header.Get("Authorization"); got != "Bearer sk-test" {
		t.Fatalf("Authorization %q", got)
	}
	if req.Messages[0].Role != "system" || !strings.Contains(req.Messages[0].Content, "Wheelhouse message") || req.Messages[1].Content != "say hello" {
		t.Fatalf("messages %+v", req.Messages)
	}
	if strings.Join(req.Tools, ",") != strings.Join(allTools, ",") {
		t.Fatalf("tools %v", req.Tools)
	}
}

func TestToolLoop(t *testing.T) {
	r := newRig(t, nil)
	must(t, os.WriteFile(filepath.Join(r.dir, "main.go"), []byte("package main\n\nfunc main() {\n\tprintln(\"hi\")\n}\n"), 0o644))
	r.stub.Push(
		tools(call("list_files", map[string]any{}), call("read_file", map[string]any{"path": "main.go", "start_line": 3, "end_line": 4}),
			call("search_text", map[string]any{"query": "println"})),
		text("main.go prints hi."))
	id, end := r.run("what does main.go do?")
	if end.Status != "completed" {
		t.Fatalf("end %+v", end)
	}
	req := r.stub.WaitRequest(t, 2, waitTimeout)
	if got := result(t, req, "call_stub_1_0"); !contains(got, "README.md (", "main.go (") {
		t.Errorf("list_files: %q", got)
	}
	if got := result(t, req, "call_stub_1_1"); got != "main.go, lines 3-4 of 5:\nfunc main() {\n\tprintln(\"hi\")" {
		t.Errorf("read_file: %q", got)
	}
	if got := result(t, req, "call_stub_1_2"); got != "main.go:4: \tprintln(\"hi\")" {
		t.Errorf("search_text: %q", got)
	}
	// The assistant message with its calls precedes the results.
	at := req.Index(func(m stubmodel.ChatMessage) bool { return m.Role == "assistant" && len(m.ToolCalls) == 3 })
	if at < 0 || req.Messages[at+1].ToolCallID != "call_stub_1_0" || req.Messages[at+3].ToolCallID != "call_stub_1_2" {
		t.Fatalf("messages %+v", req.Messages)
	}
	var summaries []string
	for _, e := range r.rec.of(id, bridge.EventTool) {
		summaries = append(summaries, e.Text)
	}
	want := []string{"✓ list_files . (2 entries)", "✓ read_file main.go (lines 3-4)", `✓ search_text "println" (1 matches)`}
	if strings.Join(summaries, "|") != strings.Join(want, "|") {
		t.Fatalf("tool events %q, want %q", summaries, want)
	}
	if end.Usage == nil || end.Usage.ModelCalls != 2 {
		t.Fatalf("usage %+v", end.Usage)
	}
	if len(r.gate.asked()) != 0 {
		t.Fatal("read-only tools asked for approval")
	}
}

func TestToolErrorsReachTheModel(t *testing.T) {
	r := newRig(t, map[string]string{"tools": "read-only"})
	r.stub.Push(
		tools(
			stubmodel.ChatToolCall{Name: "delete_everything", Arguments: `{}`},
			stubmodel.ChatToolCall{Name: "read_file", Arguments: `{"path": "README.md"`},
			stubmodel.ChatToolCall{Name: "read_file", Arguments: `{"path": "README.md", "mode": "fast"}`},
			stubmodel.ChatToolCall{Name: "read_file", Arguments: `{"path": 5}`},
			stubmodel.ChatToolCall{Name: "read_file", Arguments: `{}`},
			stubmodel.ChatToolCall{Name: "write_file", Arguments: `{"path": "x", "content": "y"}`},
		),
		text("sorry"))
	_, end := r.run("go")
	if end.Status != "completed" {
		t.Fatalf("end %+v", end)
	}
	req := r.stub.WaitRequest(t, 2, waitTimeout)
	for i, want := range []string{
		`error: there is no tool "delete_everything"; the tools are list_files, read_file, search_text`,
		"error: the arguments are not a JSON object",
		`error: unknown argument "mode"`,
		"error: bad arguments: path must be a string, not a number",
		`error: the argument "path" is required`,
		`error: there is no tool "write_file"`,
	} {
		if got := result(t, req, "call_stub_1_"+itoa(i)); !strings.HasPrefix(got, want) {
			t.Errorf("call %d: %q, want %q…", i, got, want)
		}
	}
	if _, err := os.Stat(filepath.Join(r.dir, "x")); err == nil {
		t.Fatal("a tool that is not offered ran")
	}
}

func TestSteer(t *testing.T) {
	t.Run("JoinsBetweenToolCalls", func(t *testing.T) {
		r := newRig(t, nil)
		release := make(chan struct{})
		r.stub.Push(
			stubmodel.ChatReply{Hold: release, ToolCalls: []stubmodel.ChatToolCall{call("read_file", map[string]any{"path": "README.md"})}},
			tools(call("list_files", map[string]any{})),
			text("done, and bananas"))
		id := r.startTurn("look at the readme")
		r.stub.WaitRequest(t, 1, waitTimeout)
		if err := r.h.Steer(context.Background(), id, bridge.Input{Text: "STEER: also mention bananas", Sender: "bob"}); err != nil {
			t.Fatal(err)
		}
		close(release)
		if end := r.rec.waitEnded(t, id); end.Status != "completed" {
			t.Fatalf("end %+v", end)
		}
		req2 := r.stub.WaitRequest(t, 2, waitTimeout)
		res := req2.Index(func(m stubmodel.ChatMessage) bool { return m.ToolCallID == "call_stub_1_0" })
		steer := req2.Index(func(m stubmodel.ChatMessage) bool {
			return m.Role == "user" && m.Content == "STEER: also mention bananas"
		})
		if res < 0 || steer != res+1 {
			t.Fatalf("want the steer right after the first tool result in request 2: %+v", req2.Messages)
		}
		if r.stub.Requests()[0].HasUserText("bananas") {
			t.Fatal("the steer reached a request made before it")
		}
	})
	t.Run("DuringTheLastAnswerGetsAnotherCall", func(t *testing.T) {
		r := newRig(t, nil)
		release := make(chan struct{})
		r.stub.Push(stubmodel.ChatReply{Hold: release, Text: "Almost done."}, text("Noted the steer."))
		id := r.startTurn("finish up")
		r.stub.WaitRequest(t, 1, waitTimeout)
		if err := r.h.Steer(context.Background(), id, bridge.Input{Text: "one more thing"}); err != nil {
			t.Fatal(err)
		}
		close(release)
		r.rec.waitEnded(t, id)
		req2 := r.stub.WaitRequest(t, 2, waitTimeout)
		n := len(req2.Messages)
		if req2.Messages[n-2].Content != "Almost done." || req2.Messages[n-1].Content != "one more thing" {
			t.Fatalf("request 2 ends with %+v", req2.Messages[n-2:])
		}
	})
	t.Run("StaleAndNoActiveTurn", func(t *testing.T) {
		r := newRig(t, nil)
		if err := r.h.Steer(context.Background(), "", bridge.Input{Text: "x"}); !errors.Is(err, bridge.ErrNoActiveTurn) {
			t.Fatalf("idle: %v", err)
		}
		old, _ := r.run("first")
		if err := r.h.Steer(context.Background(), old, bridge.Input{Text: "late"}); !errors.Is(err, bridge.ErrNoActiveTurn) {
			t.Fatalf("after the turn: %v", err)
		}
		release := make(chan struct{})
		defer close(release)
		r.stub.Push(stubmodel.ChatReply{Hold: release})
		cur := r.startTurn("second")
		for _, expected := range []string{old, "nope", ""} {
			if err := r.h.Steer(context.Background(), expected, bridge.Input{Text: "x"}); !errors.Is(err, bridge.ErrStaleTurn) {
				t.Errorf("Steer(%q) while %s runs: %v", expected, cur, err)
			}
		}
		if _, err := r.h.StartTurn(context.Background(), bridge.Input{Text: "third"}); !errors.Is(err, bridge.ErrBusy) {
			t.Fatalf("StartTurn while busy: %v", err)
		}
	})
}

func TestGatedTools(t *testing.T) {
	t.Run("DenyReachesTheModel", func(t *testing.T) {
		r := newRig(t, nil)
		r.stub.Push(tools(call("write_file", map[string]any{"path": "notes.txt", "content": "hello\n"})), text("ok, not written"))
		id := r.startTurn("write notes")
		waitFor(t, "the approval ask", func() bool { return len(r.gate.asked()) == 1 })
		ask := r.gate.asked()[0]
		if ask.TurnID != id || ask.Call.Tool != "write_file" || ask.Call.Args["path"] != "notes.txt" || ask.Summary != "create notes.txt (6 bytes)" ||
			!strings.Contains(ask.Diff, "+++ b/notes.txt") || !strings.Contains(ask.Diff, "+hello") {
			t.Fatalf("ask %+v", ask)
		}
		r.gate.decide <- false
		r.rec.waitEnded(t, id)
		req := r.stub.WaitRequest(t, 2, waitTimeout)
		if got := result(t, req, "call_stub_1_0"); got != "error: not run: the owner did not approve it (denied by the owner)" {
			t.Fatalf("result %q", got)
		}
		if _, err := os.Stat(filepath.Join(r.dir, "notes.txt")); err == nil {
			t.Fatal("written without approval")
		}
		if ev := r.rec.of(id, bridge.EventTool); len(ev) != 1 || ev[0].Text != "✗ write_file notes.txt: not approved" {
			t.Fatalf("tool events %+v", ev)
		}
	})
	t.Run("ApprovedWriteRedeemsTheSameCall", func(t *testing.T) {
		r := newRig(t, nil)
		r.gate.auto = boolp(true)
		r.stub.Push(tools(call("write_file", map[string]any{"path": "README.md", "content": "# Demo\nA bigger project.\n"})), text("done"))
		r.run("update the readme")
		b, _ := os.ReadFile(filepath.Join(r.dir, "README.md"))
		if string(b) != "# Demo\nA bigger project.\n" {
			t.Fatalf("README.md = %q", b)
		}
		ask := r.gate.asked()[0]
		if len(r.gate.redeemed) != 1 || r.gate.redeemed[0].Tool != ask.Call.Tool || ask.Summary != "overwrite README.md (25 bytes)" ||
			!strings.Contains(ask.Diff, "-A small project.\n+A bigger project.") {
			t.Fatalf("ask %+v redeemed %+v", ask, r.gate.redeemed)
		}
	})
	t.Run("PatchAppliesStrictly", func(t *testing.T) {
		r := newRig(t, nil)
		r.gate.auto = boolp(true)
		good := "--- a/README.md\n+++ b/README.md\n@@ -1,2 +1,2 @@\n # Demo\n-A small project.\n+A patched project.\n"
		bad := "--- a/README.md\n+++ b/README.md\n@@ -1,2 +1,2 @@\n # Demo\n-A large project.\n+nope\n"
		r.stub.Push(tools(call("apply_patch", map[string]any{"patch": bad}), call("apply_patch", map[string]any{"patch": good})), text("patched"))
		r.run("patch it")
		req := r.stub.WaitRequest(t, 2, waitTimeout)
		if got := result(t, req, "call_stub_1_0"); !strings.HasPrefix(got, "error: the patch does not apply, nothing was changed: README.md: hunk 1") {
			t.Fatalf("bad patch: %q", got)
		}
		if got := result(t, req, "call_stub_1_1"); got != "applied the patch to README.md" {
			t.Fatalf("good patch: %q", got)
		}
		if len(r.gate.asked()) != 1 || r.gate.asked()[0].Diff != good {
			t.Fatalf("asks %+v: only the patch that applies goes to the owner", r.gate.asked())
		}
		if b, _ := os.ReadFile(filepath.Join(r.dir, "README.md")); string(b) != "# Demo\nA patched project.\n" {
			t.Fatalf("README.md = %q", b)
		}
	})
	t.Run("TooLargeToApprove", func(t *testing.T) {
		r := newRig(t, nil)
		r.gate.auto = boolp(true)
		huge := strings.Repeat("\x01", 60<<10) // 6 bytes each as JSON
		r.stub.Push(tools(call("write_file", map[string]any{"path": "big.bin", "content": huge})), text("ok"))
		r.run("write it")
		req := r.stub.WaitRequest(t, 2, waitTimeout)
		if got := result(t, req, "call_stub_1_0"); !strings.Contains(got, "more than the 256 KiB an approval can carry") {
			t.Fatalf("result %q", got)
		}
		if len(r.gate.asked()) != 0 {
			t.Fatal("asked the owner for a call the hub would refuse")
		}
	})
	t.Run("RunCommand", func(t *testing.T) {
		r := newRig(t, nil)
		r.gate.auto = boolp(true)
		r.stub.Push(tools(call("run_command", map[string]any{"command": "echo out; echo err >&2; exit 3"}),
			call("run_command", map[string]any{"command": "sleep 5", "timeout_seconds": 1})), text("ran"))
		r.run("run it")
		req := r.stub.WaitRequest(t, 2, waitTimeout)
		if got := result(t, req, "call_stub_1_0"); got != "exit code 3\nout\nerr\n" {
			t.Fatalf("command: %q", got)
		}
		if got := result(t, req, "call_stub_1_1"); !strings.HasPrefix(got, "timed out after 1s") {
			t.Fatalf("timeout: %q", got)
		}
		if a := r.gate.asked()[0]; a.Call.Tool != "run_command" || !strings.Contains(a.Summary, "echo out") || !strings.Contains(a.Summary, r.h.cfg.Dir) {
			t.Fatalf("ask %+v", a)
		}
	})
}

func TestPathEscapesRefused(t *testing.T) {
	r := newRig(t, nil)
	must(t, os.Symlink(r.outside, filepath.Join(r.dir, "link-out")))
	must(t, os.Symlink(filepath.Dir(r.outside), filepath.Join(r.dir, "dir-out")))
	r.stub.Push(tools(
		call("read_file", map[string]any{"path": "../outside.txt"}),
		call("read_file", map[string]any{"path": r.outside}),
		call("read_file", map[string]any{"path": "link-out"}),
		call("list_files", map[string]any{"path": "dir-out"}),
		call("search_text", map[string]any{"query": "secret", "path": "dir-out"}),
		call("write_file", map[string]any{"path": "../outside.txt", "content": "pwned"}),
		call("write_file", map[string]any{"path": "link-out", "content": "pwned"}),
		call("write_file", map[string]any{"path": "dir-out/new.txt", "content": "pwned"}),
		call("apply_patch", map[string]any{"patch": "--- a/../outside.txt\n+++ b/../outside.txt\n@@ -1 +1 @@\n-secret\n+pwned\n"}),
	), text("could not"))
	r.run("read ../outside.txt")
	req := r.stub.WaitRequest(t, 2, waitTimeout)
	for i := range 9 {
		got := result(t, req, "call_stub_1_"+itoa(i))
		if !strings.HasPrefix(got, "error:") || strings.Contains(got, "secret\n") || !contains(got, "refused") {
			t.Errorf("call %d: %q", i, got)
		}
	}
	if len(r.gate.asked()) != 0 {
		t.Fatalf("escapes reached the owner: %+v", r.gate.asked())
	}
	if b, _ := os.ReadFile(r.outside); string(b) != "secret\n" {
		t.Fatalf("outside.txt = %q", b)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(r.outside), "new.txt")); err == nil {
		t.Fatal("a file was created outside")
	}
}

func TestInterrupt(t *testing.T) {
	t.Run("CancelsTheRequestInFlight", func(t *testing.T) {
		r := newRig(t, nil)
		r.stub.Push(stubmodel.ChatReply{Hold: make(chan struct{}), Text: "Thinking about it"})
		id := r.startTurn("think hard")
		req := r.stub.WaitRequest(t, 1, waitTimeout)
		waitFor(t, "the first words", func() bool { return len(r.rec.of(id, bridge.EventMessage)) > 0 })
		if err := r.h.Interrupt(context.Background(), "other"); !errors.Is(err, bridge.ErrStaleTurn) {
			t.Fatalf("Interrupt(other): %v", err)
		}
		if err := r.h.Interrupt(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		if end := r.rec.waitEnded(t, id); end.Status != "interrupted" {
			t.Fatalf("end %+v", end)
		}
		<-req.Done
		if !req.ClientGone {
			t.Fatal("the model request was not cancelled")
		}
		msgs := r.rec.of(id, bridge.EventMessage)
		if last := msgs[len(msgs)-1]; last.Partial || last.Text != "Thinking" {
			t.Fatalf("the words so far end as a final message: %+v", msgs)
		}
		if err := r.h.Steer(context.Background(), id, bridge.Input{Text: "x"}); !errors.Is(err, bridge.ErrNoActiveTurn) {
			t.Fatalf("steer after interrupt: %v", err)
		}
	})
	t.Run("KeepsSteersItDidNotReach", func(t *testing.T) {
		r := newRig(t, nil)
		r.stub.Push(stubmodel.ChatReply{Hold: make(chan struct{})})
		id := r.startTurn("think hard")
		r.stub.WaitRequest(t, 1, waitTimeout)
		if err := r.h.Steer(context.Background(), id, bridge.Input{Text: "a late thought"}); err != nil {
			t.Fatal(err)
		}
		must(t, r.h.Interrupt(context.Background(), id))
		r.rec.waitEnded(t, id)
		r.run("next")
		if req := r.stub.WaitRequest(t, 2, waitTimeout); !req.HasUserText("a late thought") {
			t.Fatalf("the steer was lost: %+v", req.Messages)
		}
	})
	t.Run("KillsTheCommandAndWithdrawsAsks", func(t *testing.T) {
		r := newRig(t, nil)
		r.gate.auto = boolp(true)
		r.stub.Push(tools(call("run_command", map[string]any{"command": "sleep 30"}), call("read_file", map[string]any{"path": "README.md"})))
		id := r.startTurn("sleep")
		waitFor(t, "the command ask", func() bool { return len(r.gate.asked()) == 1 })
		if err := r.h.Interrupt(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		if end := r.rec.waitEnded(t, id); end.Status != "interrupted" {
			t.Fatalf("end %+v", end)
		}
		// The next turn's request shows both calls answered.
		r.stub.Push(text("ok"))
		r.run("again")
		req := r.stub.WaitRequest(t, 2, waitTimeout)
		for i := range 2 {
			if got := result(t, req, "call_stub_1_"+itoa(i)); !strings.Contains(got, "interrupted") {
				t.Errorf("call %d: %q", i, got)
			}
		}
	})
}

func TestEndpointFailures(t *testing.T) {
	t.Run("DownAtTheFirstCall", func(t *testing.T) {
		r := newRig(t, nil)
		r.stub.Close()
		_, end := r.run("hi")
		if end.Status != "failed" || !contains(end.Text, "the model endpoint at "+r.stub.URL()+" is unreachable", "refused") {
			t.Fatalf("end %+v", end)
		}
	})
	t.Run("DownMidTurn", func(t *testing.T) {
		r := newRig(t, nil)
		r.stub.Push(tools(call("write_file", map[string]any{"path": "a", "content": "b"})))
		id := r.startTurn("write")
		waitFor(t, "the ask", func() bool { return len(r.gate.asked()) == 1 })
		r.stub.Close()
		r.gate.decide <- true
		end := r.rec.waitEnded(t, id)
		if end.Status != "failed" || !contains(end.Text, "the model endpoint at "+r.stub.URL()+" is unreachable") {
			t.Fatalf("end %+v", end)
		}
		if p := r.rec.of(id, bridge.EventProgress); len(p) != 1 || !strings.HasPrefix(p[0].Text, "turn failed: the model endpoint") {
			t.Fatalf("progress %+v", p)
		}
	})
	for _, tc := range []struct {
		name  string
		reply stubmodel.ChatReply
		want  string
	}{
		{"HTTPError", stubmodel.ChatReply{Status: 404, Error: `model "stub-model" not found, try pulling it first`},
			`answered 404 Not Found: model "stub-model" not found, try pulling it first — check base_url`},
		{"Unauthorized", stubmodel.ChatReply{Status: 401, Error: "invalid api key"}, "refused the request (401 Unauthorized): invalid api key"},
		{"MalformedStream", stubmodel.ChatReply{Raw: "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\ndata: {\"choices\": [oops\n\n"},
			"malformed stream chunk"},
		{"TruncatedStream", stubmodel.ChatReply{Text: "I will now", Truncate: true}, "ended before the answer was complete"},
		{"NotSSE", stubmodel.ChatReply{Raw: "<html>502 Bad Gateway</html>"}, "not an event stream; it began: <html>502 Bad Gateway</html>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, nil)
			r.stub.Push(tc.reply)
			_, end := r.run("hi")
			if end.Status != "failed" || !strings.Contains(end.Text, tc.want) {
				t.Fatalf("end %+v, want failed with %q", end, tc.want)
			}
		})
	}
	t.Run("NonStreamingServer", func(t *testing.T) {
		// A server that ignores "stream": true and answers one JSON body.
		r := newRig(t, nil)
		r.stub.SetResponder(func(*stubmodel.ChatRequest) (stubmodel.ChatReply, bool) { return stubmodel.ChatReply{}, false })
		srv := newJSONServer(t, `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"plain answer"},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11}}`)
		r.h.client = newClient(&Config{BaseURL: srv + "/v1", IdleTimeout: waitTimeout})
		id, end := r.run("hi")
		msgs := r.rec.of(id, bridge.EventMessage)
		if end.Status != "completed" || msgs[len(msgs)-1].Text != "plain answer" || end.Usage.InputTokens != 9 {
			t.Fatalf("end %+v messages %+v", end, msgs)
		}
	})
}

func TestStepLimit(t *testing.T) {
	r := newRig(t, map[string]string{"max_steps": "3"})
	r.stub.SetFallback(tools(call("list_files", map[string]any{})))
	_, end := r.run("loop forever")
	if end.Status != "failed" || !strings.Contains(end.Text, "stopped after 3 model calls (max_steps)") {
		t.Fatalf("end %+v", end)
	}
	if n := len(r.stub.Requests()); n != 3 {
		t.Fatalf("%d model calls, want 3", n)
	}
	// The conversation stays valid: every call has its result.
	r.stub.SetFallback(text("fine"))
	r.run("stop now")
	req := r.stub.Requests()[3]
	for _, m := range req.Messages {
		for _, c := range m.ToolCalls {
			if _, ok := req.ToolResult(c.ID); !ok {
				t.Fatalf("call %s unanswered", c.ID)
			}
		}
	}
}

func TestConversationPersists(t *testing.T) {
	r := newRig(t, nil)
	r.stub.Push(tools(call("read_file", map[string]any{"path": "README.md"})), text("It is a demo."))
	r.run("what is this project?")
	fi, err := os.Stat(filepath.Join(r.state, stateFileName))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("conversation file: %v %v", fi, err)
	}
	if di, _ := os.Stat(r.state); di.Mode().Perm() != 0o700 {
		t.Fatalf("state dir mode %v", di.Mode().Perm())
	}
	// A restarted bridge: a new harness over the same state.
	r.h.Close()
	r.start()
	r.stub.Push(text("As I said, a demo."))
	r.run("and again?")
	req := r.stub.WaitRequest(t, 3, waitTimeout)
	var roles []string
	for _, m := range req.Messages {
		roles = append(roles, m.Role)
	}
	if strings.Join(roles, ",") != "system,user,assistant,tool,assistant,user" || req.Messages[1].Content != "what is this project?" ||
		req.Messages[4].Content != "It is a demo." || req.Messages[5].Content != "and again?" {
		t.Fatalf("request after restart: %+v", req.Messages)
	}
}

func TestConversationRepairedAndUnreadableMovedAside(t *testing.T) {
	r := newRig(t, nil)
	r.h.Close()
	// A bridge that died between a tool call and its result.
	st := stateFile{Version: stateVersion, Messages: []histMessage{
		{chatMessage: chatMessage{Role: "user", Content: "go"}},
		{chatMessage: chatMessage{Role: "assistant", ToolCalls: []toolCall{{ID: "c1", Type: "function", Function: functionCall{Name: "list_files", Arguments: "{}"}}}}},
		{chatMessage: chatMessage{Role: "tool", ToolCallID: "orphan", Content: "x"}},
	}}
	must(t, store{dir: r.state}.save(st))
	r.start()
	r.run("continue")
	req := r.stub.WaitRequest(t, 1, waitTimeout)
	if got, ok := req.ToolResult("c1"); !ok || !strings.Contains(got, "stopped before running it") {
		t.Fatalf("repair: %+v", req.Messages)
	}
	if _, ok := req.ToolResult("orphan"); ok {
		t.Fatal("an orphan tool result was sent")
	}

	r.h.Close()
	must(t, os.WriteFile(filepath.Join(r.state, stateFileName), []byte("{not json"), 0o600))
	r.start()
	r.run("fresh")
	if req := r.stub.WaitRequest(t, 2, waitTimeout); len(req.Messages) != 2 {
		t.Fatalf("after an unreadable file: %+v", req.Messages)
	}
	aside, _ := filepath.Glob(filepath.Join(r.state, stateFileName+".unreadable-*"))
	if len(aside) != 1 {
		t.Fatalf("moved aside: %v", aside)
	}
}

func TestContextTrimmed(t *testing.T) {
	r := newRig(t, map[string]string{"context_tokens": "2048", "output_cap": "1024"})
	big := strings.Repeat("lorem ipsum dolor sit amet ", 200)
	must(t, os.WriteFile(filepath.Join(r.dir, "big.txt"), []byte(big), 0o644))
	// Each turn reads the big file; the old readings must give way.
	for i := range 6 {
		r.stub.Push(tools(call("read_file", map[string]any{"path": "big.txt"})), stubmodel.ChatReply{Text: "read it " + itoa(i), NoUsage: true})
		r.run("read big.txt, round " + itoa(i))
	}
	reqs := r.stub.Requests()
	last := reqs[len(reqs)-1]

	est := 0
	for _, m := range last.Messages {
		est += len(m.Content) / bytesPerToken
	}
	if est > 2048 {
		t.Fatalf("the last request is about %d tokens, over the 2048 window", est)
	}
	if !last.HasUserText("round 5") {
		t.Fatal("the running turn was trimmed away")
	}
	if last.HasUserText("round 0") {
		t.Fatal("the oldest exchange survived")
	}
	trimmedNote := false
	for _, m := range last.Messages {
		trimmedNote = trimmedNote || strings.Contains(m.Content, "left out to fit the context window")
	}
	if !trimmedNote {
		t.Fatalf("no trimmed tool output in %+v", last.Messages)
	}
}

// newJSONServer answers every chat request with body as application/json.
func newJSONServer(t *testing.T, body string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &httpServer{body: body}
	go srv.serve(ln)
	t.Cleanup(func() { ln.Close() })
	return "http://" + ln.Addr().String()
}
