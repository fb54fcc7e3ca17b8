package browser

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

const demo = "alice/demo"

// receiptJS is the status of agent's receipt on the message msg ("" if
// there is none yet).
func receiptJS(msg, agent string) string {
	return fmt.Sprintf(`(((m) => m && m.querySelector(%s)?.dataset.status) (%s) || '')`,
		js(fmt.Sprintf(`.receipts .receipt[data-agent=%q]`, agent)), msg)
}

// waitReceipt waits until the receipt of agent on msg has one of statuses.
func (p *page) waitReceipt(t testing.TB, msg, agent string, statuses ...string) {
	t.Helper()
	list := "["
	for i, s := range statuses {
		if i > 0 {
			list += ","
		}
		list += js(s)
	}
	list += "]"
	// A receipt that went on to its turn's outcome still says how it
	// reached the agent (data-via).
	via := fmt.Sprintf(`(((m) => m && m.querySelector(%s)?.dataset.via) (%s) || '')`,
		js(fmt.Sprintf(`.receipts .receipt[data-agent=%q]`, agent)), msg)
	p.waitJS(t, fmt.Sprintf("a receipt of @%s in %v", agent, statuses), fmt.Sprintf(`%s.includes(%s) || %s.includes(%s)`, list, receiptJS(msg, agent), list, via))
}

// waitIdle waits until the agent panel shows the demo agent idle, and
// that a mention would start a turn (the mode follows the status).
func (p *page) waitIdle(t testing.TB) {
	t.Helper()
	p.visible(t, fmt.Sprintf(`#agent-panel .agent-row[data-handle=%q][data-status="idle"] .agent-mode[data-mode="start"]`, demo))
}

// threadMessageJS is messageJS inside the open thread panel.
func threadMessageJS(author, text string) string {
	sel := fmt.Sprintf(`#thread-messages .message[data-id][data-author=%q]`, author)
	return fmt.Sprintf(`([...document.querySelectorAll(%s)].find((m) => (m.querySelector('.message-body')?.textContent || '').includes(%s)) || null)`, js(sel), js(text))
}

// threadLineJS is the status of agent's turn on the thread line under msg.
func threadLineJS(msg, agent string) string {
	return fmt.Sprintf(`(((m) => m && m.querySelector(%s)?.dataset.status) (%s) || '')`,
		js(fmt.Sprintf(`.thread-line .thread-turn[data-agent=%q]`, agent)), msg)
}

// openThreadOf opens the thread under the channel message msg.
func (p *page) openThreadOf(t testing.TB, msg string) {
	t.Helper()
	p.waitJS(t, "the thread line", msg+`?.querySelector('.thread-line') != null`)
	eval[bool](t, p, msg+`.querySelector('.thread-line').click() || true`)
	p.visible(t, "#thread-panel #thread-messages")
	p.waitJS(t, "the thread's root", fmt.Sprintf(`document.querySelector('#thread-messages .thread-root')?.dataset.id === String(%s.dataset.id)`, msg))
}

func (p *page) closeThread(t testing.TB) {
	t.Helper()
	p.click(t, "#thread-close")
	p.gone(t, "#thread-panel")
}

// mentionReceipt: a mention starts a turn, and the turn is a thread: the
// channel shows the mention with a live status line; the agent's reply and
// activity are in the thread, not in the channel.
func (s *suite) mentionReceipt(t *testing.T) {
	a, b := s.al, s.bo
	b.compose(t, "@alice/demo list the files please")
	// Before sending, the composer says what the mention will do.
	b.visible(t, `#composer-hint .mode-hint[data-agent="alice/demo"][data-mode="start"]`)
	b.do(t, "press Enter", pressEnter())

	msg := messageJS("bob", "list the files please")
	b.waitReceipt(t, msg, demo, "started", "steered")
	b.visible(t, `#messages .receipt[data-agent="alice/demo"] .receipt-text`)
	a.waitJS(t, "bob's mention on alice's page", msg)
	for _, p := range []*page{a, b} {
		p.waitJS(t, "the turn's status line", threadLineJS(msg, demo)+` !== ''`)
	}
	b.waitIdle(t)
	for _, p := range []*page{a, b} {
		p.waitJS(t, "the status line to say done", threadLineJS(msg, demo)+` === 'completed'`)
		p.waitJS(t, "the replies counted", msg+`.querySelector('.thread-line').dataset.count !== '0'`)
		if n := eval[int](t, p, `document.querySelectorAll('#messages .message[data-author="alice/demo"], #messages .activity-group').length`); n != 0 {
			t.Errorf("%s's channel shows %d of the agent's messages: they belong in the thread", p.name, n)
		}
	}
	// The sender reads the outcome in words, not a turn id.
	b.waitJS(t, "the receipt to say done", fmt.Sprintf(`(((m) => m && m.querySelector(%s)?.textContent) (%s) || '') === 'done'`,
		js(`.receipts .receipt[data-agent="alice/demo"] .receipt-text`), msg))
	b.shot(t, s.shots, "room")

	b.openThreadOf(t, msg)
	b.waitJS(t, "the agent's reply in the thread", threadMessageJS(demo, "list the files please"))
	b.visible(t, `#thread-messages .message[data-author="alice/demo"][data-author-kind="agent"] .tag-agent`)
	b.visible(t, `#thread-messages .activity-group[data-author="alice/demo"]`) // progress folds into Activity
	b.shot(t, s.shots, "thread")
	// The reply box completes @mentions too.
	b.fill(t, "#thread-composer", "@alice/de")
	b.visible(t, `#thread-mention-list .mention-option[data-value="alice/demo"]`)
	b.do(t, "press Esc", chromedp.KeyEvent(kb.Escape))
	b.gone(t, "#thread-mention-list")
	eval[bool](t, b, `(() => { const e = document.querySelector('#thread-composer'); e.value = ''; return true; })()`)
	b.closeThread(t)
}

