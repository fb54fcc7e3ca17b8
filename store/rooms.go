package store

import (
	"context"
	"database/sql"
	"errors"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/chat"
)

func (s *Store) RoomByName(ctx context.Context, name string) (*chat.Room, error) {
	var r chat.Room
	err := s.db.r.QueryRowContext(ctx, `SELECT id, name, kind, private, topic,
		(SELECT COUNT(*) FROM members m WHERE m.room_id = rooms.id),
		COALESCE((SELECT MAX(id) FROM messages WHERE room_id = rooms.id), 0)
		FROM rooms WHERE name = ?`, name).Scan(&r.ID, &r.Name, &r.Kind, &r.Private, &r.Topic, &r.MemberCount, &r.LastMessageID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, wh.Errorf(wh.ENotFound, "no room named %q", name)
	}
	if err != nil {
		return nil, wh.Wrap(err, "look up room")
	}
	return &r, nil
}

// role returns the user's role in the room, "" if not a member.
func (s *Store) Role(ctx context.Context, roomID, userID int64) (string, error) {
	var role string
	err := s.db.r.QueryRowContext(ctx, `SELECT role FROM members WHERE room_id = ? AND user_id = ?`, roomID, userID).Scan(&role)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", wh.Wrap(err, "look up membership")
	}
	return role, nil
}

// RoomsOf lists the rooms and DMs a user is a member of, with their read
// state and notification level.
func (s *Store) RoomsOf(ctx context.Context, actor *chat.User) ([]chat.Room, error) {
	rooms, err := s.listRooms(ctx, actor, `SELECT r.id, r.name, r.kind, r.private, r.topic, m.role,
		(SELECT COUNT(*) FROM members x WHERE x.room_id = r.id),
		COALESCE((SELECT MAX(id) FROM messages WHERE room_id = r.id), 0)
		FROM rooms r JOIN members m ON m.room_id = r.id AND m.user_id = ? ORDER BY r.kind DESC, r.name`, actor.ID)
	if err != nil {
		return nil, err
	}
	for i := range rooms {
		if err := s.addReadState(ctx, actor, &rooms[i]); err != nil {
			return nil, err
		}
	}
	return rooms, nil
}

// addReadState fills in a member's read marker, unread and mention counts
// and notification level.
func (s *Store) addReadState(ctx context.Context, actor *chat.User, r *chat.Room) error {
	var level sql.NullString
	err := s.db.r.QueryRowContext(ctx, `SELECT COALESCE(rm.last_read, m.joined_seq), n.level FROM members m
		LEFT JOIN read_markers rm ON rm.user_id = m.user_id AND rm.room_id = m.room_id
		LEFT JOIN notify_settings n ON n.user_id = m.user_id AND n.room_id = m.room_id
		WHERE m.room_id = ? AND m.user_id = ?`, r.ID, actor.ID).Scan(&r.LastRead, &level)
	if errors.Is(err, sql.ErrNoRows) {
		return nil // not a member
	}
	if err != nil {
		return wh.Wrap(err, "read the read marker")
	}
	r.Notify = chat.DefaultNotify(r.Kind)
	if level.Valid {
		r.Notify = level.String
	}
	r.Unread, r.Mentions, err = unreadCounts(ctx, s.db.r, r.ID, actor.ID, actor.Name, r.Kind, r.LastRead)
	if err != nil {
		return wh.Wrap(err, "count unread messages")
	}
	return nil
}

// ReadState is one member's read state of a room.
func (s *Store) ReadState(ctx context.Context, actor *chat.User, r *chat.Room) error {
	return s.addReadState(ctx, actor, r)
}

// PublicRooms lists public rooms, with actor's role in each.
func (s *Store) PublicRooms(ctx context.Context, actor *chat.User) ([]chat.Room, error) {
	return s.listRooms(ctx, actor, `SELECT r.id, r.name, r.kind, r.private, r.topic,
		COALESCE((SELECT role FROM members m WHERE m.room_id = r.id AND m.user_id = ?), ''),
		(SELECT COUNT(*) FROM members x WHERE x.room_id = r.id),
		COALESCE((SELECT MAX(id) FROM messages WHERE room_id = r.id), 0)
		FROM rooms r WHERE r.kind = 'room' AND r.private = 0 ORDER BY r.name`, actor.ID)
}

// Membership is the light membership check of the hot paths: the room's
// id, whether it is private, and the user's role in it ("" if none).
func (s *Store) Membership(ctx context.Context, userID int64, name string) (roomID int64, private bool, role string, err error) {
	var kind string
	err = s.db.stmt(ctx, `SELECT r.id, r.kind, r.private, COALESCE(m.role, '') FROM rooms r
		LEFT JOIN members m ON m.room_id = r.id AND m.user_id = ? WHERE r.name = ?`).QueryRowContext(ctx, userID, name).Scan(&roomID, &kind, &private, &role)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, "", wh.Errorf(wh.ENotFound, "no room named %q", name)
	}
	if err != nil {
		return 0, false, "", wh.Wrap(err, "check membership")
	}
	return roomID, private, role, nil
}

func (s *Store) listRooms(ctx context.Context, actor *chat.User, q string, args ...any) ([]chat.Room, error) {
	rows, err := s.db.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, wh.Wrap(err, "list rooms")
	}
	defer rows.Close()
	out := []chat.Room{}
	for rows.Next() {
		var r chat.Room
		if err := rows.Scan(&r.ID, &r.Name, &r.Kind, &r.Private, &r.Topic, &r.Role, &r.MemberCount, &r.LastMessageID); err != nil {
			return nil, wh.Wrap(err, "list rooms")
		}
		if r.Kind == chat.KindDM {
			r.Peers = chat.DMPeers(r.Name, actor.Name)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// RoomMembers lists a room's members.
func (s *Store) RoomMembers(ctx context.Context, roomID int64) ([]chat.Member, error) {
	rows, err := s.db.r.QueryContext(ctx, `SELECT u.name, m.role, u.deactivated FROM members m JOIN users u ON u.id = m.user_id WHERE m.room_id = ? ORDER BY u.name`, roomID)
	if err != nil {
		return nil, wh.Wrap(err, "list members")
	}
	defer rows.Close()
	out := []chat.Member{}
	for rows.Next() {
		var m chat.Member
		if err := rows.Scan(&m.User, &m.Role, &m.Deactivated); err != nil {
			return nil, wh.Wrap(err, "list members")
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// IsMember reports whether user (by name) is a member of room (by name).
func (s *Store) IsMember(ctx context.Context, roomName, user string) (bool, error) {
	var n int
	err := s.db.stmt(ctx, `SELECT COUNT(*) FROM members m JOIN rooms r ON r.id = m.room_id JOIN users u ON u.id = m.user_id
		WHERE r.name = ? AND u.name = ?`).QueryRowContext(ctx, roomName, user).Scan(&n)
	if err != nil {
		return false, wh.Wrap(err, "check membership")
	}
	return n > 0, nil
}
