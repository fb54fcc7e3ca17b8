package browser

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
)

// TestUIOverTLS uses the hub's own HTTPS, with a certificate from a
// throwaway CA that Chromium trusts only by the certificate's key: the
// page, the login and the live WebSocket (wss) all work.
func TestUIOverTLS(t *testing.T) {
	h := testhub.Start(t, testhub.Options{TLS: testhub.NewCA(t)})
	if !strings.HasPrefix(h.URL(), "https://") {
		t.Fatalf("hub URL %s", h.URL())
	}
	admin := h.Setup("root", rootPassword)
	admin.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "secure"})
	p := newPage(t, startBrowser(t, chromedp.Flag("ignore-certificate-errors-spki-list", h.SPKIHash)), "root")
	p.navigate(t, h.URL()+"/#/r/secure")
	p.fill(t, "#login-name", "root")
	p.fill(t, "#login-password", rootPassword)
	p.click(t, "#login-submit")
	p.visible(t, "#app-screen")
	p.waitJS(t, "the page came over https", `location.protocol === 'https:'`)
	p.waitJS(t, "in #secure", `document.querySelector('#room-title').textContent === '#secure'`)
	admin.Post("secure", "delivered over wss")
	p.waitJS(t, "the message, live", messageJS("root", "delivered over wss"))
	p.noErrors(t)
}
