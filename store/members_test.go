package store

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/chat"
	"github.com/wheelhouse-dev/wheelhouse/eventlog"
)

// applyOutcomes applies one batch and returns each event's outcome code
// ("" when applied).
func (b *benchStore) applyOutcomes(t *testing.T, evs ...chat.Event) []string {
	t.Helper()
	batch := make([]eventlog.Entry, len(evs))
	for i, ev := range evs {
		data, _ := json.Marshal(ev)
		b.seq++
		batch[i] = eventlog.Entry{Seq: b.seq, Data: data}
	}
	outs, _, err := b.s.Apply(context.Background(), batch)
	if err != nil {
		t.Fatal(err)
	}
	codes := make([]string, len(outs))
	for i, o := range outs {
		codes[i] = wh.ErrorCode(o.Err)
	}
	return codes
}

// The projector's member cache follows the log: a post is judged against
// membership as of that point of the log, within a batch and across
// batches, and a refused membership change leaves no trace in it.
func TestMemberCacheFollowsTheLog(t *testing.T) {
	b := newBenchStore(t, 3, false) // u0 (creator), u1 and u2 in room r
	post := func(who string) chat.Event { return messageEvent(t, who, "hi") }
	add := func(who string) chat.Event {
		return event(t, chat.EvMemberAdded, chat.MemberChange{Room: "r", User: who, By: "u0"})
	}
	remove := func(who string) chat.Event {
		return event(t, chat.EvMemberRemoved, chat.MemberChange{Room: "r", User: who, By: "u0"})
	}
	newUser := func(name string) chat.Event {
		return event(t, chat.EvUserCreated, chat.UserCreated{Name: name, PasswordHash: "x"})
	}
	for _, step := range []struct {
		name string
		evs  []chat.Event
		want []string
	}{
		{"MembersPost", []chat.Event{post("u1"), post("u2")}, []string{"", ""}},
		{"RemovedInBatchRefused", []chat.Event{post("u1"), remove("u1"), post("u1"), post("u2")}, []string{"", "", wh.EForbidden, ""}},
		{"StillRefusedNextBatch", []chat.Event{post("u1")}, []string{wh.EForbidden}},
		{"AddedInBatchPosts", []chat.Event{newUser("u3"), post("u3"), add("u3"), post("u3")}, []string{"", wh.EForbidden, "", ""}},
		{"AddedPostsNextBatch", []chat.Event{post("u3")}, []string{""}},
		{"RefusedAddLeavesNoTrace", []chat.Event{post("u2"), add("u2"), add("u1"), remove("u1"), remove("u1"), post("u1")}, []string{"", wh.EConflict, "", "", wh.ENotFound, wh.EForbidden}},
	} {
		got := b.applyOutcomes(t, step.evs...)
		if !slices.Equal(got, step.want) {
			t.Fatalf("%s: outcomes %q, want %q", step.name, got, step.want)
		}
	}
}
