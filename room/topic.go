package room

import (
	"context"
	"strings"
	"unicode/utf8"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/authz"
	"github.com/wheelhouse-dev/wheelhouse/chat"
)

// cleanTopic trims a topic and checks it is one line of text, not too long.
func cleanTopic(topic string) (string, error) {
	topic = strings.TrimSpace(topic)
	if len(topic) > chat.MaxTopicBytes {
		return "", wh.Errorf(wh.EInvalid, "the topic is too long (at most %d bytes)", chat.MaxTopicBytes)
	}
	if !utf8.ValidString(topic) || strings.ContainsAny(topic, "\n\r\x00") {
		return "", wh.Errorf(wh.EInvalid, "the topic is one line of text")
	}
	return topic, nil
}

// SetTopic changes a room's topic: any member of a public room, the admins
// of a private one. An empty topic clears it.
func (s *Service) SetTopic(ctx context.Context, actor *chat.User, name, topic string) (*chat.Room, error) {
	topic, err := cleanTopic(topic)
	if err != nil {
		return nil, err
	}
	r, err := s.RoomFor(ctx, actor, name)
	if err != nil {
		return nil, err
	}
	if d := authz.MaySetTopic(r.Role == chat.RoleAdmin, r.Private, r.Kind == chat.KindDM); !d.Allow {
		return nil, &wh.Error{Code: wh.EForbidden, Message: d.Message, Reason: d.Reason}
	}
	if r.Topic != topic {
		if _, err := s.append(ctx, chat.EvRoomTopicSet, chat.RoomTopicSet{Room: r.Name, Topic: topic, By: actor.Name}); err != nil {
			return nil, err
		}
	}
	return s.RoomFor(ctx, actor, name)
}
