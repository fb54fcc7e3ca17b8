package hub

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/chat"
	"github.com/wheelhouse-dev/wheelhouse/eventlog"
)

// Retention is the operator's cutoff for the event log, hub-wide: events
// older than Age, and the oldest events past Bytes of log, may be purged
// (zero: no limit). They are purged only up to the newest verified
// snapshot, so a rebuild always has a snapshot and the log after it.
type Retention struct {
	Age   time.Duration
	Bytes int64
}

// Default intervals of the hub's own upkeep.
const (
	DefaultSnapshotEvery = 6 * time.Hour
)

// compactedSubjects are the events a compaction purges: room content
// (messages, edits, deletions, reactions, read markers, notification
// levels, uploads' records). Everything else stays in the log whatever
// its age: accounts, rooms and members (small), and the agents' timeline
// entries and the anchors a bridge's journal checks (steers, receipts,
// turns, approvals, agents' and bridges' records), so retention cannot
// hide a forged entry from `wheelhouse inspect --verify`.
var compactedSubjects = []string{
	chat.EvMessagePosted + eventlog.PlainSuffix,
	chat.EvMessagePosted,
	chat.EvMessageEdited,
	chat.EvMessageDeleted,
	chat.EvReactionAdded,
	chat.EvReactionRemoved,
	chat.EvReadMarked,
	chat.EvNotifySet,
	chat.EvFileUploaded,
}

// Compact purges the room content the operator's cutoff lets go, up to
// the newest verified snapshot, with the ops user, after recording what
// it purges in the log (EvLogCompacted). It returns that record; Before
// is 0 when nothing was purged.
func (h *Hub) Compact(ctx context.Context, r Retention) (chat.LogCompacted, error) {
	var out chat.LogCompacted
	st, err := h.opsjs.Stream(ctx, eventlog.StreamName)
	if err != nil {
		return out, wh.Wrap(err, "open the event stream")
	}
	info, err := st.Info(ctx)
	if err != nil {
		return out, wh.Wrap(err, "read the event stream")
	}
	cut, err := cutoff(ctx, st, info.State, r, h.cfg.Now())
	if err != nil || cut <= info.State.FirstSeq {
		return out, err
	}
	snap, err := h.newestVerifiedSnapshot(ctx, st, info.State.FirstSeq)
	if err != nil {
		return out, err
	}
	if snap == nil {
		h.log.Warn("retention: nothing purged, since no verified snapshot covers the events past the cutoff", "cutoff", cut)
		return out, nil
	}
	before := min(cut, snap.Seq+1)
	if prev, err := compactedBefore(ctx, st, h.rooms.Log.Auth()); err != nil || before <= prev {
		return out, err
	}
	out = chat.LogCompacted{Before: before, Snapshot: snap.Seq, SnapshotEvent: snap.Event}
	for _, s := range compactedSubjects {
		out.Subjects = append(out.Subjects, eventlog.SubjectPrefix+s)
	}
	ev, err := chat.NewEvent(chat.EvLogCompacted, h.cfg.Now(), out)
	if err != nil {
		return out, wh.Wrap(err, "encode the compaction record")
	}
	// Recorded first: a purge cut short still leaves the record, and a
	// rebuild then asks for a snapshot past it.
	if _, err := h.rooms.Log.Record(ctx, ev); err != nil {
		return out, err
	}
	var purged uint64
	for _, subj := range out.Subjects {
		if err := st.Purge(ctx, jetstream.WithPurgeSubject(subj), jetstream.WithPurgeSequence(before)); err != nil {
			return out, wh.Wrap(err, "purge %s before event %d", subj, before)
		}
	}
	if after, err := st.Info(ctx); err == nil {
		purged = info.State.Msgs - after.State.Msgs
	}
	h.log.Info("retention: purged room content from the event log", "before", before, "snapshot", snap.Seq, "events", purged)
	return out, nil
}

// cutoff is the first sequence the operator's retention keeps.
func cutoff(ctx context.Context, st jetstream.Stream, s jetstream.StreamState, r Retention, now time.Time) (uint64, error) {
	cut := s.FirstSeq
	if r.Bytes > 0 && s.Bytes > uint64(r.Bytes) && s.Msgs > 0 {
		// The oldest events, as many as hold the excess on average.
		over := float64(s.Bytes-uint64(r.Bytes)) / float64(s.Bytes)
		cut = max(cut, s.FirstSeq+uint64(over*float64(s.LastSeq-s.FirstSeq+1)))
	}
	if r.Age > 0 {
		// The first event at or after now - Age (binary search: times rise
		// with sequences).
		lo, hi := s.FirstSeq, s.LastSeq+1
		for lo < hi {
			mid := lo + (hi-lo)/2
			m, err := st.GetMsg(ctx, mid, jetstream.WithGetMsgSubject(eventlog.SubjectPrefix+">"))
			if errors.Is(err, jetstream.ErrMsgNotFound) {
				hi = mid
				continue
			}
			if err != nil {
				return 0, wh.Wrap(err, "read the event stream")
			}
			if m.Time.Before(now.Add(-r.Age)) {
				lo = m.Sequence + 1
			} else {
				hi = mid
			}
		}
		cut = max(cut, lo)
	}
	return min(cut, s.LastSeq+1), nil
}

// newestVerifiedSnapshot is the newest snapshot that passes every check,
// or nil.
func (h *Hub) newestVerifiedSnapshot(ctx context.Context, st jetstream.Stream, first uint64) (*verifiedSnapshot, error) {
	snaps, err := h.snapshotEvents(ctx, st, h.rooms.Log.Auth(), first)
	if err != nil || len(snaps) == 0 {
		return nil, err
	}
	obs, err := h.snapshotBucket(ctx)
	if err != nil {
		return nil, err
	}
	for i := len(snaps) - 1; i >= 0; i-- {
		s := snaps[i]
		if err := h.fetchSnapshot(ctx, obs, &s); err != nil {
			h.log.Error("a snapshot failed verification: not used", "event", s.Event, "seq", s.Seq, "err", err)
			continue
		}
		os.Remove(s.File)
		return &s, nil
	}
	return nil, nil
}

// upkeep takes a snapshot every SnapshotEvery when the projection moved,
// and then applies the retention, until stop closes.
func (h *Hub) upkeep(stop <-chan struct{}) {
	t := time.NewTicker(h.cfg.SnapshotEvery)
	defer t.Stop()
	var last uint64
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		go func() {
			select {
			case <-stop: // a stopping hub does not wait for a snapshot
				cancel()
			case <-ctx.Done():
			}
		}()
		if applied := h.rooms.Log.Applied(); applied > last {
			if _, _, err := h.Snapshot(ctx); err != nil {
				h.log.Error("taking a snapshot of the projection failed", "err", err)
			} else {
				last = applied
			}
		}
		if h.cfg.Retention != (Retention{}) {
			if _, err := h.Compact(ctx, h.cfg.Retention); err != nil {
				h.log.Error("retention failed", "err", err)
			}
		}
		cancel()
	}
}
