package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/chat"
)

// appliers maps event types to their projection. Each one is deterministic:
// it reads only the projection inside tx and the event itself.
type applier func(ctx context.Context, tx *sql.Tx, seq uint64, ev chat.Event) ([]chat.FeedItem, error)

func (s *Store) applyEvent(ctx context.Context, tx *sql.Tx, seq uint64, ev chat.Event) ([]chat.FeedItem, error) {
	f, ok := s.appliers[ev.Type]
	if !ok {
		s.logger.Warn("ignoring event of unknown type", "seq", seq, "type", ev.Type)
		return nil, nil
	}
	return f(ctx, tx, seq, ev)
}

func (s *Store) registerCoreAppliers() {
	s.appliers[chat.EvUserCreated] = applyUserCreated
	s.appliers[chat.EvCredentialCreated] = applyCredentialCreated
	s.appliers[chat.EvCredentialRevoked] = applyCredentialRevoked
	s.appliers[chat.EvRoomCreated] = applyRoomCreated
	s.appliers[chat.EvMemberAdded] = applyMemberAdded
	s.appliers[chat.EvMemberRemoved] = applyMemberRemoved
	s.appliers[chat.EvMessagePosted] = s.applyMessagePosted
	s.appliers[chat.EvRoomTopicSet] = applyRoomTopicSet
	// The log's own events change no projection.
	s.appliers[chat.EvSnapshotTaken] = applyNothing
	s.appliers[chat.EvLogCompacted] = applyNothing
}

func applyNothing(context.Context, *sql.Tx, uint64, chat.Event) ([]chat.FeedItem, error) {
	return nil, nil
}

// ts formats times for storage: fixed width, so SQL compares them in order.
func ts(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000000Z07:00") }

func decode(ev chat.Event, v any) error {
	if err := json.Unmarshal(ev.Data, v); err != nil {
		return wh.Errorf(wh.EInvalid, "undecodable %s event", ev.Type)
	}
	return nil
}

func userIDTx(ctx context.Context, tx *sql.Tx, name string) (int64, error) {
	var id int64
	err := queryRowTx(ctx, tx, `SELECT id FROM users WHERE name = ?`, name).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, wh.Errorf(wh.ENotFound, "no user named @%s", name)
	}
	return id, err
}

func roomIDTx(ctx context.Context, tx *sql.Tx, name string) (int64, error) {
	var id int64
	err := queryRowTx(ctx, tx, `SELECT id FROM rooms WHERE name = ?`, name).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, wh.Errorf(wh.ENotFound, "no room named %q", name)
	}
	return id, err
}

// roomMembersTx lists a room's members (the slice is shared: do not
// change its elements; appending copies it).
func roomMembersTx(ctx context.Context, tx *sql.Tx, roomID int64) ([]int64, error) {
	m, err := membersTx(ctx, tx, roomID)
	if err != nil {
		return nil, err
	}
	return m.ids, nil
}

