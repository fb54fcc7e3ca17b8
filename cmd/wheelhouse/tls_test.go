package main

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/bridge"
	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
)

// TestTLSEndToEnd runs a hub that serves HTTPS itself on every interface,
// as a team would, and a bridge paired with it over https from its own
// home: the bridge reaches NATS only through the hub's /nats, verifies the
// hub's certificate against the CA it was paired with, and refuses what it
// should.
func TestTLSEndToEnd(t *testing.T) {
	ca := testhub.NewCA(t)
	leaf := ca.Leaf(t, "127.0.0.1", "localhost")
	hubProc := startProc(t, homeEnv(t), "hub", "--data", t.TempDir(), "--http", "0.0.0.0:0", "--nats", "127.0.0.1:0",
		"--tls-cert", leaf.CertFile, "--tls-key", leaf.KeyFile)
	m := hubProc.expect(t, `^Wheelhouse hub at (\S+) \(bridges connect through (\S+)\)`)
	printed, natsURL := m[1], m[2]
	pu, err := url.Parse(printed)
	if err != nil || pu.Scheme != "https" || strings.Contains(printed, "0.0.0.0") || strings.Contains(printed, "[::]") {
		t.Fatalf("printed URL %q", printed)
	}
	if natsURL != "wss://"+pu.Host+"/nats" {
		t.Fatalf("bridges told to connect to %q", natsURL)
	}
	hubProc.expect(t, `^Note: listening on every interface .* set --public-url`)
	setupToken := hubProc.expect(t, `setup token (\S+)`)[1]
	hubURL := "https://127.0.0.1:" + pu.Port() // the certificate names 127.0.0.1

	admin := testhub.NewClient(t, hubURL)
	admin.HTTP.Transport = ca.Transport()
	admin.Must(201, "POST", "/api/v1/setup", map[string]string{"token": setupToken, "name": "admin", "password": "correct horse"})
	admin.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "dev"})
	pairing := admin.Must(201, "POST", "/api/v1/bridges/pairing-tokens", nil)
	token := pairing.Body["token"].(string)
	if cmd := pairing.Body["command"].(string); !strings.Contains(cmd, "--hub "+printed+" ") {
		t.Fatalf("pairing command %q does not use the printed URL %s", cmd, printed)
	}

	creds := filepath.Join(t.TempDir(), "bridge.json")
	t.Run("PlaintextRemoteHubRefused", func(t *testing.T) {
		out, code := runCmd(t, "bridge", "pair", "--hub", "http://192.0.2.7:8080", "--token", token, "--credentials", creds)
		if code != 1 || !strings.Contains(out, "wheelhouse bridge pair: refusing the plaintext hub") || !strings.Contains(out, "--insecure") {
			t.Fatalf("%d %s", code, out)
		}
	})
	t.Run("UntrustedCertificateRefused", func(t *testing.T) {
		out, code := runCmd(t, "bridge", "pair", "--hub", hubURL, "--token", token, "--credentials", creds)
		if code != 1 || !strings.Contains(out, "certificate is not trusted") || !strings.Contains(out, "--ca FILE") {
			t.Fatalf("system roots: %d %s", code, out)
		}
		other := testhub.NewCA(t)
		out, code = runCmd(t, "bridge", "pair", "--hub", hubURL, "--token", token, "--ca", other.File, "--credentials", creds)
		if code != 1 || !strings.Contains(out, "certificate is not trusted") {
			t.Fatalf("another CA: %d %s", code, out)
		}
	})
	if out, code := runCmd(t, "bridge", "pair", "--hub", hubURL, "--token", token, "--ca", ca.File, "--credentials", creds, "--name", "laptop"); code != 0 {
		t.Fatalf("pair: %d %s", code, out)
	}
	c, err := bridge.LoadCredentials(creds)
	if err != nil || c.NATSURL != "wss://127.0.0.1:"+pu.Port()+"/nats" || c.CA != string(ca.PEM) {
		t.Fatalf("credentials: %+v %v", c, err)
	}

	t.Run("MentionReachesTheDemoAgent", func(t *testing.T) {
		cfg := filepath.Join(t.TempDir(), "bridge.toml")
		os.WriteFile(cfg, []byte("[[agent]]\nname = \"demo\"\nharness = \"demo\"\noptions = { steps = \"1\", step = \"10ms\" }\n"), 0o600)
		br := startProc(t, homeEnv(t), "bridge", "run", "--config", cfg, "--credentials", creds, "--socket", filepath.Join(t.TempDir(), "b.sock"))
		br.expect(t, `connected to https://127\.0\.0\.1:\d+ as bridge`)
		admin.Must(200, "POST", "/api/v1/rooms/dev/agents", map[string]string{"agent": "admin/demo"})
		r := admin.Must(201, "POST", "/api/v1/rooms/dev/messages", map[string]string{"text": "@admin/demo list the files"})
		if rs := testhub.AsList(r.Body["receipts"]); len(rs) != 1 || rs[0]["status"] == "rejected" {
			t.Fatalf("receipts %v", rs)
		}
		testhub.WaitFor(t, 20*time.Second, "the demo agent's reply", func() bool {
			r := admin.Must(200, "GET", "/api/v1/rooms/dev/messages?include=replies", nil)
			for _, m := range testhub.AsList(r.Body["messages"]) {
				if m["author"] == "admin/demo" {
					return true
				}
			}
			return false
		})
	})
	t.Run("WrongCertificateRefusedAtRun", func(t *testing.T) {
		var stored map[string]any
		b, _ := os.ReadFile(creds)
		json.Unmarshal(b, &stored)
		stored["ca"] = string(testhub.NewCA(t).PEM)
		forged := filepath.Join(t.TempDir(), "bridge.json")
		b, _ = json.Marshal(stored)
		os.WriteFile(forged, b, 0o600)
		cfg := filepath.Join(t.TempDir(), "bridge.toml")
		os.WriteFile(cfg, []byte("[[agent]]\nname = \"demo\"\nharness = \"demo\"\n"), 0o600)
		out, code := runCmd(t, "bridge", "run", "--config", cfg, "--credentials", forged, "--socket", filepath.Join(t.TempDir(), "b.sock"))
		if code != 1 || !strings.Contains(out, "certificate is not trusted") || !strings.Contains(out, "pair again") {
			t.Fatalf("%d %s", code, out)
		}
	})
	t.Run("NATSEndpointIsForBridgesOnly", func(t *testing.T) {
		r := admin.Do("GET", "/nats", nil)
		if r.Status != 400 {
			t.Fatalf("GET /nats: %d %s", r.Status, r.Raw)
		}
	})
	t.Run("NoNonLoopbackNATSPort", func(t *testing.T) {
		https, _ := strconv.Atoi(pu.Port())
		var public []string
		sawHTTPS := false
		for _, a := range listeningTCP(t, hubProc.cmd.Process.Pid) {
			sawHTTPS = sawHTTPS || a.Port == https
			if !a.IP.IsLoopback() && a.Port != https {
				public = append(public, a.String())
			}
		}
		if !sawHTTPS {
			t.Fatalf("the listener table lacks the HTTPS port %d", https)
		}
		if len(public) > 0 {
			t.Fatalf("the hub listens beyond loopback on more than its HTTPS port %s: %v", pu.Port(), public)
		}
	})
}
