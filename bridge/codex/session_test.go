package codex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/bridge"
)

// newTestSession is a session on thread "T" whose codex side is a peer
// speaking recorded lines; no process involved.
func newTestSession(t *testing.T, gate bridge.Gate) (*session, *peer, *events) {
	t.Helper()
	ev := newEvents()
	life, stop := context.WithCancel(context.Background())
	log := slog.New(slog.DiscardHandler)
	h := &Harness{cfg: settings{dir: "/p"}, gate: gate, sink: ev.sink, log: log, life: life, stop: stop}
	s := &session{h: h, log: log, threadID: "T", exited: make(chan struct{}),
		items: map[string]*liveItem{}, approvals: map[string]*pendingApproval{}, turnErr: map[string]string{}}
	_, p := newPeer(t, func(c *conn) handlers {
		s.conn = c
		return handlers{notify: s.onNotify, request: s.onRequest}
	}, defaultMaxLine)
	t.Cleanup(func() {
		stop()
		h.wg.Wait()
	})
	return s, p, ev
}

func note(method, params string) string {
	return fmt.Sprintf(`{"method":%q,"params":%s,"emittedAtMs":1796026004556}`, method, params)
}

func itemLine(method, threadID, item string) string {
	return note(method, fmt.Sprintf(`{"item":%s,"threadId":%q,"turnId":"U","startedAtMs":1}`, item, threadID))
}

func turnDone(status, errJSON string) string {
	return note(noteTurnCompleted, `{"threadId":"T","turn":{"id":"U","items":[],"status":"`+status+`","error":`+errJSON+`}}`)
}

func delta(itemID, d string) string {
	return note(noteAgentDelta, fmt.Sprintf(`{"threadId":"T","turnId":"U","itemId":%q,"delta":%q}`, itemID, d))
}

const turnStartedLine = `{"method":"turn/started","params":{"threadId":"T","turn":{"id":"U","items":[],"status":"inProgress","error":null}}}`

func TestSessionEvents(t *testing.T) {
	long := strings.Repeat("x", 1000) + "TAIL"
	tests := []struct {
		name  string
		lines []string
		want  []string // kind:status:text
	}{
		{"PlainReply", []string{
			turnStartedLine,
			itemLine(noteItemStarted, "T", `{"type":"userMessage","id":"u1","content":[{"type":"text","text":"hi"}]}`),
			itemLine(noteItemStarted, "T", `{"type":"agentMessage","id":"m1","text":"","phase":null}`),
			delta("m1", "stub "), delta("m1", "reply"),
			itemLine(noteItemCompleted, "T", `{"type":"agentMessage","id":"m1","text":"stub reply #1"}`),
			turnDone("completed", "null"),
		}, []string{"turn-started::", "message::stub reply #1", "turn-ended:completed:"}},
		{"SteerOrphansMessage", []string{
			itemLine(noteItemStarted, "T", `{"type":"agentMessage","id":"m1","text":""}`),
			delta("m1", "half an "),
			delta("m1", "answer"),
			itemLine(noteItemStarted, "T", `{"type":"agentMessage","id":"m2","text":""}`),
			itemLine(noteItemCompleted, "T", `{"type":"agentMessage","id":"m2","text":"whole answer"}`),
			itemLine(noteItemStarted, "T", `{"type":"agentMessage","id":"m3","text":""}`), // orphan, empty: dropped
			turnDone("completed", "null"),
		}, []string{"message::whole answer", "message::half an answer", "turn-ended:completed:"}},
		{"FailedTurnCarriesError", []string{
			note(noteError, `{"error":{"message":"stream disconnected"},"willRetry":true,"threadId":"T","turnId":"U"}`),
			note(noteError, `{"error":{"message":"model unreachable"},"willRetry":false,"threadId":"T","turnId":"U"}`),
			turnDone("failed", "null"),
		}, []string{"progress::codex: stream disconnected (retrying)", "turn-ended:failed:model unreachable"}},
		{"TurnErrorWins", []string{
			note(noteError, `{"error":{"message":"older"},"willRetry":false,"threadId":"T","turnId":"U"}`),
			turnDone("failed", `{"message":"quota exceeded","codexErrorInfo":null}`),
		}, []string{"turn-ended:failed:quota exceeded"}},
		{"Interrupted", []string{turnStartedLine, turnDone("interrupted", "null")},
			[]string{"turn-started::", "turn-ended:interrupted:"}},
		{"CommandSummary", []string{
			itemLine(noteItemCompleted, "T", `{"type":"commandExecution","id":"c1","command":"/bin/bash -lc 'make'","cwd":"/p","status":"failed","aggregatedOutput":"`+long+`\n","exitCode":2}`),
			itemLine(noteItemCompleted, "T", `{"type":"commandExecution","id":"c2","command":"rm -rf /","cwd":"/p","status":"declined","aggregatedOutput":null,"exitCode":null}`),
		}, []string{"tool::$ /bin/bash -lc 'make' → exit 2\n…" + long[len(long)-toolOutputMax:], "tool::$ rm -rf / → declined"}},
		{"FileChangeSummary", []string{
			itemLine(noteItemCompleted, "T", `{"type":"fileChange","id":"f1","status":"completed","changes":[{"path":"/p/a.txt","kind":{"type":"add"},"diff":"x"},{"path":"/elsewhere/b","kind":{"type":"update","move_path":null},"diff":"y"}]}`),
		}, []string{"tool::apply_patch: add a.txt, update /elsewhere/b → completed"}},
		{"OtherThreadsIgnored", []string{
			`{"method":"turn/started","params":{"threadId":"SUB","turn":{"id":"V","status":"inProgress"}}}`,
			itemLine(noteItemStarted, "SUB", `{"type":"agentMessage","id":"m1","text":""}`),
			itemLine(noteItemCompleted, "SUB", `{"type":"agentMessage","id":"m1","text":"sub-agent chatter"}`),
			`{"method":"turn/completed","params":{"threadId":"SUB","turn":{"id":"V","status":"completed"}}}`,
			note("thread/tokenUsage/updated", `{"threadId":"T"}`),
			note(noteItemCompleted, `{"item":"not an object"}`),
		}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, p, ev := newTestSession(t, nil)
			p.send(tc.lines...)
			p.sync()
			var got []string
			for _, e := range ev.all() {
				got = append(got, e.Kind+":"+e.Status+":"+e.Text)
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Fatalf("events\n got %q\nwant %q", got, tc.want)
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			if len(got) > 0 && strings.HasPrefix(got[len(got)-1], "turn-ended") && (len(s.items) != 0 || s.turn != "") {
				t.Fatalf("turn state not cleared: items %d turn %q", len(s.items), s.turn)
			}
		})
	}
}

