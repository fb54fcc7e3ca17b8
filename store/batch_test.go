package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"testing"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/chat"
	"github.com/wheelhouse-dev/wheelhouse/eventlog"
	"github.com/wheelhouse-dev/wheelhouse/wire"
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
	outs, _, err := b.s.Apply(ctx, entries(t, b, evs...))
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

// The search index is filled once per batch, so an edit or a deletion of a
// message posted earlier in the same batch must find its entry there, and
// a refused event must not lose entries it indexed before it was refused.
// FTS5's integrity check compares the index with the messages it indexes.
func TestSearchIndexFollowsABatch(t *testing.T) {
	b := newBenchStore(t, 2, false)
	ctx := context.Background()
	first := b.seq + 1
	evs := []chat.Event{
		messageEvent(t, "u0", "alpha original"), // first
		messageEvent(t, "u0", "beta kept"),      // first+1
		event(t, chat.EvMessageEdited, chat.MessageEdited{ID: int64(first), Room: "r", Text: "gamma edited", By: "u0"}), // indexes both, then edits
		messageEvent(t, "u1", "delta gone"), // first+3
		event(t, chat.EvMessageDeleted, chat.MessageDeleted{ID: int64(first + 3), Room: "r", By: "u1"}), // indexes it, then deletes
		messageEvent(t, "u1", "epsilon"), // first+5
		event(t, chat.EvMessageEdited, chat.MessageEdited{ID: int64(first + 5), Room: "r", Text: "not the author", By: "u0"}), // indexes first+5, refused
		messageEvent(t, "u0", "zeta last"), // first+7
	}
	outs, _, err := b.s.Apply(ctx, entries(t, b, evs...))
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range outs {
		if (o.Err != nil) != (i == 6) {
			t.Fatalf("outcome %d: %v; want only the stranger's edit (6) refused", i, o.Err)
		}
	}
	if n := b.s.SavepointRuns(); n != 1 {
		t.Fatalf("%d batches applied again with savepoints, want 1", n)
	}
	// An event refused after it indexed the batch's earlier messages (no
	// such event type is known yet; one made for the test): its rollback
	// takes their entries out again, and they are indexed before the commit.
	b.s.appliers["test.index-then-refuse"] = func(ctx context.Context, tx *sql.Tx, _ uint64, _ chat.Event) ([]chat.FeedItem, error) {
		if err := indexPendingTx(ctx, tx); err != nil {
			return nil, err
		}
		return nil, wh.Errorf(wh.EInvalid, "refused after indexing")
	}
	b.apply(t, messageEvent(t, "u0", "eta before"))
	outs, _, err = b.s.Apply(ctx, entries(t, b, messageEvent(t, "u0", "theta before"), event(t, "test.index-then-refuse", struct{}{}), messageEvent(t, "u0", "iota after")))
	if err != nil || outs[1].Err == nil {
		t.Fatalf("outcomes %+v (%v): want the second refused", outs, err)
	}
	// An edit of a message an earlier batch posted, behind a new post: its
	// entry is there already, and the post is indexed at the commit.
	b.apply(t, messageEvent(t, "u0", "omicron"))
	omicron := int64(b.seq)
	b.apply(t, messageEvent(t, "u0", "kappa"),
		event(t, chat.EvMessageEdited, chat.MessageEdited{ID: omicron, Room: "r", Text: "lambda", By: "u0"}))
	if _, err := b.s.db.w.ExecContext(ctx, `INSERT INTO messages_fts (messages_fts) VALUES ('integrity-check')`); err != nil {
		t.Fatalf("the search index does not match the messages: %v", err)
	}
	u0, err := b.s.UserByName(ctx, "u0")
	if err != nil {
		t.Fatal(err)
	}
	for word, want := range map[string]int{"alpha": 0, "gamma": 1, "beta": 1, "delta": 0, "epsilon": 1, "author": 0, "zeta": 1, "eta": 1, "theta": 1, "iota": 1, "omicron": 0, "kappa": 1, "lambda": 1} {
		match, err := FTSQuery(word)
		if err != nil {
			t.Fatal(err)
		}
		got, err := b.s.Search(ctx, SearchQuery{UserID: u0.ID, Match: match})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != want {
			t.Errorf("search %q: %d results, want %d", word, len(got), want)
		}
	}
}

