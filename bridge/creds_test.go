package bridge

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nkeys"
)

func writeCreds(t *testing.T, json string) string {
	p := filepath.Join(t.TempDir(), "bridge.json")
	if err := os.WriteFile(p, []byte(json), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func seed(t *testing.T) string {
	kp, _ := nkeys.CreateUser()
	s, _ := kp.Seed()
	return string(s)
}

// Credentials written before bridges reached NATS through the hub's URL
// carry a raw nats:// URL: it is replaced by the hub's /nats endpoint, and
// a plaintext hub on another machine is refused with a way out.
func TestCredentialsFromEarlierVersions(t *testing.T) {
	t.Run("LocalHubKeepsWorking", func(t *testing.T) {
		c, err := LoadCredentials(writeCreds(t, `{"hub":"http://127.0.0.1:8080","natsUrl":"nats://127.0.0.1:4222","bridgeId":"b1","owner":"alice","seed":"`+seed(t)+`"}`))
		if err != nil || c.NATSURL != "ws://127.0.0.1:8080/nats" {
			t.Fatalf("%+v %v", c, err)
		}
		if _, err := c.tlsConfig(); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("HTTPSHubKeepsWorking", func(t *testing.T) {
		c, err := LoadCredentials(writeCreds(t, `{"hub":"https://chat.example.com","natsUrl":"nats://chat.example.com:4222","bridgeId":"b1","owner":"alice","seed":"`+seed(t)+`"}`))
		if err != nil || c.NATSURL != "wss://chat.example.com/nats" {
			t.Fatalf("%+v %v", c, err)
		}
	})
	t.Run("PlaintextRemoteHubRefused", func(t *testing.T) {
		c, err := LoadCredentials(writeCreds(t, `{"hub":"http://hub.lan:8080","natsUrl":"nats://hub.lan:4222","bridgeId":"b1","owner":"alice","seed":"`+seed(t)+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Connect()
		if err == nil || !strings.Contains(err.Error(), "refusing the plaintext hub http://hub.lan:8080") || !strings.Contains(err.Error(), "--insecure") {
			t.Fatalf("%v", err)
		}
		c.Insecure = true
		if _, err := c.tlsConfig(); err != nil {
			t.Fatalf("--insecure: %v", err)
		}
	})
	t.Run("NoUsableHub", func(t *testing.T) {
		_, err := LoadCredentials(writeCreds(t, `{"natsUrl":"nats://127.0.0.1:4222","bridgeId":"b1","owner":"alice","seed":"`+seed(t)+`"}`))
		if err == nil || !strings.Contains(err.Error(), "pair again") {
			t.Fatalf("%v", err)
		}
	})
}