// approval: the approval card is in the turn's thread (and the room's
// tray); bob's reply in the thread, addressed to the agent, steers that
// very turn; only alice decides.
func (s *suite) approval(t *testing.T) {
	a, b := s.al, s.bo
	a.waitIdle(t)
	b.send(t, "@alice/demo delete old.log")
	msg := messageJS("bob", "delete old.log")
	b.waitReceipt(t, msg, demo, "started", "steered")

	card := `#approval-tray .approval-card[data-agent="alice/demo"][data-owner="alice"][data-status="pending"]`
	// The owner decides: full card with the buttons, the hash and the taint.
	a.visible(t, card+" button.approve")
	a.visible(t, card+" button.deny")
	a.visible(t, card+" .tainted-flag") // bob steered the turn
	a.waitJS(t, "the payload hash", fmt.Sprintf(`document.querySelector(%s).dataset.hash.length === 64`, js(card+" .payload-hash")))
	a.visible(t, card+" .approval-expires")
	// Everyone else waits on the owner.
	b.visible(t, card+" .awaiting")
	b.waitJS(t, "awaiting @alice", fmt.Sprintf(`document.querySelector(%s).textContent === 'awaiting @alice'`, js(card+" .awaiting")))
	if eval[bool](t, b, fmt.Sprintf(`!!document.querySelector(%s)`, js("#approval-tray :is(button.approve, button.deny)"))) {
		t.Fatal("bob, who does not own the agent, is offered Approve/Deny")
	}
	b.visible(t, `#agent-panel .agent-row[data-handle="alice/demo"][data-status="needs-approval"]`)
	for _, p := range []*page{a, b} {
		p.waitJS(t, "the status line: waiting for approval", threadLineJS(msg, demo)+` === 'needs-approval'`)
	}

	// In the thread: the card, and bob's reply to the agent steers the turn.
	b.openThreadOf(t, msg)
	b.visible(t, `#thread-panel .approval-card[data-agent="alice/demo"][data-status="pending"] .awaiting`)
	b.visible(t, `#thread-form .thread-address[data-agent="alice/demo"][data-live="true"]`)
	b.waitJS(t, "addressed to the agent (bob started the turn)", `document.querySelector('#thread-address').checked`)
	b.fill(t, "#thread-composer", "also check notes.txt")
	b.do(t, "press Enter", pressEnter())
	steer := threadMessageJS("bob", "also check notes.txt")
	b.waitJS(t, "the reply in the thread", steer)
	b.waitJS(t, "the reply names the agent", steer+`.querySelector('.mention[data-mention="alice/demo"]') != null`)
	b.waitReceipt(t, steer, demo, "steered", "rejected", "queued")
	if st := eval[string](t, b, receiptJS(steer, demo)); st != "steered" {
		t.Fatalf("a reply in the turn's thread: receipt %q, want steered", st)
	}
	b.waitJS(t, "the receipt says so", fmt.Sprintf(`(%s).querySelector('.receipt .receipt-text').textContent.includes('steered')`, steer))
	a.openThreadOf(t, msg)
	a.visible(t, `#thread-panel .approval-card[data-status="pending"] button.approve`)
	a.shot(t, s.shots, "approval")

	a.click(t, `#thread-panel .approval-card[data-status="pending"] button.approve`)
	for _, p := range []*page{a, b} {
		p.visible(t, `#approval-tray .approval-card[data-agent="alice/demo"][data-status="approved"]`)
		p.waitJS(t, "the deletion reported in the thread", threadMessageJS(demo, "deleted old.log"))
		p.waitJS(t, "the steer noted in the reply", threadMessageJS(demo, "Noted from bob"))
	}
	decided := `#approval-tray .approval-card[data-agent="alice/demo"][data-status="approved"]`
	// The card names the device whose signature the bridge verified.
	a.waitJS(t, "decided by alice's laptop", fmt.Sprintf(`document.querySelector(%s).textContent.includes('Approved by @alice · laptop')`, js(decided)))
	if !strings.Contains(s.br.Out(), `signed by device "laptop"`) {
		t.Fatalf("the bridge did not verify the browser's signature:\n%s", s.br.Out())
	}
	if n := ranTimes(t, s.alice, "dev", "delete_file old.log"); n != 1 {
		t.Fatalf("the approved call ran %d times", n)
	}
	// Another approval arriving in the room leaves the decided card as it
	// was: the same element, its fold still open.
	eval[bool](t, b, fmt.Sprintf(`(() => { const c = document.querySelector(%s); c.__kept = true; c.querySelector('details').open = true; return true; })()`, js(decided)))
	evalAwait[bool](t, b, `import('/js/approvals.js').then((m) => { m.upsertApproval({id: 'a-tray-test', agent: 'alice/demo', owner: 'alice', room: 'dev', tool: 'shell', status: 'denied', at: new Date().toISOString(), summary: 'x'}); return true; })`)
	b.visible(t, `#approval-tray .approval-card[data-id="a-tray-test"]`)
	if !eval[bool](t, b, fmt.Sprintf(`(() => { const c = document.querySelector(%s); return !!c.__kept && c.querySelector('details').open; })()`, js(decided))) {
		t.Fatal("another approval rebuilt the decided card (its fold closed)")
	}
	evalAwait[bool](t, b, `import('/js/store.js').then((m) => { m.state.approvals.delete('a-tray-test'); m.emit('approvals'); return true; })`)
	b.gone(t, `#approval-tray .approval-card[data-id="a-tray-test"]`)
	a.waitIdle(t)
	for _, p := range []*page{a, b} {
		p.closeThread(t)
	}
}

