package room

import (
	"context"
	"strings"
	"unicode/utf8"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/chat"
	"github.com/wheelhouse-dev/wheelhouse/eventlog"
	"github.com/wheelhouse-dev/wheelhouse/store"
)

// Post stores a message from actor in room. Text is stored raw; rendering
// must escape it. Appending it is the commitment: the projection records a
// steer for each agent it addresses and the hub's router delivers them.
// turns optionally names, per agent handle, the turn the sender saw
// running (the stale-turn guard).
func (s *Service) Post(ctx context.Context, actor *chat.User, roomName, text string, turns map[string]string) (*chat.Message, error) {
	if strings.TrimSpace(text) == "" {
		return nil, wh.Errorf(wh.EInvalid, "the message is empty")
	}
	if len(text) > chat.MaxMessageBytes {
		return nil, &wh.Error{Code: wh.ETooLarge, Message: "the message is longer than 16 KiB; shorten it or share a file instead"}
	}
	if !utf8.ValidString(text) {
		return nil, wh.Errorf(wh.EInvalid, "the message is not valid UTF-8")
	}
	if _, err := s.access(ctx, actor, roomName); err != nil {
		return nil, err
	}
	if len(turns) > 16 {
		return nil, wh.Errorf(wh.EInvalid, "turns names more agents than a message can address")
	}
	d := chat.MessagePosted{Room: roomName, AuthorKind: chat.AuthorUser, Author: actor.Name, Text: text, Mentions: chat.ParseMentions(text),
		Parts: chat.QuotedParts(text), Route: true, Turns: turns}
	d.Mentions = addressDM(roomName, actor.Name, d.Mentions)
	ev, err := s.newEvent(ctx, chat.EvMessagePosted, d)
	if err != nil {
		return nil, err
	}
	var opts []eventlog.AppendOption
	if !mentionsAgent(d.Mentions) {
		opts = append(opts, eventlog.Plain) // the router need not see it
	}
	seq, err := s.Log.Append(ctx, ev, opts...)
	if err != nil {
		return nil, err
	}
	if retried(ctx) {
		return s.MessageByID(ctx, int64(seq)) // answer as the first time
	}
	// The projection stored exactly this; no need to read it back.
	return &chat.Message{ID: int64(seq), Room: roomName, AuthorKind: chat.AuthorUser, Author: actor.Name, Text: text,
		Mentions: chat.NonNilMentions(d.Mentions), Parts: chat.NonNilParts(d.Parts), CreatedAt: ev.At}, nil
}

// PostAs stores a message from an agent or the system (no membership check:
// the caller is the hub, acting for a bridge whose agent is in the room).
func (s *Service) PostAs(ctx context.Context, authorKind, author, roomName, text, turnID, kind string) (*chat.Message, error) {
	if len(text) > chat.MaxMessageBytes {
		text = text[:chat.MaxMessageBytes-64] + "\n… (truncated)"
		for !utf8.ValidString(text) {
			text = text[:len(text)-1]
		}
	}
	ev, err := s.newEvent(ctx, chat.EvMessagePosted, chat.MessagePosted{Room: roomName, AuthorKind: authorKind, Author: author, Text: text, TurnID: turnID, Kind: kind})
	if err != nil {
		return nil, err
	}
	seq, err := s.Log.Append(ctx, ev, eventlog.Plain) // an agent's or the hub's words are never routed
	if err != nil {
		return nil, err
	}
	return s.MessageByID(ctx, int64(seq))
}

// History returns a page of a room's messages, oldest first; members only.
func (s *Service) History(ctx context.Context, actor *chat.User, roomName string, p store.Page) ([]chat.Message, error) {
	roomID, err := s.access(ctx, actor, roomName)
	if err != nil {
		return nil, err
	}
	return s.Store.History(ctx, roomID, p)
}

func mentionsAgent(ms []chat.Mention) bool {
	for _, m := range ms {
		if m.Kind == chat.MentionAgent {
			return true
		}
	}
	return false
}

// addressDM makes every message in a person's DM with an agent address the
// agent: a DM with an agent is a conversation, no mention needed. The
// implied mention spans no text.
func addressDM(roomName, author string, ms []chat.Mention) []chat.Mention {
	user, owner, agent, ok := chat.AgentDMParts(roomName)
	if !ok || user != author {
		return ms
	}
	for _, m := range ms {
		if m.Kind == chat.MentionAgent && m.Owner == owner && m.Agent == agent {
			return ms
		}
	}
	return append([]chat.Mention{{Kind: chat.MentionAgent, Owner: owner, Agent: agent}}, ms...)
}
