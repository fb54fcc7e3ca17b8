package browser

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/nats-io/nats.go"

	"github.com/wheelhouse-dev/wheelhouse/authz"
	"github.com/wheelhouse-dev/wheelhouse/bridge"
	"github.com/wheelhouse-dev/wheelhouse/chat"
	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// steerSpy sees every steer the hub sends a bridge (a second connection
// with the bridge's identity; the real bridge answers them).
type steerSpy struct{ sub *nats.Subscription }

func spySteers(t *testing.T, br *testhub.Bridge) *steerSpy {
	t.Helper()
	nc, err := br.Creds.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	sub, err := nc.SubscribeSync(wire.ToBridge(br.Creds.BridgeID, wire.KindSteer))
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return &steerSpy{sub: sub}
}

// next is the next steer whose text contains part.
func (s *steerSpy) next(t *testing.T, part string) wire.Steer {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		m, err := s.sub.NextMsg(time.Until(deadline))
		if err != nil {
			break
		}
		var st wire.Steer
		if json.Unmarshal(m.Data, &st) == nil && strings.Contains(st.Text, part) {
			return st
		}
	}
	t.Fatalf("no steer with %q reached the bridge", part)
	return wire.Steer{}
}

// TestOwnerWordsSigned: alice's words to her own agent are signed by her
// enrolled browser — a message statement over the exact text and the
// file's bytes, naming her bridge — relayed unchanged, and the bridge takes
// them as hers: her auto-approve list applies. Before she enrolls, the
// composer says her words would go as a teammate's and how to enroll; the
// post carries no signature, and the bridge places it strictly (the delete
// asks her, despite auto-approve) with a receipt that says why.
func TestOwnerWordsSigned(t *testing.T) {
	h := testhub.Start(t, testhub.Options{})
	admin := h.Setup("root", rootPassword)
	alice := h.AddUser(admin, "alice")
	br := h.StartBridge(alice, nil, bridge.AgentConfig{Name: "demo", Harness: "demo", Options: map[string]string{"steps": "1", "step": "10ms"},
		PolicyFile: bridge.PolicyConfig{AutoApprove: []string{"delete_file"}}})
	alice.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "dev"})
	alice.AddAgent("dev", demo)
	spy := spySteers(t, br)

	p := newPage(t, startBrowser(t), "alice")
	defer p.noErrors(t)
	p.navigate(t, h.URL()+"/#/r/dev")
	p.fill(t, "#login-name", "alice")
	p.fill(t, "#login-password", password("alice"))
	p.click(t, "#login-submit")
	p.waitJS(t, "in #dev", `document.querySelector('#room-title').textContent === '#dev'`)
	p.waitIdle(t)

	// Not enrolled: the hint says what that means and offers enrolling.
	hint := `#composer-hint .words-hint[data-agents="alice/demo"]`
	p.compose(t, "@alice/demo delete notes.txt")
	p.visible(t, hint+" .enroll-prompt button.open-devices")
	p.waitJS(t, "the hint says why", fmt.Sprintf(`document.querySelector(%s).textContent.includes("as a teammate's, not yours")`, js(hint)))
	p.shot(t, screenshots(t), "unsigned-words-hint")
	p.do(t, "press Enter", pressEnter())
	p.waitJS(t, "the message box to empty after sending", `document.querySelector('#composer').value === ''`)
	if st := spy.next(t, "delete notes.txt"); st.Words != nil {
		t.Fatalf("an unenrolled browser's post carries words %+v", st.Words)
	}
	// The bridge took them as a teammate's: the delete asks despite
	// auto-approve, and the receipt says why, in the bridge's words.
	msg := messageJS("alice", "delete notes.txt")
	strict := fmt.Sprintf(`(%s)?.querySelector('.receipt[data-agent="alice/demo"][data-placement="teammate"]')`, msg)
	p.waitJS(t, "the receipt saying the words went as a teammate's", fmt.Sprintf(`(%s)?.textContent.includes("no signature") || false`, strict))
	card := `#approval-tray .approval-card[data-agent="alice/demo"][data-status="pending"]`
	p.visible(t, card+" button.deny")
	p.waitJS(t, "the card says why the turn is tainted", fmt.Sprintf(`document.querySelector(%s).textContent.includes("not signed by one of @alice's enrolled devices")`, js(card+" .tainted-flag")))
	p.shot(t, screenshots(t), "unsigned-words-receipt")
	p.click(t, card+" button.deny")
	p.visible(t, `#approval-tray .approval-card[data-agent="alice/demo"][data-status="denied"]`)
	p.waitIdle(t)
	p.waitReceipt(t, msg, demo, "done", "failed", "interrupted")
	p.waitJS(t, "the turn's outcome still says how the words were taken", fmt.Sprintf(`!!(%s)`, strict))
	if n := ranTimes(t, alice, "dev", "delete_file notes.txt"); n != 0 {
		t.Fatalf("unsigned words ran the delete %d times", n)
	}
	// The thread's composer says the same of a reply to her agent (the
	// To-agent switch addresses it without a mention).
	p.openThreadOf(t, msg)
	p.fill(t, "#thread-composer", "and then?")
	p.visible(t, `#thread-words-hint .words-hint[data-agents="alice/demo"] .enroll-prompt`)
	p.fill(t, "#thread-composer", " ")
	p.gone(t, "#thread-words-hint .words-hint")
	p.closeThread(t)

	enroll(t, p, br, "laptop", false)
	var laptop string
	for _, d := range br.Devices() {
		if d.Name == "laptop" {
			laptop = d.ID
		}
	}

	// Enrolled: no hint; the words go signed, over the exact text (NFD,
	// trailing spaces) and the attached file's bytes.
	text := "@alice/demo cafe\u0301 — read the log   "
	p.compose(t, "@alice/demo ")
	p.gone(t, hint)
	path := filepath.Join(t.TempDir(), "build.log")
	body := []byte("build started\r\nbuild ok\n")
	if err := os.WriteFile(path, body, 0o644); err != nil {
		t.Fatal(err)
	}
	p.do(t, "attach build.log", chromedp.SetUploadFiles(css("#file-input"), []string{path}, chromedp.NodeReady))
	p.visible(t, `#attachments .attachment[data-state="ready"][data-name="build.log"]`)
	p.sendLines(t, text)
	st := spy.next(t, "read the log")
	if st.Text != text {
		t.Fatalf("the steer's text is %q, want %q byte for byte", st.Text, text)
	}
	if st.Words == nil {
		t.Fatal("the enrolled owner's words reached the bridge unsigned")
	}
	if st.Words.Device != laptop {
		t.Fatalf("signed by %q, want the laptop %q", st.Words.Device, laptop)
	}
	got, err := authz.ParseStatement([]byte(st.Words.Statement))
	if err != nil {
		t.Fatalf("the browser's statement: %v: %s", err, st.Words.Statement)
	}
	want := authz.Statement{V: 1, Kind: authz.StatementMessage, Decision: "say", Bridge: br.Creds.BridgeID, Agent: demo, Room: "dev",
		TextHash: authz.TextHash(text), Files: []authz.StatementFile{{Name: "build.log", SHA256: authz.FileHash(body)}}, Expires: got.Expires, Nonce: got.Nonce}
	if g, w := fmt.Sprintf("%+v", got), fmt.Sprintf("%+v", want); g != w {
		t.Fatalf("the statement is\n%s\nwant\n%s", g, w)
	}
	if exp := got.ExpiresAt(); exp.Before(time.Now()) || exp.After(time.Now().Add(authz.MaxStatementAhead)) {
		t.Fatalf("expires %s", got.Expires)
	}
	signedMsg := messageJS("alice", "read the log")
	p.waitReceipt(t, signedMsg, demo, "started", "done")
	p.waitIdle(t)

	// The bridge takes her signed words as hers: her auto-approve list
	// runs the delete without asking.
	p.send(t, "@alice/demo delete notes.txt please")
	testhub.WaitFor(t, 30*time.Second, "the delete, auto-approved", func() bool { return ranTimes(t, alice, "dev", "delete_file notes.txt") == 1 })
	p.waitReceipt(t, messageJS("alice", "delete notes.txt please"), demo, "started", "done")
	for _, m := range []string{signedMsg, messageJS("alice", "delete notes.txt please")} {
		if eval[bool](t, p, fmt.Sprintf(`!!(%s)?.querySelector('.receipt[data-placement="teammate"]')`, m)) {
			t.Fatalf("signed words were placed as a teammate's: %s", eval[string](t, p, fmt.Sprintf(`(%s).querySelector('.receipts').textContent`, m)))
		}
	}
	if eval[int](t, p, `document.querySelectorAll('#approval-tray .approval-card[data-agent="alice/demo"][data-status="pending"]').length`) != 0 {
		t.Fatal("the owner's signed words still asked for approval")
	}
	p.waitIdle(t)

	// A reply in the thread of her turn: signed from the thread's composer,
	// naming the thread.
	p.openThreadOf(t, signedMsg)
	root := eval[string](t, p, signedMsg+`.dataset.id`)
	p.fill(t, "#thread-composer", "@alice/demo delete old.log")
	p.do(t, "press Enter", pressEnter())
	st = spy.next(t, "delete old.log")
	if got, err = authz.ParseStatement([]byte(wordsOf(t, st))); err != nil || got.Thread != root || got.Room != "dev" || got.TextHash != authz.TextHash(st.Text) {
		t.Fatalf("the thread reply's statement %+v (%v), want thread %s", got, err, root)
	}
	testhub.WaitFor(t, 30*time.Second, "the thread's delete, auto-approved", func() bool { return ranTimes(t, alice, "dev", "delete_file old.log") == 1 })
	p.closeThread(t)
	testhub.WaitFor(t, 30*time.Second, "the agent idle", func() bool { return agentStatus(t, alice) == "idle" })

	// Her DM with the agent: every message addresses it, no mention needed;
	// signed all the same.
	dm := "dm:alice:alice+demo"
	p.click(t, fmt.Sprintf(`.room-link[data-room=%q]`, dm))
	p.waitJS(t, "the DM open", `location.hash === '#/r/' + encodeURIComponent('dm:alice:alice+demo')`)
	p.send(t, "delete main.go")
	st = spy.next(t, "delete main.go")
	if got, err = authz.ParseStatement([]byte(wordsOf(t, st))); err != nil || got.Room != dm || got.Thread != "" || got.Agent != demo {
		t.Fatalf("the DM's statement %+v (%v)", got, err)
	}
	testhub.WaitFor(t, 30*time.Second, "the DM's delete, auto-approved", func() bool { return ranTimes(t, alice, dm, "delete_file main.go") == 1 })
}

