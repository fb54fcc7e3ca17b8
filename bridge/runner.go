package bridge

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/authz"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// runner is one agent's delivery state machine: it re-checks each steer,
// then starts a turn, steers the running one, or queues a follow-up.
type runner struct {
	b    *Bridge
	cfg  AgentConfig
	h    Harness
	gate *gate
	jr   *journal // nil: no journal

	op sync.Mutex // serializes steers and turn starts

	mu        sync.Mutex
	policy    wire.Policy
	status    string
	failure   string
	turnID    string
	turnRoom  string
	thread    int64 // the thread the running turn lives in (its starting message's)
	steeredBy []string
	data      []string // kinds of data (pasted, quoted, peer-agent) that reached the turn
	steers    int
	lastEnded string
	endedAt   time.Time
	queue     []queuedSteer
	closed    bool
	stopper   string // who asked to stop the running turn
	// unverified: words the hub labelled as the owner's, but not verified
	// as theirs, reached the running turn (it is tainted).
	unverified bool
	seen       map[string]seenSteer
	said       map[string]bool // steer ids the owner used on this machine (wheelhouse say)
	// ceiling is what the running turn may do: the strictest ceiling of
	// the rooms whose messages reached it ("" when no turn runs).
	ceiling string

	work chan func() // steers for this agent, handled one at a time
}

// seenSteer remembers the answer to a steer, so a steer the hub sends
// again (after a restart, before it learned the answer) is answered the
// same and never acted on twice.
type seenSteer struct {
	rc wire.Receipt
	at time.Time
}

// Limits of one agent's delivery.
const (
	// workQueue bounds the steers waiting for one agent; more are refused
	// at once rather than blocking the others.
	workQueue = 64
	// DefaultCallTimeout bounds every call into a harness: a hung harness
	// fails that call, never the bridge.
	DefaultCallTimeout = 10 * time.Second
	// deadlineMargin is how long before a steer's deadline the bridge
	// stops acting on it (for the uncertainty in the hub's clock).
	deadlineMargin = 250 * time.Millisecond
	seenTTL        = 10 * time.Minute
)

type queuedSteer struct {
	st      wire.Steer
	in      Input
	expires time.Time
	timer   *time.Timer
}

func newRunner(b *Bridge, ac AgentConfig, p wire.Policy) *runner {
	r := &runner{b: b, cfg: ac, policy: p, status: wire.AgentIdle, seen: map[string]seenSteer{}, work: make(chan func(), workQueue)}
	r.gate = newGate(r)
	return r
}

// serve handles this agent's steers in order until stop closes.
func (r *runner) serve(stop <-chan struct{}) {
	for {
		select {
		case f := <-r.work:
			f()
		case <-stop:
			return
		}
	}
}

// submit queues f for the agent's worker; false if its queue is full.
func (r *runner) submit(f func()) bool {
	select {
	case r.work <- f:
		return true
	default:
		return false
	}
}

// remember records the answer to a steer; recall finds it.
func (r *runner) remember(id string, rc wire.Receipt) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.b.cfg.Now()
	if len(r.seen) > 1000 {
		for k, v := range r.seen {
			if now.Sub(v.at) > seenTTL {
				delete(r.seen, k)
			}
		}
	}
	r.seen[id] = seenSteer{rc: rc, at: now}
}

func (r *runner) recall(id string) (wire.Receipt, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.seen[id]
	return v.rc, ok
}

// callCtx bounds one call into the harness.
func (r *runner) callCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), r.b.cfg.CallTimeout)
}

func (r *runner) handle() string { return "@" + r.b.cfg.Creds.Owner + "/" + r.cfg.Name }

func (r *runner) info() wire.AgentInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.status
	if st == wire.AgentWorking && r.gate.pendingCount() > 0 {
		st = wire.AgentNeedsApproval
	}
	info := wire.AgentInfo{Name: r.cfg.Name, Harness: r.kind(), CanSteer: r.h != nil && r.h.CanSteer(), Status: st,
		TurnID: r.turnID, TurnRoom: r.turnRoom, SteeredBy: slices.Clone(r.steeredBy), Policy: r.policy, Pending: r.gate.pendingIDs(),
		Rooms: r.b.trust.grants(r.cfg.Name), Journal: r.jr.head(), Ending: r.b.out.ending(r.cfg.Name)}
	for _, q := range r.queue {
		info.Queued = append(info.Queued, q.st.ID)
	}
	return info
}

