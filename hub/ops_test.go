package hub_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/bridge"
	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
	"github.com/wheelhouse-dev/wheelhouse/web"
)

func setCookies(t *testing.T, base, name, password string, hd map[string]string) []*http.Cookie {
	t.Helper()
	return setCookiesWith(t, http.DefaultClient, base, name, password, hd)
}

func setCookiesWith(t *testing.T, hc *http.Client, base, name, password string, hd map[string]string) []*http.Cookie {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/api/v1/sessions", strings.NewReader(`{"name":"`+name+`","password":"`+password+`"}`))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hd {
		req.Header.Set(k, v)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 201 {
		t.Fatalf("login: %d", resp.StatusCode)
	}
	// The session cookies; the device cookie the login throttle keys on
	// is no credential (and is checked once, here).
	var out []*http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name != web.DeviceCookie {
			out = append(out, c)
			continue
		}
		if !c.HttpOnly || c.Path != "/api/v1/" || c.SameSite != http.SameSiteStrictMode || !strings.HasPrefix(c.Value, "whd_") {
			t.Fatalf("device cookie %+v", c)
		}
	}
	return out
}

// The session cookie is Secure (and __Host-) when the hub's public URL is
// https, or a trusted proxy says the browser came over TLS.
func TestSessionCookieSecure(t *testing.T) {
	t.Run("HTTPSPublicURL", func(t *testing.T) {
		h := testhub.Start(t, testhub.Options{PublicURL: "https://chat.example.com"})
		base := h.LocalURL() // what the TLS proxy in front reaches
		c := testhub.NewClient(t, base)
		c.Must(201, "POST", "/api/v1/setup", map[string]string{"token": h.SetupToken(), "name": "root", "password": "correct horse"})
		cs := setCookies(t, base, "root", "correct horse", nil)
		if len(cs) != 1 || cs[0].Name != "__Host-wh_session" || !cs[0].Secure || !cs[0].HttpOnly || cs[0].Path != "/" {
			t.Fatalf("cookies %+v", cs)
		}
	})
	t.Run("OverTLS", func(t *testing.T) {
		h := testhub.Start(t, testhub.Options{TLS: testhub.NewCA(t)})
		admin := h.Setup("root", "correct horse") // the jar keeps the Secure cookie over https
		admin.Must(200, "GET", "/api/v1/me", nil)
		cs := setCookiesWith(t, admin.HTTP, h.URL(), "root", "correct horse", nil)
		if len(cs) != 1 || cs[0].Name != "__Host-wh_session" || !cs[0].Secure {
			t.Fatalf("cookies %+v", cs)
		}
		// A socket opened over TLS ends like any other.
		s := admin.Events(0, false)
		s.Ready()
		admin.Must(204, "DELETE", "/api/v1/sessions", nil)
		testhub.WaitFor(t, time.Second, "the socket to close", func() bool { return s.Closed() != nil })
	})
	t.Run("TrustedProxy", func(t *testing.T) {
		h := testhub.Start(t, testhub.Options{TrustedProxies: []string{"127.0.0.1"}})
		admin := h.Setup("root", "correct horse")
		_ = admin
		cs := setCookies(t, h.URL(), "root", "correct horse", map[string]string{"X-Forwarded-Proto": "https"})
		if len(cs) != 1 || cs[0].Name != "__Host-wh_session" || !cs[0].Secure {
			t.Fatalf("cookies %+v", cs)
		}
		cs = setCookies(t, h.URL(), "root", "correct horse", nil)
		if len(cs) != 1 || cs[0].Name != "wh_session" || cs[0].Secure {
			t.Fatalf("plain: cookies %+v", cs)
		}
		// A session from before TLS keeps working and moves to the
		// __Host- cookie.
		req, _ := http.NewRequest("GET", h.URL()+"/api/v1/me", nil)
		req.AddCookie(cs[0])
		req.Header.Set("X-Forwarded-Proto", "https")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		got := resp.Cookies()
		if resp.StatusCode != 200 || len(got) != 2 || got[0].Name != "__Host-wh_session" || got[0].Value != cs[0].Value || got[1].Name != "wh_session" || got[1].MaxAge >= 0 {
			t.Fatalf("%d %+v", resp.StatusCode, got)
		}
	})
	t.Run("UntrustedForwardedProto", func(t *testing.T) {
		h := testhub.Start(t, testhub.Options{})
		h.Setup("root", "correct horse")
		cs := setCookies(t, h.URL(), "root", "correct horse", map[string]string{"X-Forwarded-Proto": "https"})
		if len(cs) != 1 || cs[0].Name != "wh_session" || cs[0].Secure {
			t.Fatalf("cookies %+v", cs)
		}
	})
}

// /metrics is on its own listener and says what an operator needs.
func TestMetricsEndpoint(t *testing.T) {
	h := testhub.Start(t, testhub.Options{MetricsAddr: "127.0.0.1:0"})
	admin := h.Setup("root", "correct horse")
	admin.Must(404, "GET", "/metrics", nil)
	admin.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "ops"})
	h.StartBridge(admin, nil, bridge.AgentConfig{Name: "demo", Harness: "demo", Options: map[string]string{"steps": "1", "step": "10ms"}})
	admin.AddAgent("ops", "root/demo")
	admin.Post("ops", "@root/demo hello")
	for _, want := range []string{
		`wheelhouse_http_request_duration_seconds_bucket{route="POST /api/v1/rooms/{room}/messages",le=`,
		`wheelhouse_http_requests_total{code="201",route="POST /api/v1/setup"} 1`,
		`wheelhouse_mentions_total{status=`,
		`wheelhouse_approvals_total{outcome="approved"} 0`,
		`wheelhouse_approvals_pending 0`,
		`wheelhouse_agents{state="offline"}`,
		`wheelhouse_bridges_connected 1`,
		`wheelhouse_users{state="active"} 1`,
		`wheelhouse_projection_lag_events`,
		`wheelhouse_stream_last_seq`,
	} {
		testhub.CheckFor(t, 10*time.Second, want, func() error {
			if m := h.Metrics(); !strings.Contains(m, want) {
				return errorString("missing from:\n" + grep(m, "wheelhouse_"))
			}
			return nil
		})
	}
	if m := h.Metrics(); strings.Contains(m, `route="/api/v1/rooms/ops`) {
		t.Fatal("a request path became a label")
	}
}
