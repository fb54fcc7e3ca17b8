package room

import (
	"context"
	"slices"
	"strings"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/chat"
)

// MaxDefaultRooms bounds the default rooms.
const MaxDefaultRooms = 20

// SetSettings changes the hub's settings; admins only. Default rooms must
// be public rooms that exist.
func (s *Service) SetSettings(ctx context.Context, actor *chat.User, set chat.Settings) (chat.Settings, error) {
	if actor == nil || !actor.Admin {
		return chat.Settings{}, wh.Errorf(wh.EForbidden, "only an admin can change the hub's settings")
	}
	if err := set.Limits.Validate(); err != nil {
		return chat.Settings{}, wh.Errorf(wh.EInvalid, "limits: %v", err)
	}
	if len(set.DefaultRooms) > MaxDefaultRooms {
		return chat.Settings{}, wh.Errorf(wh.EInvalid, "at most %d default rooms", MaxDefaultRooms)
	}
	var rooms []string
	for _, name := range set.DefaultRooms {
		name = strings.ToLower(strings.TrimPrefix(strings.TrimSpace(name), "#"))
		r, err := s.RoomByName(ctx, name)
		if err != nil || r.Kind != chat.KindRoom || r.Private {
			return chat.Settings{}, wh.Errorf(wh.EInvalid, "default rooms are public rooms; there is no public room %q", name)
		}
		if !slices.Contains(rooms, name) {
			rooms = append(rooms, name)
		}
	}
	set.DefaultRooms = chat.NonNilStrings(rooms)
	if _, err := s.append(ctx, chat.EvSettingsChanged, chat.SettingsChanged{Settings: set, By: actor.Name}); err != nil {
		return chat.Settings{}, err
	}
	return s.Settings(ctx)
}

// EnsureDefaultRoom makes room a default room unless the settings name
// some already (`wheelhouse up` makes #general one on its first run).
func (s *Service) EnsureDefaultRoom(ctx context.Context, admin *chat.User, room string) error {
	set, err := s.Settings(ctx)
	if err != nil || len(set.DefaultRooms) > 0 {
		return err
	}
	_, err = s.SetSettings(ctx, admin, chat.Settings{DefaultRooms: []string{room}})
	return err
}

// RoomInfo is GET /rooms/{room}: a member sees the room with their read
// state; anyone sees a public room they are not in (role "", so the UI
// can offer to join it); a private room reads as not found to non-members.
func (s *Service) RoomInfo(ctx context.Context, actor *chat.User, name string) (*chat.Room, error) {
	r, err := s.RoomByName(ctx, name)
	if err != nil {
		return nil, err
	}
	role, err := s.Role(ctx, r.ID, actor.ID)
	if err != nil {
		return nil, err
	}
	if role == "" {
		if r.Private || r.Kind == chat.KindDM {
			return nil, wh.Errorf(wh.ENotFound, "no room named %q", name)
		}
		return r, nil
	}
	return s.memberRoom(ctx, actor, name)
}
