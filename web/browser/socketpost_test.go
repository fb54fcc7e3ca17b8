package browser

import (
	"bufio"
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
)

// watchSockets runs in the page before its scripts: every WebSocket the
// page opens is kept in __sockets.all (the test closes them), counts its
// ready frames, and, while __sockets.dropReplies is set, hides "reply"
// frames from the page (a reply lost with its socket); while
// __sockets.down is set, no socket can be opened.
const watchSockets = `(() => {
	const Native = window.WebSocket;
	const t = window.__sockets = { all: [], ready: 0, down: false, dropReplies: false };
	window.WebSocket = class extends Native {
		constructor(url, protocols) {
			if (t.down) throw new DOMException('the test holds sockets down', 'SyntaxError');
			super(url, protocols);
			t.all.push(this);
			this.addEventListener('message', (e) => {
				const type = JSON.parse(e.data).type;
				if (type === 'ready') t.ready++;
				if (type === 'reply' && t.dropReplies) e.stopImmediatePropagation();
			});
		}
	};
})()`

// Series of the hub's metrics: posts answered over the events socket and
// over HTTP.
const (
	socketPosts = `wheelhouse_websocket_requests_total{code="201"}`
	httpPosts   = `wheelhouse_http_requests_total{code="201",route="POST /api/v1/rooms/{room}/messages"}`
)

