package web

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/wheelhouse-dev/wheelhouse/eventlog"
)

func proxies(t *testing.T, s ...string) []netip.Prefix {
	var out []netip.Prefix
	for _, p := range s {
		out = append(out, netip.MustParsePrefix(p))
	}
	return out
}

func TestClientAddr(t *testing.T) {
	s := New(Config{TrustedProxies: proxies(t, "10.0.0.0/8", "::1/128")})
	cases := []struct {
		name, remote, xff, want string
	}{
		{"PeerWithoutHeader", "203.0.113.5:4000", "", "203.0.113.5"},
		{"UntrustedPeerHeaderIgnored", "203.0.113.5:4000", "198.51.100.1", "203.0.113.5"},
		{"TrustedPeer", "10.1.2.3:4000", "198.51.100.1", "198.51.100.1"},
		{"ChainOfTrustedProxies", "10.1.2.3:4000", "198.51.100.1, 10.9.9.9", "198.51.100.1"},
		{"SpoofedLeftEntriesIgnored", "10.1.2.3:4000", "1.2.3.4, 198.51.100.1", "198.51.100.1"},
		{"SeveralHeaders", "10.1.2.3:4000", "1.2.3.4\n198.51.100.2", "198.51.100.2"},
		{"GarbageStopsAtLastTrustedHop", "10.1.2.3:4000", "198.51.100.1, garbage", "10.1.2.3"},
		{"AllTrusted", "10.1.2.3:4000", "10.4.4.4", "10.4.4.4"},
		{"MappedIPv4", "[::ffff:203.0.113.5]:4000", "", "203.0.113.5"},
		{"IPv6TrustedPeer", "[::1]:4000", "2001:db8::7", "2001:db8::7"},
		{"EntryWithPort", "10.1.2.3:4000", "198.51.100.1:5555", "198.51.100.1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = c.remote
			for _, v := range strings.Split(c.xff, "\n") {
				if v != "" {
					r.Header.Add("X-Forwarded-For", v)
				}
			}
			if got := s.clientAddr(r).String(); got != c.want {
				t.Fatalf("clientAddr = %s, want %s", got, c.want)
			}
		})
	}
}

// sessionCookie logs nothing in: it calls setSession and returns the
// Set-Cookie headers.
func sessionCookies(s *Server, r *http.Request) []*http.Cookie {
	w := httptest.NewRecorder()
	s.setSession(w, r, "whs_secret", 3600e9)
	return w.Result().Cookies()
}

func TestSessionCookie(t *testing.T) {
	plain := New(Config{TrustedProxies: proxies(t, "10.0.0.0/8")})
	https := New(Config{SecureCookies: true})
	req := func(remote string, hdr ...string) *http.Request {
		r := httptest.NewRequest("POST", "/api/v1/sessions", nil)
		r.RemoteAddr = remote
		for i := 0; i+1 < len(hdr); i += 2 {
			r.Header.Add(hdr[i], hdr[i+1])
		}
		return r
	}
	overTLS := req("203.0.113.5:4000")
	overTLS.TLS = &tls.ConnectionState{}
	cases := []struct {
		name   string
		s      *Server
		r      *http.Request
		secure bool
	}{
		{"PlainHTTP", plain, req("203.0.113.5:4000"), false},
		{"HTTPSPublicURL", https, req("203.0.113.5:4000"), true},
		{"OverTLS", plain, overTLS, true},
		{"TrustedProxySaysHTTPS", plain, req("10.0.0.2:4000", "X-Forwarded-Proto", "https"), true},
		{"TrustedProxySaysHTTP", plain, req("10.0.0.2:4000", "X-Forwarded-Proto", "http"), false},
		{"NearestProxyCounts", plain, req("10.0.0.2:4000", "X-Forwarded-Proto", "https, http"), false},
		{"UntrustedPeerSaysHTTPS", plain, req("203.0.113.5:4000", "X-Forwarded-Proto", "https"), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cs := sessionCookies(c.s, c.r)
			if len(cs) != 1 {
				t.Fatalf("cookies %v", cs)
			}
			k := cs[0]
			if !k.HttpOnly || k.SameSite != http.SameSiteLaxMode || k.Path != "/" || k.Domain != "" {
				t.Fatalf("cookie flags: %+v", k)
			}
			if c.secure && (k.Name != SecureSessionCookie || !k.Secure) {
				t.Fatalf("want a Secure __Host- cookie, got %+v", k)
			}
			if !c.secure && (k.Name != SessionCookie || k.Secure) {
				t.Fatalf("want a plain cookie, got %+v", k)
			}
		})
	}
	t.Run("OldPlainCookieDroppedOverTLS", func(t *testing.T) {
		r := req("203.0.113.5:4000")
		r.AddCookie(&http.Cookie{Name: SessionCookie, Value: "whs_old"})
		cs := sessionCookies(https, r)
		if len(cs) != 2 || cs[0].Name != SecureSessionCookie || cs[1].Name != SessionCookie || cs[1].MaxAge >= 0 {
			t.Fatalf("cookies %+v", cs)
		}
	})
	t.Run("SecretPrefersTheHostCookie", func(t *testing.T) {
		r := req("203.0.113.5:4000")
		r.AddCookie(&http.Cookie{Name: SessionCookie, Value: "whs_old"})
		r.AddCookie(&http.Cookie{Name: SecureSessionCookie, Value: "whs_new"})
		if s, legacy := secretFrom(r); s != "whs_new" || legacy {
			t.Fatalf("secret %q legacy %v", s, legacy)
		}
		r = req("203.0.113.5:4000", "Authorization", "Bearer wht_tok")
		r.AddCookie(&http.Cookie{Name: SecureSessionCookie, Value: "whs_new"})
		if s, _ := secretFrom(r); s != "wht_tok" {
			t.Fatalf("secret %q", s)
		}
	})
}

// /readyz tells the world a short reason code and nothing else.
func TestReadyzReasonOnly(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"FailureCode", &eventlog.Failure{Reason: "nats-disconnected", Err: errors.New("dial tcp 10.2.3.4:4222: connection refused")}, "nats-disconnected"},
		{"WrappedFailure", errors.Join(errors.New("context"), &eventlog.Failure{Reason: "projection-failed", Err: errors.New("disk I/O error at /var/lib/x")}), "projection-failed"},
		{"PlainError", errors.New("open /secret/path: permission denied"), "not-ready"},
		{"FailureWithTextForAReason", &eventlog.Failure{Reason: "dial tcp 10.2.3.4: refused", Err: errors.New("x")}, "not-ready"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := New(Config{Ready: func() error { return c.err }})
			w := httptest.NewRecorder()
			s.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/readyz", nil))
			var body map[string]string
			json.Unmarshal(w.Body.Bytes(), &body)
			if w.Code != 503 || body["reason"] != c.want || len(body) != 2 {
				t.Fatalf("%d %s", w.Code, w.Body)
			}
		})
	}
}

// The API's listener does not serve metrics.
func TestNoMetricsOnTheAPI(t *testing.T) {
	s := New(Config{})
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	if w.Code != 404 || strings.Contains(w.Body.String(), "go_goroutines") {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
}
