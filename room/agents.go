package room

import (
	"context"

	"github.com/wheelhouse-dev/wheelhouse/chat"
)

// Agents lists every agent, with the policy shown to its owner only.
func (s *Service) Agents(ctx context.Context, viewer *chat.User) ([]*chat.Agent, error) {
	as, err := s.AllAgents(ctx)
	for _, a := range as {
		show(a, viewer)
	}
	return as, err
}

// RoomAgents lists the agents in a room the viewer is a member of.
func (s *Service) RoomAgents(ctx context.Context, viewer *chat.User, roomName string) ([]*chat.Agent, error) {
	r, err := s.RoomFor(ctx, viewer, roomName)
	if err != nil {
		return nil, err
	}
	as, err := s.AgentsInRoom(ctx, r.ID)
	for _, a := range as {
		show(a, viewer)
	}
	return as, err
}

// show reveals the policy to the agent's owner only.
func show(a *chat.Agent, viewer *chat.User) {
	if viewer != nil && viewer.Name == a.Owner {
		p := a.Effective
		a.Policy = &p
	}
}
