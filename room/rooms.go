package room

import (
	"context"
	"database/sql"
	"errors"
	"sort"
	"strings"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/authz"
)

// Room is a room or DM as a member sees it.
type Room struct {
	ID            int64    `json:"id"`
	Name          string   `json:"name"`
	Kind          string   `json:"kind"`
	Private       bool     `json:"private"`
	Topic         string   `json:"topic"`
	Role          string   `json:"role,omitempty"` // the caller's role; "" if not a member
	MemberCount   int      `json:"memberCount"`
	LastMessageID int64    `json:"lastMessageId"`
	Peers         []string `json:"peers,omitempty"` // DMs: the other participants
}

// Member is one member of a room.
type Member struct {
	User string `json:"user"`
	Role string `json:"role"`
}

func (s *Service) roomByName(ctx context.Context, name string) (*Room, error) {
	var r Room
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
func (s *Service) role(ctx context.Context, roomID, userID int64) (string, error) {
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

// readable applies the read rule: members only, and a private room reads as
// not found to everyone else, so its name does not leak.
func readable(name string, private bool, role string) error {
	d := authz.MayReadRoom(role != "")
	switch {
	case d.Allow:
		return nil
	case private:
		return wh.Errorf(wh.ENotFound, "no room named %q", name)
	default:
		return &wh.Error{Code: wh.EForbidden, Message: "you are not a member of " + name + "; join it first", Reason: d.Reason}
	}
}

// RoomFor returns the room if actor may read it: members only. A private
// room the actor is not in reads as not found, so its name does not leak.
func (s *Service) RoomFor(ctx context.Context, actor *User, name string) (*Room, error) {
	r, err := s.roomByName(ctx, name)
	if err != nil {
		return nil, err
	}
	role, err := s.role(ctx, r.ID, actor.ID)
	if err != nil {
		return nil, err
	}
	if err := readable(name, r.Private, role); err != nil {
		return nil, err
	}
	r.Role = role
	if r.Kind == KindDM {
		r.Peers = dmPeers(r.Name, actor.Name)
	}
	return r, nil
}

// access is the light membership check of the hot paths (post, history):
// one indexed query, no counts.
func (s *Service) access(ctx context.Context, actor *User, name string) (roomID int64, err error) {
	id, ok, gen := s.cache.getAccess(actor.ID, name)
	if ok {
		return id, nil
	}
	var private bool
	var kind, role string
	err = s.db.stmt(ctx, `SELECT r.id, r.kind, r.private, COALESCE(m.role, '') FROM rooms r
		LEFT JOIN members m ON m.room_id = r.id AND m.user_id = ? WHERE r.name = ?`).QueryRowContext(ctx, actor.ID, name).Scan(&roomID, &kind, &private, &role)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, wh.Errorf(wh.ENotFound, "no room named %q", name)
	}
	if err != nil {
		return 0, wh.Wrap(err, "check membership")
	}
	if err := readable(name, private, role); err != nil {
		return 0, err
	}
	s.cache.putAccess(actor.ID, name, roomID, gen)
	return roomID, nil
}

// CreateRoom creates a room with actor as its admin.
func (s *Service) CreateRoom(ctx context.Context, actor *User, name string, private bool, topic string) (*Room, error) {
	name = strings.ToLower(strings.TrimSpace(strings.TrimPrefix(name, "#")))
	if !validRoomName(name) {
		return nil, wh.Errorf(wh.EInvalid, "room names are 1-64 characters: lowercase letters, digits, '_' or '-', starting with a letter or digit")
	}
	if len(topic) > 256 {
		return nil, wh.Errorf(wh.EInvalid, "the topic is too long (at most 256 bytes)")
	}
	if _, err := s.roomByName(ctx, name); err == nil {
		return nil, wh.Errorf(wh.EConflict, "a room named %q already exists; pick another name or join it", name)
	}
	if _, err := s.append(ctx, EvRoomCreated, roomCreated{Name: name, Kind: KindRoom, Private: private, Topic: topic, Creator: actor.Name}); err != nil {
		return nil, err
	}
	return s.RoomFor(ctx, actor, name)
}

// Join adds actor to a public room.
func (s *Service) Join(ctx context.Context, actor *User, name string) (*Room, error) {
	r, err := s.roomByName(ctx, name)
	if err != nil {
		return nil, err
	}
	if d := authz.MayJoin(r.Private || r.Kind == KindDM); !d.Allow {
		return nil, wh.Errorf(wh.ENotFound, "no room named %q", name) // private rooms do not leak
	}
	role, err := s.role(ctx, r.ID, actor.ID)
	if err != nil {
		return nil, err
	}
	if role == "" {
		if _, err := s.append(ctx, EvMemberAdded, memberChange{Room: name, User: actor.Name, Role: RoleMember, By: actor.Name}); err != nil && wh.ErrorCode(err) != wh.EConflict {
			return nil, err
		}
	}
	return s.RoomFor(ctx, actor, name)
}

// AddMember adds user to a room. Public rooms: any member may add; private
// rooms: room admins only.
func (s *Service) AddMember(ctx context.Context, actor *User, name, user string) error {
	r, err := s.RoomFor(ctx, actor, name)
	if err != nil {
		return err
	}
	if r.Kind == KindDM {
		return wh.Errorf(wh.EInvalid, "a DM has exactly its two people; start a room to talk with more")
	}
	if d := authz.MayManageMembers(r.Role == RoleAdmin, r.Private); !d.Allow {
		return &wh.Error{Code: wh.EForbidden, Message: "only an admin of " + name + " can add members to this private room", Reason: d.Reason}
	}
	u, err := s.UserByName(ctx, strings.TrimPrefix(strings.ToLower(user), "@"))
	if err != nil {
		return err
	}
	_, err = s.append(ctx, EvMemberAdded, memberChange{Room: name, User: u.Name, Role: RoleMember, By: actor.Name})
	return err
}

// RemoveMember removes user from a room; a user may always remove themself (leave).
func (s *Service) RemoveMember(ctx context.Context, actor *User, name, user string) error {
	r, err := s.RoomFor(ctx, actor, name)
	if err != nil {
		return err
	}
	user = strings.TrimPrefix(strings.ToLower(user), "@")
	if r.Kind == KindDM && user != actor.Name {
		return wh.Errorf(wh.EInvalid, "you can leave a DM but not remove the other person")
	}
	if d := authz.MayRemoveMember(actor.Name, user, r.Role == RoleAdmin); !d.Allow {
		return &wh.Error{Code: wh.EForbidden, Message: "only an admin of " + name + " can remove other members", Reason: d.Reason}
	}
	u, err := s.UserByName(ctx, user)
	if err != nil {
		return err
	}
	_, err = s.append(ctx, EvMemberRemoved, memberChange{Room: name, User: u.Name, By: actor.Name})
	return err
}

// DMName is the room name of the DM between the given people.
func DMName(a, b string) string {
	p := []string{a, b}
	sort.Strings(p)
	return "dm:" + p[0] + ":" + p[1]
}

func dmPeers(name, me string) []string {
	var out []string
	for _, p := range strings.Split(strings.TrimPrefix(name, "dm:"), ":") {
		if p != me {
			out = append(out, strings.Replace(p, "+", "/", 1))
		}
	}
	if len(out) == 0 {
		out = []string{me} // a DM with yourself
	}
	return out
}

// OpenDM returns the DM between actor and another user, creating it once.
func (s *Service) OpenDM(ctx context.Context, actor *User, with string) (*Room, error) {
	with = strings.TrimPrefix(strings.ToLower(strings.TrimSpace(with)), "@")
	other, err := s.UserByName(ctx, with)
	if err != nil {
		return nil, err
	}
	name := DMName(actor.Name, other.Name)
	if r, err := s.RoomFor(ctx, actor, name); err == nil {
		return r, nil
	}
	members := []string{actor.Name}
	if other.Name != actor.Name {
		members = append(members, other.Name)
	}
	if _, err := s.append(ctx, EvRoomCreated, roomCreated{Name: name, Kind: KindDM, Private: true, Creator: actor.Name, Members: members}); err != nil && wh.ErrorCode(err) != wh.EConflict {
		return nil, err
	}
	return s.RoomFor(ctx, actor, name)
}

// MyRooms lists the rooms and DMs actor is a member of.
func (s *Service) MyRooms(ctx context.Context, actor *User) ([]Room, error) {
	return s.listRooms(ctx, actor, `SELECT r.id, r.name, r.kind, r.private, r.topic, m.role,
		(SELECT COUNT(*) FROM members x WHERE x.room_id = r.id),
		COALESCE((SELECT MAX(id) FROM messages WHERE room_id = r.id), 0)
		FROM rooms r JOIN members m ON m.room_id = r.id AND m.user_id = ? ORDER BY r.kind DESC, r.name`, actor.ID)
}

// PublicRooms lists public rooms for browsing, with actor's role in each.
func (s *Service) PublicRooms(ctx context.Context, actor *User) ([]Room, error) {
	return s.listRooms(ctx, actor, `SELECT r.id, r.name, r.kind, r.private, r.topic,
		COALESCE((SELECT role FROM members m WHERE m.room_id = r.id AND m.user_id = ?), ''),
		(SELECT COUNT(*) FROM members x WHERE x.room_id = r.id),
		COALESCE((SELECT MAX(id) FROM messages WHERE room_id = r.id), 0)
		FROM rooms r WHERE r.kind = 'room' AND r.private = 0 ORDER BY r.name`, actor.ID)
}

func (s *Service) listRooms(ctx context.Context, actor *User, q string, args ...any) ([]Room, error) {
	rows, err := s.db.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, wh.Wrap(err, "list rooms")
	}
	defer rows.Close()
	out := []Room{}
	for rows.Next() {
		var r Room
		if err := rows.Scan(&r.ID, &r.Name, &r.Kind, &r.Private, &r.Topic, &r.Role, &r.MemberCount, &r.LastMessageID); err != nil {
			return nil, wh.Wrap(err, "list rooms")
		}
		if r.Kind == KindDM {
			r.Peers = dmPeers(r.Name, actor.Name)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// Members lists a room's members; members only.
func (s *Service) Members(ctx context.Context, actor *User, name string) ([]Member, error) {
	r, err := s.RoomFor(ctx, actor, name)
	if err != nil {
		return nil, err
	}
	rows, err := s.db.r.QueryContext(ctx, `SELECT u.name, m.role FROM members m JOIN users u ON u.id = m.user_id WHERE m.room_id = ? ORDER BY u.name`, r.ID)
	if err != nil {
		return nil, wh.Wrap(err, "list members")
	}
	defer rows.Close()
	out := []Member{}
	for rows.Next() {
		var m Member
		if err := rows.Scan(&m.User, &m.Role); err != nil {
			return nil, wh.Wrap(err, "list members")
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// IsMember reports whether user (by name) is a member of room (by name).
func (s *Service) IsMember(ctx context.Context, roomName, user string) (bool, error) {
	var n int
	err := s.db.stmt(ctx, `SELECT COUNT(*) FROM members m JOIN rooms r ON r.id = m.room_id JOIN users u ON u.id = m.user_id
		WHERE r.name = ? AND u.name = ?`).QueryRowContext(ctx, roomName, user).Scan(&n)
	if err != nil {
		return false, wh.Wrap(err, "check membership")
	}
	return n > 0, nil
}
