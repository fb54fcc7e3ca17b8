package room

import (
	"context"
	"strings"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/chat"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// UpdateSteer records a receipt (the bridge's, or the hub's own). A final
// status is never replaced (the first final receipt wins, on every node).
func (s *Service) UpdateSteer(ctx context.Context, rc wire.Receipt) error {
	return s.UpdateSteerOnce(ctx, "", rc)
}

// UpdateSteerOnce records a receipt under an idempotency key (several hub
// nodes noticing the same expiry record it once); "" for a fresh key.
func (s *Service) UpdateSteerOnce(ctx context.Context, key string, rc wire.Receipt) error {
	var exp *time.Time
	if !rc.Expires.IsZero() {
		exp = &rc.Expires
	}
	return s.appendOnce(ctx, key, chat.EvSteerReceipt, chat.SteerRecorded{ID: rc.SteerID, Status: rc.Status, Reason: rc.Reason, Detail: rc.Detail, TurnID: rc.TurnID, ExpiresAt: exp})
}

// RecordReceipt is UpdateSteer without waiting for this node's projection:
// once the stream has the receipt it is durable and ordered before
// anything appended after it. A receipt the projection refuses (the steer
// had already ended) is dropped there without an answer.
func (s *Service) RecordReceipt(ctx context.Context, rc wire.Receipt) error {
	var exp *time.Time
	if !rc.Expires.IsZero() {
		exp = &rc.Expires
	}
	ev, err := s.newEvent(ctx, chat.EvSteerReceipt, chat.SteerRecorded{ID: rc.SteerID, Status: rc.Status, Reason: rc.Reason, Detail: rc.Detail, TurnID: rc.TurnID, ExpiresAt: exp})
	if err != nil {
		return err
	}
	_, err = s.Log.Record(ctx, ev)
	return err
}

// RecordTurn stores a turn start or end (by: who stopped it; reason: why it
// failed), or a tool event of the turn (its command and outcome).
func (s *Service) RecordTurn(ctx context.Context, handle string, te wire.TurnEvent, by, reason string) error {
	return s.RecordTurnOnce(ctx, "", handle, te, by, reason)
}

// RecordTurnOnce is RecordTurn under an idempotency key ("" for a fresh one).
func (s *Service) RecordTurnOnce(ctx context.Context, key, handle string, te wire.TurnEvent, by, reason string) error {
	ev := chat.TurnRecorded{Handle: handle, TurnID: te.TurnID, Kind: te.Kind, Status: te.Status, Room: te.Room, By: by, Reason: reason, Usage: te.Usage, Thread: te.Thread,
		BridgeEvent: te.EventID}
	if key == "" && te.EventID != "" {
		key = BridgeEventKey(te.EventID)
	}
	if te.Kind == wire.TurnTool { // a tool event: what ran, or was refused or blocked
		ev.Text = te.Text
		if len(ev.Text) > 4<<10 {
			ev.Text = strings.ToValidUTF8(ev.Text[:4<<10], "") + "…"
		}
	}
	return s.appendOnce(ctx, key, chat.EvTurn, ev)
}

// appendOnce appends an event, under key when it is not "".
func (s *Service) appendOnce(ctx context.Context, key, typ string, data any) error {
	ev, err := s.newEvent(ctx, typ, data)
	if err != nil {
		return err
	}
	if key != "" {
		ev.ID = key
	}
	_, err = s.Log.Append(ctx, ev)
	return err
}
