package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/chat"
)

func (s *Store) registerChatAppliers() {
	s.appliers[chat.EvMessageEdited] = applyMessageEdited
	s.appliers[chat.EvMessageDeleted] = applyMessageDeleted
	s.appliers[chat.EvReactionAdded] = applyReaction(true)
	s.appliers[chat.EvReactionRemoved] = applyReaction(false)
	s.appliers[chat.EvReadMarked] = applyReadMarked
	s.appliers[chat.EvNotifySet] = applyNotifySet
	s.appliers[chat.EvFileUploaded] = applyFileUploaded
	s.appliers[chat.EvSettingsChanged] = applySettingsChanged
}

// msgRow is what the appliers of edits, deletions and reactions check.
type msgRow struct {
	roomID           int64
	authorKind       string
	author, text     string
	parts            string
	thread           int64
	deleted, partial bool
}

// messageInRoomTx reads message id, which must be in room (by name).
func messageInRoomTx(ctx context.Context, tx *sql.Tx, room string, id int64) (msgRow, error) {
	var m msgRow
	var name string
	err := tx.QueryRowContext(ctx, `SELECT m.room_id, r.name, m.author_kind, m.author, m.text, m.parts, m.thread_id, m.deleted, m.partial
		FROM messages m JOIN rooms r ON r.id = m.room_id WHERE m.id = ?`, id).
		Scan(&m.roomID, &name, &m.authorKind, &m.author, &m.text, &m.parts, &m.thread, &m.deleted, &m.partial)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && name != room) {
		return m, wh.Errorf(wh.ENotFound, "there is no message %d in %s", id, room)
	}
	return m, err
}

// streamUpdateTx applies an agent's streamed message posted again: the
// text of the message with the same item is replaced in place (the same
// path as an edit). done is false when there is no such message yet. Once
// the last version (not partial) is in, a late partial one changes nothing.
func streamUpdateTx(ctx context.Context, tx *sql.Tx, seq uint64, roomID int64, d chat.MessagePosted, at time.Time) (bool, []chat.FeedItem, error) {
	var id, rid int64
	var partial bool
	err := tx.QueryRowContext(ctx, `SELECT id, room_id, partial FROM messages WHERE author = ? AND turn_id = ? AND item_id = ?`, d.Author, d.TurnID, d.Item).Scan(&id, &rid, &partial)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil, nil
	}
	if err != nil {
		return true, nil, err
	}
	if rid != roomID || !partial {
		return true, nil, nil
	}
	if err := beforeTextChangeTx(ctx, tx, id); err != nil {
		return true, nil, err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE messages SET text = ?, partial = ? WHERE id = ?`, d.Text, d.Partial, id); err != nil {
		return true, nil, err
	}
	feed, err := messageUpdatedFeedTx(ctx, tx, seq, id, at)
	return true, feed, err
}

// messageUpdatedFeedTx sends the room's members message id as it is now.
func messageUpdatedFeedTx(ctx context.Context, tx *sql.Tx, seq uint64, id int64, at time.Time) ([]chat.FeedItem, error) {
	m, err := messageByIDTx(ctx, tx, id)
	if err != nil {
		return nil, err
	}
	rid, err := roomIDTx(ctx, tx, m.Room)
	if err != nil {
		return nil, err
	}
	ids, err := roomMembersTx(ctx, tx, rid)
	if err != nil {
		return nil, err
	}
	return feedTx(ctx, tx, seq, rid, 0, ids, map[string]any{"id": seq, "type": chat.FeedMessageUpdated, "room": m.Room, "at": at, "data": m})
}

// mentionsTx records whom a message mentions (for unread mention counts).
func mentionsTx(ctx context.Context, tx *sql.Tx, roomID, msgID int64, ms []chat.Mention) error {
	for _, mn := range ms {
		if mn.Kind != chat.MentionUser {
			continue
		}
		if _, err := execTx(ctx, tx, `INSERT INTO message_mentions (user_id, room_id, message_id)
			SELECT id, ?, ? FROM users WHERE name = ? ON CONFLICT DO NOTHING`, roomID, msgID, mn.User); err != nil {
			return err
		}
	}
	return nil
}

// attachFilesTx marks the files a message posts as posted, and returns them.
// Each must be an upload of the author's to this room not posted before.
func attachFilesTx(ctx context.Context, tx *sql.Tx, seq uint64, roomID, authorID int64, room string, ids []string) ([]chat.File, error) {
	if len(ids) > chat.MaxFilesPerMessage {
		return nil, wh.Errorf(wh.EInvalid, "a message carries at most %d files", chat.MaxFilesPerMessage)
	}
	out := make([]chat.File, 0, len(ids))
	for _, id := range ids {
		var f chat.File
		var rid, uploader, msg int64
		var deleted bool
		err := tx.QueryRowContext(ctx, `SELECT id, name, size, type, room_id, uploader_id, message_id, deleted FROM files WHERE id = ?`, id).
			Scan(&f.ID, &f.Name, &f.Size, &f.Type, &rid, &uploader, &msg, &deleted)
		switch {
		case errors.Is(err, sql.ErrNoRows) || (err == nil && (rid != roomID || deleted)):
			return nil, wh.Errorf(wh.EInvalid, "there is no file %s uploaded to %s", id, room)
		case err != nil:
			return nil, err
		case uploader != authorID:
			return nil, wh.Errorf(wh.EForbidden, "file %s was uploaded by someone else; post your own files", id)
		case msg != 0:
			return nil, wh.Errorf(wh.EConflict, "file %s is already posted in message %d; upload it again to post it twice", id, msg)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE files SET message_id = ? WHERE id = ?`, seq, id); err != nil {
			return nil, err
		}
		f.URL = chat.FileURL(room, f.ID)
		out = append(out, f)
	}
	return out, nil
}

