package store

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/wheelhouse-dev/wheelhouse/chat"
	"github.com/wheelhouse-dev/wheelhouse/eventlog"
)

// Group commit: one transaction applies a batch, and an event refused in
// the middle of it (a post by someone not in the room) is refused alone —
// the events around it are applied, in order, and the projection's
// position is the batch's last event.
func TestARefusedEventLeavesItsBatchApplied(t *testing.T) {
	b := newBenchStore(t, 2, false) // u0 and u1 are members of r
	ctx := context.Background()
	b.apply(t, event(t, chat.EvUserCreated, chat.UserCreated{Name: "stranger", PasswordHash: "x"}))
	evs := []chat.Event{
		messageEvent(t, "u0", "first"),
		messageEvent(t, "stranger", "not a member"),
		messageEvent(t, "u1", "third"),
	}
	batch := make([]eventlog.Entry, len(evs))
	for i, ev := range evs {
		data, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		b.seq++
		batch[i] = eventlog.Entry{Seq: b.seq, Data: data}
	}
	outs, _, err := b.s.Apply(ctx, batch)
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) != 3 || outs[0].Err != nil || outs[1].Err == nil || outs[2].Err != nil {
		t.Fatalf("outcomes %+v: want the second alone refused", outs)
	}
	if rerr, ok := b.s.Refusal(ctx, evs[1].ID); !ok || rerr == nil {
		t.Fatalf("the refusal is not recorded: %v %v", rerr, ok)
	}
	if seq, err := b.s.AppliedSeq(ctx); err != nil || seq != b.seq {
		t.Fatalf("applied %d (%v), want %d", seq, err, b.seq)
	}
	r, err := b.s.RoomByName(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	ms, err := b.s.History(ctx, r.ID, Page{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, m := range ms {
		texts = append(texts, m.Text)
	}
	if len(texts) != 2 || texts[0] != "first" || texts[1] != "third" {
		t.Fatalf("history %q, want first and third", texts)
	}
}
