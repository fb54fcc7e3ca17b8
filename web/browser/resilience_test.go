package browser

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
)

func (s *suite) markupAsText(t *testing.T) {
	a, b := s.al, s.bo
	b.click(t, `.room-link[data-room="dev"]`)
	b.waitJS(t, "#dev open", `document.querySelector('#room-title').textContent === '#dev'`)
	const payload = `<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>`
	b.send(t, payload)
	msg := messageJS("bob", "window.__xss=2")
	// Links and images whose targets run code or carry data, raw HTML with
	// handlers, an iframe and an SVG: all inert.
	const hostile = "[click](javascript:window.__xss=3) [data](data:text/html;base64,PHNjcmlwdD4=) [vb](vbscript:x)\n" +
		"![pic](data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+) <a href=\"javascript:window.__xss=4\" onclick=\"window.__xss=5\">a</a>\n" +
		"<iframe src=\"/\"></iframe><svg onload=\"window.__xss=6\"></svg> <b onmouseover=\"window.__xss=7\">b</b> hostile-end"
	b.sendLines(t, hostile)
	hmsg := messageJS("bob", "hostile-end")
	for _, p := range []*page{a, b} {
		p.waitJS(t, "the markup message", msg)
		if got := eval[string](t, p, msg+`.querySelector('.message-body').textContent`); got != payload {
			t.Errorf("%s's page shows %q, want the literal text %q", p.name, got, payload)
		}
		if n := eval[int](t, p, msg+`.querySelectorAll('img, script').length`); n != 0 {
			t.Errorf("%s's page made %d elements from the message text", p.name, n)
		}
		p.waitJS(t, "the hostile markdown", hmsg)
		body := hmsg + `.querySelector('.message-body')`
		if n := eval[int](t, p, body+`.querySelectorAll('img, script, iframe, svg, object, embed, b, [onclick], [onload], [onerror], [onmouseover], [style]').length`); n != 0 {
			t.Errorf("%s's page made %d live elements from hostile markdown", p.name, n)
		}
		if bad := eval[[]string](t, p, `[...`+body+`.querySelectorAll('a[href]')].map((a) => a.getAttribute('href')).filter((h) => !/^https?:/.test(h))`); len(bad) != 0 {
			t.Errorf("%s's page links to %q", p.name, bad)
		}
		for _, text := range []string{"click", "data", "pic", `<iframe src="/"></iframe>`, `<b onmouseover="window.__xss=7">b</b>`} {
			if !eval[bool](t, p, body+`.textContent.includes(`+js(text)+`)`) {
				t.Errorf("%s's page does not show %q as text", p.name, text)
			}
		}
		if n := eval[int](t, p, `document.querySelectorAll('img[src="x"], img[onerror]').length`); n != 0 {
			t.Errorf("%s's page has %d injected images", p.name, n)
		}
		if typ := eval[string](t, p, `typeof window.__xss`); typ != "undefined" {
			t.Errorf("%s's page ran the message's script: window.__xss is %s", p.name, typ)
		}
	}
}

// markdown: what agents write — headings, lists, task lists, tables, code
// with its language — renders as such, and links open in a new tab.
func (s *suite) markdown(t *testing.T) {
	a, b := s.al, s.bo
	const text = "## Plan for the parser\n\n" +
		"1. read the **grammar**\n2. write `lexer.go`\n   - keep it small\n\n" +
		"- [x] tokens\n- [ ] errors\n\n" +
		"| file | lines | state |\n|:--|--:|:-:|\n| lexer.go | 120 | done |\n| parser.go | 480 | ~~old~~ new |\n\n" +
		"```go\nfunc Lex(s string) []Token { return nil } // ask @alice\n```\n" +
		"> quoted note\n\nSee https://go.dev/ref/spec and ask @alice. md-end"
	a.sendLines(t, text)
	msg := messageJS("alice", "md-end")
	for _, p := range []*page{a, b} {
		p.waitJS(t, "the markdown message", msg)
		body := msg + `.querySelector('.message-body')`
		checks := map[string]string{
			"a heading":               `!!%s.querySelector('h2')`,
			"a numbered list, nested": `%s.querySelectorAll('ol > li').length === 2 && !!%[1]s.querySelector('ol li ul li')`,
			"a task list":             `%s.querySelectorAll('li input[type=checkbox][disabled]').length === 2 && %[1]s.querySelector('li input[type=checkbox]').checked`,
			"a table with alignment":  `%s.querySelectorAll('table tbody tr').length === 2 && %[1]s.querySelector('td[align="right"]')?.textContent === '120'`,
			"code with its language":  `%s.querySelector('.code-block .code-lang')?.textContent === 'go' && %[1]s.querySelector('.code-block pre').textContent.startsWith('func Lex')`,
			"a quote":                 `!!%s.querySelector('blockquote')`,
			"a link to a new tab":     `(%s.querySelector('a[href="https://go.dev/ref/spec"]')?.rel || '').includes('noopener') && %[1]s.querySelector('a[href^="https://go.dev"]').target === '_blank'`,
			"a mention":               `!!%s.querySelector('.mention[data-mention="alice"]')`,
			"strikethrough and bold":  `!!%s.querySelector('del') && !!%[1]s.querySelector('strong')`,
			"no mention inside code":  `!%s.querySelector('code .mention, pre .mention')`,
		}
		for what, cond := range checks {
			if !eval[bool](t, p, fmt.Sprintf(cond, body)) {
				t.Errorf("%s's page: no %s in the rendered markdown", p.name, what)
			}
		}
	}
	b.shot(t, s.shots, "markdown")
}

