package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// BrowserResult is one browser profile opening a room (a reload of the
// page on #/r/<room>, until the room's latest message is drawn) and
// switching between two rooms (until the other room's latest message is
// drawn), timed inside the page.
type BrowserResult struct {
	Profile   string `json:"profile"` // "desktop" or "phone, CPU 4× slower"
	Open      Dist   `json:"open"`
	Switch    Dist   `json:"switch"`
	Resources int    `json:"resources"` // fetched (or revalidated) by the last reload
}

// profiles are a desktop window and a phone-sized one on a CPU throttled
// four times, as Chrome's developer tools offer.
var profiles = []struct {
	name          string
	width, height int64
	scale         float64
	mobile        bool
	cpu           float64
}{
	{"desktop", 1280, 800, 1, false, 1},
	{"phone, CPU 4× slower", 390, 844, 3, true, 4},
}

// chromium finds the browser as the browser tests do:
// WHEELHOUSE_TEST_CHROMIUM, /usr/bin/chromium, chromium on PATH.
func chromium() (string, error) {
	if p := os.Getenv("WHEELHOUSE_TEST_CHROMIUM"); p != "" {
		return p, nil
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium", nil
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p, nil
	}
	return "", notHere{"Chromium not found: set WHEELHOUSE_TEST_CHROMIUM, or run eval \"$(scripts/test-tools.sh)\""}
}

// drawnJS, run in every document before its scripts, keeps
// window.__whDrawn: a promise of the time (performance.now(), from the
// navigation's start) when the room in the address first shows its latest
// message, "end of ROOM history". It checks once a frame, so the check
// itself costs the page little.
const drawnJS = `(() => {
  window.__whShows = (room) => {
    const list = document.getElementById('messages');
    if (!list) return false;
    const t = document.getElementById('room-title');
    if (!t || t.textContent !== '#' + room) return false;
    const arts = list.querySelectorAll('article.message');
    for (let i = arts.length - 1; i >= 0 && i >= arts.length - 60; i--) {
      if (arts[i].textContent.includes('end of ' + room + ' history')) return true;
    }
    return false;
  };
  window.__whDrawn = new Promise((resolve) => {
    const tick = () => {
      const m = /^#\/r\/(.+)$/.exec(location.hash);
      if (m && window.__whShows(decodeURIComponent(m[1]))) resolve(performance.now());
      else requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
  });
})()`

// switchJS switches to a room the way the sidebar's link does and answers
// the milliseconds until its latest message is drawn.
const switchJS = `new Promise((resolve) => {
  const room = %q;
  const t0 = performance.now();
  location.hash = '#/r/' + encodeURIComponent(room);
  const tick = () => { if (window.__whShows(room)) resolve(performance.now() - t0); else requestAnimationFrame(tick); };
  requestAnimationFrame(tick);
})`

// BrowserViews logs in to the hub at base (HTTPS with the certificate of
// key hash spki) in headless Chromium and, in each profile, reloads the
// page on roomA views times and switches between roomB and roomA views
// times. A missing Chromium is a notHere error.
func BrowserViews(ctx context.Context, base, spki, user, password, roomA, roomB string, views int) ([]BrowserResult, error) {
	path, err := chromium()
	if err != nil {
		return nil, err
	}
	dataDir, err := os.MkdirTemp("", "wheelhouse-bench-chromium-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dataDir)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(path), chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.Flag("disable-gpu", true),
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(dataDir),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-dev-shm-usage", true), chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-background-timer-throttling", true), chromedp.Flag("disable-renderer-backgrounding", true),
		chromedp.Flag("disable-backgrounding-occluded-windows", true), chromedp.Flag("password-store", "basic"),
		chromedp.Flag("ignore-certificate-errors-spki-list", spki), chromedp.WindowSize(1280, 800))
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	if err := chromedp.Do(bctx); err != nil {
		return nil, fmt.Errorf("start Chromium: %w", err)
	}
	var out []BrowserResult
	for _, p := range profiles {
		r, err := browserProfile(bctx, p.name, base, user, password, roomA, roomB, views, func(ctx context.Context, tg *chromedp.Target) error {
			dm := emulation.SetDeviceMetricsOverrideParams{Width: p.width, Height: p.height, DeviceScaleFactor: p.scale, Mobile: p.mobile}
			if _, err := cdp.Call(ctx, tg, emulation.SetDeviceMetricsOverride, dm); err != nil {
				return err
			}
			_, err := cdp.Call(ctx, tg, emulation.SetCPUThrottlingRate, emulation.SetCPUThrottlingRateParams{Rate: p.cpu})
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.name, err)
		}
		out = append(out, r)
	}
	return out, nil
}