func (r *runner) kind() string {
	if r.h != nil {
		return r.h.Kind()
	}
	return r.cfg.Harness
}

func (r *runner) setPolicy(p wire.Policy) {
	r.mu.Lock()
	r.policy = p
	r.mu.Unlock()
}

func (r *runner) getPolicy() wire.Policy {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.policy
}

func (r *runner) setFailed(reason string) {
	r.mu.Lock()
	r.status, r.failure = wire.AgentFailed, reason
	r.mu.Unlock()
}

func reject(reason, detail string) wire.Receipt {
	return wire.Receipt{Status: wire.StatusRejected, Reason: reason, Detail: detail}
}

// steer re-checks and delivers one steer, once; it returns the receipt.
func (r *runner) steer(st wire.Steer) wire.Receipt {
	if r.isSaid(st.ID) {
		// Words the owner said on this machine: the hub never had them, and
		// a steer naming them is an echo or a replay; it gets nothing.
		r.b.printf("refused a steer from the hub that names the words you said on this machine (%s)", st.ID)
		return reject(wire.ReasonNotAllowed, "these words were said on the agent's machine; the hub cannot deliver them")
	}
	if rc, ok := r.recall(st.ID); ok {
		return rc // the hub sent it again: same answer, nothing done twice
	}
	rc, acted := r.deliver(st)
	if acted {
		r.remember(st.ID, rc)
	}
	return rc
}

// deliver handles a steer; acted is false when it was refused for arriving
// late (the hub may send it again with a new deadline, and that copy must
// be judged afresh).
func (r *runner) deliver(st wire.Steer) (rc wire.Receipt, acted bool) {
	if late := r.b.hubNow().Sub(st.Deadline.Add(-deadlineMargin)); late > 0 {
		r.b.printf("refused @%s's message for %s: it arrived %s after its deadline (the hub has told the sender it expired)", st.Sender, r.handle(), late.Round(time.Millisecond))
		return wire.Receipt{Status: wire.StatusExpired, Reason: wire.ReasonExpired, Detail: "the agent's machine received the message after its deadline; nothing was done with it"}, false
	}
	if r.b.cutOff() {
		// Not running for a while (stopped, asleep): the hub may have
		// declared this bridge offline and told the sender so, even
		// within the deadline. Refused until the hub has heard from it.
		r.b.printf("refused @%s's message for %s: this bridge was not running for a while and the hub may have declared it offline", st.Sender, r.handle())
		return wire.Receipt{Status: wire.StatusRejected, Reason: wire.ReasonAgentOffline, Detail: "the agent's machine was not running for a while when the message reached it; nothing was done with it — send again"}, false
	}
	return r.decide(st, false), true
}