// phone opens the app on a phone-sized screen (a fresh load, as a phone
// would): the room list and the side panel become drawers.
func (s *suite) phone(t *testing.T) {
	b := s.bo
	b.do(t, "open on a phone", chromedp.EmulateViewport(390, 844, chromedp.EmulatePortrait, chromedp.EmulateMobile), chromedp.Reload())
	defer b.do(t, "back to the desktop", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.ClearDeviceMetricsOverride, cdp.Empty{})
		return err
	}), chromedp.Reload())
	b.waitJS(t, "the phone width", `window.innerWidth === 390`)
	b.visible(t, "#app-screen")
	b.waitJS(t, "#dev open", `document.querySelector('#room-title').textContent === '#dev'`)
	b.visible(t, "#menu-toggle")
	b.gone(t, "#sidebar")    // a drawer now
	b.gone(t, "#side-panel") // a drawer too
	b.visible(t, "#composer")
	b.waitJS(t, "the newest message in view", `(() => { const m = [...document.querySelectorAll('#messages .message[data-id]')].pop(); if (!m) return false; const r = m.getBoundingClientRect(); return r.bottom > 0 && r.top < innerHeight; })()`)
	if w := eval[int](t, b, `document.documentElement.scrollWidth`); w > 390 {
		t.Errorf("the page is %d px wide on a 390 px phone: it scrolls sideways", w)
	}
	b.shot(t, s.shots, "phone")

	// The room list opens as a drawer and closes with Esc.
	b.click(t, "#menu-toggle")
	b.visible(t, `#sidebar .room-link[data-room="dev"]`)
	b.do(t, "press Esc", chromedp.KeyEvent(kb.Escape))
	b.gone(t, "#sidebar")
	// So does the agent panel, with its close button.
	b.click(t, "#panel-toggle")
	b.visible(t, `#side-panel .agent-row[data-handle="alice/demo"]`)
	b.click(t, "#panel-close")
	b.gone(t, "#side-panel")

	// A thread takes the whole screen; its message box is in reach.
	root := messageJS("bob", "@alice/demo delete README.md")
	b.waitJS(t, "the mention that started a turn", root)
	eval[bool](t, b, `(() => { `+root+`.scrollIntoView({ block: 'center' }); return true; })()`)
	b.openThreadOf(t, root)
	b.waitJS(t, "the thread across the screen", `(() => { const r = document.querySelector('#thread-panel').getBoundingClientRect(); return r.left === 0 && r.width === 390; })()`)
	b.visible(t, "#thread-composer")
	b.shot(t, s.shots, "phone-thread")
	b.closeThread(t)
}

func (s *suite) reconnect(t *testing.T) {
	a, b := s.al, s.bo
	for _, p := range []*page{a, b} {
		p.waitJS(t, "#dev open", `location.hash === '#/r/dev'`)
		p.waitJS(t, "the history loaded", messageJS("bob", "hello from bob"))
		eval[bool](t, p, `window.__sameDocument = true`)
	}
	dataDir := s.h.DataDir
	s.h.Stop()
	for _, p := range []*page{a, b} {
		p.visible(t, "#reconnecting")
	}
	// bob opens a room while the hub is down: its history cannot load.
	b.click(t, `.room-link[data-room="bob-lab"]`)
	b.visible(t, "#messages .history-error")

	s.h = testhub.Start(t, testhub.Options{DataDir: dataDir, HTTPAddr: s.addr})
	// Posted at once: alice's page may still be away (it catches up with
	// since=) or back already (a live event).
	s.h.Login("bob", password("bob")).Post("dev", "posted while you were away")
	for _, p := range []*page{a, b} {
		p.waitJSFor(t, 30*time.Second, "the live feed back", `document.querySelector('#reconnecting').hidden`)
	}
	// The room that failed to load loads by itself once the feed is back.
	b.visible(t, `#messages [data-testid="messages-empty"]`)
	b.gone(t, "#messages .history-error")

	b.click(t, `.room-link[data-room="dev"]`)
	b.waitJS(t, "#dev open", `document.querySelector('#room-title').textContent === '#dev'`)
	b.send(t, "back after the restart")
	for _, p := range []*page{a, b} {
		for _, text := range []string{"posted while you were away", "back after the restart"} {
			p.waitJS(t, text, messageJS("bob", text))
			if n := eval[int](t, p, countJS(text)); n != 1 {
				t.Errorf("%s's page shows %q %d times", p.name, text, n)
			}
		}
		if !eval[bool](t, p, noDuplicateIDsJS) {
			t.Errorf("%s's page shows a message id twice after reconnecting", p.name)
		}
		if !eval[bool](t, p, `window.__sameDocument === true`) {
			t.Errorf("%s's page reloaded", p.name)
		}
	}
}