func applyMessageEdited(ctx context.Context, tx *sql.Tx, seq uint64, ev chat.Event) ([]chat.FeedItem, error) {
	var d chat.MessageEdited
	if err := decode(ev, &d); err != nil {
		return nil, err
	}
	m, err := messageInRoomTx(ctx, tx, d.Room, d.ID)
	if err != nil {
		return nil, err
	}
	switch {
	case m.deleted:
		return nil, wh.Errorf(wh.EConflict, "message %d was deleted; it cannot be edited", d.ID)
	case m.authorKind != chat.AuthorUser || m.author != d.By:
		return nil, wh.Errorf(wh.EForbidden, "only the author of a message can edit it")
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO message_edits (message_id, seq, kind, old_text, old_parts, by_user, at) VALUES (?, ?, 'edited', ?, ?, ?, ?)`,
		d.ID, seq, m.text, m.parts, d.By, ts(ev.At)); err != nil {
		return nil, err
	}
	mentions, _ := json.Marshal(chat.NonNilMentions(d.Mentions))
	parts, _ := json.Marshal(chat.NonNilParts(d.Parts))
	if err := beforeTextChangeTx(ctx, tx, d.ID); err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE messages SET text = ?, mentions = ?, parts = ?, edited_at = ? WHERE id = ?`,
		d.Text, string(mentions), string(parts), ts(ev.At), d.ID); err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM message_mentions WHERE message_id = ?`, d.ID); err != nil {
		return nil, err
	}
	if err := mentionsTx(ctx, tx, m.roomID, d.ID, d.Mentions); err != nil {
		return nil, err
	}
	return messageUpdatedFeedTx(ctx, tx, seq, d.ID, ev.At)
}

func applyMessageDeleted(ctx context.Context, tx *sql.Tx, seq uint64, ev chat.Event) ([]chat.FeedItem, error) {
	var d chat.MessageDeleted
	if err := decode(ev, &d); err != nil {
		return nil, err
	}
	m, err := messageInRoomTx(ctx, tx, d.Room, d.ID)
	if err != nil {
		return nil, err
	}
	if m.deleted {
		return nil, wh.Errorf(wh.EConflict, "message %d is already deleted", d.ID)
	}
	if m.authorKind != chat.AuthorUser || m.author != d.By {
		var role string
		err := tx.QueryRowContext(ctx, `SELECT m.role FROM members m JOIN users u ON u.id = m.user_id WHERE m.room_id = ? AND u.name = ?`, m.roomID, d.By).Scan(&role)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, err
		}
		if role != chat.RoleAdmin {
			return nil, wh.Errorf(wh.EForbidden, "only the author of a message or an admin of %s can delete it", d.Room)
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO message_edits (message_id, seq, kind, old_text, old_parts, by_user, at) VALUES (?, ?, 'deleted', ?, ?, ?, ?)`,
		d.ID, seq, m.text, m.parts, d.By, ts(ev.At)); err != nil {
		return nil, err
	}
	if err := beforeTextChangeTx(ctx, tx, d.ID); err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE messages SET text = '', mentions = '[]', parts = '[]', files = '[]', partial = 0, deleted = 1, deleted_by = ? WHERE id = ?`, d.By, d.ID); err != nil {
		return nil, err
	}
	for _, q := range []string{`DELETE FROM reactions WHERE message_id = ?`, `DELETE FROM message_mentions WHERE message_id = ?`, `UPDATE files SET deleted = 1 WHERE message_id = ?`} {
		if _, err := tx.ExecContext(ctx, q, d.ID); err != nil {
			return nil, err
		}
	}
	feed, err := messageUpdatedFeedTx(ctx, tx, seq, d.ID, ev.At)
	if err != nil {
		return nil, err
	}
	if m.thread != 0 {
		if err := recountThreadTx(ctx, tx, m.thread); err != nil {
			return nil, err
		}
		items, err := threadFeedTx(ctx, tx, seq, m.thread, ev.At)
		if err != nil {
			return nil, err
		}
		feed = append(feed, items...)
	}
	return feed, nil
}

func applyReaction(add bool) applier {
	return func(ctx context.Context, tx *sql.Tx, seq uint64, ev chat.Event) ([]chat.FeedItem, error) {
		var d chat.ReactionChange
		if err := decode(ev, &d); err != nil {
			return nil, err
		}
		if !chat.ValidEmoji(d.Emoji) {
			return nil, wh.Errorf(wh.EInvalid, "that is not a reaction")
		}
		m, err := messageInRoomTx(ctx, tx, d.Room, d.Message)
		if err != nil {
			return nil, err
		}
		var uid int64
		err = tx.QueryRowContext(ctx, `SELECT u.id FROM members m JOIN users u ON u.id = m.user_id WHERE m.room_id = ? AND u.name = ?`, m.roomID, d.User).Scan(&uid)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, wh.Errorf(wh.EForbidden, "you are not a member of %s", d.Room)
		}
		if err != nil {
			return nil, err
		}
		if m.deleted {
			return nil, wh.Errorf(wh.EConflict, "message %d was deleted", d.Message)
		}
		var res sql.Result
		if add {
			var has, distinct int
			if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FILTER (WHERE emoji = ?), COUNT(DISTINCT emoji) FROM reactions WHERE message_id = ?`, d.Emoji, d.Message).Scan(&has, &distinct); err != nil {
				return nil, err
			}
			if has == 0 && distinct >= chat.MaxReactionsPerMessage {
				return nil, wh.Errorf(wh.EConflict, "message %d already has %d different reactions; add one of those", d.Message, chat.MaxReactionsPerMessage)
			}
			res, err = tx.ExecContext(ctx, `INSERT INTO reactions (message_id, emoji, user_id, seq) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING`, d.Message, d.Emoji, uid, seq)
		} else {
			res, err = tx.ExecContext(ctx, `DELETE FROM reactions WHERE message_id = ? AND emoji = ? AND user_id = ?`, d.Message, d.Emoji, uid)
		}
		if err != nil {
			return nil, err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil, nil // already so: nothing changed
		}
		ms := []chat.Message{{ID: d.Message, Reactions: []chat.Reaction{}}}
		if err := addReactions(ctx, tx, ms); err != nil {
			return nil, err
		}
		ids, err := roomMembersTx(ctx, tx, m.roomID)
		if err != nil {
			return nil, err
		}
		return feedTx(ctx, tx, seq, m.roomID, 0, ids, map[string]any{"id": seq, "type": chat.FeedReactions, "room": d.Room, "at": ev.At,
			"data": map[string]any{"messageId": d.Message, "thread": m.thread, "reactions": ms[0].Reactions}})
	}
}

