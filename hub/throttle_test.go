package hub_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
)

// frozen is a hub clock that stands still: a login delay never runs out
// during a test, however slow the machine.
func frozen() func() time.Time {
	var mu sync.Mutex
	t := time.Now()
	return func() time.Time { mu.Lock(); defer mu.Unlock(); return t }
}

// login tries name/password as if from addr (the trusted proxy, loopback,
// says so in X-Forwarded-For) and returns the status.
func login(t *testing.T, h *testhub.Hub, addr, name, password string) testhub.Response {
	t.Helper()
	hd := map[string]string{}
	if addr != "" {
		hd["X-Forwarded-For"] = addr
	}
	return testhub.NewClient(t, h.URL()).DoWith("POST", "/api/v1/sessions", map[string]string{"name": name, "password": password}, hd)
}

func wantStatus(t *testing.T, r testhub.Response, want int, what string) {
	t.Helper()
	if r.Status != want {
		t.Fatalf("%s: status %d, want %d: %s", what, r.Status, want, r.Raw)
	}
}

// Login throttling is keyed on the normalized name and the client's
// address, delays rather than locks, and is shared by every hub node.
func TestLoginThrottle(t *testing.T) {
	ns := testhub.StartNATS(t)
	now := frozen()
	opts := testhub.Options{NATS: ns, TrustedProxies: []string{"127.0.0.1"}, Now: now}
	a := testhub.Start(t, opts)
	admin := a.Setup("root", "correct horse")
	for _, n := range []string{"u1", "u2", "u3", "u4", "victim"} {
		admin.Must(201, "POST", "/api/v1/users", map[string]string{"name": n, "password": "pw-" + n + "-secret"})
	}
	b := testhub.Start(t, opts)

	t.Run("NameVariantsShareOneCount", func(t *testing.T) {
		for _, v := range []string{" u1", "U1", "\tu1"} {
			wantStatus(t, login(t, a, "10.0.0.1", v, "wrong password"), 401, fmt.Sprintf("wrong password for %q", v))
		}
		for _, v := range []string{"u1", " U1 ", "u1\n"} {
			r := login(t, a, "10.0.0.1", v, "pw-u1-secret")
			wantStatus(t, r, 429, fmt.Sprintf("right password for %q from the failing address", v))
			if r.ErrCode() != "rate_limited" {
				t.Fatal(r.ErrCode())
			}
		}
	})
	t.Run("AnAddressThatDidNotFailLogsIn", func(t *testing.T) {
		wantStatus(t, login(t, a, "10.0.0.2", "u1", "pw-u1-secret"), 201, "u1 from another address")
	})
	t.Run("AddressVariants", func(t *testing.T) {
		// An IPv4-mapped IPv6 address is the IPv4 address.
		wantStatus(t, login(t, a, "::ffff:10.0.0.1", "u1", "pw-u1-secret"), 429, "u1 from 10.0.0.1 written as IPv6")
		// IPv6 counts by /64: one subscriber's network.
		for _, ip := range []string{"2001:db8:1:1::1", "2001:db8:1:1::2", "2001:db8:1:1:ffff::3"} {
			wantStatus(t, login(t, a, ip, "u2", "wrong password"), 401, "u2 from "+ip)
		}
		wantStatus(t, login(t, a, "2001:db8:1:1::99", "u2", "pw-u2-secret"), 429, "u2 from the same /64")
		wantStatus(t, login(t, a, "2001:db8:1:2::1", "u2", "pw-u2-secret"), 201, "u2 from another /64")
		// A hop chain: the client is the right-most untrusted entry; what
		// the client itself claimed (to its left) does not count.
		wantStatus(t, login(t, a, "10.0.0.2, 10.0.0.1", "u1", "pw-u1-secret"), 429, "a spoofed 10.0.0.2 in front of 10.0.0.1")
		wantStatus(t, login(t, a, "10.0.0.1, 10.0.0.2", "u1", "pw-u1-secret"), 201, "10.0.0.2 claiming 10.0.0.1")
	})
	t.Run("AThirdPartyCannotLockTheVictimOut", func(t *testing.T) {
		for i := range 8 {
			r := login(t, a, "203.0.113.66", "victim", "guess-guess")
			if i < 3 {
				wantStatus(t, r, 401, "a guess")
			} else {
				wantStatus(t, r, 429, "a guess after the free ones")
			}
		}
		wantStatus(t, login(t, a, "203.0.113.66", "victim", "pw-victim-secret"), 429, "even the right password from the guesser's address")
		wantStatus(t, login(t, a, "198.51.100.7", "victim", "pw-victim-secret"), 201, "the victim from their own address")
		wantStatus(t, login(t, b, "198.51.100.7", "victim", "pw-victim-secret"), 201, "the victim on the other node")
		wantStatus(t, login(t, a, "198.51.100.8", "root", "correct horse"), 201, "the admin")
	})
	t.Run("SharedAcrossNodes", func(t *testing.T) {
		for range 3 {
			wantStatus(t, login(t, a, "10.9.9.9", "u3", "wrong password"), 401, "a wrong password on node A")
		}
		wantStatus(t, login(t, b, "10.9.9.9", "u3", "pw-u3-secret"), 429, "the same address and name on node B")
		wantStatus(t, login(t, b, "10.9.9.10", "u3", "pw-u3-secret"), 201, "another address on node B")
	})
	t.Run("ASprayedAddressKeepsWorkingForRightPasswords", func(t *testing.T) {
		// 20 failures from one address over any names: from then on each
		// name gets one free attempt there, not three, but a right
		// password is never refused for the others' failures.
		for i := range 20 {
			wantStatus(t, login(t, b, "10.7.7.7", fmt.Sprintf("nobody%d", i), "guess-guess"), 401, "a guess at a made-up name")
		}
		r := login(t, a, "10.7.7.7", "u4", "pw-u4-secret")
		wantStatus(t, r, 201, "u4's right password from the sprayed address")
		wantStatus(t, login(t, a, "10.7.7.7", "u3", "wrong password"), 401, "u3's one free guess there")
		r = login(t, a, "10.7.7.7", "u3", "pw-u3-secret")
		wantStatus(t, r, 429, "u3 after a failure of its own from the sprayed address")
		if ra := r.Header.Get("Retry-After"); ra != "1" {
			t.Fatalf("Retry-After %q, want 1", ra)
		}
	})
	t.Run("AKnownDeviceIsNeverDelayedByOthers", func(t *testing.T) {
		// The victim logged in from the office before (the hub set its
		// device cookie); a colleague at the same address guesses at the
		// victim's name until that name waits there.
		office := "192.0.2.50"
		dev := testhub.NewClient(t, a.URL())
		wantStatus(t, dev.DoWith("POST", "/api/v1/sessions", map[string]string{"name": "victim", "password": "pw-victim-secret"}, map[string]string{"X-Forwarded-For": office}), 201, "the victim's first login")
		for range 6 {
			login(t, a, office, "victim", "guess-guess")
		}
		wantStatus(t, login(t, a, office, "victim", "pw-victim-secret"), 429, "the right password from the office without the device")
		wantStatus(t, dev.DoWith("POST", "/api/v1/sessions", map[string]string{"name": "victim", "password": "pw-victim-secret"}, map[string]string{"X-Forwarded-For": office}), 201, "the victim's device")
		devB := testhub.NewClient(t, b.URL())
		devB.HTTP.Jar = dev.HTTP.Jar
		wantStatus(t, devB.DoWith("POST", "/api/v1/sessions", map[string]string{"name": "victim", "password": "pw-victim-secret"}, map[string]string{"X-Forwarded-For": "198.18.0.1"}), 201, "the victim's device on node B, elsewhere")
		// The device's own failures delay it, and only it.
		for range 3 {
			wantStatus(t, dev.DoWith("POST", "/api/v1/sessions", map[string]string{"name": "victim", "password": "typo-typo"}, map[string]string{"X-Forwarded-For": office}), 401, "the victim's own typo")
		}
		r := dev.DoWith("POST", "/api/v1/sessions", map[string]string{"name": "victim", "password": "pw-victim-secret"}, map[string]string{"X-Forwarded-For": office})
		wantStatus(t, r, 429, "the device after its own failures")
		if r.ErrReason() != "login-delay" || r.Header.Get("Retry-After") == "" {
			t.Fatalf("reason %q Retry-After %q", r.ErrReason(), r.Header.Get("Retry-After"))
		}
		// A device cookie it did not set is no device.
		forged := testhub.NewClient(t, a.URL())
		u, _ := url.Parse(a.URL())
		forged.HTTP.Jar.SetCookies(u, []*http.Cookie{{Name: "wh_device", Value: "whd_" + strings.Repeat("A", 43), Path: "/api/v1/"}})
		wantStatus(t, forged.DoWith("POST", "/api/v1/sessions", map[string]string{"name": "victim", "password": "pw-victim-secret"}, map[string]string{"X-Forwarded-For": office}), 429, "a made-up device cookie")
	})
	t.Run("CurrentPasswordChecksCount", func(t *testing.T) {
		u4 := a.Login("u4", "pw-u4-secret")
		for range 3 {
			u4.Must(403, "PUT", "/api/v1/me/password", map[string]string{"current": "guess-guess", "password": "new password 4"})
		}
		u4.Must(429, "PUT", "/api/v1/me/password", map[string]string{"current": "pw-u4-secret", "password": "new password 4"})
	})
}

// X-Forwarded-For from a peer that is not a trusted proxy is ignored: the
// peer's own address counts.
func TestLoginThrottleIgnoresUntrustedForwarding(t *testing.T) {
	h := testhub.Start(t, testhub.Options{Now: frozen()})
	admin := h.Setup("root", "correct horse")
	admin.Must(201, "POST", "/api/v1/users", map[string]string{"name": "u1", "password": "pw-u1-secret"})
	for _, ip := range []string{"1.1.1.1", "2.2.2.2", "3.3.3.3"} {
		wantStatus(t, login(t, h, ip, "u1", "wrong password"), 401, "a guess claiming "+ip)
	}
	wantStatus(t, login(t, h, "4.4.4.4", "u1", "pw-u1-secret"), 429, "a fourth address claimed by the same peer")
}