// decide places one steer. said: the owner typed it on this machine
// (wheelhouse say), so its words are the owner's without a signature.
func (r *runner) decide(st wire.Steer, said bool) (rc wire.Receipt) {
	pol := r.getPolicy()
	// The bridge keeps the owner's consent: a room it does not hold is one
	// the owner never let the agent into, whatever the hub says.
	if _, ok := r.roomGrant(st.Room); !ok {
		r.b.printf("rejected %s from @%s in %s: the owner has not let the agent act there on this machine", r.handle(), st.Sender, st.Room)
		return reject(wire.ReasonAgentNotInRoom, fmt.Sprintf("@%s has not let @%s act in %s: the agent's machine keeps the owner's consent, and it has none for that room",
			r.b.cfg.Creds.Owner, r.cfg.Name, st.Room))
	}
	forwarded := false
	if st.ForwardedBy != "" || st.Forward != nil {
		if d := r.checkForward(st); !d.Allow {
			r.b.refuse(r, authz.StatementForward, st.ID, signedDevice(st.Forward), d)
			return reject(wire.ReasonNotAllowed, "the agent's machine refused the forward: "+d.Message)
		}
		forwarded = true
	}
	d := authz.BridgeAccepts(authz.BridgeCheck{Owner: r.b.cfg.Creds.Owner, SteerOwner: st.Owner, Sender: st.Sender,
		SenderIsOwner: st.SenderIsOwner, SenderIsAgent: st.SenderIsAgent, Address: pol.Address, Allowed: pol.Allowed,
		Stop: st.Stop, SentAt: st.SentAt, Now: r.b.cfg.Now(), MaxAge: pol.MaxAge.D(), Forwarded: forwarded})
	if !d.Allow {
		r.b.printf("rejected %s from @%s in %s: %s (%s)", r.handle(), st.Sender, st.Room, d.Reason, d.Message)
		return reject(d.Reason, d.Message)
	}
	if st.Stop {
		if err := r.interrupt(st.Sender); err != nil {
			return reject(wire.ReasonTurnEnded, err.Error())
		}
		return wire.Receipt{Status: wire.StatusSteered, Detail: "stopped the running turn"}
	}
	files := r.attachments(st)

	r.op.Lock()
	defer r.op.Unlock()
	r.mu.Lock()
	status, turn, steers, lastEnded, endedAt, turnCeiling := r.status, r.turnID, r.steers, r.lastEnded, r.endedAt, r.ceiling
	r.mu.Unlock()
	if status == wire.AgentFailed {
		return reject(wire.ReasonAgentFailed, "the agent is not running: "+r.failure)
	}
	// Whose words these are is decided here, once, against the turn they
	// reach; a queued entry keeps the answer (Input.words).
	words := ownerWords{verified: true, said: true}
	if !said {
		words = r.checkWords(st, turn, lastEnded)
	}
	if words.why != "" {
		r.b.printf("took @%s's message to %s as a teammate's words: %s", st.Sender, r.handle(), words.why)
		defer func() {
			if rc.Status == wire.StatusRejected {
				rc.Detail = "Not taken as your own words: " + words.why + ". " + rc.Detail
			} else {
				rc.Detail = strings.TrimSpace(unverifiedNote(r.b.cfg.Creds.Owner, words.why) + " " + rc.Detail)
			}
		}()
	}
	ceiling, ok := r.roomCeiling(st.Room, words.verified)
	if !ok {
		return reject(wire.ReasonAgentNotInRoom, fmt.Sprintf("@%s may no longer act in %s", r.cfg.Name, st.Room))
	}
	data := messageData(st)
	taintStrict := authz.MessageNeedsStrict(r.b.cfg.Creds.Owner, st.Sender, words.verified, st.SenderIsAgent, data)
	prov := provenance(st, files, words)
	if forwarded {
		prov.ForwardedBy = st.ForwardedBy
	}
	in, err := r.input(st, prov, taintStrict, ceiling, words)
	if err != nil {
		return reject(wire.ReasonNotAllowed, err.Error())
	}
	needsStrict := in.Strict
	busy := turn != ""
	if st.NewTurn {
		// A reply in a thread where this agent's turn ended (or that has
		// none): it starts a turn of its own, never steers another thread's.
		mode := authz.Mode{Action: authz.ActionStart}
		switch {
		case st.Follows != "" && !pol.StartOnEnded:
			return reject(wire.ReasonTurnEnded, fmt.Sprintf("turn %s in this thread has ended and @%s's policy does not start a new turn for it", st.Follows, r.cfg.Name))
		case busy:
			mode = authz.Mode{Action: authz.ActionQueue, Message: "waits for the running turn (in another thread) to end, then starts a turn in this thread"}
		}
		return r.place(st, in, pol, r.strictMode(mode, needsStrict, ""), turn, data)
	}
	if st.ExpectedTurn != "" {
		switch {
		case busy && st.ExpectedTurn != turn:
			r.b.printf("rejected steer from @%s: it was meant for turn %s, but %s is running", st.Sender, st.ExpectedTurn, turn)
			return reject(wire.ReasonStaleTurn, fmt.Sprintf("turn %s ended; %s is running now — send again to steer it", st.ExpectedTurn, turn))
		case !busy && !pol.StartOnEnded:
			return reject(wire.ReasonTurnEnded, fmt.Sprintf("turn %s has ended and @%s's policy does not start a new turn for it", st.ExpectedTurn, r.cfg.Name))
		case !busy && pol.Grace > 0 && r.b.cfg.Now().Sub(endedAt) > pol.Grace.D():
			// Within the grace period a steer for a turn that just ended
			// continues as a new turn; later it was meant for work that is over.
			// An older turn than the last one ended no later than it did,
			// so the same bound holds for it (and with no turn ended since
			// the bridge started, the turn's end is unknown: past grace).
			if st.ExpectedTurn != lastEnded {
				return reject(wire.ReasonTurnEnded, fmt.Sprintf("turn %s ended before @%s's last turn, past the %s grace period; send it again to start a new turn",
					st.ExpectedTurn, r.cfg.Name, pol.Grace.D()))
			}
			return reject(wire.ReasonTurnEnded, fmt.Sprintf("turn %s ended %s ago, past the %s grace period; send it again to start a new turn",
				st.ExpectedTurn, r.b.cfg.Now().Sub(endedAt).Round(time.Second), pol.Grace.D()))
		}
	}
	mode := authz.SteerMode(authz.ModeCheck{Busy: busy, CanSteer: r.h.CanSteer(), SteeringEnabled: pol.Steering, SteersThisTurn: steers, MaxSteers: pol.MaxSteers})
	mode = r.strictMode(mode, needsStrict, turn)
	if mode.Action == authz.ActionSteer && turnCeiling != "" && authz.CeilingWidens(ceiling, turnCeiling) {
		// The running turn may do more than this room allows: the message
		// starts a turn of its own when that one ends.
		mode = authz.Mode{Action: authz.ActionQueue, Message: fmt.Sprintf("Queued as its own turn: %s is %s for @%s and the running turn is not; your message starts a %s turn when it ends.",
			st.Room, ceiling, r.cfg.Name, ceiling)}
	}
	return r.place(st, in, pol, mode, turn, data)
}

