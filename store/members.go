package store

import (
	"context"
	"database/sql"
	"errors"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/chat"
)

// The projector reads a room's members for every message posted in it (who
// receives it, and whether the author may post). A room of a thousand
// people made that the largest part of applying a message, so the
// projector keeps rooms and their members in memory.
//
// The cache is kept by the projector alone and follows the log: it is
// filled only while the transaction has applied nothing but events that
// cannot change rooms, members or names (so what it reads is the state
// before the transaction, committed or not), and it is emptied as soon as
// any other event is applied. An event type it does not know empties it
// too, so new appliers are safe without touching this file.

// neutralEvents cannot change a room, its members or a user's name.
var neutralEvents = map[string]bool{
	chat.EvMessagePosted:     true,
	chat.EvSteerReceipt:      true,
	chat.EvSteerRecorded:     true,
	chat.EvTurn:              true,
	chat.EvAgentStatus:       true,
	chat.EvApprovalRequested: true,
	chat.EvApprovalDecided:   true,
	chat.EvCredentialCreated: true,
	chat.EvMessageEdited:     true,
	chat.EvMessageDeleted:    true,
	chat.EvReactionAdded:     true,
	chat.EvReactionRemoved:   true,
	chat.EvReadMarked:        true,
	chat.EvNotifySet:         true,
	chat.EvFileUploaded:      true,
}

type memberCache struct {
	// Touched only by the projector's goroutine (Apply is never called
	// concurrently).
	roomIDs map[string]int64
	rooms   map[int64]*roomMembers
	// dirty: the current transaction applied an event that may change
	// membership; reads go to the database and are not kept.
	dirty bool
}

type roomMembers struct {
	ids   []int64 // len == cap: a caller's append copies
	names map[string]int64
}

// begin starts a transaction's use of the cache.
func (c *memberCache) begin() { c.dirty = false }

// applying notes the type of the event about to be applied.
func (c *memberCache) applying(typ string) {
	if !neutralEvents[typ] {
		c.roomIDs, c.rooms, c.dirty = nil, nil, true
	}
}

func cacheOf(ctx context.Context) *memberCache {
	if db, _ := ctx.Value(applyDBKey{}).(*DB); db != nil {
		return &db.members
	}
	return nil
}

// roomIDCachedTx is roomIDTx through the projector's cache.
func roomIDCachedTx(ctx context.Context, tx *sql.Tx, name string) (int64, error) {
	c := cacheOf(ctx)
	if c != nil && !c.dirty {
		if id, ok := c.roomIDs[name]; ok {
			return id, nil
		}
	}
	var id int64
	err := queryRowTx(ctx, tx, sqlRoomID, name).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, wh.Errorf(wh.ENotFound, "no room named %q", name)
	}
	if err != nil {
		return 0, err
	}
	if c != nil && !c.dirty {
		if c.roomIDs == nil || len(c.roomIDs) >= cacheRooms {
			c.roomIDs = map[string]int64{}
		}
		c.roomIDs[name] = id
	}
	return id, nil
}

// cacheRooms bounds the cache; past it, it starts over.
const cacheRooms = 4096

// membersTx returns a room's members, through the projector's cache.
func membersTx(ctx context.Context, tx *sql.Tx, roomID int64) (*roomMembers, error) {
	c := cacheOf(ctx)
	if c != nil && !c.dirty {
		if m, ok := c.rooms[roomID]; ok {
			return m, nil
		}
	}
	rows, err := queryTx(ctx, tx, sqlRoomMembers, roomID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	m := &roomMembers{names: map[string]int64{}}
	for rows.Next() {
		var id int64
		var name string
		if err := rows.Scan(&id, &name); err != nil {
			return nil, err
		}
		m.ids = append(m.ids, id)
		m.names[name] = id
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	m.ids = m.ids[:len(m.ids):len(m.ids)]
	if c != nil && !c.dirty {
		if c.rooms == nil || len(c.rooms) >= cacheRooms {
			c.rooms = map[int64]*roomMembers{}
		}
		c.rooms[roomID] = m
	}
	return m, nil
}