// memberTx returns a member's user id, room id, room kind and the seq they
// joined at.
func memberTx(ctx context.Context, tx *sql.Tx, room, user string) (uid, rid int64, kind string, joined int64, err error) {
	err = tx.QueryRowContext(ctx, `SELECT u.id, r.id, r.kind, m.joined_seq FROM members m JOIN users u ON u.id = m.user_id JOIN rooms r ON r.id = m.room_id
		WHERE r.name = ? AND u.name = ?`, room, user).Scan(&uid, &rid, &kind, &joined)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, 0, "", 0, wh.Errorf(wh.EForbidden, "you are not a member of %s", room)
	}
	return uid, rid, kind, joined, err
}

func applyReadMarked(ctx context.Context, tx *sql.Tx, seq uint64, ev chat.Event) ([]chat.FeedItem, error) {
	var d chat.ReadMarked
	if err := decode(ev, &d); err != nil {
		return nil, err
	}
	uid, rid, kind, joined, err := memberTx(ctx, tx, d.Room, d.User)
	if err != nil {
		return nil, err
	}
	var last, cur int64
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(id), 0) FROM messages WHERE room_id = ?`, rid).Scan(&last); err != nil {
		return nil, err
	}
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE((SELECT last_read FROM read_markers WHERE user_id = ? AND room_id = ?), ?)`, uid, rid, joined).Scan(&cur); err != nil {
		return nil, err
	}
	id := min(d.ID, last)
	if id <= cur {
		return nil, nil // read markers only move forward
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO read_markers (user_id, room_id, last_read) VALUES (?, ?, ?)
		ON CONFLICT (user_id, room_id) DO UPDATE SET last_read = excluded.last_read`, uid, rid, id); err != nil {
		return nil, err
	}
	unread, mentions, err := unreadCounts(ctx, tx, rid, uid, d.User, kind, id)
	if err != nil {
		return nil, err
	}
	// To the reader alone, on all their devices.
	return feedTx(ctx, tx, seq, 0, uid, []int64{uid}, map[string]any{"id": seq, "type": chat.FeedRead, "room": d.Room, "at": ev.At,
		"data": map[string]any{"room": d.Room, "lastRead": id, "unread": unread, "mentions": mentions}})
}

// unreadWindow bounds the channel messages one unread count looks at:
// the newest this many after the read marker, whoever wrote them.
const unreadWindow = 4 * chat.MaxUnread

// unreadCounts counts for user in a room: channel messages from others
// after lastRead, and messages after it (thread replies too) that mention
// them — in a DM every unread message counts as one. Both at most
// chat.MaxUnread.
//
// The count looks at the newest unreadWindow channel messages after the
// marker and no further, whoever wrote them: filtering on the author
// first made it read every message after the marker for someone who
// wrote them all (a script posting a million messages: 4 s for GET
// /rooms). Others' messages older than that window, behind thousands of
// the user's own, are not counted.
func unreadCounts(ctx context.Context, qr querier, roomID, userID int64, user, kind string, lastRead int64) (unread, mentions int, err error) {
	err = qr.QueryRowContext(ctx, `SELECT COUNT(*) FROM (SELECT author FROM messages WHERE room_id = ? AND thread_id = 0 AND id > ? AND deleted = 0
		ORDER BY id DESC LIMIT ?) WHERE author != ?`,
		roomID, lastRead, unreadWindow, user).Scan(&unread)
	if err != nil {
		return 0, 0, err
	}
	unread = min(unread, chat.MaxUnread)
	if kind == chat.KindDM {
		return unread, unread, nil
	}
	err = qr.QueryRowContext(ctx, `SELECT COUNT(*) FROM (SELECT 1 FROM message_mentions WHERE user_id = ? AND room_id = ? AND message_id > ? LIMIT ?)`,
		userID, roomID, lastRead, chat.MaxUnread).Scan(&mentions)
	return unread, mentions, err
}

func applyNotifySet(ctx context.Context, tx *sql.Tx, seq uint64, ev chat.Event) ([]chat.FeedItem, error) {
	var d chat.NotifySet
	if err := decode(ev, &d); err != nil {
		return nil, err
	}
	if !chat.ValidNotify(d.Level) {
		return nil, wh.Errorf(wh.EInvalid, "the notification level is all, mentions or none")
	}
	uid, rid, _, _, err := memberTx(ctx, tx, d.Room, d.User)
	if err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO notify_settings (user_id, room_id, level) VALUES (?, ?, ?)
		ON CONFLICT (user_id, room_id) DO UPDATE SET level = excluded.level`, uid, rid, d.Level); err != nil {
		return nil, err
	}
	return feedTx(ctx, tx, seq, 0, uid, []int64{uid}, map[string]any{"id": seq, "type": chat.FeedNotify, "room": d.Room, "at": ev.At,
		"data": map[string]any{"room": d.Room, "level": d.Level}})
}