// input builds what the harness receives for st under the room's ceiling:
// the envelope states the limit, and a ceiling that needs every side effect
// to reach the gate makes the turn strict (an error if the harness cannot).
func (r *runner) input(st wire.Steer, prov authz.Provenance, taintStrict bool, ceiling string, words ownerWords) (Input, error) {
	strict := taintStrict
	if authz.CeilingNeedsStrict(ceiling) {
		if err := strictTurns(r.h); err != nil {
			return Input{}, fmt.Errorf("%s is %s for @%s, and its harness cannot guarantee that: %v", st.Room, ceiling, r.cfg.Name, err)
		}
		strict = true
	}
	prov.Ceiling = ceiling
	return Input{Text: authz.Envelope(prov), SteerID: st.ID, Sender: st.Sender, SenderIsOwner: words.verified && r.labelledOwner(st), Strict: strict,
		ReadOnly: ceiling == authz.CeilingReadOnly, prov: prov, taintStrict: taintStrict, ceiling: ceiling, words: words}, nil
}

// place carries out the delivery decided for a steer: start a turn, steer
// the running one, queue it, or reject it.
func (r *runner) place(st wire.Steer, in Input, pol wire.Policy, mode authz.Mode, turn string, data []string) wire.Receipt {
	switch mode.Action {
	case authz.ActionStart:
		return r.start(st, in)
	case authz.ActionSteer:
		// Taint first: the sender is in steeredBy before the harness sees a
		// byte of their text, so no tool call it prompts is judged clean.
		// On failure the taint stays (the safe direction).
		r.mu.Lock()
		if !slices.Contains(r.steeredBy, st.Sender) {
			r.steeredBy = append(r.steeredBy, st.Sender)
		}
		r.ceiling = authz.StricterCeiling(ceilingOr(r.ceiling), in.ceiling) // the ceiling decide built the input for
		r.unverified = r.unverified || in.words.why != ""
		r.mu.Unlock()
		r.noteData(data) // likewise what the message carried besides its sender's words
		ctx, cancel := r.callCtx()
		err := r.h.Steer(ctx, turn, in)
		cancel()
		switch {
		case err == nil:
			r.mu.Lock()
			r.steers++
			r.mu.Unlock()
			r.b.printf("steered %s turn %s with @%s's message from %s", r.handle(), turn, st.Sender, st.Room)
			r.mu.Lock()
			thread := r.thread
			r.mu.Unlock()
			r.showSaid(st, in, turn, thread)
			return wire.Receipt{Status: wire.StatusSteered, TurnID: turn}
		case errors.Is(err, ErrStaleTurn):
			r.b.printf("rejected steer from @%s: turn %s is stale", st.Sender, turn)
			return reject(wire.ReasonStaleTurn, "the turn changed before the message arrived; send again")
		case errors.Is(err, ErrNoActiveTurn):
			if !pol.StartOnEnded {
				return reject(wire.ReasonTurnEnded, "the turn ended before the message arrived")
			}
			r.clearTurn(turn, "completed")
			return r.start(st, in)
		case errors.Is(err, context.DeadlineExceeded):
			return reject(wire.ReasonAgentFailed, fmt.Sprintf("the agent did not take the message within %s", r.b.cfg.CallTimeout))
		default:
			return reject(wire.ReasonAgentFailed, err.Error())
		}
	case authz.ActionQueue:
		rc := r.enqueue(st, in, pol)
		if mode.Message != "" && rc.Status == wire.StatusQueued {
			rc.Detail = mode.Message // says why it waits and how it will run
		}
		return rc
	default:
		return reject(mode.Reason, mode.Message)
	}
}

