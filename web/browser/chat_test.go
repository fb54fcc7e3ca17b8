package browser

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
)

// composerIs waits until the message box holds exactly text.
func (p *page) composerIs(t testing.TB, text string) {
	t.Helper()
	p.waitJS(t, fmt.Sprintf("the message box to hold %q", text), fmt.Sprintf(`document.querySelector('#composer').value === %s`, js(text)))
}

// slashCommands: "/" opens the command popup; Enter picks, then runs.
// /topic reaches the other member live, /invite adds root, /deny and /stop
// act on alice's agent, /leave takes root out again.
func (s *suite) slashCommands(t *testing.T) {
	a, b, r := s.al, s.bo, s.root
	for _, p := range []*page{a, b} {
		p.click(t, `.room-link[data-room="dev"]`)
		p.waitJS(t, "#dev open", `document.querySelector('#room-title').textContent === '#dev'`)
	}
	a.waitIdle(t)

	// The popup lists what applies here; typing narrows it; Enter picks.
	a.compose(t, "/")
	a.visible(t, `#slash-list .slash-option[data-command="topic"]`)
	a.visible(t, `#slash-list .slash-option[data-command="invite"]`)
	a.visible(t, `#slash-list .slash-option[data-command="stop"]`) // alice's agent is in the room
	a.shot(t, s.shots, "slash")
	b.compose(t, "/")
	b.visible(t, `#slash-list .slash-option[data-command="topic"]`)
	if eval[bool](t, b, `!!document.querySelector('#slash-list .slash-option[data-command="stop"]')`) {
		t.Error("bob is offered /stop with no agent of his in the room")
	}
	b.compose(t, "")
	a.typeMore(t, "top")
	a.waitJS(t, "only /topic left", `document.querySelectorAll('#slash-list .slash-option').length === 1`)
	a.do(t, "press Enter", pressEnter())
	a.composerIs(t, "/topic ")
	a.visible(t, "#composer-hint .slash-hint")
	a.typeMore(t, "Parser refactor: ship on Friday")
	a.do(t, "press Enter", pressEnter())
	a.composerIs(t, "")
	for _, p := range []*page{a, b} {
		p.waitJS(t, "the new topic", `document.querySelector('#room-topic').textContent === 'Parser refactor: ship on Friday'`)
	}
	if n := eval[int](t, b, countJS("/topic")); n != 0 {
		t.Error("the command was posted as a message")
	}

	// An unknown command is refused in words and stays in the box; "//" posts.
	a.compose(t, "/frobnicate now")
	a.do(t, "press Enter", pressEnter())
	a.visible(t, "#composer-error")
	a.waitJS(t, "the reason", `document.querySelector('#composer-error').textContent.includes('not a command')`)
	a.composerIs(t, "/frobnicate now")
	a.sendLines(t, "//frobnicate is a word now")
	b.waitJS(t, "the escaped message", messageJS("alice", "/frobnicate is a word now"))

	// /invite completes people who are not in the room.
	a.compose(t, "/invite @ro")
	a.visible(t, `#slash-list .slash-option[data-value="@root"]`)
	if eval[bool](t, a, `!!document.querySelector('#slash-list .slash-option[data-value="@bob"]')`) {
		t.Error("/invite offers bob, who is in the room already")
	}
	if eval[bool](t, a, `!document.querySelector('#mention-list').hidden`) {
		t.Error("the @mention popup opened over the command's own")
	}
	a.do(t, "press Enter", pressEnter()) // picks @root
	a.composerIs(t, "/invite @root ")
	a.do(t, "press Enter", pressEnter()) // runs
	a.composerIs(t, "")
	r.visible(t, `.room-link[data-room="dev"]`) // root's list, live

	// /deny decides the one request waiting for alice in this room.
	b.send(t, "@alice/demo delete notes.txt")
	card := `#approval-tray .approval-card[data-agent="alice/demo"][data-status="pending"]`
	a.visible(t, card+" button.deny")
	a.compose(t, "/den")
	a.do(t, "press Enter", pressEnter())
	a.composerIs(t, "/deny ")
	a.visible(t, `#slash-list .slash-option`) // the request, with its hash
	a.do(t, "press Escape", chromedp.KeyEvent("\x1b"))
	a.do(t, "press Enter", pressEnter())
	a.composerIs(t, "")
	denyMsg := messageJS("bob", "delete notes.txt")
	for _, p := range []*page{a, b} {
		p.visible(t, `#approval-tray .approval-card[data-agent="alice/demo"][data-status="denied"]`)
		p.waitJS(t, "the turn to end", threadLineJS(denyMsg, demo)+` === 'completed'`)
	}
	a.waitIdle(t)

	// /stop with no name stops alice's one working agent.
	b.send(t, "@alice/demo delete main.go")
	a.visible(t, card)
	a.send(t, "/stop")
	msg := messageJS("bob", "delete main.go")
	b.waitReceipt(t, msg, demo, "interrupted")
	a.waitIdle(t)

	// /leave asks first.
	r.click(t, `.room-link[data-room="dev"]`)
	r.waitJS(t, "#dev open", `document.querySelector('#room-title').textContent === '#dev'`)
	r.compose(t, "/leave")
	r.do(t, "press Enter", pressEnter())
	r.click(t, "#confirm-ok")
	r.gone(t, `.room-link[data-room="dev"]`)
	a.waitJS(t, "the member count back to 2", `document.querySelector('#member-count').textContent === '2'`)
}
