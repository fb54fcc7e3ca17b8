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
	for _, p := range []*page{a, b} {
		p.waitJS(t, "the markup message", msg)
		if got := eval[string](t, p, msg+`.querySelector('.message-body').textContent`); got != payload {
			t.Errorf("%s's page shows %q, want the literal text %q", p.name, got, payload)
		}
		if n := eval[int](t, p, msg+`.querySelectorAll('img, script').length`); n != 0 {
			t.Errorf("%s's page made %d elements from the message text", p.name, n)
		}
		if n := eval[int](t, p, `document.querySelectorAll('img[src="x"], img[onerror]').length`); n != 0 {
			t.Errorf("%s's page has %d injected images", p.name, n)
		}
		if typ := eval[string](t, p, `typeof window.__xss`); typ != "undefined" {
			t.Errorf("%s's page ran the message's script: window.__xss is %s", p.name, typ)
		}
	}
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
	last := messageJS("bob", "window.__xss=2")
	b.waitJS(t, "the newest message in view", fmt.Sprintf(`(() => { const m = %s; if (!m) return false; const r = m.getBoundingClientRect(); return r.bottom > 0 && r.top < innerHeight; })()`, last))
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
