package room

import (
	"context"

	"github.com/wheelhouse-dev/wheelhouse/authz"
	"github.com/wheelhouse-dev/wheelhouse/chat"
)

// Agents lists every agent as the viewer may see it (see show).
func (s *Service) Agents(ctx context.Context, viewer *chat.User) ([]*chat.Agent, error) {
	as, err := s.AllAgents(ctx)
	if err != nil {
		return nil, err
	}
	return as, s.showAll(ctx, viewer, as)
}

// RoomAgents lists the agents in a room the viewer is a member of.
func (s *Service) RoomAgents(ctx context.Context, viewer *chat.User, roomName string) ([]*chat.Agent, error) {
	r, err := s.RoomFor(ctx, viewer, roomName)
	if err != nil {
		return nil, err
	}
	as, err := s.AgentsInRoom(ctx, r.ID)
	if err != nil {
		return nil, err
	}
	// What turns from this room may do is for everyone in it to see.
	ceilings, err := s.CeilingsInRoom(ctx, r.ID)
	if err != nil {
		return nil, err
	}
	for _, a := range as {
		a.Ceiling = ceilings[a.ID]
	}
	return as, s.showAll(ctx, viewer, as)
}

func (s *Service) showAll(ctx context.Context, viewer *chat.User, as []*chat.Agent) error {
	member, err := s.memberOf(ctx, viewer)
	if err != nil {
		return err
	}
	public, err := s.PublicRooms(ctx, viewer)
	if err != nil {
		return err
	}
	open := make(map[string]bool, len(public))
	for _, r := range public {
		open[r.Name] = true
	}
	for _, a := range as {
		show(a, viewer, member, open)
	}
	return nil
}

// show trims an agent to what the viewer may see: the policy is the
// owner's alone; the room list shows public rooms and the private ones the
// viewer is in; the running (or last) turn's details show only to members
// of the room it runs in.
func show(a *chat.Agent, viewer *chat.User, member, public map[string]bool) {
	if authz.MaySeePolicy(viewer.Name, a.Owner).Allow {
		p := a.Effective
		a.Policy = &p
	}
	rooms := []string{}
	for _, r := range a.Rooms {
		if authz.MaySeeAgentRoom(authz.RoomListCheck{Viewer: viewer.Name, Owner: a.Owner, Private: !public[r], ViewerMember: member[r]}).Allow {
			rooms = append(rooms, r)
		}
	}
	a.Rooms = rooms
	// The bridge keeps reporting the room of the turn that ended last: it
	// is as much the agent's activity as a running turn's.
	if (a.TurnID != "" || a.TurnRoom != "") && !authz.MaySeeActivity(authz.ActivityCheck{Viewer: viewer.Name, Owner: a.Owner, Room: a.TurnRoom, ViewerMember: member[a.TurnRoom]}).Allow {
		a.TurnID, a.TurnRoom, a.SteeredBy = "", "", []string{}
	}
}
