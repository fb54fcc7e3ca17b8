package browser

import (
	"context"
	"fmt"
	"testing"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// recordNotifications makes p keep what the page shows as notifications
// (window.__notes) and how often it asked for permission (window.__asked):
// the real Notification API, observed. It takes effect from the next load.
const recordNotifications = `(() => {
	const N = window.Notification;
	if (!N) return;
	window.__notes = [];
	window.__asked = 0;
	const W = function (title, opts) { window.__notes.push({ title, body: (opts && opts.body) || '', tag: (opts && opts.tag) || '' }); return new N(title, opts); };
	W.requestPermission = (...a) => { window.__asked++; return N.requestPermission(...a); };
	Object.defineProperty(W, 'permission', { get: () => N.permission });
	W.prototype = N.prototype;
	window.Notification = W;
})()`

func (p *page) observeNotifications(t testing.TB) {
	t.Helper()
	p.do(t, "observe notifications", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, cdppage.AddScriptToEvaluateOnNewDocument, cdppage.AddScriptToEvaluateOnNewDocumentParams{Source: recordNotifications})
		return err
	}))
}

// grantNotifications answers the browser's permission question for p as
// a person clicking Allow would.
func (p *page) grantNotifications(t testing.TB, origin string) {
	t.Helper()
	c := chromedp.FromContext(p.ctx)
	ctx, cancel := context.WithTimeout(p.ctx, actionTimeout)
	defer cancel()
	_, err := cdp.Call(ctx, c.Browser, browser.SetPermission, browser.SetPermissionParams{
		Permission: &browser.PermissionDescriptor{Name: "notifications"}, Setting: browser.PermissionSettingGranted,
		Origin: origin, BrowserContextID: c.BrowserContextID,
	})
	if err != nil {
		t.Fatalf("%s: grant notifications: %v", p.name, err)
	}
}

// noteJS is the first recorded notification whose title includes text.
func noteJS(text string) string {
	return fmt.Sprintf(`((window.__notes || []).find((n) => n.title.includes(%s)) || null)`, js(text))
}

// notifications: the page asks for permission only after alice acts (never
// on load); once allowed, a mention of her elsewhere notifies her, a plain
// message does not (the room's level is "mentions") until she picks "all";
// an approval waiting for her notifies her too.
func (s *suite) notifications(t *testing.T) {
	a, b := s.al, s.bo
	a.observeNotifications(t)
	a.do(t, "reload", chromedp.Reload())
	a.visible(t, "#app-screen")
	a.waitJS(t, "#dev open", `location.hash === '#/r/dev' && !!document.querySelector('#composer')`)
	if got := eval[string](t, a, `Notification.permission + ' ' + window.__asked`); got != "default 0" {
		t.Fatalf("after loading, permission and requests are %q, want the browser not asked", got)
	}
	if eval[bool](t, a, `!!document.querySelector('#notify-prompt')`) {
		t.Fatal("the page offers notifications on load")
	}
	a.send(t, "morning all")
	a.visible(t, "#notify-prompt #notify-prompt-yes")
	a.shot(t, s.shots, "notify-prompt")
	a.grantNotifications(t, s.h.URL())
	a.click(t, "#notify-prompt-yes")
	a.gone(t, "#notify-prompt")
	a.waitJS(t, "one request", `window.__asked === 1 && Notification.permission === 'granted'`)

	// alice reads her DM with the agent; bob mentions her in #dev.
	a.click(t, `.room-link[data-room="dm:alice:alice+demo"]`)
	a.waitJS(t, "the DM open", `location.hash.includes('dm')`)
	b.send(t, "@alice can you look at the parser?")
	a.waitJS(t, "a notification for the mention", noteJS("bob mentioned you in #dev"))
	if body := eval[string](t, a, noteJS("bob mentioned you")+`.body`); body != "@alice can you look at the parser?" {
		t.Errorf("the notification reads %q", body)
	}
	b.send(t, "just chatting, no mention")
	b.send(t, "@alice/demo delete README.md")
	a.waitJS(t, "a notification for the approval", noteJS("@alice/demo needs your approval"))
	if eval[bool](t, a, "!!"+noteJS("bob in #dev")) {
		t.Error("a message without a mention notified alice at level mentions")
	}

	// Per room: "all" in #dev.
	a.click(t, `.room-link[data-room="dev"]`)
	a.click(t, "#notify-button")
	a.visible(t, `#notify-menu input[name="notify-level"][value="mentions"]:checked`)
	a.shot(t, s.shots, "notify-menu")
	a.click(t, `#notify-menu input[value="all"]`)
	a.waitJS(t, "the bell says all", `document.querySelector('#notify-button').dataset.level === 'all'`)
	a.click(t, "#notify-button")
	a.gone(t, "#notify-menu")
	a.click(t, `.room-link[data-room="dm:alice:alice+demo"]`)
	b.send(t, "lunch at noon?")
	a.waitJS(t, "a notification at level all", noteJS("bob in #dev"))

	// Clean up: alice denies the request from its card.
	a.click(t, `.room-link[data-room="dev"]`)
	a.click(t, `#approval-tray .approval-card[data-status="pending"] button.deny`)
	a.visible(t, `#approval-tray .approval-card[data-agent="alice/demo"][data-status="denied"]`)
	a.waitIdle(t)
}