const (
	fileItemStarted = `{"method":"item/started","params":{"item":{"type":"fileChange","id":"call_stub_1","changes":[{"path":"/p/patched.txt","kind":{"type":"add"},"diff":"hello from stub patch\n"}],"status":"inProgress"},"threadId":"T","turnId":"U","startedAtMs":1}}`
	fileApproval    = `{"method":"item/fileChange/requestApproval","id":0,"params":{"threadId":"T","turnId":"U","itemId":"call_stub_1","startedAtMs":1796026025746,"reason":null,"grantRoot":null}}`
	cmdApproval     = `{"method":"item/commandExecution/requestApproval","id":%d,"params":{"kind":"command","threadId":%q,"turnId":%q,"itemId":"call_stub_6","startedAtMs":1,"environmentId":"local","command":"/bin/bash -lc 'touch x'","cwd":"/p","commandActions":[],"proposedExecpolicyAmendment":["touch","x"],"availableDecisions":["accept","cancel"]}}`
)

func approve(context.Context, bridge.ApprovalAsk) error { return nil }

// decision reads the conn's answer to server request id.
func decision(t *testing.T, p *peer, id float64) string {
	t.Helper()
	m := p.recv()
	res, _ := m["result"].(map[string]any)
	if m["id"] != id || res == nil {
		t.Fatalf("expected a decision for request %v, got %v", id, m)
	}
	return res["decision"].(string)
}

