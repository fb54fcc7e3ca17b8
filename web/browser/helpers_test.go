package browser

// Launching headless Chromium and driving one user's page: actions with a
// deadline, DOM polling, JavaScript errors, screenshots.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

const (
	actionTimeout = 20 * time.Second // one click, key sequence or evaluation
	waitTimeout   = 20 * time.Second // default deadline of a DOM condition
	pollEvery     = 25 * time.Millisecond
)

type css = chromedp.CSS

// chromiumPath finds the browser: WHEELHOUSE_TEST_CHROMIUM, then Debian's
// /usr/bin/chromium, then chromium on PATH.
func chromiumPath(t testing.TB) string {
	if p := os.Getenv("WHEELHOUSE_TEST_CHROMIUM"); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("WHEELHOUSE_TEST_CHROMIUM=%s: %v (run scripts/test.sh, which installs Chromium)", p, err)
		}
		return p
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	t.Fatal("Chromium not found: set WHEELHOUSE_TEST_CHROMIUM or run scripts/test.sh, which installs it")
	return ""
}

// startBrowser starts one headless Chromium (with its own profile folder)
// and returns its root context; users get their own browser contexts from
// newPage. It stops when the test ends. extra adds flags.
func startBrowser(t *testing.T, extra ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath(t)),
		// Required on this closed network, running as root.
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		// Quiet and steady: no throttling of pages that are not in front.
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-background-timer-throttling", true),
		chromedp.Flag("disable-renderer-backgrounding", true),
		chromedp.Flag("disable-backgrounding-occluded-windows", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("mute-audio", true),
		chromedp.Flag("password-store", "basic"),
		chromedp.Flag("force-color-profile", "srgb"),
		chromedp.WindowSize(1280, 800),
	}
	opts = append(opts, extra...)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelBrowser(); cancelAlloc() })
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	return bctx
}

// page is one user's tab in a browser context of its own (own cookies and
// localStorage). It records uncaught exceptions and console errors.
type page struct {
	name string
	ctx  context.Context

	mu   sync.Mutex
	errs []string
}

func newPage(t *testing.T, browser context.Context, name string) *page {
	t.Helper()
	p := &page{name: name}
	ctx, cancel := chromedp.NewContext(browser, chromedp.WithNewBrowserContext(), chromedp.WithListener(p.listen))
	t.Cleanup(cancel)
	p.ctx = ctx
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("%s: open a tab: %v", name, err)
	}
	return p
}

func (p *page) listen(ev any) {
	var msg string
	switch e := ev.(type) {
	case *runtime.EventExceptionThrown:
		d := e.ExceptionDetails
		msg = "uncaught: " + d.Text
		if d.Exception != nil {
			msg += " " + d.Exception.Description
		}
		msg += fmt.Sprintf(" at %s:%d", d.URL, d.LineNumber+1)
	case *runtime.EventConsoleAPICalled:
		if e.Type != runtime.ConsoleAPICalledTypeError {
			return
		}
		var parts []string
		for _, a := range e.Args {
			if a.Description != "" {
				parts = append(parts, a.Description)
			} else {
				parts = append(parts, string(a.Value))
			}
		}
		msg = "console.error: " + strings.Join(parts, " ")
	default:
		return
	}
	p.mu.Lock()
	p.errs = append(p.errs, msg)
	p.mu.Unlock()
}

// noErrors fails t if the page reported JavaScript errors since the last
// call.
func (p *page) noErrors(t testing.TB) {
	t.Helper()
	p.mu.Lock()
	errs := p.errs
	p.errs = nil
	p.mu.Unlock()
	for _, e := range errs {
		t.Errorf("%s's page: %s", p.name, e)
	}
}

// do runs steps in order, within actionTimeout.
func (p *page) do(t testing.TB, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, actionTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %s: %v\n%s", p.name, what, err, p.snapshot())
	}
}

// eval evaluates a JavaScript expression in p and decodes its value.
func eval[T any](t testing.TB, p *page, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, actionTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("%s: evaluate %s: %v", p.name, expr, err)
	}
	return v
}

