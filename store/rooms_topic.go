package store

import (
	"context"
	"database/sql"

	"github.com/wheelhouse-dev/wheelhouse/chat"
)

func applyRoomTopicSet(ctx context.Context, tx *sql.Tx, seq uint64, ev chat.Event) ([]chat.FeedItem, error) {
	var d chat.RoomTopicSet
	if err := decode(ev, &d); err != nil {
		return nil, err
	}
	rid, err := roomIDTx(ctx, tx, d.Room)
	if err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE rooms SET topic = ? WHERE id = ?`, d.Topic, rid); err != nil {
		return nil, err
	}
	ids, err := roomMembersTx(ctx, tx, rid)
	if err != nil {
		return nil, err
	}
	return feedTx(ctx, tx, seq, rid, 0, ids, map[string]any{
		"id": seq, "type": chat.EvRoomTopicSet, "room": d.Room, "at": ev.At,
		"data": map[string]any{"room": d.Room, "topic": d.Topic, "by": d.By},
	})
}