func (s *suite) consent(t *testing.T) {
	a, b := s.al, s.bo
	s.h.Login("bob", password("bob")).Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "bob-lab", "topic": "Bob's experiments"})
	b.click(t, `.room-link[data-room="bob-lab"]`) // appears live
	b.waitJS(t, "#bob-lab open", `document.querySelector('#room-title').textContent === '#bob-lab'`)
	b.visible(t, "#agent-panel .empty-agents")

	// bob asks for alice's agent: an invitation, not a join.
	b.fill(t, "#add-agent-input", demo)
	b.click(t, "#add-agent-submit")
	b.waitJS(t, "the invitation note", `document.querySelector('#add-agent-note').textContent.includes('Invitation sent')`)
	b.visible(t, `#agent-panel .invite-row[data-status="pending"]`)
	if eval[bool](t, b, `!!document.querySelector('#agent-panel .agent-row')`) {
		t.Fatal("the agent joined bob's room before its owner agreed")
	}

	// alice answers in her Inbox.
	a.visible(t, "#panel-badge")
	a.waitJS(t, "the inbox badge", `document.querySelector('#inbox-badge').textContent === '1'`)
	a.click(t, "#tab-inbox")
	inv := `#inbox-panel .invitation-card[data-status="pending"]`
	a.waitJS(t, "the invitation names the room", fmt.Sprintf(`document.querySelector(%s).textContent.includes('#bob-lab')`, js(inv)))
	a.click(t, inv+" button.accept")
	a.gone(t, inv)
	a.gone(t, "#inbox-badge")

	b.visible(t, `#agent-panel .agent-row[data-handle="alice/demo"]`)
	b.gone(t, "#agent-panel .invite-row")

	a.click(t, "#tab-agents")
	a.visible(t, `#agent-panel .agent-row[data-handle="alice/demo"] button.timeline`)
	a.shot(t, s.shots, "agents")
}

func (s *suite) timeline(t *testing.T) {
	a := s.al
	a.click(t, `#agent-panel .agent-row[data-handle="alice/demo"] button.timeline`)
	a.visible(t, "#timeline-dialog")
	for _, kind := range []string{"consent.added", "turn.started", "approval.requested", "approval.approved", "turn.ended"} {
		a.visible(t, fmt.Sprintf(`#timeline-list .timeline-entry[data-kind=%q]`, kind))
	}
	if eval[bool](t, a, `!!document.querySelector('#timeline-dialog .chain-broken')`) {
		t.Error("the timeline says its hash chain does not verify")
	}
	a.shot(t, s.shots, "timeline")

	// The family filter keeps only turn.* entries.
	a.waitJS(t, "the turn.* filter", `!!document.querySelector('#timeline-kind option[value="family:turn"]')`)
	eval[bool](t, a, `(() => { const s = document.querySelector('#timeline-kind'); s.value = 'family:turn'; s.dispatchEvent(new Event('change')); return true; })()`)
	a.waitJS(t, "only turn entries", `(() => { const es = [...document.querySelectorAll('#timeline-list .timeline-entry')]; return es.length > 0 && es.every((e) => e.dataset.kind.startsWith('turn.')); })()`)
	a.do(t, "press Esc", chromedp.KeyEvent(kb.Escape))
	a.waitJS(t, "the dialog to close", `!document.querySelector('#timeline-dialog')`)
}