// queryIDsTx runs q and collects its single integer column.
func queryIDsTx(ctx context.Context, tx *sql.Tx, q string, args ...any) ([]int64, error) {
	rows, err := queryTx(ctx, tx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// feedCounter numbers the feed items of the event being applied: one event
// may reach clients as several items, each with its place (idx, "n").
type feedCounter struct{ n int }

type feedCounterKey struct{}

// nextIdx is the place of the event's next feed item.
func nextIdx(ctx context.Context) int {
	c, ok := ctx.Value(feedCounterKey{}).(*feedCounter)
	if !ok {
		return 0
	}
	c.n++
	return c.n - 1
}

// feedBody serializes an item's body, with its place when it is not the
// event's first.
func feedBody(idx int, body map[string]any) ([]byte, error) {
	if idx > 0 {
		body["n"] = idx
	}
	return json.Marshal(body)
}

// feedTx stores a feed row and returns the item for live delivery.
func feedTx(ctx context.Context, tx *sql.Tx, seq uint64, roomID, userID int64, recipients []int64, body map[string]any) ([]chat.FeedItem, error) {
	idx := nextIdx(ctx)
	b, err := feedBody(idx, body)
	if err != nil {
		return nil, err
	}
	if _, err := execTx(ctx, tx, `INSERT INTO feed (seq, idx, room_id, user_id, body) VALUES (?, ?, ?, ?, ?)`, seq, idx, roomID, userID, b); err != nil {
		return nil, err
	}
	kind, _ := body["type"].(string)
	return []chat.FeedItem{{Seq: seq, Idx: idx, Kind: kind, RoomID: roomID, Recipients: recipients, Body: b}}, nil
}

func applyUserCreated(ctx context.Context, tx *sql.Tx, seq uint64, ev chat.Event) ([]chat.FeedItem, error) {
	var d chat.UserCreated
	if err := decode(ev, &d); err != nil {
		return nil, err
	}
	var n int
	if err := queryRowTx(ctx, tx, `SELECT COUNT(*) FROM users WHERE name = ?`, d.Name).Scan(&n); err != nil {
		return nil, err
	}
	if n > 0 {
		return nil, wh.Errorf(wh.EConflict, "a user named @%s already exists", d.Name)
	}
	if d.Setup {
		// Setup creates the first admin exactly once, on every node alike.
		var users int
		if err := queryRowTx(ctx, tx, `SELECT COUNT(*) FROM users`).Scan(&users); err != nil {
			return nil, err
		}
		if users > 0 {
			return nil, wh.Errorf(wh.EConflict, "setup is already done: log in instead")
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO users (id, name, display, password_hash, is_admin, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
		seq, d.Name, d.Display, d.PasswordHash, d.Admin, ts(ev.At)); err != nil {
		return nil, err
	}
	// A team's first minute: every new user is in the default rooms.
	return joinDefaultRoomsTx(ctx, tx, seq, int64(seq), d.Name, ev.At)
}

func applyCredentialCreated(ctx context.Context, tx *sql.Tx, seq uint64, ev chat.Event) ([]chat.FeedItem, error) {
	var d chat.CredentialCreated
	if err := decode(ev, &d); err != nil {
		return nil, err
	}
	uid, err := userIDTx(ctx, tx, d.User)
	if err != nil {
		return nil, err
	}
	var exp any
	if d.ExpiresAt != nil {
		exp = ts(*d.ExpiresAt)
	}
	var deactivated bool
	if err := tx.QueryRowContext(ctx, `SELECT deactivated FROM users WHERE id = ?`, uid).Scan(&deactivated); err != nil {
		return nil, err
	}
	if deactivated {
		return nil, wh.Errorf(wh.EForbidden, "this account is deactivated; ask an admin")
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO credentials (token_hash, user_id, kind, label, created_at, expires_at, client, addr) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		d.TokenHash, uid, d.Kind, d.Label, ts(ev.At), exp, d.Client, d.Addr)
	return nil, err
}

func applyCredentialRevoked(ctx context.Context, tx *sql.Tx, seq uint64, ev chat.Event) ([]chat.FeedItem, error) {
	var d chat.CredentialRevoked
	if err := decode(ev, &d); err != nil {
		return nil, err
	}
	var uid int64
	err := tx.QueryRowContext(ctx, `SELECT user_id FROM credentials WHERE token_hash = ? AND revoked = 0`, d.TokenHash).Scan(&uid)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil // unknown or already revoked: nothing changes
	}
	if err != nil {
		return nil, err
	}
	reason := d.Reason
	if reason == "" {
		reason = chat.EndRevoked
	}
	return endCredentialsTx(ctx, tx, seq, uid, reason, ` AND token_hash = ?`, d.TokenHash)
}

func applyRoomCreated(ctx context.Context, tx *sql.Tx, seq uint64, ev chat.Event) ([]chat.FeedItem, error) {
	var d chat.RoomCreated
	if err := decode(ev, &d); err != nil {
		return nil, err
	}
	if _, err := roomIDTx(ctx, tx, d.Name); err == nil {
		if d.Kind == chat.KindDM {
			return nil, wh.Errorf(wh.EConflict, "this conversation already exists")
		}
		return nil, wh.Errorf(wh.EConflict, "a room named %q already exists; pick another name or join it", d.Name)
	}
	creator, err := userIDTx(ctx, tx, d.Creator)
	if err != nil {
		return nil, err
	}
	if _, err := execTx(ctx, tx, `INSERT INTO rooms (id, name, kind, private, topic, created_by, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		seq, d.Name, d.Kind, d.Private, d.Topic, creator, ts(ev.At)); err != nil {
		return nil, err
	}
	members := d.Members
	if len(members) == 0 {
		members = []string{d.Creator}
	}
	var ids []int64
	for _, m := range members {
		uid, err := userIDTx(ctx, tx, m)
		if err != nil {
			return nil, err
		}
		role := chat.RoleMember
		if m == d.Creator && d.Kind == chat.KindRoom {
			role = chat.RoleAdmin
		}
		if _, err := execTx(ctx, tx, `INSERT INTO members (room_id, user_id, role, joined_seq) VALUES (?, ?, ?, ?)`, seq, uid, role, seq); err != nil {
			return nil, err
		}
		ids = append(ids, uid)
	}
	return feedTx(ctx, tx, seq, int64(seq), 0, ids, map[string]any{
		"id": seq, "type": chat.EvRoomCreated, "room": d.Name, "at": ev.At,
		"data": map[string]any{"name": d.Name, "kind": d.Kind, "private": d.Private, "topic": d.Topic, "members": members},
	})
}

func applyMemberAdded(ctx context.Context, tx *sql.Tx, seq uint64, ev chat.Event) ([]chat.FeedItem, error) {
	var d chat.MemberChange
	if err := decode(ev, &d); err != nil {
		return nil, err
	}
	rid, err := roomIDTx(ctx, tx, d.Room)
	if err != nil {
		return nil, err
	}
	uid, err := userIDTx(ctx, tx, d.User)
	if err != nil {
		return nil, err
	}
	role := d.Role
	if role == "" {
		role = chat.RoleMember
	}
	res, err := execTx(ctx, tx, `INSERT INTO members (room_id, user_id, role, joined_seq) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING`, rid, uid, role, seq)
	if err != nil {
		return nil, err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil, wh.Errorf(wh.EConflict, "@%s is already a member of %s", d.User, d.Room)
	}
	ids, err := roomMembersTx(ctx, tx, rid)
	if err != nil {
		return nil, err
	}
	return feedTx(ctx, tx, seq, rid, uid, ids, map[string]any{
		"id": seq, "type": chat.EvMemberAdded, "room": d.Room, "at": ev.At,
		"data": map[string]any{"user": d.User, "role": role, "by": d.By},
	})
}

func applyMemberRemoved(ctx context.Context, tx *sql.Tx, seq uint64, ev chat.Event) ([]chat.FeedItem, error) {
	var d chat.MemberChange
	if err := decode(ev, &d); err != nil {
		return nil, err
	}
	rid, err := roomIDTx(ctx, tx, d.Room)
	if err != nil {
		return nil, err
	}
	uid, err := userIDTx(ctx, tx, d.User)
	if err != nil {
		return nil, err
	}
	ids, err := roomMembersTx(ctx, tx, rid) // before removal: the leaver hears it too
	if err != nil {
		return nil, err
	}
	res, err := execTx(ctx, tx, `DELETE FROM members WHERE room_id = ? AND user_id = ?`, rid, uid)
	if err != nil {
		return nil, err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil, wh.Errorf(wh.ENotFound, "@%s is not a member of %s", d.User, d.Room)
	}
	feed, err := feedTx(ctx, tx, seq, rid, uid, ids, map[string]any{
		"id": seq, "type": chat.EvMemberRemoved, "room": d.Room, "at": ev.At,
		"data": map[string]any{"user": d.User, "by": d.By},
	})
	if err != nil {
		return nil, err
	}
	// Approvals of turns the departed member steered are voided here.
	items, err := voidApprovalsSteeredByTx(ctx, tx, seq, d.Room, d.User, "@"+d.User+", who steered this turn, left "+d.Room, ev.At)
	return append(feed, items...), err
}

func (s *Store) applyMessagePosted(ctx context.Context, tx *sql.Tx, seq uint64, ev chat.Event) ([]chat.FeedItem, error) {
	var d chat.MessagePosted
	if err := decode(ev, &d); err != nil {
		return nil, err
	}
	if err := claimBridgeEventTx(ctx, tx, d.BridgeEvent, seq); err != nil {
		return nil, err
	}
	// The hottest path: prepared statements, one query for the room and one
	// for its members (which also answers the author's membership).
	rid, err := roomIDCachedTx(ctx, tx, d.Room)
	if err != nil {
		return nil, err
	}
	members, err := membersTx(ctx, tx, rid)
	if err != nil {
		return nil, err
	}
	ids := members.ids
	authorID, member := members.names[d.Author]
	if d.AuthorKind == chat.AuthorUser && !member {
		return nil, wh.Errorf(wh.EForbidden, "you are not a member of %s", d.Room)
	}
	if d.Item != "" && d.AuthorKind == chat.AuthorAgent {
		// A streamed message posted again replaces its text in place.
		done, feed, err := streamUpdateTx(ctx, tx, seq, rid, d, ev.At)
		if done || err != nil {
			return feed, err
		}
	} else {
		d.Item, d.Partial = "", false
	}
	var feed []chat.FeedItem
	if d.Thread != 0 {
		root, err := threadRootTx(ctx, tx, rid, d.Thread)
		switch {
		case err == nil:
			d.Thread = root
		case d.AuthorKind != chat.AuthorUser && wh.ErrorCode(err) == wh.ENotFound:
			d.Thread = 0 // an agent's output is never lost: without its thread it goes to the channel
		default:
			return nil, err
		}
	}
	files := []chat.File{}
	if len(d.Files) > 0 {
		if d.AuthorKind != chat.AuthorUser {
			return nil, wh.Errorf(wh.EInvalid, "only people post files")
		}
		if files, err = attachFilesTx(ctx, tx, seq, rid, authorID, d.Room, d.Files); err != nil {
			return nil, err
		}
	}
	// The message is the event's first feed item; its row is written last.
	idx := nextIdx(ctx)
	// The steers first: the router waits for them, and nothing after them
	// refuses the event.
	var steers []decidedSteer
	if d.Route && d.AuthorKind == chat.AuthorUser {
		if steers, err = decideSteersTx(ctx, tx, seq, rid, d, files, ev.At); err != nil {
			return nil, err
		}
	}
	mentions, _ := json.Marshal(chat.NonNilMentions(d.Mentions))
	parts, _ := json.Marshal(chat.NonNilParts(d.Parts))
	filesJSON, _ := json.Marshal(files)
	if _, err := s.db.txStmt(ctx, tx, sqlInsertMessage).ExecContext(ctx,
		seq, rid, d.AuthorKind, d.Author, d.Text, mentions, parts, d.TurnID, d.Kind, ts(ev.At), d.Thread, string(filesJSON), d.Item, d.Partial); err != nil {
		return nil, err
	}
	notePostedTx(ctx, int64(seq))
	if err := mentionsTx(ctx, tx, rid, int64(seq), d.Mentions); err != nil {
		return nil, err
	}
	if d.Thread != 0 {
		if _, err := tx.ExecContext(ctx, `UPDATE messages SET reply_count = reply_count + 1, last_reply_id = ? WHERE id = ?`, seq, d.Thread); err != nil {
			return nil, err
		}
		items, err := threadFeedTx(ctx, tx, seq, d.Thread, ev.At)
		if err != nil {
			return nil, err
		}
		feed = append(feed, items...)
	}
	items, err := steerReceiptsFeedTx(ctx, tx, seq, rid, d.Room, ids, steers, ev.At)
	if err != nil {
		return nil, err
	}
	feed = append(feed, items...)
	msg := chat.Message{ID: int64(seq), Room: d.Room, AuthorKind: d.AuthorKind, Author: d.Author, Text: d.Text,
		Mentions: d.Mentions, Parts: d.Parts, TurnID: d.TurnID, Kind: d.Kind, CreatedAt: ev.At, Thread: d.Thread, Files: files, Partial: d.Partial}
	msg.Normalize()
	b, err := feedBody(idx, map[string]any{"id": seq, "type": chat.FeedMessage, "room": d.Room, "at": ev.At, "data": msg})
	if err != nil {
		return nil, err
	}
	if _, err := s.db.txStmt(ctx, tx, sqlInsertFeed).ExecContext(ctx, seq, idx, rid, b); err != nil {
		return nil, err
	}
	return append([]chat.FeedItem{{Seq: seq, Idx: idx, Kind: chat.FeedMessage, RoomID: rid, Recipients: ids, Body: b}}, feed...), nil
}