func browserProfile(bctx context.Context, name, base, user, password, roomA, roomB string, views int, emulate func(context.Context, *chromedp.Target) error) (BrowserResult, error) {
	tctx, cancel := chromedp.NewContext(bctx, chromedp.WithNewBrowserContext())
	defer cancel()
	r := BrowserResult{Profile: name}
	// The tab opens on its own context: one opened under a step's
	// deadline would close when that step ends.
	if err := chromedp.Do(tctx); err != nil {
		return r, fmt.Errorf("open a tab: %w", err)
	}
	step := func(what string, actions ...chromedp.Action[chromedp.Void]) error {
		ctx, cancel := context.WithTimeout(tctx, 2*time.Minute)
		defer cancel()
		if err := chromedp.Do(ctx, actions...); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		return nil
	}
	eval := func(what, expr string) (float64, error) {
		ctx, cancel := context.WithTimeout(tctx, 2*time.Minute)
		defer cancel()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[float64](expr, chromedp.EvalAwaitPromise))
		if err != nil {
			return 0, fmt.Errorf("%s: %w", what, err)
		}
		return v, nil
	}
	creds, _ := json.Marshal(map[string]string{"name": user, "password": password})
	if err := step("set up the page", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: drawnJS})
		return err
	}), chromedp.Navigate(base+"/")); err != nil {
		return r, err
	}
	status, err := eval("log in", fmt.Sprintf(`fetch('/api/v1/sessions', {method: 'POST', headers: {'Content-Type': 'application/json'}, body: %q}).then((r) => r.status)`, creds))
	if err != nil {
		return r, err
	}
	if status != 201 {
		return r, fmt.Errorf("log in: %v", status)
	}
	if err := step("emulate", chromedp.Func(emulate)); err != nil {
		return r, err
	}
	var opens, switches []time.Duration
	// The first open (a new document: the page on / had no session yet)
	// fills the browser's cache; the reloads are timed.
	if err := step("open #"+roomA, chromedp.Navigate(base+"/#/r/"+roomA), chromedp.Reload()); err != nil {
		return r, err
	}
	if _, err := eval("open #"+roomA, `window.__whDrawn`); err != nil {
		return r, err
	}
	for range views {
		if err := step("reload #"+roomA, chromedp.Reload()); err != nil {
			return r, err
		}
		ms, err := eval("reload #"+roomA, `window.__whDrawn`)
		if err != nil {
			return r, err
		}
		n, err := eval("count resources", `performance.getEntriesByType('resource').length`)
		if err != nil {
			return r, err
		}
		r.Resources = int(n)
		opens = append(opens, time.Duration(ms*float64(time.Millisecond)))
	}
	for i := range views * 2 {
		to := roomB
		if i%2 == 1 {
			to = roomA
		}
		ms, err := eval("switch to #"+to, fmt.Sprintf(switchJS, to))
		if err != nil {
			return r, err
		}
		switches = append(switches, time.Duration(ms*float64(time.Millisecond)))
	}
	r.Open, r.Switch = dist(opens), dist(switches)
	return r, nil
}