// TestPostOverSocket: the page posts over its live socket when the socket
// is ready, over HTTP when it is not, and again over HTTP with the same
// idempotency key when the socket closes before the reply. Every message
// is stored and shown once; an error over the socket is the one HTTP gives.
func TestPostOverSocket(t *testing.T) {
	h := testhub.Start(t, testhub.Options{MetricsAddr: "127.0.0.1:0"})
	admin := h.Setup("root", rootPassword)
	admin.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "ops"})
	p := newPage(t, startBrowser(t), "root")
	p.do(t, "watch the page's sockets", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, cdppage.AddScriptToEvaluateOnNewDocument, cdppage.AddScriptToEvaluateOnNewDocumentParams{Source: watchSockets})
		return err
	}))
	p.navigate(t, h.URL()+"/#/r/ops")
	p.fill(t, "#login-name", "root")
	p.fill(t, "#login-password", rootPassword)
	p.click(t, "#login-submit")
	p.waitJS(t, "in #ops", `document.querySelector('#room-title').textContent === '#ops'`)
	p.waitJS(t, "the live feed ready", `__sockets.ready === 1`)

	// shownOnce checks text is shown once on the page and stored once.
	shownOnce := func(t *testing.T, text string) {
		t.Helper()
		p.waitJS(t, text, messageJS("root", text))
		if n := eval[int](t, p, countJS(text)); n != 1 {
			t.Errorf("the page shows %q %d times", text, n)
		}
		n := 0
		for _, m := range testhub.AsList(admin.Must(200, "GET", "/api/v1/rooms/ops/messages?limit=100", nil).Body["messages"]) {
			if m["text"] == text {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%q is stored %d times", text, n)
		}
		if eval[bool](t, p, visibleJS("#composer-error")) {
			t.Errorf("the composer shows an error: %s", eval[string](t, p, `document.querySelector('#composer-error').textContent`))
		}
	}

	t.Run("SentOverTheSocket", func(t *testing.T) {
		p.send(t, "over the socket")
		waitMetric(t, h, socketPosts, 1)
		shownOnce(t, "over the socket")
		if n := metric(h.Metrics(), httpPosts); n != 0 {
			t.Errorf("%g posts went over HTTP", n)
		}
	})

	t.Run("ErrorAsOverHTTP", func(t *testing.T) {
		type apiErr struct {
			Status                int
			Code, Message, Reason string
			Typed                 bool
		}
		got := evalAwait[apiErr](t, p, `import('/js/api.js').then((m) => m.api.post('nosuch', 'hello').then(() => null,
			(e) => ({ Status: e.status, Code: e.code, Message: e.message, Reason: e.reason, Typed: e instanceof m.ApiError })))`)
		waitMetric(t, h, `wheelhouse_websocket_requests_total{code="404"}`, 1)
		r := admin.Do("POST", "/api/v1/rooms/nosuch/messages", map[string]string{"text": "hello"})
		e, _ := r.Body["error"].(map[string]any)
		want := apiErr{Status: r.Status, Code: r.ErrCode(), Message: fmt.Sprint(e["message"]), Reason: r.ErrReason(), Typed: true}
		if got != want {
			t.Errorf("over the socket: %+v\nover HTTP: %+v", got, want)
		}
	})

	t.Run("SocketDownSentOverHTTP", func(t *testing.T) {
		eval[bool](t, p, `__sockets.down = true, __sockets.all.at(-1).close(), true`)
		p.visible(t, "#reconnecting")
		p.send(t, "while the socket is down")
		waitMetric(t, h, httpPosts, 1)
		shownOnce(t, "while the socket is down")
		if n := metric(h.Metrics(), socketPosts); n != 1 {
			t.Errorf("%g posts went over the socket, want the first one only", n)
		}
		eval[bool](t, p, `__sockets.down = false, dispatchEvent(new Event('online')), true`)
		p.waitJS(t, "the live feed back", `__sockets.ready === 2 && document.querySelector('#reconnecting').hidden`)
		shownOnce(t, "while the socket is down")
	})

	t.Run("ReplyLostSentAgainOverHTTP", func(t *testing.T) {
		// The hub stores the post and answers; the answer is lost with the
		// socket. The page posts again over HTTP with the same key and gets
		// the first answer, not a second message.
		eval[bool](t, p, `__sockets.dropReplies = true`)
		p.send(t, "reply lost")
		waitMetric(t, h, socketPosts, 2)
		p.waitJS(t, "the message, live", messageJS("root", "reply lost"))
		eval[bool](t, p, `__sockets.all.at(-1).close(), true`)
		waitMetric(t, h, httpPosts, 2)
		eval[bool](t, p, `__sockets.dropReplies = false`)
		shownOnce(t, "reply lost")
		p.waitJS(t, "the live feed back", `__sockets.ready === 3 && document.querySelector('#reconnecting').hidden`)
	})

	t.Run("BurstPastTheSocketsBoundGoesOverHTTP", func(t *testing.T) {
		// The page keeps at most as many posts under way on its socket as
		// the hub takes (8, its ready frame says); a burst sends the rest
		// over HTTP at once, each with its key. All are stored once. (The
		// hub's own 429 past its bound, for clients that do not keep it, is
		// tested in hub/wspost_test.go.)
		http0, socket0 := metric(h.Metrics(), httpPosts), metric(h.Metrics(), socketPosts)
		evalAwait[bool](t, p, `import('/js/api.js').then((m) => Promise.all([...Array(30).keys()].map((i) => m.api.post('ops', 'burst post ' + i)))).then(() => true)`)
		testhub.CheckFor(t, waitTimeout, "30 posts answered", func() error {
			over, http := metric(h.Metrics(), socketPosts)-socket0, metric(h.Metrics(), httpPosts)-http0
			if over+http != 30 {
				return fmt.Errorf("%g over the socket and %g over HTTP", over, http)
			}
			if over == 0 || http == 0 {
				return fmt.Errorf("all 30 went one way (%g over the socket)", over)
			}
			return nil
		})
		stored := map[string]int{}
		for _, m := range testhub.AsList(admin.Must(200, "GET", "/api/v1/rooms/ops/messages?limit=100", nil).Body["messages"]) {
			stored[fmt.Sprint(m["text"])]++
		}
		for i := range 30 {
			if text := fmt.Sprintf("burst post %d", i); stored[text] != 1 {
				t.Errorf("%q is stored %d times", text, stored[text])
			}
		}
		p.waitJS(t, "the burst shown", messageJS("root", "burst post 29"))
	})
	p.noErrors(t)
}

// metric is the value of one series in the metrics text (0 if absent).
func metric(text, series string) float64 {
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return 0
}

// waitMetric waits until the hub's series reaches want.
func waitMetric(t *testing.T, h *testhub.Hub, series string, want float64) {
	t.Helper()
	testhub.CheckFor(t, waitTimeout, fmt.Sprintf("%s %g", series, want), func() error {
		if got := metric(h.Metrics(), series); got != want {
			return fmt.Errorf("it is %g", got)
		}
		return nil
	})
}
