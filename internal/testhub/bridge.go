package testhub

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/bridge"
	"github.com/wheelhouse-dev/wheelhouse/bridge/harnesses"
)

// Bridge is a real bridge running in-process against a test hub.
type Bridge struct {
	*bridge.Bridge
	Creds  *bridge.Credentials
	Socket string // the control socket (wheelhouse approve)
	t      testing.TB
	cancel context.CancelFunc
	done   chan error
	out    *syncBuffer

	// Journals is the folder of the agents' journals (bridge.JournalPath).
	Journals string
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Pair has owner pair a new bridge and returns its credentials.
func (h *Hub) Pair(owner *Client, name string) *bridge.Credentials {
	h.t.Helper()
	r := owner.Must(201, "POST", "/api/v1/bridges/pairing-tokens", nil)
	creds, err := bridge.Pair(context.Background(), bridge.PairConfig{Hub: h.URL(), Token: r.Body["token"].(string), Name: name, CA: h.CA})
	if err != nil {
		h.t.Fatalf("pair: %v", err)
	}
	return creds
}

// StartBridge pairs (unless creds is given) and runs a bridge with agents,
// and waits until the hub lists them.
func (h *Hub) StartBridge(owner *Client, creds *bridge.Credentials, agents ...bridge.AgentConfig) *Bridge {
	h.t.Helper()
	return h.StartBridgeWith(owner, creds, nil, agents...)
}

// StartBridgeWith is StartBridge with extra harness kinds (test harnesses).
func (h *Hub) StartBridgeWith(owner *Client, creds *bridge.Credentials, extra map[string]bridge.Factory, agents ...bridge.AgentConfig) *Bridge {
	h.t.Helper()
	fs := harnesses.All()
	for k, f := range extra {
		fs[k] = f
	}
	if creds == nil {
		creds = h.Pair(owner, "test-bridge")
	}
	out := &syncBuffer{}
	sock := h.t.TempDir() + "/bridge.sock"
	journals := h.t.TempDir()
	b, err := bridge.New(bridge.Config{Creds: creds, Agents: agents, Harnesses: fs, Out: out,
		ControlSocket: sock, Logger: Logger(h.t).With("side", "bridge"), JournalDir: journals, TrustFile: h.trustFile(creds.BridgeID),
		CallTimeout: h.callTimeout})
	if err != nil {
		h.t.Fatalf("bridge: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	tb := &Bridge{Bridge: b, Creds: creds, Socket: sock, Journals: journals, t: h.t, cancel: cancel, done: make(chan error, 1), out: out}
	go func() { tb.done <- b.Run(ctx) }()
	h.t.Cleanup(tb.Stop)
	for _, a := range agents {
		handle := creds.Owner + "/" + a.Name
		if owner != nil {
			recordBridge(owner.Base, handle, creds.BridgeID)
		}
		WaitFor(h.t, 30*time.Second, "agent "+handle+" online", func() bool {
			select {
			case err := <-tb.done:
				tb.done <- err
				h.t.Fatalf("bridge stopped: %v", err)
			default:
			}
			r := owner.Do("GET", "/api/v1/agents", nil)
			for _, x := range asList(r.Body["agents"]) {
				if x["handle"] == handle && x["status"] != "offline" {
					return true
				}
			}
			return false
		})
	}
	CheckFor(h.t, 30*time.Second, "the bridge's control socket", func() error {
		_, err := bridge.Control(context.Background(), sock, bridge.ControlRequest{Op: "devices"})
		return err
	})
	if owner != nil && owner.Name == creds.Owner && !enrolled(tb, owner.Device) {
		// The owner decides from a device this bridge trusts.
		if owner.Device == nil {
			owner.Device = NewDevice(h.t, owner.Name+"'s laptop")
		}
		h.Enroll(owner, tb, owner.Device)
	}
	return tb
}

// trustFile is the trust store of bridge id, kept across its restarts.
func (h *Hub) trustFile(id string) string {
	if p, ok := trustFiles.Load(id); ok {
		return p.(string)
	}
	p := h.t.TempDir() + "/bridge.trust.json"
	trustFiles.Store(id, p)
	return p
}

// trustFiles maps a bridge id to its trust store (a restarted bridge, in
// the same test, finds its owner's devices and consent again).
var trustFiles sync.Map

// Stop stops the bridge (idempotent) and returns Run's error.
func (b *Bridge) Stop() {
	if b.cancel == nil {
		return
	}
	b.cancel()
	b.cancel = nil
	select {
	case <-b.done:
	case <-time.After(30 * time.Second):
		b.t.Errorf("bridge did not stop")
	}
}

// Out is the bridge's live terminal log.
func (b *Bridge) Out() string { return b.out.String() }

func asList(v any) []map[string]any {
	var out []map[string]any
	l, _ := v.([]any)
	for _, x := range l {
		if m, ok := x.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// AsList converts a decoded JSON array of objects.
func AsList(v any) []map[string]any { return asList(v) }

func enrolled(b *Bridge, d *Device) bool {
	if d == nil {
		return false
	}
	for _, x := range b.Devices() {
		if x.ID == d.ID && !x.Revoked {
			return true
		}
	}
	return false
}
