package web

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/room"
)

// Who is asking, and over what: the client's address and whether the
// browser reached the hub over TLS. Forwarded headers count only when the
// peer is a proxy the operator named (Config.TrustedProxies); anyone can
// send them.

// Session cookie names. Over TLS the cookie is __Host-wh_session (Secure,
// Path=/, no Domain: no other host or plain-HTTP page can set or read it);
// over plain HTTP (loopback, a private network) it is wh_session.
const (
	SessionCookie       = "wh_session"
	SecureSessionCookie = "__Host-wh_session"
)

func peerAddr(r *http.Request) netip.Addr {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err == nil {
		return ap.Addr().Unmap()
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	a, _ := netip.ParseAddr(host)
	return a.Unmap()
}

func (s *Server) trustedProxy(a netip.Addr) bool {
	for _, p := range s.cfg.TrustedProxies {
		if a.IsValid() && p.Contains(a) {
			return true
		}
	}
	return false
}

// clientAddr is the address of whoever sent r: the peer; or, when the peer
// is a trusted proxy, the right-most X-Forwarded-For entry that is not a
// trusted proxy (entries to its left are whatever the client claimed).
func (s *Server) clientAddr(r *http.Request) netip.Addr {
	peer := peerAddr(r)
	if !s.trustedProxy(peer) {
		return peer
	}
	var hops []string
	for _, v := range r.Header.Values("X-Forwarded-For") {
		hops = append(hops, strings.Split(v, ",")...)
	}
	addr := peer
	for i := len(hops) - 1; i >= 0; i-- {
		a, ok := parseHop(hops[i])
		if !ok {
			return addr // a broken chain: the last hop we could trust
		}
		addr = a
		if !s.trustedProxy(a) {
			return a
		}
	}
	return addr
}

func parseHop(v string) (netip.Addr, bool) {
	v = strings.TrimSpace(v)
	if a, err := netip.ParseAddr(v); err == nil {
		return a.Unmap(), true
	}
	if ap, err := netip.ParseAddrPort(v); err == nil {
		return ap.Addr().Unmap(), true
	}
	return netip.Addr{}, false
}

// secure reports whether the browser talks to the hub over TLS: the hub's
// public URL is https, the request came over TLS, or a trusted proxy says
// it terminated TLS (its own X-Forwarded-Proto, the right-most value).
func (s *Server) secure(r *http.Request) bool {
	if s.cfg.SecureCookies || r.TLS != nil {
		return true
	}
	if !s.trustedProxy(peerAddr(r)) {
		return false
	}
	v := r.Header.Values("X-Forwarded-Proto")
	if len(v) == 0 {
		return false
	}
	last := v[len(v)-1]
	if i := strings.LastIndexByte(last, ','); i >= 0 {
		last = last[i+1:]
	}
	return strings.EqualFold(strings.TrimSpace(last), "https")
}

// client says where a login comes from, for throttling and the session
// list.
func (s *Server) client(r *http.Request) room.Client {
	c := room.Client{Agent: r.UserAgent()}
	if a := s.clientAddr(r); a.IsValid() {
		c.Addr = a.String()
	}
	if ck, err := r.Cookie(DeviceCookie); err == nil {
		c.Device = ck.Value
	}
	return c
}

// DeviceCookie marks a browser that logged in before: the login throttle
// never delays its right password for others' failures (room/throttle.go).
// It is no credential: it grants nothing but that.
const DeviceCookie = "wh_device"

// loginClient is client(r) with a device cookie for a browser that has
// none yet; keepDevice sets it once the login succeeded.
func (s *Server) loginClient(r *http.Request) room.Client {
	c := s.client(r)
	if !strings.HasPrefix(c.Device, room.DevicePrefix) {
		c.Device = room.NewSecret(room.DevicePrefix)
	}
	return c
}

func (s *Server) keepDevice(w http.ResponseWriter, r *http.Request, c room.Client) {
	http.SetCookie(w, &http.Cookie{Name: DeviceCookie, Value: c.Device, Path: "/api/v1/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: s.secure(r), MaxAge: 180 * 24 * 3600})
}

// setSession sets the session cookie (the __Host- one over TLS, dropping a
// plain one left from before).
func (s *Server) setSession(w http.ResponseWriter, r *http.Request, secret string, maxAge time.Duration) {
	if s.secure(r) {
		http.SetCookie(w, &http.Cookie{Name: SecureSessionCookie, Value: secret, Path: "/", HttpOnly: true,
			SameSite: http.SameSiteLaxMode, Secure: true, MaxAge: int(maxAge.Seconds())})
		if _, err := r.Cookie(SessionCookie); err == nil {
			expire(w, SessionCookie, false)
		}
		return
	}
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: secret, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteLaxMode, MaxAge: int(maxAge.Seconds())})
}

// clearSession expires both session cookies.
func (s *Server) clearSession(w http.ResponseWriter, r *http.Request) {
	expire(w, SessionCookie, false)
	if s.secure(r) {
		expire(w, SecureSessionCookie, true)
	}
}

func expire(w http.ResponseWriter, name string, secure bool) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: "", Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: secure, MaxAge: -1})
}

// secretFrom returns the request's credential: a bearer token, else the
// session cookie (the __Host- one first). legacy reports a plain cookie.
func secretFrom(r *http.Request) (secret string, legacy bool) {
	if a := r.Header.Get("Authorization"); a != "" {
		if tok, ok := strings.CutPrefix(a, "Bearer "); ok {
			return strings.TrimSpace(tok), false
		}
		return "", false
	}
	if c, err := r.Cookie(SecureSessionCookie); err == nil && c.Value != "" {
		return c.Value, false
	}
	if c, err := r.Cookie(SessionCookie); err == nil {
		return c.Value, true
	}
	return "", false
}
