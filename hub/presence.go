package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// heartbeat records presence (every node) and passes status changes to the
// bridge's worker. It never waits on the log itself: presence must stay
// current however busy the projection is.
func (l *Link) heartbeat(m *nats.Msg) {
	l.safely("heartbeat", func() {
		id, _, ok := bridgeOf(m.Subject)
		if !ok {
			return
		}
		var hb wire.Heartbeat
		if err := wire.Decode(m.Data, &hb); err != nil {
			l.m.invalid.WithLabelValues(wire.KindHeartbeat).Inc()
			return
		}
		if err := hb.Validate(l.rooms.Now()); err != nil {
			l.m.invalid.WithLabelValues(wire.KindHeartbeat).Inc()
			l.log.Warn("refused a heartbeat", "bridge", id, "err", err)
			return
		}
		l.mu.Lock()
		p := l.presence[id]
		if p == nil {
			p = &presence{agents: map[string]wire.AgentInfo{}}
			l.presence[id] = p
		}
		p.lastSeen = time.Now()
		p.hbAt = hb.At
		for _, a := range hb.Agents {
			p.agents[a.Name] = a
			if a.TurnID != "" {
				p.sawTurn(a.Name, a.TurnID, p.lastSeen)
			}
		}
		// Status changes and reconciliation go through the log: off this
		// callback, one at a time per bridge, the newest heartbeat winning.
		slot := l.hbSlots[id]
		if slot == nil {
			slot = &hbSlot{}
			l.hbSlots[id] = slot
		}
		slot.next = &hb
		if slot.running || l.stopped {
			l.mu.Unlock()
			return
		}
		slot.running = true
		l.wg.Add(1)
		l.mu.Unlock()
		go l.heartbeats(id, slot)
	})
}

// hbSlot holds the newest heartbeat of a bridge waiting to be applied.
type hbSlot struct {
	next    *wire.Heartbeat
	running bool
}

// heartbeats applies a bridge's newest heartbeat until none is waiting.
func (l *Link) heartbeats(id string, slot *hbSlot) {
	defer l.wg.Done()
	for {
		l.mu.Lock()
		hb := slot.next
		slot.next = nil
		if hb == nil || l.stopped {
			slot.running = false
			delete(l.hbSlots, id)
			l.mu.Unlock()
			return
		}
		l.mu.Unlock()
		l.safely("heartbeat status", func() { l.applyHeartbeat(id, *hb) })
	}
}

// applyHeartbeat records agents' status changes (deduplicated across nodes
// by the heartbeat's own time) and tells the bridge to end what the hub
// already ended while it was away.
func (l *Link) applyHeartbeat(id string, hb wire.Heartbeat) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	b, err := l.rooms.BridgeByID(ctx, id)
	if err != nil || b.Revoked {
		return
	}
	for _, a := range hb.Agents {
		handle := b.Owner + "/" + a.Name
		cur, err := l.rooms.AgentByHandle(ctx, handle)
		if err != nil || cur.Bridge != id {
			continue
		}
		l.reconcile(ctx, id, cur.ID, a)
		l.anchorJournal(ctx, id, handle, a.Journal)
		if cur.Status == a.Status && cur.TurnID == a.TurnID && cur.TurnRoom == a.TurnRoom && strings.Join(cur.SteeredBy, ",") == strings.Join(a.SteeredBy, ",") {
			continue
		}
		key := fmt.Sprintf("status:%s:%d", handle, hb.At.UnixNano())
		if err := l.rooms.SetAgentStatusOnce(ctx, key, handle, a.Status, a.TurnID, a.TurnRoom, a.SteeredBy); err != nil {
			l.log.Warn("recording agent status failed", "agent", handle, "err", err)
		}
	}
}

