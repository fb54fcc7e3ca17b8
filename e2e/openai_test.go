package e2e_test

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/bridge"
	"github.com/wheelhouse-dev/wheelhouse/internal/stubmodel"
	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
)

const oaiWait = 15 * time.Second

// oaiTeam is newTeam plus alice's agents on the openai harness: local
// (the stub model in front, bob may address it), flaky (its own stub,
// which the test takes down mid-turn) and off (an endpoint nobody serves).
type oaiTeam struct {
	*team
	stub, flakyStub *stubmodel.ChatServer
	br              *testhub.Bridge
	dir, outside    string
}

func newOAITeam(t *testing.T) *oaiTeam {
	t.Helper()
	stub, flaky := stubmodel.NewChat(t), stubmodel.NewChat(t)
	root := t.TempDir()
	dir := filepath.Join(root, "proj")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("# Demo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(root, "outside.txt")
	if err := os.WriteFile(outside, []byte("secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	offURL := "http://" + ln.Addr().String() + "/v1"
	ln.Close()
	agent := func(name, url string) bridge.AgentConfig {
		return bridge.AgentConfig{Name: name, Harness: "openai", Dir: dir,
			Options:    map[string]string{"base_url": url, "model": "qwen3:8b", "state_dir": filepath.Join(root, "state", name)},
			PolicyFile: bridge.PolicyConfig{Address: "users", Allowed: []string{"bob"}}}
	}
	tm := newTeam(t)
	br := tm.h.StartBridge(tm.alice, nil, agent("local", stub.URL()), agent("flaky", flaky.URL()), agent("off", offURL))
	for _, a := range []string{"alice/local", "alice/flaky", "alice/off"} {
		tm.alice.AddAgent("dev", a)
	}
	return &oaiTeam{team: tm, stub: stub, flakyStub: flaky, br: br, dir: dir, outside: outside}
}

// start posts text as c and returns the turn the receipt says started.
func (ot *oaiTeam) start(t *testing.T, c *testhub.Client, agent, text string) string {
	t.Helper()
	id, rs := post(t, c, "dev", text, nil)
	rc := rs[0]
	if rc["status"] != "started" {
		rc = receipt(t, c, "dev", id, agent, "started", "rejected", "queued")
	}
	turn, _ := rc["turnId"].(string)
	if rc["status"] != "started" || turn == "" {
		t.Fatalf("receipt %v, want started with a turn id", rc)
	}
	return turn
}

// turnEnded waits for the timeline's turn.ended entry of turn and returns
// its detail.
func oaiTurnEnded(t *testing.T, c *testhub.Client, agent, turn string) map[string]any {
	t.Helper()
	var detail map[string]any
	testhub.WaitFor(t, oaiWait, "turn "+turn+" ended in the timeline", func() bool {
		r := c.Must(200, "GET", "/api/v1/agents/"+agent+"/timeline?turn="+turn, nil)
		for _, e := range testhub.AsList(r.Body["entries"]) {
			if e["kind"] == "turn.ended" {
				raw, _ := json.Marshal(e["detail"])
				json.Unmarshal(raw, &detail)
				return true
			}
		}
		return false
	})
	return detail
}

func oaiPendingApproval(t *testing.T, owner *testhub.Client, agent, turn string) map[string]any {
	t.Helper()
	var got map[string]any
	testhub.WaitFor(t, oaiWait, "a pending approval for turn "+turn, func() bool {
		r := owner.Must(200, "GET", "/api/v1/approvals?state=pending", nil)
		for _, p := range testhub.AsList(r.Body["approvals"]) {
			if p["agent"] == agent && p["turnId"] == turn {
				got = p
				return true
			}
		}
		return false
	})
	return got
}

func oaiResult(t *testing.T, req *stubmodel.ChatRequest, callID string) string {
	t.Helper()
	s, ok := req.ToolResult(callID)
	if !ok {
		t.Fatalf("request #%d has no result for %s: %+v", req.N, callID, req.Messages)
	}
	return s
}

func oaiCall(name, args string) stubmodel.ChatToolCall {
	return stubmodel.ChatToolCall{Name: name, Arguments: args}
}

// TestOpenAIHarness drives the openai harness through the real hub and
// bridge; only the model is a stub speaking the Chat Completions wire
// format. The subtests share the hub, bridge and agents and run in order
// (each leaves the agent idle).
func TestOpenAIHarness(t *testing.T) {
	ot := newOAITeam(t)
	next := func() int { return len(ot.stub.Requests()) + 1 }

	t.Run("MentionStartsTurnAndReplyReachesRoom", func(t *testing.T) {
		n := next()
		ot.stub.Push(stubmodel.ChatReply{Text: "Hello from the local model, streamed in pieces."})
		turn := ot.start(t, ot.bob, "alice/local", "@alice/local say hello please")
		req := ot.stub.WaitRequest(t, n, oaiWait)
		if !req.HasUserText("From: @bob, a teammate (not the owner; the owner is @alice)") || !req.HasUserText("| @alice/local say hello please") {
			t.Errorf("the model did not get bob's message in its envelope: %q", req.UserTexts())
		}
		waitAgentSays(t, ot.bob, "dev", "alice/local", "Hello from the local model, streamed in pieces.")
		d := oaiTurnEnded(t, ot.alice, "alice/local", turn)
		u, _ := d["usage"].(map[string]any)
		if d["status"] != "completed" || u == nil || u["inputTokens"].(float64) <= 0 || u["outputTokens"].(float64) <= 0 || u["modelCalls"].(float64) != 1 {
			t.Fatalf("turn.ended detail %v", d)
		}
		if got := agentMessages(t, ot.bob, "dev", "alice/local"); len(got) != 1 {
			t.Fatalf("the reply is one message, got %q", got)
		}
		if rc := receipt(t, ot.bob, "dev", lastMessage(t, ot.bob, "@alice/local say hello please"), "alice/local", "done", "failed"); rc["status"] != "done" {
			t.Fatalf("receipt %v, want done", rc)
		}
		waitStatus(t, ot.alice, "alice/local", "idle")
	})

	t.Run("SteerLandsBetweenToolCalls", func(t *testing.T) {
		n := next()
		release := make(chan struct{})
		ot.stub.Push(
			stubmodel.ChatReply{Hold: release, ToolCalls: []stubmodel.ChatToolCall{oaiCall("list_files", `{}`)}},
			stubmodel.ChatReply{ToolCalls: []stubmodel.ChatToolCall{oaiCall("read_file", `{"path":"README.md"}`)}},
			stubmodel.ChatReply{Text: "Listed, read, and bananas."})
		turn := ot.start(t, ot.alice, "alice/local", "@alice/local look around")
		ot.stub.WaitRequest(t, n, oaiWait)
		id, _ := post(t, ot.bob, "dev", "@alice/local also mention bananas", nil)
		rc := receipt(t, ot.bob, "dev", id, "alice/local", "steered", "rejected", "queued", "started")
		if rc["status"] != "steered" || rc["turnId"] != turn {
			t.Fatalf("receipt %v, want steered into %s", rc, turn)
		}
		close(release)
		req := ot.stub.WaitRequest(t, n+1, oaiWait)
		first := req.Index(func(m stubmodel.ChatMessage) bool { return m.Role == "tool" })
		steer := req.Index(func(m stubmodel.ChatMessage) bool {
			return m.Role == "user" && strings.Contains(m.Content, "| @alice/local also mention bananas")
		})
		if first < 0 || steer != first+1 || !strings.Contains(req.Messages[steer].Content, "From: @bob, a teammate") {
			t.Fatalf("want bob's steer in its envelope right after the first tool's result: %+v", req.Messages)
		}
		if ot.stub.Requests()[n-1].HasUserText("bananas") {
			t.Fatal("the steer reached the request made before it")
		}
		waitAgentSays(t, ot.alice, "dev", "alice/local", "and bananas")
		if d := oaiTurnEnded(t, ot.alice, "alice/local", turn); d["status"] != "completed" {
			t.Fatalf("turn ended %v", d)
		}
		waitStatus(t, ot.alice, "alice/local", "idle")
	})

	t.Run("WriteNeedsOwnerApprovalAndDenyReachesModel", func(t *testing.T) {
		n := next()
		notes := filepath.Join(ot.dir, "notes.txt")
		ot.stub.Push(stubmodel.ChatReply{ToolCalls: []stubmodel.ChatToolCall{oaiCall("write_file", `{"path":"notes.txt","content":"hello\n"}`)}},
			stubmodel.ChatReply{Text: "Leaving notes.txt alone."})
		turn := ot.start(t, ot.bob, "alice/local", "@alice/local write notes.txt")
		p := oaiPendingApproval(t, ot.alice, "alice/local", turn)
		if p["tool"] != "write_file" || !strings.Contains(p["summary"].(string), "create notes.txt") || !strings.Contains(p["diff"].(string), "+hello") || p["tainted"] != true {
			t.Fatalf("approval %v", p)
		}
		waitStatus(t, ot.alice, "alice/local", "needs-approval")
		if r := codexDecide(t, ot.bob, 403, p, "approve", p["payloadHash"].(string)); r.ErrCode() != "forbidden" {
			t.Fatalf("bob's approval: %s", r.Raw)
		}
		codexDecide(t, ot.alice, 200, p, "deny", p["payloadHash"].(string))
		req := ot.stub.WaitRequest(t, n+1, oaiWait)
		if got := oaiResult(t, req, req.Messages[len(req.Messages)-1].ToolCallID); !strings.HasPrefix(got, "error: not run: the owner did not approve it") {
			t.Fatalf("the model was told %q", got)
		}
		waitAgentSays(t, ot.alice, "dev", "alice/local", "Leaving notes.txt alone.")
		if codexFileExists(notes) {
			t.Fatal("a denied write happened")
		}
		waitStatus(t, ot.alice, "alice/local", "idle")

		// Approved, the same kind of call writes the file.
		ot.stub.Push(stubmodel.ChatReply{ToolCalls: []stubmodel.ChatToolCall{oaiCall("write_file", `{"path":"notes.txt","content":"hello\n"}`)}},
			stubmodel.ChatReply{Text: "Wrote notes.txt."})
		turn = ot.start(t, ot.alice, "alice/local", "@alice/local write notes.txt after all")
		p = oaiPendingApproval(t, ot.alice, "alice/local", turn)
		codexDecide(t, ot.alice, 200, p, "approve", p["payloadHash"].(string))
		waitAgentSays(t, ot.alice, "dev", "alice/local", "Wrote notes.txt.")
		if b, _ := os.ReadFile(notes); string(b) != "hello\n" {
			t.Fatalf("notes.txt = %q", b)
		}
		waitStatus(t, ot.alice, "alice/local", "idle")
	})

	t.Run("PathEscapesRefused", func(t *testing.T) {
		if err := os.Symlink(ot.outside, filepath.Join(ot.dir, "link-out")); err != nil {
			t.Fatal(err)
		}
		n := next()
		ot.stub.Push(stubmodel.ChatReply{ToolCalls: []stubmodel.ChatToolCall{
			oaiCall("read_file", `{"path":"../outside.txt"}`),
			oaiCall("read_file", `{"path":`+strings.ReplaceAll(jsonString(ot.outside), `\`, `\\`)+`}`),
			oaiCall("read_file", `{"path":"link-out"}`),
			oaiCall("write_file", `{"path":"../outside.txt","content":"pwned"}`),
			oaiCall("write_file", `{"path":"link-out","content":"pwned"}`),
		}}, stubmodel.ChatReply{Text: "Those are outside my directory."})
		turn := ot.start(t, ot.bob, "alice/local", "@alice/local read ../outside.txt")
		req := ot.stub.WaitRequest(t, n+1, oaiWait)
		for i := range 5 {
			got := oaiResult(t, req, "call_stub_"+itoa(int64(n))+"_"+itoa(int64(i)))
			if !strings.HasPrefix(got, "error: refused") || strings.Contains(got, "secret") {
				t.Errorf("call %d: %q", i, got)
			}
		}
		oaiTurnEnded(t, ot.alice, "alice/local", turn)
		r := ot.alice.Must(200, "GET", "/api/v1/approvals?state=pending", nil)
		if len(testhub.AsList(r.Body["approvals"])) != 0 {
			t.Fatalf("an escape reached the owner: %s", r.Raw)
		}
		if b, _ := os.ReadFile(ot.outside); string(b) != "secret\n" {
			t.Fatalf("outside.txt = %q", b)
		}
		waitStatus(t, ot.alice, "alice/local", "idle")
	})

	t.Run("OwnerInterrupts", func(t *testing.T) {
		n := next()
		ot.stub.Push(stubmodel.ChatReply{Hold: make(chan struct{}), Text: "Thinking"})
		turn := ot.start(t, ot.alice, "alice/local", "@alice/local think for a long time")
		req := ot.stub.WaitRequest(t, n, oaiWait)
		ot.alice.Must(200, "POST", "/api/v1/agents/alice/local/interrupt", nil)
		if d := oaiTurnEnded(t, ot.alice, "alice/local", turn); d["status"] != "interrupted" {
			t.Fatalf("turn ended %v", d)
		}
		select {
		case <-req.Done:
		case <-time.After(oaiWait):
			t.Fatal("the model request is still open")
		}
		if !req.ClientGone {
			t.Fatal("the interrupt did not cancel the model request")
		}
		waitStatus(t, ot.alice, "alice/local", "idle")
	})

	t.Run("MalformedStreamFailsTheTurn", func(t *testing.T) {
		ot.stub.Push(stubmodel.ChatReply{Raw: "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\ndata: {\"choices\": [nope\n\n"})
		turn := ot.start(t, ot.alice, "alice/local", "@alice/local hello?")
		d := oaiTurnEnded(t, ot.alice, "alice/local", turn)
		if d["status"] != "failed" || !strings.Contains(d["reason"].(string), "malformed stream chunk") {
			t.Fatalf("turn ended %v", d)
		}
		waitStatus(t, ot.alice, "alice/local", "idle")
	})

	t.Run("EndpointDownFailsTheTurnAndTheReceiptSaysWhy", func(t *testing.T) {
		id, _ := post(t, ot.bob, "dev", "@alice/off are you there?", nil)
		rc := receipt(t, ot.bob, "dev", id, "alice/off", "failed", "done", "rejected", "interrupted")
		if rc["status"] != "failed" || !strings.Contains(rc["detail"].(string), "the model endpoint at http://127.0.0.1:") ||
			!strings.Contains(rc["detail"].(string), "is unreachable") {
			t.Fatalf("receipt %v, want failed: the endpoint is unreachable", rc)
		}
		if d := oaiTurnEnded(t, ot.alice, "alice/off", rc["turnId"].(string)); d["status"] != "failed" || !strings.Contains(d["reason"].(string), "is unreachable") {
			t.Fatalf("turn ended %v", d)
		}
		waitStatus(t, ot.alice, "alice/off", "idle")
	})

	t.Run("EndpointDownMidTurnFailsWithReason", func(t *testing.T) {
		ot.flakyStub.Push(stubmodel.ChatReply{ToolCalls: []stubmodel.ChatToolCall{oaiCall("run_command", `{"command":"true"}`)}})
		msg, rs := post(t, ot.alice, "dev", "@alice/flaky run true", nil)
		turn, _ := rs[0]["turnId"].(string)
		if turn == "" {
			turn, _ = receipt(t, ot.alice, "dev", msg, "alice/flaky", "started")["turnId"].(string)
		}
		p := oaiPendingApproval(t, ot.alice, "alice/flaky", turn)
		ot.flakyStub.Close()
		codexDecide(t, ot.alice, 200, p, "approve", p["payloadHash"].(string))
		d := oaiTurnEnded(t, ot.alice, "alice/flaky", turn)
		if d["status"] != "failed" || !strings.Contains(d["reason"].(string), "the model endpoint at "+ot.flakyStub.URL()+" is unreachable") {
			t.Fatalf("turn ended %v", d)
		}
		waitAgentSays(t, ot.alice, "dev", "alice/flaky", "turn failed: the model endpoint")
		if rc := receipt(t, ot.alice, "dev", msg, "alice/flaky", "failed", "done"); rc["status"] != "failed" || !strings.Contains(rc["detail"].(string), "is unreachable") {
			t.Fatalf("receipt %v", rc)
		}
		waitStatus(t, ot.alice, "alice/flaky", "idle")
	})
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// lastMessage returns the id of the newest message in dev with text.
func lastMessage(t *testing.T, c *testhub.Client, text string) int64 {
	t.Helper()
	r := c.Must(200, "GET", "/api/v1/rooms/dev/messages?limit=200", nil)
	var id int64
	for _, m := range testhub.AsList(r.Body["messages"]) {
		if m["text"] == text {
			id = int64(m["id"].(float64))
		}
	}
	if id == 0 {
		t.Fatalf("no message %q", text)
	}
	return id
}