func (r *runner) start(st wire.Steer, in Input) wire.Receipt {
	data := messageData(st)
	ceiling, ok := r.roomCeiling(st.Room, in.words.verified)
	if !ok { // removed while the message waited in the queue
		return reject(wire.ReasonAgentNotInRoom, fmt.Sprintf("@%s may no longer act in %s", r.cfg.Name, st.Room))
	}
	if ceiling != in.ceiling { // changed while the message waited in the queue
		var err error
		if in, err = r.input(st, in.prov, in.taintStrict, ceiling, in.words); err != nil {
			return reject(wire.ReasonNotAllowed, err.Error())
		}
	}
	r.mu.Lock()
	r.turnRoom, r.steeredBy, r.data, r.steers, r.ceiling = st.Room, []string{st.Sender}, data, 1, ceiling
	r.unverified = in.words.why != ""
	r.thread = st.Thread
	if r.thread == 0 {
		r.thread = st.MessageID // the turn lives in the thread under its message
	}
	thread := r.thread
	r.mu.Unlock()
	ctx, cancel := r.callCtx()
	id, err := r.h.StartTurn(ctx, in)
	cancel()
	if errors.Is(err, ErrBusy) {
		return r.enqueue(st, in, r.getPolicy())
	}
	if err != nil {
		r.mu.Lock()
		r.turnRoom, r.steeredBy, r.data, r.steers, r.ceiling, r.thread, r.unverified = "", nil, nil, 0, "", 0, false
		r.mu.Unlock()
		if errors.Is(err, ErrNotStrict) {
			return reject(wire.ReasonNotAllowed, err.Error())
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return reject(wire.ReasonAgentFailed, fmt.Sprintf("the agent did not start a turn within %s", r.b.cfg.CallTimeout))
		}
		return reject(wire.ReasonAgentFailed, "the agent could not start a turn: "+err.Error())
	}
	r.mu.Lock()
	// The harness may have reported the turn already — started, or even
	// started and ended before StartTurn returned: a turn that ended is
	// never made current again.
	if r.turnID == "" && r.lastEnded != id {
		r.turnID, r.status = id, wire.AgentWorking
	}
	r.mu.Unlock()
	r.journalTurn(id, "started")
	r.b.printf("started %s turn %s for @%s in %s", r.handle(), id, st.Sender, st.Room)
	r.b.publish(wire.KindTurn, wire.TurnEvent{Agent: r.cfg.Name, TurnID: id, Kind: wire.TurnStarted, Room: st.Room, Thread: thread, At: r.b.cfg.Now().UTC()})
	r.showSaid(st, in, id, thread)
	return wire.Receipt{Status: wire.StatusStarted, TurnID: id}
}

