package room

import (
	"context"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/chat"
)

// Timeline returns an agent's audited events in order (optionally of one
// turn). The owner and members of the agent's rooms may read it.
func (s *Service) Timeline(ctx context.Context, viewer *chat.User, handle, turnID string) ([]chat.TimelineEntry, error) {
	a, err := s.AgentByHandle(ctx, handle)
	if err != nil {
		return nil, err
	}
	if viewer.Name != a.Owner {
		ok := false
		for _, r := range a.Rooms {
			if m, _ := s.IsMember(ctx, r, viewer.Name); m {
				ok = true
				break
			}
		}
		if !ok {
			return nil, wh.Errorf(wh.EForbidden, "only the owner and members of @%s's rooms can read its timeline", a.Handle)
		}
	}
	return s.TimelineOf(ctx, a.ID, turnID)
}
