package room

import (
	"context"
	"strings"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/authz"
	"github.com/wheelhouse-dev/wheelhouse/chat"
)

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
func (s *Service) RoomFor(ctx context.Context, actor *chat.User, name string) (*chat.Room, error) {
	r, err := s.RoomByName(ctx, name)
	if err != nil {
		return nil, err
	}
	role, err := s.Role(ctx, r.ID, actor.ID)
	if err != nil {
		return nil, err
	}
	if err := readable(name, r.Private, role); err != nil {
		return nil, err
	}
	r.Role = role
	if r.Kind == chat.KindDM {
		r.Peers = chat.DMPeers(r.Name, actor.Name)
	}
	return r, nil
}

// access is the light membership check of the hot paths (post, history):
// one indexed query, no counts.
func (s *Service) access(ctx context.Context, actor *chat.User, name string) (roomID int64, err error) {
	id, ok, gen := s.cache.getAccess(actor.ID, name)
	if ok {
		return id, nil
	}
	roomID, private, role, err := s.Membership(ctx, actor.ID, name)
	if err != nil {
		return 0, err
	}
	if err := readable(name, private, role); err != nil {
		return 0, err
	}
	s.cache.putAccess(actor.ID, name, roomID, gen)
	return roomID, nil
}

// CreateRoom creates a room with actor as its admin.
func (s *Service) CreateRoom(ctx context.Context, actor *chat.User, name string, private bool, topic string) (*chat.Room, error) {
	name = strings.ToLower(strings.TrimSpace(strings.TrimPrefix(name, "#")))
	if !chat.ValidRoomName(name) {
		return nil, wh.Errorf(wh.EInvalid, "room names are 1-64 characters: lowercase letters, digits, '_' or '-', starting with a letter or digit")
	}
	topic, err := cleanTopic(topic)
	if err != nil {
		return nil, err
	}
	if _, err := s.RoomByName(ctx, name); err == nil && !retried(ctx) {
		return nil, wh.Errorf(wh.EConflict, "a room named %q already exists; pick another name or join it", name)
	}
	if err := s.spend(ctx, LimitRooms, actor); err != nil {
		return nil, err
	}
	if _, err := s.append(ctx, chat.EvRoomCreated, chat.RoomCreated{Name: name, Kind: chat.KindRoom, Private: private, Topic: topic, Creator: actor.Name}); err != nil {
		return nil, err
	}
	return s.RoomFor(ctx, actor, name)
}

// Join adds actor to a public room (a member of the room, public or
// private, is already in it).
func (s *Service) Join(ctx context.Context, actor *chat.User, name string) (*chat.Room, error) {
	r, err := s.RoomByName(ctx, name)
	if err != nil {
		return nil, err
	}
	role, err := s.Role(ctx, r.ID, actor.ID)
	if err != nil {
		return nil, err
	}
	if role != "" {
		// Already in it (its admin adding themselves, a second click):
		// nothing to do, whether the room is private or not.
		return s.RoomFor(ctx, actor, name)
	}
	if d := authz.MayJoin(r.Private || r.Kind == chat.KindDM); !d.Allow {
		return nil, wh.Errorf(wh.ENotFound, "no room named %q", name) // private rooms do not leak
	}
	if _, err := s.append(ctx, chat.EvMemberAdded, chat.MemberChange{Room: name, User: actor.Name, Role: chat.RoleMember, By: actor.Name}); err != nil && wh.ErrorCode(err) != wh.EConflict {
		return nil, err
	}
	return s.RoomFor(ctx, actor, name)
}

// AddMember adds user to a room. Public rooms: any member may add; private
// rooms: room admins only.
func (s *Service) AddMember(ctx context.Context, actor *chat.User, name, user string) error {
	r, err := s.RoomFor(ctx, actor, name)
	if err != nil {
		return err
	}
	if r.Kind == chat.KindDM {
		return wh.Errorf(wh.EInvalid, "a DM has exactly its two people; start a room to talk with more")
	}
	if d := authz.MayManageMembers(r.Role == chat.RoleAdmin, r.Private); !d.Allow {
		return &wh.Error{Code: wh.EForbidden, Message: "only an admin of " + name + " can add members to this private room", Reason: d.Reason}
	}
	u, err := s.UserByName(ctx, strings.TrimPrefix(strings.ToLower(user), "@"))
	if err != nil {
		return err
	}
	_, err = s.append(ctx, chat.EvMemberAdded, chat.MemberChange{Room: name, User: u.Name, Role: chat.RoleMember, By: actor.Name})
	return err
}

// RemoveMember removes user from a room; a user may always remove themself (leave).
func (s *Service) RemoveMember(ctx context.Context, actor *chat.User, name, user string) error {
	r, err := s.RoomFor(ctx, actor, name)
	if err != nil {
		return err
	}
	user = strings.TrimPrefix(strings.ToLower(user), "@")
	if r.Kind == chat.KindDM && user != actor.Name {
		return wh.Errorf(wh.EInvalid, "you can leave a DM but not remove the other person")
	}
	if d := authz.MayRemoveMember(actor.Name, user, r.Role == chat.RoleAdmin); !d.Allow {
		return &wh.Error{Code: wh.EForbidden, Message: "only an admin of " + name + " can remove other members", Reason: d.Reason}
	}
	u, err := s.UserByName(ctx, user)
	if err != nil {
		return err
	}
	_, err = s.append(ctx, chat.EvMemberRemoved, chat.MemberChange{Room: name, User: u.Name, By: actor.Name})
	return err
}

// OpenDM returns the DM between actor and another user, creating it once.
func (s *Service) OpenDM(ctx context.Context, actor *chat.User, with string) (*chat.Room, error) {
	with = strings.TrimPrefix(strings.ToLower(strings.TrimSpace(with)), "@")
	other, err := s.UserByName(ctx, with)
	if err != nil {
		return nil, err
	}
	name := chat.DMName(actor.Name, other.Name)
	if r, err := s.RoomFor(ctx, actor, name); err == nil {
		return r, nil
	}
	members := []string{actor.Name}
	if other.Name != actor.Name {
		members = append(members, other.Name)
	}
	if _, err := s.append(ctx, chat.EvRoomCreated, chat.RoomCreated{Name: name, Kind: chat.KindDM, Private: true, Creator: actor.Name, Members: members}); err != nil && wh.ErrorCode(err) != wh.EConflict {
		return nil, err
	}
	return s.RoomFor(ctx, actor, name)
}

// MyRooms lists the rooms and DMs actor is a member of.
func (s *Service) MyRooms(ctx context.Context, actor *chat.User) ([]chat.Room, error) {
	return s.RoomsOf(ctx, actor)
}

// PublicRooms lists public rooms for browsing, with actor's role in each.
func (s *Service) PublicRooms(ctx context.Context, actor *chat.User) ([]chat.Room, error) {
	return s.Store.PublicRooms(ctx, actor)
}

// Members lists a room's members; members only.
func (s *Service) Members(ctx context.Context, actor *chat.User, name string) ([]chat.Member, error) {
	r, err := s.RoomFor(ctx, actor, name)
	if err != nil {
		return nil, err
	}
	return s.RoomMembers(ctx, r.ID)
}