func (r *runner) enqueue(st wire.Steer, in Input, pol wire.Policy) wire.Receipt {
	exp := st.SentAt.Add(pol.MaxAge.D())
	if !exp.After(r.b.hubNow()) {
		return reject(wire.ReasonExpired, "the message is older than the owner's maximum age")
	}
	q := queuedSteer{st: st, in: in, expires: exp}
	// exp is on the hub's clock, as the hub's own expiry of it.
	q.timer = time.AfterFunc(exp.Sub(r.b.hubNow()), func() { r.expire(st.ID) })
	r.mu.Lock()
	r.queue = append(r.queue, q)
	r.mu.Unlock()
	r.b.printf("queued @%s's message for %s until the current turn ends (expires %s)", st.Sender, r.handle(), exp.Format("15:04:05"))
	return wire.Receipt{Status: wire.StatusQueued, Expires: exp.UTC(), Detail: "delivered when the current turn ends"}
}

func (r *runner) expire(steerID string) {
	r.mu.Lock()
	idx := slices.IndexFunc(r.queue, func(q queuedSteer) bool { return q.st.ID == steerID })
	if idx < 0 {
		r.mu.Unlock()
		return
	}
	q := r.queue[idx]
	r.queue = slices.Delete(r.queue, idx, idx+1)
	r.mu.Unlock()
	r.b.printf("expired @%s's queued message for %s", q.st.Sender, r.handle())
	r.b.publish(wire.KindReceipt, wire.Receipt{SteerID: steerID, Agent: r.cfg.Name, Status: wire.StatusExpired, Reason: wire.ReasonExpired,
		Detail: "the turn did not end before the message's maximum age", At: r.b.cfg.Now().UTC()})
}

// deliverQueued starts a turn with the oldest queued follow-up, if any.
func (r *runner) deliverQueued() {
	if r.b.cutOff() {
		return // the hub may have ended these; the next announce and resync decide
	}
	r.op.Lock()
	defer r.op.Unlock()
	r.mu.Lock()
	if len(r.queue) == 0 || r.turnID != "" || r.closed || r.status == wire.AgentFailed {
		r.mu.Unlock()
		return
	}
	q := r.queue[0]
	r.queue = r.queue[1:]
	r.mu.Unlock()
	q.timer.Stop()
	if !q.expires.Add(-deadlineMargin).After(r.b.hubNow()) {
		r.b.publish(wire.KindReceipt, wire.Receipt{SteerID: q.st.ID, Agent: r.cfg.Name, Status: wire.StatusExpired, Reason: wire.ReasonExpired,
			Detail: "the turn did not end before the message's maximum age", At: r.b.cfg.Now().UTC()})
		go r.deliverQueued()
		return
	}
	rc := r.start(q.st, q.in)
	status, reason := wire.StatusDelivered, ""
	if rc.Status == wire.StatusRejected {
		status, reason = wire.StatusRejected, rc.Reason
	} else if rc.Status == wire.StatusQueued {
		return // requeued (harness still busy)
	}
	if q.in.words.said {
		r.b.printf("%s: the words you said on this machine: %s", r.handle(), rc.Status)
		r.b.heartbeat()
		return // the hub never had this steer: no receipt for it
	}
	r.b.publish(wire.KindReceipt, wire.Receipt{SteerID: q.st.ID, Agent: r.cfg.Name, Status: status, Reason: reason, Detail: rc.Detail, TurnID: rc.TurnID, At: r.b.cfg.Now().UTC()})
	r.b.heartbeat()
}

func (r *runner) clearTurn(turn, status string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.turnID != turn || turn == "" {
		return false
	}
	r.lastEnded, r.endedAt = turn, r.b.cfg.Now()
	r.turnID, r.steeredBy, r.data, r.steers, r.stopper, r.ceiling, r.thread, r.unverified = "", nil, nil, 0, "", "", 0, false
	if r.status != wire.AgentFailed {
		r.status = wire.AgentIdle
	}
	return true
}

