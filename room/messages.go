package room

import (
	"context"
	"slices"
	"strings"
	"unicode/utf8"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/authz"
	"github.com/wheelhouse-dev/wheelhouse/chat"
	"github.com/wheelhouse-dev/wheelhouse/eventlog"
	"github.com/wheelhouse-dev/wheelhouse/store"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// PostInput is what a person posts.
type PostInput struct {
	Text string
	// Turns optionally names, per agent handle, the turn the sender saw
	// running (the stale-turn guard).
	Turns map[string]string
	// Thread is the message to reply under (0: the channel). Replying to a
	// reply replies in its thread.
	Thread int64
	// Files are files the sender uploaded to the room, now posted.
	Files []string
	// Signed are the owner's signed message statements, one per addressed
	// agent of their own at most (checkWords).
	Signed []wire.Signed
}

// Post stores a message from actor in room. Text is stored raw; rendering
// must escape it. Appending it is the commitment: the projection records a
// steer for each agent it addresses and the hub's router delivers them.
// turns optionally names, per agent handle, the turn the sender saw
// running (the stale-turn guard).
func (s *Service) Post(ctx context.Context, actor *chat.User, roomName, text string, turns map[string]string) (*chat.Message, error) {
	return s.PostWith(ctx, actor, roomName, PostInput{Text: text, Turns: turns})
}

// PostWith is Post with a thread and files.
func (s *Service) PostWith(ctx context.Context, actor *chat.User, roomName string, in PostInput) (*chat.Message, error) {
	text := in.Text
	if strings.TrimSpace(text) == "" && len(in.Files) == 0 {
		return nil, wh.Errorf(wh.EInvalid, "the message is empty")
	}
	if err := checkText(text); err != nil {
		return nil, err
	}
	if _, err := s.access(ctx, actor, roomName); err != nil {
		return nil, err
	}
	if len(in.Turns) > 16 {
		return nil, wh.Errorf(wh.EInvalid, "turns names more agents than a message can address")
	}
	for h, t := range in.Turns {
		if _, _, ok := chat.SplitHandle(h); !ok || (t != "" && !wire.ValidTurnID(t)) {
			return nil, wh.Errorf(wh.EInvalid, "turns maps agent handles (owner/name) to turn ids")
		}
	}
	if in.Thread < 0 {
		return nil, wh.Errorf(wh.EInvalid, "thread must be a message id")
	}
	if in.Thread > 0 {
		root, err := s.MessageByID(ctx, in.Thread)
		if err != nil || root.Room != roomName {
			return nil, wh.Errorf(wh.ENotFound, "there is no message %d in %s to reply to", in.Thread, roomName)
		}
		if root.Thread != 0 {
			in.Thread = root.Thread // threads are one level deep
		}
	}
	files, err := s.checkFiles(ctx, actor, roomName, in.Files)
	if err != nil {
		return nil, err
	}
	if err := s.claimKey(ctx, "post", roomName, text, in.Thread, in.Files, in.Turns); err != nil {
		return nil, err
	}
	if err := s.spend(ctx, LimitPosts, actor); err != nil {
		return nil, err
	}
	d := chat.MessagePosted{Room: roomName, AuthorKind: chat.AuthorUser, Author: actor.Name, Text: text, Mentions: chat.ParseMentions(text),
		Parts: chat.QuotedParts(text), Route: true, Turns: in.Turns, Thread: in.Thread, Files: in.Files}
	d.Mentions = addressDM(roomName, actor.Name, d.Mentions)
	if d.Words, err = s.checkWords(ctx, wordsInput{Actor: actor.Name, Room: roomName, Text: text, Thread: in.Thread, Mentions: d.Mentions,
		Files: files, Signed: in.Signed}); err != nil {
		return nil, err
	}
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
	if retried(ctx) || len(in.Files) > 0 {
		return s.MessageByID(ctx, int64(seq)) // answer as the first time; with the files' names
	}
	// The projection stored exactly this; no need to read it back.
	m := &chat.Message{ID: int64(seq), Room: roomName, AuthorKind: chat.AuthorUser, Author: actor.Name, Text: text,
		Mentions: d.Mentions, Parts: d.Parts, CreatedAt: ev.At, Thread: in.Thread}
	m.Normalize()
	return m, nil
}

// checkText applies the bounds on a message's text.
func checkText(text string) error {
	if len(text) > chat.MaxMessageBytes {
		return &wh.Error{Code: wh.ETooLarge, Message: "the message is longer than 16 KiB; shorten it or share a file instead"}
	}
	if !utf8.ValidString(text) {
		return wh.Errorf(wh.EInvalid, "the message is not valid UTF-8")
	}
	return nil
}

// checkFiles checks the files a post names (the projection checks again)
// and returns their records, in the post's order.
func (s *Service) checkFiles(ctx context.Context, actor *chat.User, roomName string, ids []string) ([]*store.StoredFile, error) {
	if len(ids) > chat.MaxFilesPerMessage {
		return nil, wh.Errorf(wh.EInvalid, "a message carries at most %d files", chat.MaxFilesPerMessage)
	}
	var out []*store.StoredFile
	for i, id := range ids {
		if !wire.ValidFileID(id) {
			return nil, wh.Errorf(wh.EInvalid, "%q is not a file id (upload with POST /api/v1/rooms/%s/files)", clipID(id), roomName)
		}
		if slices.Contains(ids[:i], id) {
			return nil, wh.Errorf(wh.EInvalid, "file %s is named twice", id)
		}
		f, err := s.FileByID(ctx, id)
		switch {
		case err != nil || f.Room != roomName || f.Deleted:
			return nil, wh.Errorf(wh.EInvalid, "there is no file %s uploaded to %s", id, roomName)
		case f.Uploader != actor.Name:
			return nil, wh.Errorf(wh.EForbidden, "file %s was uploaded by someone else; post your own files", id)
		case f.MessageID != 0 && !retried(ctx):
			return nil, wh.Errorf(wh.EConflict, "file %s is already posted in message %d; upload it again to post it twice", id, f.MessageID)
		}
		out = append(out, f)
	}
	return out, nil
}

func clipID(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// PostAs stores a message from an agent or the system (no membership check:
// the caller is the hub, acting for a bridge whose agent is in the room).
func (s *Service) PostAs(ctx context.Context, authorKind, author, roomName, text, turnID, kind string) (*chat.Message, error) {
	return s.PostAgentOutput(ctx, AgentOutput{AuthorKind: authorKind, Author: author, Room: roomName, Text: text, TurnID: turnID, Kind: kind})
}

// AgentOutput is a message the hub posts for an agent (or itself).
type AgentOutput struct {
	AuthorKind, Author, Room string
	Text, TurnID, Kind       string
	// Thread is the thread the agent's turn lives in (0: the channel).
	Thread int64
	// Item names a streamed message: posting the same item again replaces
	// its text in place; Partial marks every version but the last.
	Item    string
	Partial bool
	// BridgeEvent names the bridge event the output came from (bridge id
	// and the bridge's event id): a retry of it is recorded once.
	BridgeEvent string
}

// BridgeEventKey is the id of the event that records bridge event id:
// JetStream drops a retry within its duplicate window, the projection
// (bridge_events) any later one.
func BridgeEventKey(id string) string { return "be:" + id }

// PostAgentOutput stores an agent's message; a streamed one (Item) is
// updated in place.
func (s *Service) PostAgentOutput(ctx context.Context, o AgentOutput) (*chat.Message, error) {
	text := o.Text
	if len(text) > chat.MaxMessageBytes {
		text = text[:chat.MaxMessageBytes-64] + "\n… (truncated)"
		for !utf8.ValidString(text) {
			text = text[:len(text)-1]
		}
	}
	ev, err := s.newEvent(ctx, chat.EvMessagePosted, chat.MessagePosted{Room: o.Room, AuthorKind: o.AuthorKind, Author: o.Author, Text: text,
		TurnID: o.TurnID, Kind: o.Kind, Thread: o.Thread, Item: o.Item, Partial: o.Partial, BridgeEvent: o.BridgeEvent})
	if err != nil {
		return nil, err
	}
	if o.BridgeEvent != "" {
		ev.ID = BridgeEventKey(o.BridgeEvent)
	}
	seq, err := s.Log.Append(ctx, ev, eventlog.Plain) // an agent's or the hub's words are never routed
	if err != nil {
		return nil, err
	}
	if o.Item != "" {
		return s.Store.StreamedMessage(ctx, o.Author, o.TurnID, o.Item)
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

// Thread returns a thread's root and a page of its replies; members only.
func (s *Service) Thread(ctx context.Context, actor *chat.User, roomName string, p store.Page) (*chat.Message, []chat.Message, error) {
	roomID, err := s.access(ctx, actor, roomName)
	if err != nil {
		return nil, nil, err
	}
	root, err := s.MessageByID(ctx, p.Thread)
	if err != nil || root.Room != roomName {
		return nil, nil, wh.Errorf(wh.ENotFound, "there is no message %d in %s", p.Thread, roomName)
	}
	if root.Thread != 0 {
		return nil, nil, wh.Errorf(wh.EInvalid, "message %d is a reply in thread %d; open that thread", root.ID, root.Thread)
	}
	ms, err := s.Store.History(ctx, roomID, p)
	return root, ms, err
}

// Message reads one message of a room; members only.
func (s *Service) Message(ctx context.Context, actor *chat.User, roomName string, id int64) (*chat.Message, error) {
	return s.messageIn(ctx, actor, roomName, id)
}

// messageIn reads a message the actor may read in room.
func (s *Service) messageIn(ctx context.Context, actor *chat.User, roomName string, id int64) (*chat.Message, error) {
	if _, err := s.access(ctx, actor, roomName); err != nil {
		return nil, err
	}
	m, err := s.MessageByID(ctx, id)
	if err != nil || m.Room != roomName {
		return nil, wh.Errorf(wh.ENotFound, "there is no message %d in %s", id, roomName)
	}
	return m, nil
}

// Edit replaces the text of actor's own message. It never steers an agent
// again (nor takes back what the agent was sent): the steers of a message
// are those of its first text.
func (s *Service) Edit(ctx context.Context, actor *chat.User, roomName string, id int64, text string) (*chat.Message, error) {
	m, err := s.messageIn(ctx, actor, roomName, id)
	if err != nil {
		return nil, err
	}
	if d := authz.MayEditMessage(actor.Name, m.Author, m.AuthorKind == chat.AuthorUser); !d.Allow {
		return nil, &wh.Error{Code: wh.EForbidden, Message: d.Message, Reason: d.Reason}
	}
	if m.Deleted {
		return nil, wh.Errorf(wh.EConflict, "message %d was deleted; it cannot be edited", id)
	}
	if strings.TrimSpace(text) == "" && len(m.Files) == 0 {
		return nil, wh.Errorf(wh.EInvalid, "the message would be empty; delete it instead")
	}
	if err := checkText(text); err != nil {
		return nil, err
	}
	if text == m.Text && !retried(ctx) {
		return m, nil
	}
	if err := s.spend(ctx, LimitPosts, actor); err != nil {
		return nil, err
	}
	if _, err := s.append(ctx, chat.EvMessageEdited, chat.MessageEdited{ID: id, Room: roomName, Text: text, By: actor.Name,
		Mentions: chat.ParseMentions(text), Parts: chat.QuotedParts(text)}); err != nil {
		return nil, err
	}
	return s.MessageByID(ctx, id)
}

// Delete deletes a message (its author, or a room admin): a tombstone
// stays. Its files are no longer served and their bytes are removed from
// the object store. Steers it carried are not taken back.
func (s *Service) Delete(ctx context.Context, actor *chat.User, roomName string, id int64) error {
	m, err := s.messageIn(ctx, actor, roomName, id)
	if err != nil {
		return err
	}
	r, err := s.RoomFor(ctx, actor, roomName)
	if err != nil {
		return err
	}
	if d := authz.MayDeleteMessage(actor.Name, m.Author, m.AuthorKind == chat.AuthorUser, r.Role == chat.RoleAdmin); !d.Allow {
		return &wh.Error{Code: wh.EForbidden, Message: d.Message, Reason: d.Reason}
	}
	if m.Deleted && !retried(ctx) {
		return nil // already gone: DELETE is idempotent
	}
	if err := s.spend(ctx, LimitPosts, actor); err != nil {
		return err
	}
	if _, err := s.append(ctx, chat.EvMessageDeleted, chat.MessageDeleted{ID: id, Room: roomName, By: actor.Name}); err != nil && !(retried(ctx) && wh.ErrorCode(err) == wh.EConflict) {
		return err
	}
	s.dropFileBytes(ctx, id)
	return nil
}

// React adds or removes actor's reaction with emoji on a message, and
// returns the message's reactions.
func (s *Service) React(ctx context.Context, actor *chat.User, roomName string, id int64, emoji string, add bool) ([]chat.Reaction, error) {
	if !chat.ValidEmoji(emoji) {
		return nil, wh.Errorf(wh.EInvalid, "a reaction is 1 to %d characters (at most %d bytes) without spaces, control characters or '/'", chat.MaxEmojiRunes, chat.MaxEmojiBytes)
	}
	m, err := s.messageIn(ctx, actor, roomName, id)
	if err != nil {
		return nil, err
	}
	if m.Deleted {
		return nil, wh.Errorf(wh.EConflict, "message %d was deleted", id)
	}
	has := false
	for _, r := range m.Reactions {
		if r.Emoji == emoji && slices.Contains(r.Users, actor.Name) {
			has = true
		}
	}
	if has != add || retried(ctx) {
		if err := s.spend(ctx, LimitPosts, actor); err != nil {
			return nil, err
		}
		typ := chat.EvReactionAdded
		if !add {
			typ = chat.EvReactionRemoved
		}
		if _, err := s.append(ctx, typ, chat.ReactionChange{Room: roomName, Message: id, Emoji: emoji, User: actor.Name}); err != nil {
			return nil, err
		}
		if m, err = s.MessageByID(ctx, id); err != nil {
			return nil, err
		}
	}
	return m.Reactions, nil
}

// ReadState is a member's read marker and counts in a room.
type ReadState struct {
	Room     string `json:"room"`
	LastRead int64  `json:"lastRead"`
	Unread   int    `json:"unread"`
	Mentions int    `json:"mentions"`
}

// MarkRead moves actor's read marker in a room forward to id (a marker
// never moves back; an id past the room's last message means "all").
func (s *Service) MarkRead(ctx context.Context, actor *chat.User, roomName string, id int64) (*ReadState, error) {
	if id < 0 {
		return nil, wh.Errorf(wh.EInvalid, "id must be a message id")
	}
	r, err := s.memberRoom(ctx, actor, roomName)
	if err != nil {
		return nil, err
	}
	if id > r.LastRead || retried(ctx) {
		if _, err := s.append(ctx, chat.EvReadMarked, chat.ReadMarked{User: actor.Name, Room: roomName, ID: id}); err != nil {
			return nil, err
		}
		if r, err = s.memberRoom(ctx, actor, roomName); err != nil {
			return nil, err
		}
	}
	return &ReadState{Room: roomName, LastRead: r.LastRead, Unread: r.Unread, Mentions: r.Mentions}, nil
}

// memberRoom is RoomFor with the member's read state.
func (s *Service) memberRoom(ctx context.Context, actor *chat.User, roomName string) (*chat.Room, error) {
	r, err := s.RoomFor(ctx, actor, roomName)
	if err != nil {
		return nil, err
	}
	if err := s.ReadState(ctx, actor, r); err != nil {
		return nil, err
	}
	return r, nil
}

// SetNotify sets actor's notification level for a room.
func (s *Service) SetNotify(ctx context.Context, actor *chat.User, roomName, level string) (string, error) {
	if !chat.ValidNotify(level) {
		return "", wh.Errorf(wh.EInvalid, "the level is %q, %q or %q", chat.NotifyAll, chat.NotifyMentions, chat.NotifyNone)
	}
	r, err := s.memberRoom(ctx, actor, roomName)
	if err != nil {
		return "", err
	}
	if r.Notify != level || retried(ctx) {
		if _, err := s.append(ctx, chat.EvNotifySet, chat.NotifySet{User: actor.Name, Room: roomName, Level: level}); err != nil {
			return "", err
		}
	}
	return level, nil
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
