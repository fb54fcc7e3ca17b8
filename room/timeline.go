package room

import (
	"context"
	"slices"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/authz"
	"github.com/wheelhouse-dev/wheelhouse/chat"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// TimelineView is an agent's timeline as one viewer may see it.
type TimelineView struct {
	Entries []chat.TimelineEntry
	// ChainIntact: the whole timeline's hash chain verifies (checked on
	// every entry, also those the viewer does not see).
	ChainIntact bool
	// FirstBad is the index of the first entry whose hash does not match
	// (-1: none); only for the owner, who sees every entry.
	FirstBad int
	Owner    bool
}

// Timeline returns an agent's audited events in order (optionally of one
// turn): all of them to its owner; to anyone else only those of rooms they
// are a member of (authz.MaySeeActivity).
func (s *Service) Timeline(ctx context.Context, viewer *chat.User, handle, turnID string) (*TimelineView, error) {
	a, err := s.AgentByHandle(ctx, handle)
	if err != nil {
		return nil, err
	}
	member, err := s.memberOf(ctx, viewer)
	if err != nil {
		return nil, err
	}
	if viewer.Name != a.Owner && !slices.ContainsFunc(a.Rooms, func(r string) bool { return member[r] }) {
		return nil, wh.Errorf(wh.EForbidden, "only @%s and the members of @%s's rooms can read its timeline", a.Owner, a.Handle)
	}
	all, err := s.TimelineOf(ctx, a.ID, "")
	if err != nil {
		return nil, err
	}
	bad := chat.VerifyTimeline(all)
	v := &TimelineView{ChainIntact: bad < 0, FirstBad: -1, Owner: viewer.Name == a.Owner, Entries: []chat.TimelineEntry{}}
	for _, e := range all {
		if turnID != "" && e.TurnID != turnID {
			continue
		}
		if authz.MaySeeActivity(authz.ActivityCheck{Viewer: viewer.Name, Owner: a.Owner, Room: e.Room, ViewerMember: member[e.Room]}).Allow {
			v.Entries = append(v.Entries, e)
		}
	}
	if v.Owner && turnID == "" {
		v.FirstBad = bad
	}
	return v, nil
}

// RecordJournalHeadOnce records that an agent's bridge reported head as
// its journal's newest entry, under an idempotency key, so that several hub
// nodes hearing the same heartbeat record it once. The projection adds it
// to the agent's timeline ("journal.head") unless it is the last one there.
func (s *Service) RecordJournalHeadOnce(ctx context.Context, key, handle, bridgeID string, head wire.JournalHead) error {
	ev, err := chat.NewEventWithID(key, chat.EvAgentJournal, s.now(), chat.AgentJournal{Handle: handle, Bridge: bridgeID, Head: head})
	if err != nil {
		return wh.Wrap(err, "encode the journal head")
	}
	_, err = s.Log.Append(ctx, ev)
	return err
}

// memberOf is the set of rooms (by name) the viewer is a member of.
func (s *Service) memberOf(ctx context.Context, viewer *chat.User) (map[string]bool, error) {
	rs, err := s.RoomsOf(ctx, viewer)
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(rs))
	for _, r := range rs {
		out[r.Name] = true
	}
	return out, nil
}
