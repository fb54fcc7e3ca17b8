package hub

import (
	"context"
	"strings"
	"time"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// Expiry is the hub's to enforce, bridge or no bridge: every node sweeps,
// and the log keeps the first node's record of each expiry (a shared
// idempotency key).
const (
	sweepEvery = time.Second
	// expiryGrace lets the bridge, which expires the same things on the
	// same (hub) clock, go first.
	expiryGrace = time.Second
	// stalePending is how long a steer may wait for any hub node to
	// deliver it before the hub gives up on it.
	stalePending = 2 * time.Minute
)

func (l *Link) sweeper() {
	defer l.wg.Done()
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	for {
		select {
		case <-l.stopCh:
			return
		case <-t.C:
		}
		l.safely("sweep", l.sweep)
	}
}

func (l *Link) sweep() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if l.rooms.Log.Ready() != nil {
		return // the log cannot take the records now
	}
	now := l.rooms.Now()
	if ids, err := l.rooms.ExpiredApprovals(ctx, now.Add(-expiryGrace)); err == nil {
		for _, id := range ids {
			err := l.rooms.RecordDecisionOnce(ctx, "expire:"+id, id, wire.ApprovalExpired, "", "", "not decided in time")
			if err != nil && wh.ErrorCode(err) != wh.EConflict {
				l.log.Warn("expiring an approval failed", "approval", id, "err", err)
			}
		}
	}
	if rs, err := l.rooms.ExpiredQueuedSteers(ctx, now.Add(-expiryGrace)); err == nil {
		for _, r := range rs {
			err := l.rooms.UpdateSteerOnce(ctx, "expire:"+r.SteerID, wire.Receipt{SteerID: r.SteerID, Status: wire.StatusExpired, Reason: wire.ReasonExpired,
				Detail: "the agent's turn did not end before the message's maximum age"})
			if err != nil && wh.ErrorCode(err) != wh.EConflict {
				l.log.Warn("expiring a queued steer failed", "steer", r.SteerID, "err", err)
			}
		}
	}
	if rs, err := l.rooms.ExpiredHeldSteers(ctx, now.Add(-expiryGrace)); err == nil {
		for _, r := range rs {
			owner, _, _ := strings.Cut(r.Agent, "/")
			err := l.rooms.UpdateSteerOnce(ctx, "expire:"+r.SteerID, wire.Receipt{SteerID: r.SteerID, Status: wire.StatusExpired, Reason: wire.ReasonExpired,
				Detail: "@" + owner + " did not forward it in time"})
			if err != nil && wh.ErrorCode(err) != wh.EConflict {
				l.log.Warn("expiring a held steer failed", "steer", r.SteerID, "err", err)
			}
		}
	}
	if rs, err := l.rooms.StalePendingSteers(ctx, now.Add(-stalePending)); err == nil {
		for _, r := range rs {
			err := l.rooms.UpdateSteerOnce(ctx, "stale:"+r.SteerID, wire.Receipt{SteerID: r.SteerID, Status: wire.StatusRejected, Reason: wire.ReasonTimeout,
				Detail: "no hub node could deliver it; send again"})
			if err != nil && wh.ErrorCode(err) != wh.EConflict {
				l.log.Warn("ending a stale steer failed", "steer", r.SteerID, "err", err)
			}
		}
	}
}
