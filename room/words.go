package room

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/authz"
	"github.com/wheelhouse-dev/wheelhouse/chat"
	"github.com/wheelhouse-dev/wheelhouse/store"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// The owner's own words to their agents are signed by one of the owner's
// devices: a message statement per addressed agent (authz.StatementMessage)
// naming the bridge, the agent, the room, the thread, the SHA-256 of the
// exact text, the files and the turn the owner expects. The hub relays each
// unchanged on its agent's steer (wire.Steer.Words); the bridge verifies it
// and gives owner authority only to words that verify. The hub checks here
// what it knows, so that a statement that cannot match is refused at once
// with why, never relayed to fail quietly on the bridge.

// Reasons of a post's refused statements.
const (
	ReasonWordsMalformed    = "words-malformed"
	ReasonWordsTooMany      = "words-too-many"
	ReasonWordsNotAddressed = "words-not-addressed"
	ReasonWordsMismatch     = "words-mismatch"
)

// wordsInput is what a post's statements are checked against: the message
// as the hub will store and relay it.
type wordsInput struct {
	Actor    string
	Room     string
	Text     string
	Thread   int64 // the thread root (0: the channel)
	Mentions []chat.Mention
	Files    []*store.StoredFile
	Signed   []wire.Signed
}

// checkWords checks a post's signed statements and returns them by the
// handle (owner/name) of the agent each names.
func (s *Service) checkWords(ctx context.Context, in wordsInput) (map[string]wire.Signed, error) {
	if len(in.Signed) == 0 {
		return nil, nil
	}
	addressed := map[string]bool{}
	for _, m := range in.Mentions {
		if m.Kind == chat.MentionAgent {
			addressed[m.Owner+"/"+m.Agent] = true
		}
	}
	if len(in.Signed) > len(addressed) {
		return nil, &wh.Error{Code: wh.EInvalid, Reason: ReasonWordsTooMany,
			Message: fmt.Sprintf("signed carries %d statements but the message addresses %d %s: sign one per addressed agent", len(in.Signed), len(addressed), plural(len(addressed), "agent", "agents"))}
	}
	// The thread the steers carry: a person's DM with an agent is one
	// conversation (decideSteersTx).
	thread := ""
	if _, _, _, dm := chat.AgentDMParts(in.Room); !dm && in.Thread > 0 {
		thread = strconv.FormatInt(in.Thread, 10)
	}
	textHash := authz.TextHash(in.Text)
	now := s.now()
	out := make(map[string]wire.Signed, len(in.Signed))
	for i, sg := range in.Signed {
		bad := func(reason, format string, args ...any) error {
			return &wh.Error{Code: wh.EInvalid, Reason: reason, Message: fmt.Sprintf("signed[%d] ", i) + fmt.Sprintf(format, args...)}
		}
		if err := sg.Validate(); err != nil {
			return nil, bad(ReasonWordsMalformed, "is not a signed statement: %s", wh.ErrorMessage(err))
		}
		st, err := authz.ParseStatement([]byte(sg.Statement))
		if err != nil {
			return nil, bad(ReasonWordsMalformed, "does not hold a statement: %v", err)
		}
		if st.Kind != authz.StatementMessage {
			return nil, bad(ReasonWordsMalformed, "is a %q statement; a post carries %q statements", st.Kind, authz.StatementMessage)
		}
		owner, name, ok := chat.SplitHandle(st.Agent)
		handle := owner + "/" + name
		if !ok || st.Agent != handle {
			return nil, bad(ReasonWordsMalformed, "names agent %.70q, not an agent handle (owner/name, lower-case)", st.Agent)
		}
		if !addressed[handle] {
			return nil, bad(ReasonWordsNotAddressed, "names @%s, which this message does not address: sign only for the agents it mentions", handle)
		}
		if _, dup := out[handle]; dup {
			return nil, bad(ReasonWordsTooMany, "names @%s a second time: one statement per agent", handle)
		}
		if owner != in.Actor {
			return nil, bad(ReasonWordsMismatch, "names @%s, whose owner is @%s: you sign words only to your own agents", handle, owner)
		}
		switch {
		case st.Room != in.Room:
			return nil, bad(ReasonWordsMismatch, "names room %.70q, not %q, where the message is posted", st.Room, in.Room)
		case st.Thread != thread:
			return nil, bad(ReasonWordsMismatch, "names thread %.30q, not %q, the thread the message goes to (\"\": the channel)", st.Thread, thread)
		case !strings.EqualFold(st.TextHash, textHash):
			return nil, bad(ReasonWordsMismatch, "names a textHash that is not the SHA-256 of the text: the hub relays the text byte for byte, so hash exactly the UTF-8 bytes sent")
		}
		if err := matchFiles(st.Files, in.Files); err != nil {
			return nil, bad(ReasonWordsMismatch, "%s", err)
		}
		if !retried(ctx) {
			switch exp := st.ExpiresAt(); {
			case !exp.After(now):
				return nil, bad(ReasonWordsMismatch, "expired at %s (the hub's clock says %s): send again, and check this device's clock if it keeps happening", st.Expires, now.UTC().Format(time.RFC3339))
			case exp.After(now.Add(authz.MaxStatementAhead + time.Minute)):
				return nil, bad(ReasonWordsMismatch, "expires at %s, more than %s after the hub's clock (%s): check this device's clock", st.Expires, authz.MaxStatementAhead, now.UTC().Format(time.RFC3339))
			}
		}
		out[handle] = sg
	}
	return out, nil
}

// matchFiles compares the files a statement names with the files posted,
// in order, by name and SHA-256.
func matchFiles(named []authz.StatementFile, posted []*store.StoredFile) error {
	if len(named) != len(posted) {
		return fmt.Errorf("names %d %s but the message carries %d", len(named), plural(len(named), "file", "files"), len(posted))
	}
	for i, f := range posted {
		if named[i].Name != f.Name {
			return fmt.Errorf("names file %d %.70q, but it is %q", i+1, named[i].Name, f.Name)
		}
		if !strings.EqualFold(named[i].SHA256, f.SHA256) {
			return fmt.Errorf("names a SHA-256 for %q that is not the digest of its bytes", f.Name)
		}
	}
	return nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