func applyFileUploaded(ctx context.Context, tx *sql.Tx, seq uint64, ev chat.Event) ([]chat.FeedItem, error) {
	var d chat.FileUploaded
	if err := decode(ev, &d); err != nil {
		return nil, err
	}
	uid, rid, _, _, err := memberTx(ctx, tx, d.Room, d.Uploader)
	if err != nil {
		return nil, err
	}
	var used int64
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(SUM(size), 0) FROM files WHERE uploader_id = ? AND deleted = 0`, uid).Scan(&used); err != nil {
		return nil, err
	}
	if d.Quota > 0 && used+d.Size > d.Quota {
		return nil, &wh.Error{Code: wh.ETooLarge, Reason: "quota", Message: quotaMessage(used, d.Size, d.Quota)}
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO files (id, room_id, uploader_id, name, size, type, sha256, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		d.ID, rid, uid, d.Name, d.Size, d.Type, d.SHA256, ts(ev.At))
	return nil, err
}

// quotaMessage says why an upload does not fit a user's quota.
func quotaMessage(used, size, quota int64) string {
	return "this file (" + humanBytes(size) + ") does not fit in your upload quota: you have " + humanBytes(used) + " of " + humanBytes(quota) +
		" in files; delete messages with files you no longer need"
}

// humanBytes writes a size the way people read it.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return itoa(n) + " B"
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 3; m /= unit {
		div *= unit
		exp++
	}
	whole, frac := n/div, (n%div)*10/div
	s := itoa(whole)
	if whole < 10 && frac > 0 {
		s += "." + itoa(frac)
	}
	return s + " " + string("KMGT"[exp]) + "iB"
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func applySettingsChanged(ctx context.Context, tx *sql.Tx, seq uint64, ev chat.Event) ([]chat.FeedItem, error) {
	var d chat.SettingsChanged
	if err := decode(ev, &d); err != nil {
		return nil, err
	}
	var admin bool
	err := tx.QueryRowContext(ctx, `SELECT is_admin FROM users WHERE name = ?`, d.By).Scan(&admin)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}
	if !admin {
		return nil, wh.Errorf(wh.EForbidden, "only an admin can change the hub's settings")
	}
	b, _ := json.Marshal(chat.NonNilStrings(d.DefaultRooms))
	_, err = tx.ExecContext(ctx, `INSERT INTO settings (key, value) VALUES ('defaultRooms', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`, string(b))
	if err != nil {
		return nil, err
	}
	lim, _ := json.Marshal(d.Limits) // "null": the hub's flags
	_, err = tx.ExecContext(ctx, `INSERT INTO settings (key, value) VALUES ('limits', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`, string(lim))
	return nil, err
}

// Settings reads the hub's settings.
func (s *Store) Settings(ctx context.Context) (chat.Settings, error) {
	set, err := settingsTx(ctx, s.db.r)
	if err != nil {
		return set, wh.Wrap(err, "read settings")
	}
	return set, nil
}

func settingsTx(ctx context.Context, qr querier) (chat.Settings, error) {
	set := chat.Settings{DefaultRooms: []string{}}
	var v string
	err := qr.QueryRowContext(ctx, `SELECT value FROM settings WHERE key = 'defaultRooms'`).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return set, nil
	}
	if err != nil {
		return set, err
	}
	json.Unmarshal([]byte(v), &set.DefaultRooms)
	set.DefaultRooms = chat.NonNilStrings(set.DefaultRooms)
	err = qr.QueryRowContext(ctx, `SELECT value FROM settings WHERE key = 'limits'`).Scan(&v)
	if err == nil {
		json.Unmarshal([]byte(v), &set.Limits)
	} else if !errors.Is(err, sql.ErrNoRows) {
		return set, err
	}
	return set, nil
}

// joinDefaultRoomsTx makes a new user a member of the default rooms that
// exist and are public.
func joinDefaultRoomsTx(ctx context.Context, tx *sql.Tx, seq uint64, uid int64, user string, at time.Time) ([]chat.FeedItem, error) {
	set, err := settingsTx(ctx, tx)
	if err != nil {
		return nil, err
	}
	var feed []chat.FeedItem
	for _, name := range set.DefaultRooms {
		var rid int64
		err := tx.QueryRowContext(ctx, `SELECT id FROM rooms WHERE name = ? AND kind = 'room' AND private = 0`, name).Scan(&rid)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO members (room_id, user_id, role, joined_seq) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING`, rid, uid, chat.RoleMember, seq); err != nil {
			return nil, err
		}
		ids, err := roomMembersTx(ctx, tx, rid)
		if err != nil {
			return nil, err
		}
		items, err := feedTx(ctx, tx, seq, rid, uid, ids, map[string]any{"id": seq, "type": chat.EvMemberAdded, "room": name, "at": at,
			"data": map[string]any{"user": user, "role": chat.RoleMember, "by": "wheelhouse"}})
		if err != nil {
			return nil, err
		}
		feed = append(feed, items...)
	}
	return feed, nil
}
