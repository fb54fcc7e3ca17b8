package hub_test

import (
	"crypto/tls"
	"net/http"
	"strings"
	"testing"

	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
)

// The hub's own TLS listener asks browsers to keep to https (HSTS) and
// offers TLS 1.2 only with AEAD suites, never CBC.
func TestHubTLSListener(t *testing.T) {
	ca := testhub.NewCA(t)
	h := testhub.Start(t, testhub.Options{TLS: ca})
	t.Run("HSTS", func(t *testing.T) {
		hc := &http.Client{Transport: ca.Transport()}
		resp, err := hc.Get(h.URL() + "/api/v1/setup")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if v := resp.Header.Get("Strict-Transport-Security"); !strings.HasPrefix(v, "max-age=") {
			t.Fatalf("Strict-Transport-Security %q", v)
		}
	})
	t.Run("PlainHTTPHasNoHSTS", func(t *testing.T) {
		p := testhub.Start(t, testhub.Options{})
		resp, err := http.Get(p.URL() + "/api/v1/setup")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if v := resp.Header.Get("Strict-Transport-Security"); v != "" {
			t.Fatalf("HSTS over plain HTTP: %q", v)
		}
	})
	addr := strings.TrimPrefix(h.URL(), "https://")
	tr := ca.Transport()
	dial := func(suite uint16) error {
		cfg := tr.TLSClientConfig.Clone()
		cfg.MaxVersion, cfg.CipherSuites = tls.VersionTLS12, []uint16{suite}
		c, err := tls.Dial("tcp", addr, cfg)
		if err == nil {
			c.Close()
		}
		return err
	}
	for _, s := range []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA, tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA, tls.TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA, tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256} {
		if err := dial(s); err == nil {
			t.Errorf("TLS 1.2 with %s was accepted", tls.CipherSuiteName(s))
		}
	}
	if err := dial(tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256); err != nil && dial(tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256) != nil {
		t.Fatalf("TLS 1.2 with an AEAD suite was refused: %v", err)
	}
}
