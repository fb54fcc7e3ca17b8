package bridge

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/authz"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// gate is one agent's approval gate. It asks the owner through the hub (or
// the local CLI), and hands the harness a grant bound to the payload hash
// the owner decided on; the grant is redeemed once, against the call that
// is actually about to run.
type gate struct {
	r       *runner
	mu      sync.Mutex
	pending map[string]*pendingApproval
}

type pendingApproval struct {
	req     wire.ApprovalRequest
	hash    string
	decided chan wire.Decision
	once    sync.Once
	// handed is closed once the request went to the hub (or failed to):
	// an update about it (a decision on this machine) is sent after it,
	// or the hub would hear of a decision on a request it does not have.
	handed chan struct{}
}

// afterHanded sends an update about the request once the request itself
// has gone to the hub (at once if it has).
func (p *pendingApproval) afterHanded(send func()) {
	select {
	case <-p.handed:
		send()
	default:
		go func() { <-p.handed; send() }()
	}
}

func newGate(r *runner) *gate { return &gate{r: r, pending: map[string]*pendingApproval{}} }

func (g *gate) pendingCount() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.pending)
}

// pendingIDs lists the ids of the requests waiting for the owner.
func (g *gate) pendingIDs() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []string
	for id := range g.pending {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// void denies one waiting request (reported to the hub as voided).
func (g *gate) void(id, reason string) {
	g.mu.Lock()
	p := g.pending[id]
	g.mu.Unlock()
	if p == nil {
		return
	}
	p.once.Do(func() {
		p.decided <- wire.Decision{Decision: "deny", By: "wheelhouse", Reason: reason}
		g.r.b.publish(wire.KindApprovalUpdate, wire.ApprovalUpdate{ApprovalID: p.req.ID, Agent: g.r.cfg.Name, Status: wire.ApprovalVoided, Reason: reason})
	})
}

// Pending lists the requests waiting for the owner (for the local CLI).
func (g *gate) list() []wire.ApprovalRequest {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []wire.ApprovalRequest
	for _, p := range g.pending {
		out = append(out, p.req)
	}
	return out
}

// grant is a decided approval, good for exactly one matching call.
type grant struct {
	hash string
	mu   sync.Mutex
	used bool
	log  func(string, ...any)
}

func (gr *grant) Redeem(call ToolCall) error {
	h, _, err := authz.PayloadHash(call.Tool, call.Args)
	if err != nil {
		return fmt.Errorf("cannot hash the call: %w", err)
	}
	gr.mu.Lock()
	defer gr.mu.Unlock()
	if gr.used {
		return errors.New("this approval was already used")
	}
	if h != gr.hash {
		gr.log("refused to run a call that differs from what the owner approved (approved %s, about to run %s)", short(gr.hash), short(h))
		return fmt.Errorf("the call differs from what the owner approved (approved %s, now %s)", short(gr.hash), short(h))
	}
	gr.used = true
	return nil
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

func newApprovalID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return "a" + hex.EncodeToString(b)
}

// Ask implements Gate.
func (g *gate) Ask(ctx context.Context, ask ApprovalAsk) (Grant, error) {
	r := g.r
	hash, canonical, err := authz.PayloadHash(ask.Call.Tool, ask.Call.Args)
	if err != nil {
		return nil, fmt.Errorf("cannot hash the call, so it cannot be approved: %w", err)
	}
	pol := r.getPolicy()
	r.mu.Lock()
	room, thread := r.turnRoom, r.thread
	r.mu.Unlock()
	inputs := r.turnInputs()
	// The harness may know of words the bridge did not route (an attached
	// session's own taint): either makes the call tainted.
	steeredBy, tainted := inputs.SteeredBy, inputs.Tainted() || ask.Tainted
	logf := func(format string, args ...any) { r.b.printf("%s: "+format, append([]any{r.handle()}, args...)...) }
	ceiling := r.turnCeiling()
	if authz.CeilingDeniesAll(ceiling) {
		// The owner made the room read-only for the agent: nothing that
		// reaches the gate runs, and the owner is not asked.
		where := room
		if where == "" {
			where = "this room"
		}
		logf("denied %s without asking: %s is read-only for this agent (%s)", ask.Call.Tool, where, oneLine(ask.Summary))
		r.b.publish(wire.KindTurn, wire.TurnEvent{Agent: r.cfg.Name, TurnID: ask.TurnID, Kind: wire.TurnTool, Room: room, At: r.b.cfg.Now().UTC(),
			Text: "refused without asking: " + where + " is read-only for this agent — " + oneLine(ask.Summary)})
		r.journalTool(ask.TurnID, "refused (read-only room): "+oneLine(ask.Summary))
		return nil, fmt.Errorf("refused: @%s lets work from %s only read; nothing that writes or runs a command is allowed there (the owner was not asked)", r.b.cfg.Creds.Owner, where)
	}
	if !ask.Tainted && authz.CeilingAutoApproves(ceiling) && inputs.AutoApprovable(ask.Call.Tool, pol.AutoApprove, ask.LeavesSandbox) {
		logf("auto-approved %s (owner's setting; every input of the turn is the owner's own words)", ask.Call.Tool)
		return &grant{hash: hash, log: logf}, nil
	}
	ttl := pol.ApprovalTTL.D()
	if ttl <= 0 {
		ttl = wire.DefaultPolicy().ApprovalTTL.D()
	}
	req := wire.ApprovalRequest{ID: newApprovalID(), Agent: r.cfg.Name, TurnID: ask.TurnID, Tool: ask.Call.Tool, Summary: ask.Summary, Diff: ask.Diff,
		PayloadHash: hash, Payload: string(canonical), SteeredBy: steeredBy, Tainted: tainted, Room: room, Expires: r.b.cfg.Now().Add(ttl).UTC(),
		DataTainted: inputs.DataTainted(), Data: inputs.Data, Sandbox: ask.Sandbox, Thread: thread}
	p := &pendingApproval{req: req, hash: hash, decided: make(chan wire.Decision, 1), handed: make(chan struct{})}
	g.mu.Lock()
	g.pending[req.ID] = p
	g.mu.Unlock()
	r.b.watch.changed()
	defer func() {
		g.mu.Lock()
		delete(g.pending, req.ID)
		g.mu.Unlock()
		r.b.watch.changed()
		r.b.heartbeat()
	}()

	var unwatched <-chan struct{} // with the hub unreachable: the owner stopped watching
	err = g.toHub(ctx, req)
	close(p.handed)
	if err != nil {
		// No owner decision can come from the browser. Unless the owner
		// watches on this machine (wheelhouse approvals --watch), nobody
		// can decide: the answer is a denial now, not at the expiry.
		if !r.b.watch.watched() {
			logf("could not reach the hub for approval %s of %s (%v): denied at once; to decide on this machine while the hub is away, run wheelhouse approvals --watch", req.ID, ask.Call.Tool, err)
			r.b.publish(wire.KindApprovalUpdate, wire.ApprovalUpdate{ApprovalID: req.ID, Agent: r.cfg.Name, Status: wire.ApprovalVoided, Reason: "the bridge could not reach the hub"})
			return nil, fmt.Errorf("%w (%v), and no one watches for approvals on the owner's machine: denied", ErrHubUnreachable, err)
		}
		logf("could not reach the hub for approval %s of %s (%v); waiting for a decision on this machine (wheelhouse approvals --watch is running)", req.ID, ask.Call.Tool, err)
		unwatched = r.b.watch.left()
	} else {
		r.journalApproval(req)
	}
	taint := ""
	switch {
	case tainted && len(steeredBy) > 0:
		taint = " [tainted: steered by @" + strings.Join(steeredBy, ", @") + "]"
	case tainted:
		taint = " [tainted: words from someone other than the owner reached the session]"
	}
	if inputs.Unverified {
		taint += " [words not verified as yours]"
	}
	if req.DataTainted {
		taint += " [contains " + authz.DataPhrase(req.Data) + "]"
	}
	if req.Sandbox != "" {
		taint += " [sandbox: " + req.Sandbox + "]"
	}
	logf("approval needed %s: %s — hash %s%s. Decide in the browser or: wheelhouse approve %s --hash %s", req.ID, oneLine(ask.Summary), short(hash), taint, req.ID, hash)
	r.b.heartbeat()

	t := time.NewTimer(time.Until(req.Expires))
	defer t.Stop()
	select {
	case d := <-p.decided:
		if d.Decision == "approve" {
			signed := " on this machine"
			if d.Signed != nil {
				signed = ", signed by device " + r.b.deviceName(d.Signed.Device)
			}
			logf("approved %s by @%s%s", req.ID, d.By, signed)
			return &grant{hash: hash, log: logf}, nil
		}
		why := "denied by @" + d.By
		if d.Reason != "" {
			why = "voided: " + d.Reason
		}
		logf("%s %s", req.ID, why)
		return nil, errors.New(why)
	case <-unwatched:
		logf("%s denied: the hub is unreachable and no one watches for approvals on this machine any more", req.ID)
		r.b.publish(wire.KindApprovalUpdate, wire.ApprovalUpdate{ApprovalID: req.ID, Agent: r.cfg.Name, Status: wire.ApprovalVoided, Reason: "the bridge could not reach the hub"})
		return nil, fmt.Errorf("%w, and the owner stopped watching for approvals on their machine: denied", ErrHubUnreachable)
	case <-t.C:
		logf("%s expired — denied", req.ID)
		r.b.publish(wire.KindApprovalUpdate, wire.ApprovalUpdate{ApprovalID: req.ID, Agent: r.cfg.Name, Status: wire.ApprovalExpired, Reason: "not decided in time"})
		return nil, errors.New("the owner did not decide in time (expired — denied)")
	case <-ctx.Done():
		r.b.publish(wire.KindApprovalUpdate, wire.ApprovalUpdate{ApprovalID: req.ID, Agent: r.cfg.Name, Status: wire.ApprovalVoided, Reason: "the agent withdrew the request"})
		return nil, ctx.Err()
	}
}

// ErrHubUnreachable is the gate's answer when the bridge cannot hand a
// request to the hub and no one watches for approvals on this machine: no
// decision can come, so the request is denied at once. A harness whose
// owner sits at a terminal (an attached Claude Code session the owner's
// words alone steered) may fall back to the terminal's own prompt.
var ErrHubUnreachable = errors.New("the bridge cannot reach the hub")

// hubPing bounds the round trip that shows the hub's NATS server is there
// before the gate waits for its answer: a stopped or cut-off hub fails it
// in that time, however long the hub would take to record the request.
const hubPing = 2 * time.Second

// outboxFirst bounds how long an approval request waits for the turn
// events queued before it to be recorded.
const outboxFirst = 5 * time.Second

// toHub hands req to the hub and waits for its acknowledgement.
func (g *gate) toHub(ctx context.Context, req wire.ApprovalRequest) error {
	nc := g.r.b.nc
	if nc == nil || !nc.IsConnected() {
		return errors.New("not connected")
	}
	if err := nc.FlushTimeout(hubPing); err != nil {
		return fmt.Errorf("no answer within %v: %w", hubPing, err)
	}
	// The turn's events that led to this call go first (they wait in the
	// outbox until recorded), so the hub hears of the turn before its
	// approval requests; bounded, since the request must go out anyway.
	dctx, dcancel := context.WithTimeout(ctx, outboxFirst)
	g.r.b.out.drained(dctx)
	dcancel()
	data, _ := json.Marshal(req)
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	m, err := nc.RequestWithContext(rctx, wire.FromBridge(g.r.b.cfg.Creds.BridgeID, wire.KindApproval), data)
	if err != nil {
		g.r.journalRefused(req, err, "")
		return err
	}
	var ack wire.Ack
	if err := json.Unmarshal(m.Data, &ack); err != nil {
		return fmt.Errorf("unreadable answer: %w", err)
	}
	if !ack.OK {
		g.r.journalRefused(req, nil, ack.Message)
		return fmt.Errorf("refused: %s", ack.Message)
	}
	return nil
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}

// decide delivers an owner decision to a waiting request. local means it
// came from the local CLI (and must be reported to the hub).
func (g *gate) decide(d wire.Decision, local bool) error {
	g.mu.Lock()
	p := g.pending[d.ApprovalID]
	g.mu.Unlock()
	owner := g.r.b.cfg.Creds.Owner
	if p == nil {
		g.r.b.log.Warn("refused a decision for an approval this bridge is not waiting on", "approval", d.ApprovalID, "by", d.By)
		return &wh.Error{Code: wh.ENotFound, Message: "this bridge is not waiting on approval " + d.ApprovalID + " (decided, expired, or never asked)"}
	}
	system := d.By == "wheelhouse" && d.Decision == "deny" && !local // the hub voiding a request
	if !system {
		if dd := authz.MayDecideApproval(d.By, owner); !dd.Allow {
			g.r.b.log.Warn("refused a decision from someone other than the owner", "approval", d.ApprovalID, "by", d.By)
			return &wh.Error{Code: wh.EForbidden, Message: dd.Message, Reason: dd.Reason}
		}
		if !strings.EqualFold(d.PayloadHash, p.hash) {
			g.r.b.log.Warn("refused a decision for another payload", "approval", d.ApprovalID, "hash", d.PayloadHash)
			return &wh.Error{Code: wh.EConflict, Message: "the hash does not match the call waiting for approval", Reason: authz.ReasonHashMismatch}
		}
		if d.Decision == "approve" && !local {
			// The hub relays the owner's approval; only the owner's device
			// can make it.
			_, dd := g.r.b.trust.checkSigned(d.Signed, authz.Statement{Kind: authz.StatementApproval, Agent: g.r.handleName(), Approval: d.ApprovalID, PayloadHash: p.hash})
			if !dd.Allow {
				g.r.b.refuse(g.r, authz.StatementApproval, d.ApprovalID, signedDevice(d.Signed), dd)
				return refusal(dd)
			}
		}
	}
	if local {
		d.Signed = nil
	}
	sent := false
	p.once.Do(func() { p.decided <- d; sent = true })
	if !sent {
		return &wh.Error{Code: wh.EConflict, Message: "this request was already decided", Reason: authz.ReasonAlreadyDecided}
	}
	g.r.journalDecision(d, system)
	if local {
		status := wire.ApprovalApproved
		if d.Decision != "approve" {
			status = wire.ApprovalDenied
		}
		up := wire.ApprovalUpdate{ApprovalID: d.ApprovalID, Agent: g.r.cfg.Name, Status: status, By: d.By, PayloadHash: d.PayloadHash}
		p.afterHanded(func() { g.r.b.publish(wire.KindApprovalUpdate, up) })
	}
	return nil
}

// turnEnded denies what is still waiting from a finished turn.
func (g *gate) turnEnded(turn string) {
	g.mu.Lock()
	var ps []*pendingApproval
	for _, p := range g.pending {
		if p.req.TurnID == turn {
			ps = append(ps, p)
		}
	}
	g.mu.Unlock()
	for _, p := range ps {
		p.once.Do(func() {
			p.decided <- wire.Decision{Decision: "deny", By: "wheelhouse", Reason: "the turn ended"}
			g.r.b.publish(wire.KindApprovalUpdate, wire.ApprovalUpdate{ApprovalID: p.req.ID, Agent: g.r.cfg.Name, Status: wire.ApprovalVoided, Reason: "the turn ended before a decision"})
		})
	}
}

func (g *gate) closeAll() { g.voidAll("the bridge shut down") }

// voidAll denies every waiting request (reported to the hub as voided).
func (g *gate) voidAll(reason string) {
	g.mu.Lock()
	ps := make([]*pendingApproval, 0, len(g.pending))
	for _, p := range g.pending {
		ps = append(ps, p)
	}
	g.mu.Unlock()
	for _, p := range ps {
		p.once.Do(func() {
			p.decided <- wire.Decision{Decision: "deny", By: "wheelhouse", Reason: reason}
			g.r.b.publish(wire.KindApprovalUpdate, wire.ApprovalUpdate{ApprovalID: p.req.ID, Agent: g.r.cfg.Name, Status: wire.ApprovalVoided, Reason: reason})
		})
	}
}