func (r *runner) interrupt(by string) error {
	r.mu.Lock()
	turn := r.turnID
	if turn != "" {
		r.stopper = by
	}
	r.mu.Unlock()
	if turn == "" {
		return errors.New("no turn is running")
	}
	r.b.printf("@%s stopped %s turn %s", by, r.handle(), turn)
	ctx, cancel := r.callCtx()
	defer cancel()
	return r.h.Interrupt(ctx, turn)
}

// resync ends what the hub already ended while this bridge was cut off
// (frozen, asleep, partitioned): the named turn (failed), approvals
// (voided) and queued steers (expired). It is idempotent: it names what to
// end, so a second resync, or one about a turn that is over, does nothing.
func (r *runner) resync(c wire.Control) {
	r.journalResync(c)
	r.mu.Lock()
	var drop []queuedSteer
	keep := r.queue[:0]
	for _, q := range r.queue {
		if slices.Contains(c.Steers, q.st.ID) {
			drop = append(drop, q)
		} else {
			keep = append(keep, q)
		}
	}
	r.queue = keep
	turn := r.turnID
	r.mu.Unlock()
	for _, q := range drop {
		q.timer.Stop()
		r.b.printf("%s: dropped @%s's queued message: the hub already ended it while this bridge was unreachable", r.handle(), q.st.Sender)
	}
	for _, id := range c.Approvals {
		r.gate.void(id, "the hub ended the request while this bridge was unreachable")
	}
	if c.TurnID == "" || c.TurnID != turn {
		return
	}
	r.b.printf("%s: the hub lost this bridge for a while and ended turn %s as failed; stopping it here too", r.handle(), turn)
	r.mu.Lock()
	r.stopper = ""
	r.mu.Unlock()
	ctx, cancel := r.callCtx()
	err := r.h.Interrupt(ctx, turn)
	cancel()
	if err != nil {
		r.b.log.Warn("stopping a turn the hub ended failed", "agent", r.cfg.Name, "turn", turn, "err", err)
	}
	if r.clearTurn(turn, wire.TurnFailed) {
		r.gate.turnEnded(turn)
		r.b.publish(wire.KindTurn, wire.TurnEvent{Agent: r.cfg.Name, TurnID: turn, Kind: wire.TurnEnded, Status: wire.TurnFailed,
			Text: "the hub lost the agent's machine", At: r.b.cfg.Now().UTC()})
	}
}