// evalAwait is eval for an expression that returns a promise: it waits
// for the promise and decodes what it resolves to.
func evalAwait[T any](t testing.TB, p *page, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, actionTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("%s: evaluate %s: %v", p.name, expr, err)
	}
	return v
}

// waitJS polls a JavaScript condition in the page until it is truthy or
// the deadline passes.
func (p *page) waitJS(t testing.TB, what, cond string) {
	t.Helper()
	p.waitJSFor(t, waitTimeout, what, cond)
}

func (p *page) waitJSFor(t testing.TB, d time.Duration, what, cond string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, d+5*time.Second)
	defer cancel()
	_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](cond,
		chromedp.WithPollingInterval(pollEvery), chromedp.WithPollingTimeout(d)))
	if err != nil {
		if errors.Is(err, chromedp.ErrPollingTimeout) {
			err = fmt.Errorf("timed out after %s", d)
		}
		t.Fatalf("%s: waiting for %s: %v\n%s", p.name, what, err, p.snapshot())
	}
}

// snapshot is what the page shows, for failure messages.
func (p *page) snapshot() string {
	ctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href + "\n" + document.body.innerText.slice(0, 2500)`))
	if err != nil {
		return "(no page text: " + err.Error() + ")"
	}
	return "--- " + p.name + "'s page ---\n" + s + "\n---"
}

// visible waits until an element matching sel is rendered visibly (not
// display:none, not visibility:hidden).
func (p *page) visible(t testing.TB, sel string) {
	t.Helper()
	p.waitJS(t, sel+" visible", visibleJS(sel))
}

// gone waits until no element matching sel is visible.
func (p *page) gone(t testing.TB, sel string) {
	t.Helper()
	p.waitJS(t, sel+" hidden", "!("+visibleJS(sel)+")")
}

func visibleJS(sel string) string {
	return fmt.Sprintf(`[...document.querySelectorAll(%s)].some((e) => e.checkVisibility({ visibilityProperty: true }))`, js(sel))
}

// click clicks the first element matching sel with the mouse, once it is
// visible and no CSS transition moves it (a drawer sliding in).
func (p *page) click(t testing.TB, sel string) {
	t.Helper()
	p.visible(t, sel)
	p.waitJS(t, sel+" to stop moving", fmt.Sprintf(`(() => {
		for (let e = document.querySelector(%s); e; e = e.parentElement) {
			if (e.getAnimations().some((a) => a instanceof CSSTransition && a.playState === 'running')) return false;
		}
		return true;
	})()`, js(sel)))
	// Nothing (a toast, a drawer) may cover the point the mouse will hit.
	p.waitJS(t, sel+" to be uncovered", fmt.Sprintf(`(() => {
		const e = document.querySelector(%s);
		if (!e) return false;
		let r = e.getBoundingClientRect();
		if (r.top < 0 || r.bottom > innerHeight) { e.scrollIntoView({ block: 'center' }); r = e.getBoundingClientRect(); }
		const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
		if (!!hit && (hit === e || e.contains(hit) || hit.contains(e))) return true;
		// Clipped by its scrolling list (under the composer, say): bring it
		// into view for the next look.
		e.scrollIntoView({ block: 'center' });
		return false;
	})()`, js(sel)))
	// A list re-rendered between finding the node and clicking it (the
	// room list redraws on every unread change): find it again.
	for i := 0; ; i++ {
		ctx, cancel := context.WithTimeout(p.ctx, actionTimeout)
		err := chromedp.Do(ctx, chromedp.Click(css(sel)))
		cancel()
		if err == nil {
			return
		}
		if i == 2 || !strings.Contains(err.Error(), "Could not find node") {
			t.Fatalf("%s: click %s: %v\n%s", p.name, sel, err, p.snapshot())
		}
	}
}

// fill replaces the value of the input sel by typing text.
func (p *page) fill(t testing.TB, sel, text string) {
	t.Helper()
	p.visible(t, sel)
	// Select what is there, so typing replaces it.
	eval[chromedp.Void](t, p, fmt.Sprintf(`(() => { const e = document.querySelector(%s); e.focus(); e.select(); })()`, js(sel)))
	p.do(t, "type into "+sel, chromedp.KeyEvent(text))
}

// typeMore types text at the end of what the message box holds.
func (p *page) typeMore(t testing.TB, text string) {
	t.Helper()
	eval[bool](t, p, `(() => { const e = document.querySelector('#composer'); e.focus(); e.setSelectionRange(e.value.length, e.value.length); return true; })()`)
	p.do(t, "type into #composer", chromedp.KeyEvent(text))
}

// compose types text into the message box without sending it.
func (p *page) compose(t testing.TB, text string) {
	t.Helper()
	p.fill(t, "#composer", text)
}

// pressEnter presses Enter the way a keyboard does: one keyDown carrying
// the text, so a page that cancels the keydown gets no newline (kb.Enter
// sends a separate char event that cancelling keydown does not stop).
func pressEnter() chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		down := input.DispatchKeyEventParams{Type: input.DispatchKeyEventTypeKeyDown, Key: "Enter", Code: "Enter",
			WindowsVirtualKeyCode: 13, NativeVirtualKeyCode: 13, Text: "\r", UnmodifiedText: "\r"}
		if _, err := cdp.Call(ctx, t, input.DispatchKeyEvent, down); err != nil {
			return err
		}
		up := input.DispatchKeyEventParams{Type: input.DispatchKeyEventTypeKeyUp, Key: "Enter", Code: "Enter", WindowsVirtualKeyCode: 13, NativeVirtualKeyCode: 13}
		_, err := cdp.Call(ctx, t, input.DispatchKeyEvent, up)
		return err
	})
}

// send types text into the message box and presses Enter.
func (p *page) send(t testing.TB, text string) {
	t.Helper()
	p.compose(t, text)
	p.do(t, "press Enter", pressEnter())
	p.waitJS(t, "the message box to empty after sending", `document.querySelector('#composer').value === ''`)
}

// sendLines puts text with line breaks into the message box (typing a
// newline would send it early) and presses Enter.
func (p *page) sendLines(t testing.TB, text string) {
	t.Helper()
	p.visible(t, "#composer")
	eval[bool](t, p, fmt.Sprintf(`(() => { const e = document.querySelector('#composer'); e.focus(); e.value = %s; e.dispatchEvent(new Event('input', { bubbles: true })); return true; })()`, js(text)))
	p.do(t, "press Enter", pressEnter())
	p.waitJS(t, "the message box to empty after sending", `document.querySelector('#composer').value === ''`)
}

func (p *page) navigate(t testing.TB, url string) {
	t.Helper()
	p.do(t, "open "+url, chromedp.Navigate(url))
}

// js quotes s as a JavaScript string literal.
func js(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// screenshots is where to save PNGs of the main screens, or "" for
// nowhere: WHEELHOUSE_SCREENSHOTS, relative to the repository root.
func screenshots(t testing.TB) string {
	dir := os.Getenv("WHEELHOUSE_SCREENSHOTS")
	if dir == "" {
		return ""
	}
	if !filepath.IsAbs(dir) {
		root, err := repoRoot()
		if err != nil {
			t.Fatalf("WHEELHOUSE_SCREENSHOTS=%s: %v", dir, err)
		}
		dir = filepath.Join(root, dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// repoRoot is the folder holding go.mod, above the test's directory.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the test directory")
		}
		dir = parent
	}
}

// shot saves the page's viewport as dir/name.png when dir is set.
func (p *page) shot(t testing.TB, dir, name string) {
	t.Helper()
	if dir == "" {
		return
	}
	ctx, cancel := context.WithTimeout(p.ctx, actionTimeout)
	defer cancel()
	// The pointer rests in a corner, so no hover highlight shows.
	if err := chromedp.Do(ctx, chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, 0, 0)); err != nil {
		t.Fatalf("%s: move the pointer away: %v", p.name, err)
	}
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("%s: screenshot %s: %v", p.name, name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}