func TestSessionApprovals(t *testing.T) {
	t.Run("FileChangeAskCarriesDiff", func(t *testing.T) {
		gate := &testGate{decide: approve}
		_, p, _ := newTestSession(t, gate)
		p.send(fileItemStarted, fileApproval)
		if d := decision(t, p, 0); d != decisionAccept {
			t.Fatalf("decision %q", d)
		}
		ask := gate.asked()[0]
		want := `{"tool":"apply_patch","args":{"changes":[{"diff":"hello from stub patch\n","kind":"add","path":"/p/patched.txt"}],"sandbox":"none"}}`
		if b, _ := json.Marshal(ask.Call); string(b) != want {
			t.Fatalf("call %s\nwant %s", b, want)
		}
		if ask.TurnID != "U" || ask.Summary != "apply_patch: add patched.txt" || ask.Diff != "=== add /p/patched.txt\nhello from stub patch\n" {
			t.Fatalf("ask %+v", ask)
		}
	})
	t.Run("UnannouncedFileChangeDeclinedUnasked", func(t *testing.T) {
		gate := &testGate{decide: approve}
		_, p, _ := newTestSession(t, gate)
		p.send(fileApproval)
		if d := decision(t, p, 0); d != decisionDecline || len(gate.asked()) != 0 {
			t.Fatalf("decision %q asks %d", d, len(gate.asked()))
		}
	})
	t.Run("CommandAskExactCall", func(t *testing.T) {
		gate := &testGate{decide: approve}
		_, p, _ := newTestSession(t, gate)
		p.send(fmt.Sprintf(cmdApproval, 4, "T", "U"))
		if d := decision(t, p, 4); d != decisionAccept {
			t.Fatalf("decision %q", d)
		}
		want := `{"tool":"exec_command","args":{"command":"/bin/bash -lc 'touch x'","cwd":"/p","sandbox":"none"}}`
		if b, _ := json.Marshal(gate.asked()[0].Call); string(b) != want {
			t.Fatalf("call %s", b)
		}
	})
	t.Run("SandboxBoundIntoCall", func(t *testing.T) {
		call := func(callID, args string) string {
			return note(noteRawItem, fmt.Sprintf(`{"threadId":"T","turnId":"U","item":{"type":"function_call","name":"exec_command","call_id":%q,"arguments":%q}}`, callID, args))
		}
		cases := []struct {
			name, raw  string
			asks       int
			want, long string
		}{
			{"InsideTheSandbox", call("call_stub_6", `{"cmd":"touch x"}`), 1, "workspace-write", "workspace-write: codex runs it inside"},
			{"AgentAsksToLeave", call("call_stub_6", `{"cmd":"touch x","sandbox_permissions":"require_escalated","justification":"need /etc"}`), 1, "none", "outside the workspace-write sandbox (need /etc)"},
			{"UnknownCallCountsAsFullAccess", "", 1, "none", "did not say"},
			{"SecondRequestIsOutside", call("call_stub_6", `{"cmd":"touch x"}`), 2, "none", "again outside"},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				gate := &testGate{decide: approve}
				s, p, _ := newTestSession(t, gate)
				s.policy = policy{approval: "on-request", sandbox: "workspace-write"}
				if c.raw != "" {
					p.send(c.raw)
				}
				for i := range c.asks {
					p.send(fmt.Sprintf(cmdApproval, i, "T", "U"))
					decision(t, p, float64(i))
				}
				ask := gate.asked()[c.asks-1]
				if got := ask.Call.Args["sandbox"]; got != c.want || !strings.Contains(ask.Sandbox, c.long) {
					t.Fatalf("sandbox %v / %q, want %s / …%s…", got, ask.Sandbox, c.want, c.long)
				}
			})
		}
	})
	t.Run("DeniedOrUnredeemableDeclines", func(t *testing.T) {
		for _, gate := range []*testGate{
			{decide: func(context.Context, bridge.ApprovalAsk) error { return errors.New("denied") }},
			{decide: approve, tamper: true},
			nil,
		} {
			var g bridge.Gate
			if gate != nil {
				g = gate
			}
			_, p, _ := newTestSession(t, g)
			p.send(fmt.Sprintf(cmdApproval, 1, "T", "U"))
			if d := decision(t, p, 1); d != decisionDecline {
				t.Fatalf("gate %+v: decision %q", gate, d)
			}
		}
	})
	t.Run("ResolvedCancelsAskWithoutAnswer", func(t *testing.T) {
		asked := make(chan struct{})
		gave := make(chan error, 1)
		gate := &testGate{decide: func(ctx context.Context, _ bridge.ApprovalAsk) error {
			close(asked)
			<-ctx.Done()
			gave <- ctx.Err()
			return ctx.Err()
		}}
		s, p, _ := newTestSession(t, gate)
		p.send(fmt.Sprintf(cmdApproval, 3, "T", "U"))
		select {
		case <-asked:
		case <-time.After(waitTimeout):
			t.Fatal("gate not asked")
		}
		p.send(note(noteRequestResolved, `{"threadId":"T","requestId":3}`))
		select {
		case err := <-gave:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("ask ended with %v", err)
			}
		case <-time.After(waitTimeout):
			t.Fatal("resolved did not cancel the ask")
		}
		s.h.wg.Wait()
		p.sync() // the next line is the sync reply: nothing answered request 3
	})
	t.Run("SubAgentApprovalChargedToRunningTurn", func(t *testing.T) {
		gate := &testGate{decide: approve}
		_, p, _ := newTestSession(t, gate)
		p.send(turnStartedLine, fmt.Sprintf(cmdApproval, 2, "SUB", "V"))
		decision(t, p, 2)
		if got := gate.asked()[0].TurnID; got != "U" {
			t.Fatalf("ask turn %q, want the running turn U", got)
		}
	})
}
