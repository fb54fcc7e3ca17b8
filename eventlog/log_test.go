package eventlog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/wheelhouse-dev/wheelhouse/chat"
	"github.com/wheelhouse-dev/wheelhouse/internal/natstest"
)

// recorder is a projector that keeps what it was given, in order. While
// hold is not nil, Apply waits for it to be closed.
type recorder struct {
	mu      sync.Mutex
	applied []Entry
	seq     uint64
	hold    chan struct{}
}

func (r *recorder) AppliedSeq(context.Context) (uint64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seq, nil
}

func (r *recorder) Apply(_ context.Context, batch []Entry) ([]Outcome, []chat.FeedItem, error) {
	r.mu.Lock()
	hold := r.hold
	r.mu.Unlock()
	if hold != nil {
		<-hold
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	outs := make([]Outcome, 0, len(batch))
	for _, e := range batch {
		r.applied = append(r.applied, Entry{Seq: e.Seq, Data: append([]byte(nil), e.Data...), Unauthentic: e.Unauthentic})
		r.seq = e.Seq
		var ev chat.Event
		if err := json.Unmarshal(e.Data, &ev); err == nil {
			outs = append(outs, Outcome{ID: ev.ID})
		}
	}
	return outs, nil, nil
}

func (r *recorder) Identity(context.Context) (string, error)      { return "", nil }
func (r *recorder) Refusal(context.Context, string) (error, bool) { return nil, false }

func (r *recorder) entries() []Entry {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Entry(nil), r.applied...)
}

func (r *recorder) setHold(c chan struct{}) {
	r.mu.Lock()
	r.hold = c
	r.mu.Unlock()
}

