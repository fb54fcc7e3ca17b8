package room

import (
	"context"
	"strings"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/chat"
	"github.com/wheelhouse-dev/wheelhouse/store"
)

// SearchInput is a search as a person asks it.
type SearchInput struct {
	Q      string // words, "phrases", prefixes*
	Room   string // "" every room the caller is a member of
	From   string // author: a user name or owner/agent ("" anyone)
	Before int64  // older than this message id (the next page)
	Limit  int
}

// Search finds messages newest first in the rooms actor is a member of
// now: a room they left (or never joined) is never searched, private or
// public. Naming a room they may not read is refused as reading it would be.
func (s *Service) Search(ctx context.Context, actor *chat.User, in SearchInput) ([]store.SearchResult, error) {
	match, err := store.FTSQuery(in.Q)
	if err != nil {
		return nil, err
	}
	q := store.SearchQuery{UserID: actor.ID, Match: match, Before: in.Before, Limit: in.Limit}
	if in.Before < 0 {
		return nil, wh.Errorf(wh.EInvalid, "before must be a message id")
	}
	if in.Limit < 0 || in.Limit > store.MaxSearchLimit {
		return nil, wh.Errorf(wh.EInvalid, "limit must be between 1 and %d", store.MaxSearchLimit)
	}
	if in.Room != "" {
		if q.RoomID, err = s.access(ctx, actor, strings.TrimPrefix(in.Room, "#")); err != nil {
			return nil, err
		}
	}
	if in.From != "" {
		from := strings.ToLower(strings.TrimPrefix(strings.TrimSpace(in.From), "@"))
		_, _, agent := chat.SplitHandle(from)
		if !agent && !chat.ValidUserName(from) {
			return nil, wh.Errorf(wh.EInvalid, "from is a user name or an agent's owner/name, not %q", clipID(in.From))
		}
		q.From = from
	}
	return s.Store.Search(ctx, q)
}