// reconcile compares what a bridge holds with what the hub recorded: a
// turn, approvals or queued steers the hub already ended (while the bridge
// was frozen, asleep or cut off) are named in a resync, and the bridge ends
// them too. Both sides then agree.
func (l *Link) reconcile(ctx context.Context, bridgeID string, agentID int64, a wire.AgentInfo) {
	ended, approvals, steers, err := l.rooms.Reconcile(ctx, agentID, a.TurnID, a.Pending, a.Queued)
	if err != nil || (!ended && len(approvals) == 0 && len(steers) == 0) {
		return
	}
	c := wire.Control{Agent: a.Name, Action: wire.ControlResync, Approvals: approvals, Steers: steers}
	if ended {
		c.TurnID = a.TurnID
	}
	key, _ := json.Marshal(c)
	l.mu.Lock()
	last, seen := l.synced[string(key)]
	if seen && time.Since(last) < 2*time.Second {
		l.mu.Unlock()
		return
	}
	l.synced[string(key)] = time.Now()
	for k, t := range l.synced {
		if time.Since(t) > time.Minute {
			delete(l.synced, k)
		}
	}
	l.mu.Unlock()
	l.log.Info("telling a bridge what the hub ended while it was away", "bridge", bridgeID, "agent", a.Name, "turn", c.TurnID, "approvals", approvals, "steers", steers)
	var ack wire.Ack
	if err := l.request(ctx, bridgeID, wire.KindControl, c, &ack, ControlTimeout); err != nil {
		l.log.Info("resync not delivered now; the next heartbeat tries again", "bridge", bridgeID, "err", err)
	}
}

// watchPresence turns the agents of a silent bridge offline.
func (l *Link) watchPresence() {
	defer l.wg.Done()
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-l.stopCh:
			return
		case <-t.C:
		}
		l.mu.Lock()
		var gone []string
		var keys []time.Time
		for id, p := range l.presence {
			if time.Since(p.lastSeen) > wire.OfflineAfter {
				gone = append(gone, id)
				keys = append(keys, p.hbAt)
				delete(l.presence, id)
			}
		}
		l.mu.Unlock()
		for i, id := range gone {
			l.safely("offline", func() { l.markOffline(id, keys[i]) })
		}
	}
}

// markOffline records a silent bridge's agents as offline; the projection
// ends their turns, voids their approvals and expires their queued steers.
func (l *Link) markOffline(bridgeID string, lastHB time.Time) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	agents, err := l.rooms.AgentsOfBridge(ctx, bridgeID)
	if err != nil {
		return
	}
	for _, a := range agents {
		if a.Status == wire.AgentOffline {
			continue
		}
		key := fmt.Sprintf("offline:%s:%d", a.Handle, lastHB.UnixNano())
		if err := l.rooms.SetAgentStatusOnce(ctx, key, a.Handle, wire.AgentOffline, "", "", nil); err != nil {
			l.log.Warn("marking agent offline failed", "agent", a.Handle, "err", err)
		}
	}
}

// online reports whether a bridge has been heard from recently.
func (l *Link) online(bridgeID string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.presence[bridgeID]
	return p != nil && time.Since(p.lastSeen) <= wire.OfflineAfter
}

// recentTurns bounds the turns a bridge's presence remembers.
const recentTurns = 64

// sawTurn remembers that a heartbeat named an agent's turn.
func (p *presence) sawTurn(agent, turn string, now time.Time) {
	if p.turns == nil {
		p.turns = map[string]time.Time{}
	}
	if len(p.turns) >= recentTurns {
		for k, at := range p.turns {
			if now.Sub(at) > time.Minute || len(p.turns) >= recentTurns {
				delete(p.turns, k)
			}
		}
	}
	p.turns[agent+"\x00"+turn] = now
}

// sawTurn reports whether a bridge's heartbeats named an agent's turn in
// the last minute.
func (l *Link) sawTurn(bridgeID, agent, turn string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.presence[bridgeID]
	if p == nil {
		return false
	}
	at, ok := p.turns[agent+"\x00"+turn]
	return ok && time.Since(at) <= time.Minute
}

// anchorJournal records a new journal head the bridge reported for an
// agent in the agent's timeline (once per head across the hub's nodes).
func (l *Link) anchorJournal(ctx context.Context, bridgeID, handle string, head *wire.JournalHead) {
	if head == nil {
		return
	}
	l.mu.Lock()
	p := l.presence[bridgeID]
	done := p == nil || p.anchored[handle] == *head
	l.mu.Unlock()
	if done {
		return
	}
	key := fmt.Sprintf("journal:%s:%d:%s", handle, head.N, head.Hash)
	if err := l.rooms.RecordJournalHeadOnce(ctx, key, handle, bridgeID, *head); err != nil {
		l.log.Warn("recording the agent's journal head failed; the next heartbeat tries again", "agent", handle, "err", err)
		return
	}
	l.mu.Lock()
	if p.anchored == nil {
		p.anchored = map[string]wire.JournalHead{}
	}
	p.anchored[handle] = *head
	l.mu.Unlock()
}
