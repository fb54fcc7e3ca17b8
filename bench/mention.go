package bench

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/wheelhouse-dev/wheelhouse/bridge"
	"github.com/wheelhouse-dev/wheelhouse/chat"
	"github.com/wheelhouse-dev/wheelhouse/hub"
)

// probe is a harness that records when each input reaches it. Its first
// turn never ends, so every later mention is a steer.
type probe struct {
	mu  sync.Mutex
	got map[int]time.Time
}

var markRE = regexp.MustCompile(`mark-(\d+)`)

func (p *probe) record(in bridge.Input) {
	now := time.Now()
	if m := markRE.FindStringSubmatch(in.Text); m != nil {
		k, _ := strconv.Atoi(m[1])
		p.mu.Lock()
		p.got[k] = now
		p.mu.Unlock()
	}
}

func (p *probe) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.got)
}

func (p *probe) Kind() string                            { return "probe" }
func (p *probe) CanSteer() bool                          { return true }
func (p *probe) Start(context.Context) error             { return nil }
func (p *probe) Close() error                            { return nil }
func (p *probe) Interrupt(context.Context, string) error { return nil }
func (p *probe) StartTurn(_ context.Context, in bridge.Input) (string, error) {
	p.record(in)
	return "probe-1", nil
}

func (p *probe) Steer(_ context.Context, turn string, in bridge.Input) error {
	p.record(in)
	return nil
}

// The probe acts on nothing, so every turn of it is strict (bridge.Gating):
// the bridge lets people other than the owner reach it.
func (p *probe) StrictTurns() error     { return nil }
func (p *probe) TurnStrict(string) bool { return true }
func (p *probe) OwnerTurns() string     { return "" }

// MentionLatency measures the time from the POST of a message mentioning
// an agent to the bridge handing the steer to the harness, over n
// mentions posted one after another. The owner mentions it with the rate
// limiter lifted; or (member) people of the room who are not its owner do,
// with the hub's default rate limit on (each sends at most its burst).
// over says how they post: HTTP, or their events WebSocket.
func MentionLatency(ctx context.Context, n int, member bool, over string) (Dist, error) {
	e, err := newEnv(ctx, envOptions{Limiter: member})
	if err != nil {
		return Dist{}, err
	}
	defer e.close()
	p, stop, err := startProbe(ctx, e.h, e.admin, member)
	if err != nil {
		return Dist{}, err
	}
	defer stop()
	senders := []person{{name: "bench", token: e.token}}
	if member {
		const perSender = 10 // the default burst: nobody is limited
		if senders, err = e.addPeople(ctx, "m", (n+perSender-1)/perSender); err != nil {
			return Dist{}, err
		}
		if err := e.addMembers(ctx, "bench", senders); err != nil {
			return Dist{}, err
		}
	}
	client := &http.Client{}
	post := func(from person, text string) error {
		_, err := e.post(ctx, client, from.token, "bench", text)
		return err
	}
	if over == OverSocket {
		sockets := map[string]*socketPoster{}
		for _, s := range senders {
			if sockets[s.name], err = e.dialPoster(ctx, s.token); err != nil {
				return Dist{}, err
			}
		}
		post = func(from person, text string) error {
			_, err := sockets[from.name].post(ctx, "bench", text)
			return err
		}
	}
	return p.time(n, func(k int, text string) error { return post(senders[k*len(senders)/n], text) })
}

// startProbe pairs a bridge with h (as admin) whose one agent, bench/probe,
// is the probe, in the room bench; member lets people other than the
// owner address it.
func startProbe(ctx context.Context, h *hub.Hub, admin *chat.User, member bool) (*probe, func(), error) {
	rs := h.Rooms()
	tok, _, err := rs.CreatePairingToken(ctx, admin)
	if err != nil {
		return nil, nil, err
	}
	creds, err := bridge.Pair(ctx, bridge.PairConfig{Hub: h.URL(), Token: tok, Name: "bench"})
	if err != nil {
		return nil, nil, err
	}
	p := &probe{got: map[int]time.Time{}}
	zero := 0
	pol := bridge.PolicyConfig{MaxSteers: &zero}
	if member {
		pol.Address = "members"
	}
	b, err := bridge.New(bridge.Config{Creds: creds, Logger: quietLogger(),
		Agents: []bridge.AgentConfig{{Name: "probe", Harness: "probe", PolicyFile: pol,
			Rooms: map[string]string{"bench": "normal"}}}, // the owner consents on the bridge machine
		Harnesses: map[string]bridge.Factory{"probe": func(bridge.Deps) (bridge.Harness, error) { return p, nil }}})
	if err != nil {
		return nil, nil, err
	}
	bctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- b.Run(bctx) }()
	stop := func() { cancel(); <-done }
	if err := waitUntil(30*time.Second, "the probe agent to come online", func() bool {
		a, err := rs.AgentByHandle(ctx, "bench/probe")
		return err == nil && a.Status != "offline"
	}); err != nil {
		stop()
		return nil, nil, err
	}
	if _, _, err := rs.AddAgent(ctx, admin, "bench", "bench/probe"); err != nil {
		stop()
		return nil, nil, err
	}
	return p, stop, nil
}

// time posts n mentions of the probe one after another (post sends the
// k-th text) and returns, once the harness has every one, each mention's
// time from its post to the harness.
func (p *probe) time(n int, post func(k int, text string) error) (Dist, error) {
	sent := make([]time.Time, n)
	for k := range n {
		sent[k] = time.Now()
		if err := post(k, fmt.Sprintf("@bench/probe mark-%d", k)); err != nil {
			return Dist{}, err
		}
	}
	if err := waitUntil(10*time.Second, "the harness to receive every mention", func() bool { return p.count() >= n }); err != nil {
		return Dist{}, fmt.Errorf("%w (it has %d of %d)", err, p.count(), n)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	ds := make([]time.Duration, 0, n)
	for k, at := range p.got {
		ds = append(ds, at.Sub(sent[k]))
	}
	return dist(ds), nil
}

// waitUntil polls cond until it holds or timeout passes.
func waitUntil(timeout time.Duration, what string, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}

// RawRequestReply is the baseline: n NATS request/reply round trips over
// loopback TCP on an embedded server.
func RawRequestReply(ctx context.Context, n int) (Dist, error) {
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoSigs: true, NoLog: true})
	if err != nil {
		return Dist{}, err
	}
	go ns.Start()
	defer ns.Shutdown()
	if !ns.ReadyForConnections(10 * time.Second) {
		return Dist{}, fmt.Errorf("baseline nats-server not ready")
	}
	a, err := nats.Connect(ns.ClientURL())
	if err != nil {
		return Dist{}, err
	}
	defer a.Close()
	b, err := nats.Connect(ns.ClientURL())
	if err != nil {
		return Dist{}, err
	}
	defer b.Close()
	b.Subscribe("echo", func(m *nats.Msg) { m.Respond(m.Data) })
	b.Flush()
	ds := make([]time.Duration, 0, n)
	for range n {
		t0 := time.Now()
		if _, err := a.RequestWithContext(ctx, "echo", []byte(`{"text":"mark"}`)); err != nil {
			return Dist{}, err
		}
		ds = append(ds, time.Since(t0))
	}
	return dist(ds), nil
}