// wordsOf is the statement a steer's words carry (fails without).
func wordsOf(t *testing.T, st wire.Steer) string {
	t.Helper()
	if st.Words == nil {
		t.Fatalf("steer %s (%q) carries no words", st.ID, st.Text)
	}
	return st.Words.Statement
}

func agentStatus(t *testing.T, c *testhub.Client) string {
	for _, a := range testhub.AsList(c.Must(200, "GET", "/api/v1/agents", nil).Body["agents"]) {
		if a["handle"] == demo {
			s, _ := a["status"].(string)
			return s
		}
	}
	return ""
}

// TestMentionsParsedAsTheHubDoes: the browser reads the agents a text
// addresses exactly as the hub does (chat.ParseMentions), so it signs for
// exactly the agents the hub will steer — the hub refuses a signature for
// an agent the message does not address. Random texts from fragments that
// matter to the parser (handles, quotes, fences, code spans, forwarded
// markers, e-mail-like and path-like runs, non-ASCII letters and spaces).
func TestMentionsParsedAsTheHubDoes(t *testing.T) {
	frags := []string{"@alice/demo", "@Alice/Demo", "@bob/x.", "@bob/x-", "hi", " ", "\n", "\r\n", "> ", " > ", "```", "   ```", "````", "`", "``",
		"e@alice/demo", "(@alice/demo)", "@alice/demo,", "/@alice/demo", "\\@alice/demo", "@alice", "@alice/", "@a/b/c", "\t", ">", "~~~",
		"[@alice/demo](x)", "@alice/de_mo", "@alice/demo's", "é", "@alice/démo", ":@alice/demo", "_@alice/demo", ".@alice/demo", "<@alice/demo>",
		"@@alice/demo", "---------- Forwarded message ----------", "Forwarded from x", "\u00a0", "\ufeff", "\u0085", "日本", "😀@alice/demo", "١",
		"@x/" + strings.Repeat("a", 33), "@" + strings.Repeat("b", 32) + "/demo"}
	r := rand.New(rand.NewSource(22))
	texts := []string{"", "@alice/demo", "> @alice/demo", "```\n@alice/demo\n```\n@bob/x", "see `@alice/demo` and @bob/x"}
	for len(texts) < 3000 {
		var b strings.Builder
		for n := 1 + r.Intn(12); n > 0; n-- {
			b.WriteString(frags[r.Intn(len(frags))])
		}
		texts = append(texts, b.String())
	}
	h := testhub.Start(t, testhub.Options{})
	p := newPage(t, startBrowser(t), "parser")
	p.navigate(t, h.URL()+"/")
	in, _ := json.Marshal(texts)
	got := evalAwait[[][]string](t, p, fmt.Sprintf(`import('/js/render/mentions.js').then((m) => %s.map((s) => m.agentMentions(s)))`, in))
	if len(got) != len(texts) {
		t.Fatalf("%d answers for %d texts", len(got), len(texts))
	}
	bad := 0
	for i, text := range texts {
		want := []string{}
		for _, m := range chat.ParseMentions(text) {
			if m.Kind == chat.MentionAgent {
				want = append(want, m.Owner+"/"+m.Agent)
			}
		}
		if fmt.Sprint(got[i]) != fmt.Sprint(want) {
			if bad++; bad <= 10 {
				t.Errorf("%q: the browser reads %v, the hub %v", text, got[i], want)
			}
		}
	}
}
