package e2e_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/bridge"
	"github.com/wheelhouse-dev/wheelhouse/bridge/codex"
	"github.com/wheelhouse-dev/wheelhouse/internal/stubmodel"
	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
)

// codexWait bounds the waits on the real codex process and the stub model.
const codexWait = 20 * time.Second

// codexBinary is the real codex CLI: WHEELHOUSE_TEST_CODEX, else codex on
// PATH. A missing binary fails the test (never skips).
func codexBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("WHEELHOUSE_TEST_CODEX"); p != "" {
		return p
	}
	p, err := exec.LookPath("codex")
	if err != nil {
		t.Fatal("codex CLI not found: set WHEELHOUSE_TEST_CODEX or run scripts/test.sh, which installs it")
	}
	return p
}

// codexTeam is newTeam plus one real `codex app-server` agent, alice/codex,
// in room dev, whose only fake part is the model (a stub Responses server).
// bob may address it; the agent asks before mutating commands
// (untrusted) and runs them unsandboxed once approved.
type codexTeam struct {
	*team
	stub *stubmodel.Responses
	br   *testhub.Bridge
	dir  string // the agent's project directory (codex's cwd)
	home string // its CODEX_HOME
}

func newCodexTeam(t *testing.T) *codexTeam {
	t.Helper()
	return newCodexTeamWith(t, "untrusted", "danger-full-access", bridge.PolicyConfig{Address: "users", Allowed: []string{"bob"}})
}

// newCodexTeamWith is newCodexTeam with codex's approval policy and
// sandbox, and the agent's policy file, given.
func newCodexTeamWith(t *testing.T, approval, sandbox string, pol bridge.PolicyConfig) *codexTeam {
	t.Helper()
	return newCodexTeamOn(t, testhub.Options{}, approval, sandbox, pol)
}

// newCodexTeamOn is newCodexTeamWith on a hub started with o.
func newCodexTeamOn(t *testing.T, o testhub.Options, approval, sandbox string, pol bridge.PolicyConfig) *codexTeam {
	t.Helper()
	bin := codexBinary(t)
	// The stub starts first so that it stops last, after the bridge closed codex.
	stub := stubmodel.NewResponses(t)
	root := t.TempDir()
	dir, home := filepath.Join(root, "proj"), filepath.Join(root, "codex-home")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := stub.WriteCodexHome(home); err != nil {
		t.Fatal(err)
	}
	tm := newTeamWith(t, o)
	br := tm.h.StartBridge(tm.alice, nil, bridge.AgentConfig{Name: "codex", Harness: "codex", Dir: dir, Binary: bin,
		Options: map[string]string{codex.OptCodexHome: home, codex.OptStrictConfig: "true",
			codex.OptApprovalPolicy: approval, codex.OptSandbox: sandbox},
		PolicyFile: pol})
	tm.alice.AddAgent("dev", "alice/codex")
	return &codexTeam{team: tm, stub: stub, br: br, dir: dir, home: home}
}

// nextRequest is the number the stub will give the next model request.
func (ct *codexTeam) nextRequest() int { return len(ct.stub.Requests()) + 1 }

// startTurn posts text as c and returns the turn the receipt says started.
func (ct *codexTeam) startTurn(t *testing.T, c *testhub.Client, text string) string {
	t.Helper()
	turn, _ := ct.startTurnOf(t, c, text)
	return turn
}

// startTurnOf is startTurn that also returns the id of the message that
// started the turn.
func (ct *codexTeam) startTurnOf(t *testing.T, c *testhub.Client, text string) (string, int64) {
	t.Helper()
	id, rs := post(t, c, "dev", text, nil)
	rc := rs[0]
	if rc["status"] != "started" {
		rc = receipt(t, c, "dev", id, "alice/codex", "started", "rejected", "queued")
	}
	turn, _ := rc["turnId"].(string)
	if rc["status"] != "started" || turn == "" {
		t.Fatalf("receipt %v, want started with a turn id", rc)
	}
	return turn, id
}

// codexWaitWorking waits until the hub lists the agent working on turn.
func codexWaitWorking(t *testing.T, c *testhub.Client, turn string) {
	t.Helper()
	testhub.WaitFor(t, codexWait, "alice/codex working on "+turn, func() bool {
		a := agentStatus(t, c, "alice/codex")
		return a["status"] == "working" && a["turnId"] == turn
	})
}

// codexPendingApproval waits for the owner to see a pending approval of turn.
func codexPendingApproval(t *testing.T, owner *testhub.Client, turn string) map[string]any {
	t.Helper()
	var got map[string]any
	testhub.WaitFor(t, codexWait, "a pending approval for turn "+turn, func() bool {
		r := owner.Must(200, "GET", "/api/v1/approvals?state=pending", nil)
		for _, p := range testhub.AsList(r.Body["approvals"]) {
			if p["agent"] == "alice/codex" && p["turnId"] == turn {
				got = p
				return true
			}
		}
		return false
	})
	return got
}

// codexDecide posts a decision on approval p with hash and returns the answer.
func codexDecide(t *testing.T, c *testhub.Client, want int, p map[string]any, decision, hash string) testhub.Response {
	t.Helper()
	return c.Decide(want, p["id"].(string), decision, hash)
}

// codexTurnEnded waits for the timeline's turn.ended entry of turn and
// returns its status.
func codexTurnEnded(t *testing.T, c *testhub.Client, turn string) string {
	t.Helper()
	var status string
	testhub.WaitFor(t, codexWait, "turn "+turn+" ended in the timeline", func() bool {
		r := c.Must(200, "GET", "/api/v1/agents/alice/codex/timeline?turn="+turn, nil)
		for _, e := range testhub.AsList(r.Body["entries"]) {
			if e["kind"] == "turn.ended" {
				var d struct {
					Status string `json:"status"`
				}
				raw, _ := json.Marshal(e["detail"])
				json.Unmarshal(raw, &d)
				status = d.Status
				return true
			}
		}
		return false
	})
	return status
}

// codexUserText returns the first user message of req holding every sub,
// and its index among the request's user messages (-1 if none).
func codexUserText(req *stubmodel.ResponsesRequest, subs ...string) (string, int) {
	for i, s := range req.UserTexts() {
		if !slices.ContainsFunc(subs, func(sub string) bool { return !strings.Contains(s, sub) }) {
			return s, i
		}
	}
	return "", -1
}

func codexFileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// codexSteeredBy is an approval's steeredBy list.
func codexSteeredBy(p map[string]any) []string {
	var out []string
	l, _ := p["steeredBy"].([]any)
	for _, x := range l {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}
