package room

import (
	"context"
	"strings"
	"unicode/utf8"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/chat"
	"github.com/wheelhouse-dev/wheelhouse/store"
)

// Post stores a message from actor in room. Text is stored raw; rendering
// must escape it.
func (s *Service) Post(ctx context.Context, actor *chat.User, roomName, text string) (*chat.Message, error) {
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
	d := chat.MessagePosted{Room: roomName, AuthorKind: chat.AuthorUser, Author: actor.Name, Text: text, Mentions: chat.ParseMentions(text), Parts: chat.QuotedParts(text)}
	ev, err := chat.NewEvent(chat.EvMessagePosted, s.now(), d)
	if err != nil {
		return nil, wh.Wrap(err, "encode message")
	}
	seq, err := s.Log.Append(ctx, ev)
	if err != nil {
		return nil, err
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
	seq, err := s.append(ctx, chat.EvMessagePosted, chat.MessagePosted{Room: roomName, AuthorKind: authorKind, Author: author, Text: text, TurnID: turnID, Kind: kind})
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