// waitFor polls cond until it holds, failing the test after ten seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func newEvent(t *testing.T, text string) chat.Event {
	t.Helper()
	ev, err := chat.NewEvent(chat.EvMessagePosted, time.Now(), chat.MessagePosted{Room: "r", AuthorKind: chat.AuthorUser, Author: "u", Text: text})
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// checkStream asserts the projector applied exactly the stream's events, in
// order, each once, with the bytes the stream holds.
func checkStream(t *testing.T, js jetstream.JetStream, got []Entry) {
	t.Helper()
	ctx := context.Background()
	st, err := js.Stream(ctx, StreamName)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var want []uint64
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq; seq++ {
		m, err := st.GetMsg(ctx, seq)
		if err != nil {
			continue // deleted: a gap the projector must pass over
		}
		want = append(want, seq)
		if i := len(want) - 1; i < len(got) && got[i].Seq == seq && string(got[i].Data) != string(m.Data) {
			t.Fatalf("event %d applied as %q, the stream holds %q", seq, got[i].Data, m.Data)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("applied %d events, the stream holds %d", len(got), len(want))
	}
	for i := range want {
		if got[i].Seq != want[i] {
			t.Fatalf("applied event %d as the %dth, want %d", got[i].Seq, i+1, want[i])
		}
	}
}

// This node's appends reach the projector before the consumer brings them;
// other nodes' events (published straight to the stream here) come only
// through the consumer. Whatever arrives first, every event is applied
// once, in the stream's order, with the stream's bytes.
func TestAppendsAndOtherNodesEventsApplyInOrder(t *testing.T) {
	js := natstest.JetStream(t)
	rec := &recorder{}
	l := New(Config{JS: js, Projector: rec})
	ctx := context.Background()
	if err := l.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Stop)
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 40 {
				if _, err := l.Append(ctx, newEvent(t, fmt.Sprintf("w%d-%d", w, i))); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() { // another hub node
		defer wg.Done()
		for i := range 60 {
			ev := newEvent(t, fmt.Sprintf("other-%d", i))
			data, _ := json.Marshal(ev)
			if _, err := js.Publish(ctx, SubjectPrefix+ev.Type, data); err != nil {
				errs <- err
				return
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := l.WaitApplied(ctx, 300); err != nil {
		t.Fatal(err)
	}
	checkStream(t, js, rec.entries())
}

// A sequence missing from the stream (deleted) is passed over: the
// consumer, not this node's appends, says what exists. And while the
// projector is held up, appends pile up and the consumer catches up with
// them; nothing is applied twice.
func TestGapsAndAHeldProjector(t *testing.T) {
	js := natstest.JetStream(t)
	ctx := context.Background()
	first := New(Config{JS: js, Projector: &recorder{}}) // creates the stream
	if err := first.Start(ctx); err != nil {
		t.Fatal(err)
	}
	first.Stop()
	for _, text := range []string{"one", "two (deleted)", "three"} {
		ev := newEvent(t, text)
		data, _ := json.Marshal(ev)
		if _, err := js.Publish(ctx, SubjectPrefix+ev.Type, data); err != nil {
			t.Fatal(err)
		}
	}
	st, err := js.Stream(ctx, StreamName)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteMsg(ctx, 2); err != nil {
		t.Fatal(err)
	}
	hold := make(chan struct{})
	rec := &recorder{hold: hold} // held in its first Apply (event 1)
	l := New(Config{JS: js, Projector: rec})
	if err := l.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Stop)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			actx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			if _, err := l.Append(actx, newEvent(t, fmt.Sprintf("held-%d", i))); err != nil {
				t.Error(err)
			}
		}()
	}
	release := sync.OnceFunc(func() { rec.setHold(nil); close(hold) })
	t.Cleanup(release) // registered after l.Stop: runs before it
	waitFor(t, "the appends' acknowledgements", func() bool { return l.acked.Load() >= 11 })
	release()
	wg.Wait()
	if err := l.WaitApplied(ctx, 11); err != nil {
		t.Fatal(err)
	}
	got := rec.entries()
	if len(got) < 2 || got[0].Seq != 1 || got[1].Seq != 3 {
		t.Fatalf("applied %v first, want 1 then 3", got[:min(2, len(got))])
	}
	checkStream(t, js, got)
}

// The local map hands over what was put for the projector's next
// sequence, refuses what the projector has passed, and stays the size of
// the appends in flight: entries the consumer brought first (never taken
// from here) go at the next sweep.
func TestLocalEntriesStayBounded(t *testing.T) {
	var q localEntries
	q.wake = make(chan struct{}, 1)
	q.init()
	q.put(Entry{Seq: 100, Data: []byte("hundred")})
	if e, ok := q.take(100); !ok || e.Seq != 100 || string(e.Data) != "hundred" {
		t.Fatalf("take(100) = %d %q %v, want what was put", e.Seq, e.Data, ok)
	}
	if _, ok := q.take(100); ok {
		t.Fatal("an entry was handed over twice")
	}
	q.take(101) // the projector is at 101
	q.put(Entry{Seq: 50, Data: []byte("old")})
	if len(q.m) != 0 {
		t.Fatalf("an entry older than the projector was kept: %v", q.m)
	}
	for seq := uint64(101); seq < 1101; seq++ {
		q.put(Entry{Seq: seq, Data: []byte("x")})
		q.take(seq + 1) // the consumer brought seq first: the projector moved on
	}
	if len(q.m) > 128 {
		t.Fatalf("%d entries kept, want at most 128", len(q.m))
	}
}

// Readiness follows the outcome of this node's last append at once (the
// stream's probe runs only every two seconds): an append the stream could
// not take makes the node not ready before its error is answered, and the
// next one it takes makes it ready again.
func TestReadinessFollowsTheLastAppend(t *testing.T) {
	js := natstest.JetStream(t)
	l := New(Config{JS: js, Projector: &recorder{}})
	ctx := context.Background()
	if err := l.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Stop)
	if _, err := l.Append(ctx, newEvent(t, "first")); err != nil {
		t.Fatal(err)
	}
	if err := l.Ready(); err != nil {
		t.Fatalf("not ready after an append: %v", err)
	}
	// A stream that cannot be written (gone: nothing answers its subjects).
	if err := js.DeleteStream(ctx, StreamName); err != nil {
		t.Fatal(err)
	}
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := l.Append(actx, newEvent(t, "lost")); err == nil {
		t.Fatal("an append to a deleted stream succeeded")
	}
	var f *Failure
	if err := l.Ready(); !errors.As(err, &f) || f.Reason != ReasonUnavailable {
		t.Fatalf("ready right after a failed append: %v", err)
	}
}
