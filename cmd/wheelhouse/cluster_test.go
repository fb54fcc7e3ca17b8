package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/wheelhouse-dev/wheelhouse/bridge"
	"github.com/wheelhouse-dev/wheelhouse/bridge/harnesses"
	"github.com/wheelhouse-dev/wheelhouse/hub"
	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// TestLocalCluster runs scripts/local-cluster.sh: three real nats-server
// nodes configured by the shipped deploy/nats.conf and two hubs as their
// auth callout. Bridges paired on either hub log in through either hub,
// reach only their own subjects, and are cut off cluster-wide when revoked.
func TestLocalCluster(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd := exec.Command("bash", testhub.RepoFile("scripts/local-cluster.sh"), dir)
	cmd.Env = append(os.Environ(), "WHEELHOUSE_TEST_AS_MAIN=1", "WH_BIN="+self, "NATS_SERVER="+testhub.NATSServerBinary(t))
	stdout, _ := cmd.StdoutPipe()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, lines: make(chan string, 100)}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
	}()
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			cmd.Process.Signal(syscall.SIGTERM)
			cmd.Wait()
		}
		if t.Failed() {
			t.Logf("local-cluster.sh stderr:\n%s", stderr.String())
			for _, f := range []string{"hub-1/hub.log", "hub-2/hub.log", "nats-1/nats.log"} {
				b, _ := os.ReadFile(filepath.Join(dir, f))
				t.Logf("%s:\n%s", f, lastLines(string(b), 30))
			}
		}
	})
	hub1 := p.expect(t, `^hub 1: (\S+)`)[1]
	hub2 := p.expect(t, `^hub 2: (\S+)`)[1]
	natsURLs := p.expect(t, `^NATS: (\S+)`)[1]
	token := p.expect(t, `^setup token: (\S+)`)[1]

	admin := testhub.NewClient(t, hub1)
	admin.Must(201, "POST", "/api/v1/setup", map[string]string{"token": token, "name": "root", "password": "correct horse"})
	admin.Must(201, "POST", "/api/v1/users", map[string]string{"name": "alice", "password": "alice-secret"})
	admin.Must(201, "POST", "/api/v1/users", map[string]string{"name": "bob", "password": "bob-secret-1"})
	alice1 := login(t, hub1, "alice", "alice-secret")
	testhub.WaitFor(t, 10*time.Second, "hub 2 to apply the new users", func() bool {
		return testhub.NewClient(t, hub2).Do("POST", "/api/v1/sessions", map[string]string{"name": "bob", "password": "bob-secret-1"}).Status == 201
	})
	alice2 := login(t, hub2, "alice", "alice-secret")
	bob2 := login(t, hub2, "bob", "bob-secret-1")

	// Alice pairs on hub 1; her bridge then runs through hub 2. Bob pairs on hub 2.
	a := pairOn(t, alice1, hub1, "alice-laptop")
	b := pairOn(t, bob2, hub2, "bob-laptop")
	aVia2 := *a
	aVia2.Hub = hub2
	out := &lockedBuffer{}
	br, err := bridge.New(bridge.Config{Creds: &aVia2, Harnesses: harnesses.All(), Out: out, Logger: testhub.Logger(t),
		Agents: []bridge.AgentConfig{{Name: "demo", Harness: "demo", Options: map[string]string{"steps": "1", "step": "10ms"},
			Rooms: map[string]string{"dev": "normal"}}}}) // consent given on the bridge machine
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- br.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	t.Run("MentionOnHub1ReachesBridgeOnHub2", func(t *testing.T) {
		alice1.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "dev"})
		testhub.WaitFor(t, 20*time.Second, "alice/demo online", func() bool {
			return alice1.Do("POST", "/api/v1/rooms/dev/agents", map[string]string{"agent": "alice/demo"}).Status == 200
		})
		r := alice1.Must(201, "POST", "/api/v1/rooms/dev/messages", map[string]string{"text": "@alice/demo list the files"})
		if rs := testhub.AsList(r.Body["receipts"]); len(rs) != 1 || rs[0]["status"] == "rejected" {
			t.Fatalf("receipts %v", rs)
		}
		testhub.WaitFor(t, 20*time.Second, "the demo agent's reply", func() bool {
			for _, m := range testhub.AsList(alice1.Must(200, "GET", "/api/v1/rooms/dev/messages?include=replies", nil).Body["messages"]) {
				if m["author"] == "alice/demo" {
					return true
				}
			}
			return false
		})
	})

	// A second connection with Alice's key, through hub 1, probes the fences.
	var violations testhub.Violations
	lost := make(chan struct{}, 1)
	nc, err := a.Dial("probe",
		nats.ErrorHandler(violations.Handler),
		nats.DisconnectErrHandler(func(*nats.Conn, error) {
			select {
			case lost <- struct{}{}:
			default:
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	refused := func(t *testing.T, what string, do func() error) {
		t.Helper()
		violations.Refused(t, nc, what, do)
	}
	noop := func(*nats.Msg) {}
	t.Run("OnlyOwnSubjects", func(t *testing.T) {
		refused(t, "subscribe to Bob's bridge", func() error { _, err := nc.Subscribe("wh.bridge."+b.BridgeID+".>", noop); return err })
		refused(t, "subscribe to Bob's inbox", func() error { _, err := nc.Subscribe(wire.InboxPrefix(b.BridgeID)+".>", noop); return err })
		refused(t, "publish as Bob's bridge", func() error { return nc.Publish(wire.FromBridge(b.BridgeID, wire.KindReceipt), []byte("{}")) })
		refused(t, "steer Bob's bridge", func() error { return nc.Publish(wire.ToBridge(b.BridgeID, wire.KindSteer), []byte("{}")) })
		refused(t, "subscribe to the log", func() error { _, err := nc.Subscribe("wh.log.>", noop); return err })
		refused(t, "publish to the log", func() error { return nc.Publish("wh.log.message.posted", []byte("{}")) })
		if _, err := nc.Subscribe(wire.ToBridge(a.BridgeID, wire.KindSteer), noop); err != nil {
			t.Fatal(err)
		}
	})
	// Reply subjects outside the bridge's inbox are answered by neither hub:
	// the stream and the login bucket are intact, nothing reached the log
	// or Bob's bridge, and a genuine request on the inbox is answered.
	t.Run("ReplySubjectsOutsideInbox", func(t *testing.T) {
		spy, err := b.Connect()
		if err != nil {
			t.Fatal(err)
		}
		defer spy.Close()
		steers, _ := spy.SubscribeSync(wire.ToBridge(b.BridgeID, wire.KindSteer))
		spy.Flush()
		req := []byte(`{"steerId":"s1.0","fileId":"fnotafile0000000"}`)
		for _, reply := range []string{"$JS.API.STREAM.DELETE.WHEELHOUSE", "$JS.API.STREAM.DELETE.KV_wheelhouse-logins", "wh.log.forged", wire.ToBridge(b.BridgeID, wire.KindSteer)} {
			for _, kind := range []string{wire.KindFile, wire.KindAnnounce} {
				if err := nc.PublishMsg(&nats.Msg{Subject: wire.FromBridge(a.BridgeID, kind), Reply: reply, Data: req}); err != nil {
					t.Fatal(err)
				}
			}
		}
		m, err := nc.Request(wire.FromBridge(a.BridgeID, wire.KindFile), req, 10*time.Second)
		if err != nil || m.Header.Get(wire.FileErrorHeader) == "" {
			t.Fatalf("the genuine request on the inbox: %v %v", m, err)
		}
		s, err := hub.LoadNATSSecrets(filepath.Join(dir, "secrets", hub.HubAuthFile))
		if err != nil {
			t.Fatal(err)
		}
		kp, _ := nkeys.FromSeed([]byte(s.LogSeed))
		pub, _ := kp.PublicKey()
		lnc, err := nats.Connect(natsURLs, nats.Nkey(pub, kp.Sign), nats.CustomInboxPrefix(hub.LogInbox))
		if err != nil {
			t.Fatal(err)
		}
		defer lnc.Close()
		js, _ := jetstream.New(lnc)
		ctx := context.Background()
		for _, name := range []string{"WHEELHOUSE", "KV_wheelhouse-logins"} {
			if _, err := js.Stream(ctx, name); err != nil {
				t.Fatalf("stream %s: %v", name, err)
			}
		}
		st, _ := js.Stream(ctx, "WHEELHOUSE")
		if _, err := st.GetLastMsgForSubject(ctx, "wh.log.forged"); !errors.Is(err, jetstream.ErrMsgNotFound) {
			t.Fatalf("something reached the log: %v", err)
		}
		spy.Flush()
		if n, _, _ := steers.Pending(); n != 0 {
			t.Fatal("a hub published on Bob's steer subject")
		}
	})
	t.Run("UnpairedKeyRefused", func(t *testing.T) {
		kp, _ := nkeys.CreateUser()
		seed, _ := kp.Seed()
		stranger := &bridge.Credentials{Hub: hub1, BridgeID: "stranger", Owner: "mallory", Seed: string(seed)}
		if _, err := stranger.Connect(); err == nil || !strings.Contains(err.Error(), "refused this bridge's key") {
			t.Fatalf("an unpaired key connected: %v", err)
		}
	})
	t.Run("RevocationOnHub2DisconnectsEverywhere", func(t *testing.T) {
		select {
		case <-lost:
			t.Fatal("the probe connection dropped before the revocation")
		default:
		}
		if strings.Contains(out.String(), "lost the hub connection") {
			t.Fatalf("the bridge dropped before the revocation:\n%s", out.String())
		}
		alice2.Must(204, "DELETE", "/api/v1/bridges/"+a.BridgeID, nil)
		select {
		case <-lost:
		case <-time.After(10 * time.Second):
			t.Fatal("the connection through hub 1 stayed up")
		}
		testhub.WaitFor(t, 10*time.Second, "the bridge through hub 2 to lose its connection", func() bool {
			return strings.Contains(out.String(), "lost the hub connection")
		})
		if _, err := a.Connect(); err == nil || !strings.Contains(err.Error(), "refused this bridge's key") {
			t.Fatalf("a revoked bridge logged in again: %v", err)
		}
	})

	// Stopping the script stops every process it started.
	cmd.Process.Signal(syscall.SIGTERM)
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err := <-waited:
		stopped = true
		if err != nil {
			t.Fatalf("local-cluster.sh exited with %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("local-cluster.sh did not stop")
	}
	for _, u := range []string{hub1, hub2} {
		if r, err := (&http.Client{Timeout: time.Second}).Get(u + "/healthz"); err == nil {
			r.Body.Close()
			t.Errorf("%s still answers after the script stopped", u)
		}
	}
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(l[max(0, len(l)-n):], "\n")
}

func login(t *testing.T, base, name, password string) *testhub.Client {
	c := testhub.NewClient(t, base)
	c.Must(201, "POST", "/api/v1/sessions", map[string]string{"name": name, "password": password})
	return c
}

func pairOn(t *testing.T, owner *testhub.Client, hubURL, name string) *bridge.Credentials {
	r := owner.Must(201, "POST", "/api/v1/bridges/pairing-tokens", nil)
	c, err := bridge.Pair(context.Background(), bridge.PairConfig{Hub: hubURL, Token: r.Body["token"].(string), Name: name})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
