package hub

import (
	"context"
	"encoding/base64"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"
)

// The callout admits a client only with a valid signature over the
// server's nonce by the key of a paired bridge, and gives it exactly that
// bridge's subjects.
func TestCalloutAuthorize(t *testing.T) {
	paired, _ := nkeys.CreateUser()
	stranger, _ := nkeys.CreateUser()
	issuer, _ := nkeys.CreateAccount()
	co := &callout{issuer: issuer, account: "WHEELHOUSE", now: time.Now,
		lookup: func(_ context.Context, key string) (string, error) {
			if key == pubKey(paired) {
				return "b1", nil
			}
			return "", errors.New("no")
		}}
	const nonce = "abcdefghijk"
	req := func(kp nkeys.KeyPair, signer nkeys.KeyPair, kind string) *jwt.AuthorizationRequest {
		sig, _ := signer.Sign([]byte(nonce))
		r := &jwt.AuthorizationRequest{}
		r.ClientInformation.Nonce, r.ClientInformation.Kind = nonce, kind
		r.ConnectOptions.Nkey, r.ConnectOptions.SignedNonce = pubKey(kp), base64.RawURLEncoding.EncodeToString(sig)
		return r
	}
	for _, tc := range []struct {
		name string
		req  *jwt.AuthorizationRequest
		want string
	}{
		{"OK", req(paired, paired, "Client"), ""},
		{"ErrWrongSignature", req(paired, stranger, "Client"), "signature does not match"},
		{"ErrUnpaired", req(stranger, stranger, "Client"), "unknown or revoked"},
		{"ErrLeafnode", req(paired, paired, "Leafnode"), "not accepted"},
		{"ErrNoKey", &jwt.AuthorizationRequest{ConnectOptions: jwt.ConnectOptions{Token: "secret"}}, "bridges sign in with their nkey"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, err := co.authorize(tc.req)
			if tc.want == "" {
				if err != nil || id != "b1" {
					t.Fatalf("%q %v", id, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%q %v, want %q", id, err, tc.want)
			}
		})
	}
	t.Run("UserJWTLimitsTheBridge", func(t *testing.T) {
		user, _ := nkeys.CreateUser()
		tok, err := co.userJWT(pubKey(user), "b1")
		if err != nil {
			t.Fatal(err)
		}
		uc, err := jwt.DecodeUserClaims(tok)
		if err != nil {
			t.Fatal(err)
		}
		if uc.Issuer != pubKey(issuer) || uc.Audience != "WHEELHOUSE" || uc.Name != "bridge-b1" || uc.Expires > time.Now().Add(BridgeLoginTTL+time.Minute).Unix() {
			t.Fatalf("claims %+v", uc.ClaimsData)
		}
		if got := strings.Join(uc.Pub.Allow, " "); got != "wh.hub.b1.>" {
			t.Fatalf("publish %q", got)
		}
		if got := strings.Join(uc.Sub.Allow, " "); got != "wh.bridge.b1.> _INBOX.b1.>" {
			t.Fatalf("subscribe %q", got)
		}
	})
}

func TestPublicURL(t *testing.T) {
	addr := func(s string) net.Addr { a, _ := net.ResolveTCPAddr("tcp", s); return a }
	for _, tc := range []struct {
		configured string
		ln         string
		tls        bool
		want       string
	}{
		{"https://chat.example.com/", "127.0.0.1:8080", false, "https://chat.example.com"},
		{"", "127.0.0.1:8080", false, "http://127.0.0.1:8080"},
		{"", "127.0.0.1:8443", true, "https://127.0.0.1:8443"},
		{"", "0.0.0.0:8080", false, "http://myhost:8080"},
		{"", "[::]:8443", true, "https://myhost:8443"},
	} {
		if got := publicURL(tc.configured, addr(tc.ln), tc.tls, "myhost"); got != tc.want {
			t.Errorf("%q on %s: %q, want %q", tc.configured, tc.ln, got, tc.want)
		}
	}
	for _, bad := range []string{"http://0.0.0.0:8080", "https://[::]", "chat.example.com", "https://chat.example.com/sub"} {
		if err := checkPublicURL(bad); err == nil {
			t.Errorf("--public-url %q accepted", bad)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{DataDir: "d", TLSCert: "c.pem"}, "--tls-cert and --tls-key go together"},
		{Config{DataDir: "d", NATSURL: "nats://n:4222"}, "--nats-url needs --nats-secrets"},
		{Config{DataDir: "d", NATSURL: "nats://n:4222", NATSSecrets: "s.json"}, "--nats-websocket is required"},
		{Config{DataDir: "d", NATSURL: "nats://n:4222", NATSSecrets: "s.json", NATSWebsocket: []string{"nats://n:4222"}}, "want ws://host:port"},
		{Config{DataDir: "d", PublicURL: "http://[::]:80"}, "not a wildcard"},
		{Config{DataDir: "d", Sync: "sometimes"}, `--sync "sometimes": want always`},
		{Config{DataDir: "d", Sync: SyncAlways, NATSURL: "nats://n:4222", NATSSecrets: "s.json", NATSWebsocket: []string{"ws://n:8080"}}, "sync_interval: always"},
	} {
		if err := tc.cfg.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.want)
		}
	}
}
