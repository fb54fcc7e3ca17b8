package bridge

import (
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/wire"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// The outbox keeps what the hub has not acknowledged across a restart of
// the bridge, in order; a later version of a streamed message replaces an
// unsent earlier one in place; past its bound the oldest partial output
// goes first.
func TestOutbox(t *testing.T) {
	msg := func(item, text string, partial bool) wire.TurnEvent {
		return wire.TurnEvent{Agent: "demo", TurnID: "t1", Kind: wire.TurnMessage, ItemID: item, Text: text, Partial: partial}
	}
	texts := func(o *outbox) []string {
		var out []string
		for _, e := range o.entries {
			if e.Turn != nil {
				out = append(out, e.Turn.Kind+":"+e.Turn.Text)
			} else {
				out = append(out, "receipt:"+e.Receipt.SteerID)
			}
		}
		return out
	}
	equal := func(t *testing.T, got []string, want ...string) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("outbox %q, want %q", got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("outbox %q, want %q", got, want)
			}
		}
	}
	t.Run("KeptAcrossRestartsCoalesced", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "outbox.jsonl")
		o, err := openOutbox(path, quiet(), time.Now)
		if err != nil {
			t.Fatal(err)
		}
		o.add(wire.KindTurn, wire.TurnEvent{Agent: "demo", TurnID: "t1", Kind: wire.TurnStarted})
		o.add(wire.KindTurn, msg("i1", "Hel", true))
		o.add(wire.KindTurn, wire.TurnEvent{Agent: "demo", TurnID: "t1", Kind: wire.TurnTool, Text: "ls"})
		o.add(wire.KindTurn, msg("i1", "Hello", true))
		o.add(wire.KindTurn, msg("i1", "Hello, world", false))
		o.add(wire.KindReceipt, wire.Receipt{SteerID: "s1.0", Agent: "demo", Status: wire.StatusExpired})
		o.add(wire.KindTurn, wire.TurnEvent{Agent: "demo", TurnID: "t1", Kind: wire.TurnEnded, Status: wire.TurnCompleted})
		want := []string{"started:", "message:Hello, world", "tool:ls", "receipt:s1.0", "ended:"}
		equal(t, texts(o), want...)
		if e := o.entries[1].Turn; e.EventID == "" || e.EventID != o.entries[1].ID {
			t.Fatalf("the event carries no id: %+v", e)
		}
		if got := o.ending("demo"); len(got) != 1 || got[0] != "t1" {
			t.Fatalf("ending %v, want [t1]", got)
		}
		for range 2 { // the first two acknowledged
			o.mu.Lock()
			id := o.entries[0].ID
			o.remove(id)
			o.write(outLine{Done: id})
			o.mu.Unlock()
		}
		o.close()

		again, err := openOutbox(path, quiet(), time.Now)
		if err != nil {
			t.Fatal(err)
		}
		defer again.close()
		equal(t, texts(again), want[2:]...)
	})
	t.Run("BoundDropsPartialOutputFirst", func(t *testing.T) {
		o, _ := openOutbox("", quiet(), time.Now)
		o.max = 3
		o.add(wire.KindTurn, wire.TurnEvent{Agent: "demo", TurnID: "t1", Kind: wire.TurnStarted})
		o.add(wire.KindTurn, msg("i1", "Hel", true))
		o.add(wire.KindTurn, wire.TurnEvent{Agent: "demo", TurnID: "t1", Kind: wire.TurnProgress, Text: "thinking"})
		o.add(wire.KindTurn, wire.TurnEvent{Agent: "demo", TurnID: "t1", Kind: wire.TurnEnded, Status: wire.TurnCompleted})
		equal(t, texts(o), "started:", "progress:thinking", "ended:")
		if o.dropped != 1 {
			t.Fatalf("%d dropped, want 1", o.dropped)
		}
	})
}
