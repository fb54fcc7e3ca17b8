package browser

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// firstMinute: the admin's first screen says what to set up; a link to a
// public room bob is not in offers Join (never another room); a room that
// does not exist says so.
func (s *suite) firstMinute(t *testing.T) {
	r, b := s.root, s.bo
	r.visible(t, "#welcome")
	r.visible(t, `#welcome .welcome-step[data-step="welcome-invite"]:not(.done)`)
	r.visible(t, `#welcome .welcome-step[data-step="welcome-pair"]:not(.done)`)
	r.shot(t, s.shots, "welcome")
	r.click(t, "#welcome-pair")
	r.visible(t, "#pairing-dialog")
	r.do(t, "press Esc", chromedp.KeyEvent(kb.Escape))
	r.gone(t, "#pairing-dialog")
	r.visible(t, "#welcome") // nothing paired yet
	if eval[bool](t, b, `!!document.querySelector('#welcome:not([hidden])')`) {
		t.Error("bob, who is no admin, sees the setup card")
	}

	s.admin.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "design", "topic": "Mockups and reviews"})
	b.navigate(t, s.h.URL()+"/#/r/design")
	b.visible(t, "#join-room")
	b.waitJS(t, "the room's topic", `document.querySelector('.join-card').textContent.includes('Mockups and reviews')`)
	b.waitJS(t, "the title", `document.querySelector('#room-title').textContent === '#design'`)
	b.gone(t, "#composer")
	b.shot(t, s.shots, "join")
	b.click(t, "#join-room")
	b.waitJS(t, "#design open", `location.hash === '#/r/design' && document.querySelector('#room-title').textContent === '#design'`)
	b.visible(t, `.room-link[data-room="design"].active`)
	b.visible(t, "#composer")

	b.navigate(t, s.h.URL()+"/#/r/nosuch")
	b.visible(t, ".join-missing")
	b.waitJS(t, "no room shown in its place", `location.hash === '#/r/nosuch' && !document.querySelector('#messages .message')`)

	r.click(t, "#welcome-dismiss")
	r.gone(t, "#welcome")
}