// onEvent receives the harness's events.
func (r *runner) onEvent(ev Event) {
	now := r.b.cfg.Now().UTC()
	r.mu.Lock()
	room, thread := r.turnRoom, r.thread
	r.mu.Unlock()
	switch ev.Kind {
	case EventTurnStarted:
		r.mu.Lock()
		r.turnID, r.status = ev.TurnID, wire.AgentWorking
		r.mu.Unlock()
		r.b.heartbeat()
	case EventTurnEnded:
		r.mu.Lock()
		by := r.stopper
		r.mu.Unlock()
		if !r.clearTurn(ev.TurnID, ev.Status) {
			return
		}
		r.journalTurn(ev.TurnID, "ended "+ev.Status)
		if ev.Status != wire.TurnInterrupted {
			by = ""
		}
		r.gate.turnEnded(ev.TurnID)
		r.b.printf("%s turn %s ended: %s", r.handle(), ev.TurnID, ev.Status)
		r.b.publish(wire.KindTurn, wire.TurnEvent{Agent: r.cfg.Name, TurnID: ev.TurnID, Kind: wire.TurnEnded, Status: endStatus(ev.Status), Text: ev.Text, Room: room, By: by, At: now, Usage: ev.Usage, Thread: thread})
		r.b.heartbeat()
		r.b.wg.Add(1)
		go func() { defer r.b.wg.Done(); r.deliverQueued() }()
	case EventMessage:
		r.b.publish(wire.KindTurn, wire.TurnEvent{Agent: r.cfg.Name, TurnID: ev.TurnID, Kind: wire.TurnMessage, Text: ev.Text, Room: room, At: now, ItemID: ev.ItemID, Partial: ev.Partial, Thread: thread})
	case EventProgress:
		r.b.publish(wire.KindTurn, wire.TurnEvent{Agent: r.cfg.Name, TurnID: ev.TurnID, Kind: wire.TurnProgress, Text: ev.Text, Room: room, At: now, Thread: thread})
	case EventTool:
		r.journalTool(ev.TurnID, ev.Text)
		r.b.publish(wire.KindTurn, wire.TurnEvent{Agent: r.cfg.Name, TurnID: ev.TurnID, Kind: wire.TurnTool, Text: ev.Text, Room: room, At: now, Thread: thread})
	case EventFailed:
		r.mu.Lock()
		turn := r.turnID
		r.status, r.failure = wire.AgentFailed, ev.Text
		r.mu.Unlock()
		if turn != "" {
			r.journalTurn(turn, "ended failed")
			r.clearTurn(turn, "failed")
			r.mu.Lock()
			r.status = wire.AgentFailed
			r.mu.Unlock()
			r.b.publish(wire.KindTurn, wire.TurnEvent{Agent: r.cfg.Name, TurnID: turn, Kind: wire.TurnEnded, Status: "failed", Text: ev.Text, Room: room, At: now, Thread: thread})
		}
		r.b.printf("%s failed: %s", r.handle(), ev.Text)
		r.b.heartbeat()
	case EventRecovered:
		r.mu.Lock()
		r.status, r.failure = wire.AgentIdle, ""
		r.mu.Unlock()
		r.b.printf("%s recovered", r.handle())
		r.b.heartbeat()
		go r.deliverQueued()
	case EventInputHandled:
		status, reason := wire.StatusDelivered, ""
		if ev.Status == "expired" {
			status, reason = wire.StatusExpired, wire.ReasonExpired
		}
		r.b.publish(wire.KindReceipt, wire.Receipt{SteerID: ev.Text, Agent: r.cfg.Name, Status: status, Reason: reason, Detail: ev.Detail, At: now})
	}
}

// endStatus maps a harness's end status onto the wire's three.
func endStatus(s string) string {
	switch s {
	case wire.TurnInterrupted, wire.TurnFailed:
		return s
	case "", wire.TurnCompleted:
		return wire.TurnCompleted
	}
	return wire.TurnFailed // "errored", "cancelled", …: it did not complete
}

func (r *runner) close() {
	r.mu.Lock()
	r.closed = true
	q := r.queue
	r.queue = nil
	r.mu.Unlock()
	for _, x := range q {
		x.timer.Stop()
		r.b.publish(wire.KindReceipt, wire.Receipt{SteerID: x.st.ID, Agent: r.cfg.Name, Status: wire.StatusRejected, Reason: wire.ReasonAgentOffline,
			Detail: "the bridge shut down before the turn ended", At: r.b.cfg.Now().UTC()})
	}
	r.gate.closeAll()
	if r.h != nil {
		r.h.Close()
	}
	r.jr.close()
	r.mu.Lock()
	r.status, r.turnID = wire.AgentOffline, ""
	r.mu.Unlock()
}

// provenance is what the envelope says of st. The words are the owner's
// only when verified; the data parts are read from the text itself
// (authz.QuotedParts), never taken from the hub's parts.
func provenance(st wire.Steer, files []authz.Attachment, words ownerWords) authz.Provenance {
	return authz.Provenance{Sender: st.Sender, SenderIsOwner: st.SenderIsOwner && words.verified, Unverified: st.SenderIsOwner && !words.verified,
		SenderIsAgent: st.SenderIsAgent, Owner: st.Owner, Room: st.Room, RoomKind: st.RoomKind, MessageID: st.MessageID, SentAt: st.SentAt,
		Text: st.Text, Parts: authz.QuotedParts(st.Text), Nonce: authz.NewNonce(), Files: files}
}

// ceilingOr is c, or normal when no room set one (a turn the harness began
// on its own).
func ceilingOr(c string) string {
	if c == "" {
		return authz.CeilingNormal
	}
	return c
}

// turnCeiling is what the running turn may do.
func (r *runner) turnCeiling() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return ceilingOr(r.ceiling)
}