// entries numbers events as the log's next entries.
func entries(tb testing.TB, b *benchStore, evs ...chat.Event) []eventlog.Entry {
	tb.Helper()
	batch := make([]eventlog.Entry, len(evs))
	for i, ev := range evs {
		data, err := json.Marshal(ev)
		if err != nil {
			tb.Fatal(err)
		}
		b.seq++
		batch[i] = eventlog.Entry{Seq: b.seq, Data: data}
	}
	return batch
}

// The projector builds a new steer's receipt for the room's feed from what
// it just decided, without reading the row back: it must be the receipt the
// database holds (what a client reloading the page reads). Cases: a steer
// sent on, one the agent's policy holds for its owner, one to an agent not
// in the room, one to no agent at all.
func TestNewSteerReceiptAsStored(t *testing.T) {
	b := newBenchStore(t, 2, true) // u0 owns u0/a, in room r
	ctx := context.Background()
	b.apply(t,
		event(t, chat.EvAgentRegistered, chat.AgentRegistered{Bridge: "b1", Name: "held", Harness: "demo", CanSteer: true, Policy: wire.Policy{Address: wire.AddressModerate}}),
		event(t, chat.EvAgentAdded, chat.AgentRoomChange{Room: "r", Handle: "u0/held", By: "u0"}),
		event(t, chat.EvAgentRegistered, chat.AgentRegistered{Bridge: "b1", Name: "away", Harness: "demo", CanSteer: true, Policy: wire.Policy{Address: wire.AddressMembers}}),
	)
	outs, feed, err := b.s.Apply(ctx, entries(t, b, messageEvent(t, "u1", "@u0/a @u0/held @u0/away @u0/nobody look")))
	if err != nil || outs[0].Err != nil {
		t.Fatalf("apply: %v %+v", err, outs)
	}
	statuses := map[string]bool{}
	n := 0
	for _, it := range feed {
		if it.Kind != "receipt" {
			continue
		}
		n++
		var body struct {
			Data json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(it.Body, &body); err != nil {
			t.Fatal(err)
		}
		var sent chat.Receipt
		if err := json.Unmarshal(body.Data, &sent); err != nil {
			t.Fatal(err)
		}
		stored, err := b.s.Receipt(ctx, sent.SteerID)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(stored)
		if string(body.Data) != string(want) {
			t.Errorf("receipt in the feed:\n%s\nin the database:\n%s", body.Data, want)
		}
		statuses[sent.Status+"/"+sent.Reason] = true
	}
	if n != 4 || !statuses["pending/"] || !statuses["held/moderated"] || !statuses["rejected/unknown-agent"] || len(statuses) != 4 {
		t.Fatalf("%d receipts with %v; want pending, held, and two rejections for different reasons", n, statuses)
	}
}

// An entry the log found not to be the hub's own (no valid MAC), or one
// whose message id is not its event's, is refused in its batch without
// being applied, recorded under no event id (the id in it is the
// forger's), and gets no outcome; the events around it are applied.
func TestUnauthenticEntryRefusedInItsBatch(t *testing.T) {
	b := newBenchStore(t, 2, false)
	ctx := context.Background()
	forged := messageEvent(t, "u1", "forged")
	wrongID := messageEvent(t, "u1", "another id")
	batch := entries(t, b, messageEvent(t, "u0", "first"), forged, wrongID, messageEvent(t, "u1", "last"))
	batch[1].Unauthentic = &wh.Error{Code: wh.EForbidden, Reason: eventlog.ReasonUnauthentic, Message: "no MAC"}
	batch[2].MsgID = "not-" + wrongID.ID
	outs, _, err := b.s.Apply(ctx, batch)
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) != 2 || outs[0].Err != nil || outs[1].Err != nil {
		t.Fatalf("outcomes %+v: want the first and last, applied", outs)
	}
	if _, ok := b.s.Refusal(ctx, forged.ID); ok {
		t.Fatal("the forged entry's claimed id was recorded as refused")
	}
	var n int
	if err := b.s.db.r.QueryRowContext(ctx, `SELECT count(*) FROM refusals WHERE seq IN (?, ?) AND event_id = ''`, batch[1].Seq, batch[2].Seq).Scan(&n); err != nil || n != 2 {
		t.Fatalf("refusals recorded: %d %v, want 2", n, err)
	}
	r, _ := b.s.RoomByName(ctx, "r")
	ms, err := b.s.History(ctx, r.ID, Page{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 || ms[0].Text != "first" || ms[1].Text != "last" {
		t.Fatalf("history %+v, want first and last", ms)
	}
}
