package room

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/chat"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// RecordSteer stores a steer (pending, or already rejected by the hub). It
// returns once the record is durable in the log; the projection applies it
// before any receipt appended later (the stream keeps the order).
func (s *Service) RecordSteer(ctx context.Context, r chat.Receipt) error {
	ev, err := chat.NewEvent(chat.EvSteerRecorded, s.now(), chat.SteerRecorded{ID: r.SteerID, MessageID: r.MessageID, Room: r.Room, Handle: r.Agent,
		Sender: r.Sender, Status: r.Status, Reason: r.Reason, Detail: r.Detail, TurnID: r.TurnID, ExpiresAt: r.Expires})
	if err != nil {
		return wh.Wrap(err, "encode steer")
	}
	_, err = s.Log.Record(ctx, ev)
	return err
}

// UpdateSteer records a receipt from the bridge. A final status is never
// replaced (the first final receipt wins, on every node).
func (s *Service) UpdateSteer(ctx context.Context, rc wire.Receipt) error {
	var exp *time.Time
	if !rc.Expires.IsZero() {
		exp = &rc.Expires
	}
	_, err := s.append(ctx, chat.EvSteerReceipt, chat.SteerRecorded{ID: rc.SteerID, Status: rc.Status, Reason: rc.Reason, Detail: rc.Detail, TurnID: rc.TurnID, ExpiresAt: exp})
	return err
}

// RecordTurn stores a turn start or end (and the agent's new state).
func (s *Service) RecordTurn(ctx context.Context, handle string, te wire.TurnEvent, by string) error {
	d := chat.TurnRecorded{Handle: handle, TurnID: te.TurnID, Kind: te.Kind, Status: te.Status, Room: te.Room, By: by, Usage: te.Usage}
	if te.Kind == wire.TurnEnded && te.Status != "completed" {
		d.Reason = clipReason(te.Text)
	}
	_, err := s.append(ctx, chat.EvTurn, d)
	return err
}

// clipReason bounds a bridge's words on why a turn ended.
func clipReason(s string) string {
	s = strings.ToValidUTF8(s, "�")
	if len(s) <= maxTurnReason {
		return s
	}
	cut := maxTurnReason
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

const maxTurnReason = 1024
