package hub

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/chat"
	"github.com/wheelhouse-dev/wheelhouse/eventlog"
	"github.com/wheelhouse-dev/wheelhouse/store"
)

// Snapshots of the projection: a SQLite copy (VACUUM INTO) in an object
// store bucket of their own, which only the ops user may write (members'
// uploads go to room.FilesBucket through the log-writer), each recorded in
// the log by an authenticated EvSnapshotTaken event with the sequence it
// covers and its digest. A hub without its SQLite file starts from the
// newest snapshot whose event is authentic, whose bytes have the digest
// and whose database is at the sequence the event names; then it applies
// the log after it.
const (
	SnapshotsBucket = "wheelhouse-snapshots"
	// keepSnapshots is how many snapshots stay in the bucket.
	keepSnapshots = 3
)

var (
	snapshotSubject  = eventlog.SubjectPrefix + chat.EvSnapshotTaken
	compactedSubject = eventlog.SubjectPrefix + chat.EvLogCompacted
)

func (h *Hub) snapshotBucket(ctx context.Context) (jetstream.ObjectStore, error) {
	obs, err := h.opsjs.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: SnapshotsBucket,
		Description: "snapshots of the Wheelhouse hub's projection (written by the hub's ops user only)",
		Storage:     jetstream.FileStorage, Replicas: max(h.cfg.Replicas, 1)})
	if err != nil {
		return nil, wh.Wrap(err, "open the snapshots bucket")
	}
	return obs, nil
}

// Snapshot writes a snapshot of this node's projection into the snapshots
// bucket, records it in the log, and returns what it recorded and the
// event's sequence. The oldest snapshots past keepSnapshots are removed.
func (h *Hub) Snapshot(ctx context.Context) (chat.SnapshotTaken, uint64, error) {
	var s chat.SnapshotTaken
	tmp := filepath.Join(h.cfg.DataDir, "snapshot-"+randomHex(8)+".db.tmp")
	defer os.Remove(tmp)
	seq, err := h.rooms.Store.Snapshot(ctx, tmp)
	if err != nil {
		return s, 0, err
	}
	obs, err := h.snapshotBucket(ctx)
	if err != nil {
		return s, 0, err
	}
	f, err := os.Open(tmp)
	if err != nil {
		return s, 0, wh.Wrap(err, "read the snapshot")
	}
	defer f.Close()
	sum := sha256.New()
	name := fmt.Sprintf("%020d-%s.db", seq, randomHex(4))
	info, err := obs.Put(ctx, jetstream.ObjectMeta{Name: name, Description: fmt.Sprintf("projection at event %d", seq)}, io.TeeReader(f, sum))
	if err != nil {
		return s, 0, wh.Wrap(err, "store the snapshot")
	}
	s = chat.SnapshotTaken{Seq: seq, SHA256: hex.EncodeToString(sum.Sum(nil)), Bytes: int64(info.Size), Object: name}
	ev, err := chat.NewEvent(chat.EvSnapshotTaken, h.cfg.Now(), s)
	if err != nil {
		return s, 0, wh.Wrap(err, "encode the snapshot event")
	}
	evSeq, err := h.rooms.Log.Record(ctx, ev)
	if err != nil {
		return s, 0, err
	}
	h.log.Info("wrote a snapshot of the projection", "seq", seq, "bytes", s.Bytes, "object", name, "event", evSeq)
	h.pruneSnapshots(ctx, obs)
	return s, evSeq, nil
}

// pruneSnapshots removes all but the newest keepSnapshots objects (their
// names start with the zero-padded sequence, so they sort by it).
func (h *Hub) pruneSnapshots(ctx context.Context, obs jetstream.ObjectStore) {
	list, err := obs.List(ctx)
	if err != nil {
		return
	}
	var names []string
	for _, o := range list {
		names = append(names, o.Name)
	}
	sort.Strings(names)
	for len(names) > keepSnapshots {
		if err := obs.Delete(ctx, names[0]); err != nil {
			h.log.Warn("removing an old snapshot failed", "object", names[0], "err", err)
		}
		names = names[1:]
	}
}

// A verifiedSnapshot is a snapshot event that passed every check, and its
// bytes in a file.
type verifiedSnapshot struct {
	chat.SnapshotTaken
	Event uint64 // the event's sequence
	File  string
}

// snapshotEvents are the stream's authentic snapshot events, oldest first;
// forged ones are logged and left out.
func (h *Hub) snapshotEvents(ctx context.Context, st jetstream.Stream, auth *eventlog.Auth, first uint64) ([]verifiedSnapshot, error) {
	var out []verifiedSnapshot
	for seq := max(first, 1); ; {
		m, err := st.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(snapshotSubject))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return out, nil
		}
		if err != nil {
			return nil, wh.Wrap(err, "read the snapshot events")
		}
		seq = m.Sequence + 1
		var s chat.SnapshotTaken
		if err := authenticEvent(auth, m, chat.EvSnapshotTaken, &s); err != nil {
			h.log.Error("a snapshot event of the log is not the hub's own: not used", "seq", m.Sequence, "err", err)
			continue
		}
		out = append(out, verifiedSnapshot{SnapshotTaken: s, Event: m.Sequence})
	}
}

// authenticEvent checks m's MAC and type and decodes its payload into v.
func authenticEvent(auth *eventlog.Auth, m *jetstream.RawStreamMsg, typ string, v any) error {
	e := eventlog.Entry{Seq: m.Sequence, Data: m.Data, Subject: m.Subject, MsgID: m.Header.Get(nats.MsgIdHdr)}
	if auth != nil {
		if err := auth.Check(e, m.Header.Get(eventlog.MACHeader)); err != nil {
			return err
		}
	}
	var ev chat.Event
	if err := json.Unmarshal(m.Data, &ev); err != nil || ev.Type != typ {
		return fmt.Errorf("not a %s event", typ)
	}
	return json.Unmarshal(ev.Data, v)
}

// compactedBefore is the sequence before which the log was purged (the
// newest authentic EvLogCompacted event's Before), 0 if never.
func compactedBefore(ctx context.Context, st jetstream.Stream, auth *eventlog.Auth) (uint64, error) {
	m, err := st.GetLastMsgForSubject(ctx, compactedSubject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, wh.Wrap(err, "read the log's compaction record")
	}
	var c chat.LogCompacted
	if err := authenticEvent(auth, m, chat.EvLogCompacted, &c); err != nil {
		return 0, wh.Errorf(wh.EInvalid, "the log's newest compaction record (event %d) is not the hub's own (%v): the hub cannot tell which events are gone; restore the data directory from a backup", m.Sequence, err)
	}
	return c.Before, nil
}

// fetchSnapshot verifies a snapshot's bytes into a file beside the
// database: the digest and size the event names, and a database at the
// event's sequence.
func (h *Hub) fetchSnapshot(ctx context.Context, obs jetstream.ObjectStore, s *verifiedSnapshot) error {
	r, err := obs.Get(ctx, s.Object)
	if err != nil {
		return fmt.Errorf("read object %s: %w", s.Object, err)
	}
	defer r.Close()
	tmp := filepath.Join(h.cfg.DataDir, "snapshot-"+randomHex(8)+".db.tmp")
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	sum := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, sum), r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	fail := func(err error) error { os.Remove(tmp); return err }
	if err != nil {
		return fail(fmt.Errorf("read object %s: %w", s.Object, err))
	}
	if got := hex.EncodeToString(sum.Sum(nil)); got != s.SHA256 || n != s.Bytes {
		return fail(fmt.Errorf("object %s has digest %s (%d bytes), but its event names %s (%d bytes)", s.Object, got, n, s.SHA256, s.Bytes))
	}
	seq, _, err := store.Position(ctx, tmp)
	if err != nil {
		return fail(err)
	}
	if seq != s.Seq {
		return fail(fmt.Errorf("object %s holds a database at event %d, but its event names %d", s.Object, seq, s.Seq))
	}
	s.File = tmp
	return nil
}

// prepareProjection runs before the projection opens. A database ahead of
// its own stream (a live copy of the data directory, which copied the
// SQLite file after the stream's; or a stream that lost its last events)
// is moved aside, since the stream is the record. Then, when there is no
// database, the newest verified snapshot becomes it; without one the
// projection is rebuilt from the whole log, which the hub refuses when
// the log was compacted past what it could rebuild.
func (h *Hub) prepareProjection(ctx context.Context, auth *eventlog.Auth) error {
	path := filepath.Join(h.cfg.DataDir, store.DBFile)
	st, err := h.opsjs.Stream(ctx, eventlog.StreamName)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil // a new hub
	}
	if err != nil {
		return wh.Wrap(err, "open the event stream")
	}
	info, err := st.Info(ctx)
	if err != nil {
		return wh.Wrap(err, "read the event stream")
	}
	last := info.State.LastSeq
	before, err := compactedBefore(ctx, st, auth)
	if err != nil {
		return err
	}
	if _, err := os.Stat(path); err == nil {
		applied, identity, err := store.Position(ctx, path)
		if err == nil && applied < last && applied+1 < before {
			// A database older than the last compaction (a node that was
			// down for long, an old copy) would miss the purged events.
			if err := h.setAside(path, "behind"); err != nil {
				return err
			}
			h.log.Warn("the database is older than the log's last compaction: the events it misses were purged, so it was moved aside and the hub starts from a snapshot", "applied", applied, "compactedBefore", before)
			return h.fromSnapshot(ctx, st, auth, info.State, before, path)
		}
		if err != nil || applied <= last {
			return nil // the log's own checks decide
		}
		m, err := st.GetMsg(ctx, 1)
		var first chat.Event
		if err != nil || json.Unmarshal(m.Data, &first) != nil || identity == "" || first.ID != identity {
			return nil // another stream's database: the log refuses it, with words
		}
		if err := h.setAside(path, "ahead"); err != nil {
			return err
		}
		h.log.Warn("the database had applied events the stream does not hold (a copy of the data directory made while the hub ran, or a stream that lost its last events): the stream is the record, so the database was moved aside and is rebuilt",
			"applied", applied, "streamLast", last)
	} else if !errors.Is(err, os.ErrNotExist) {
		return wh.Wrap(err, "open the database")
	}
	return h.fromSnapshot(ctx, st, auth, info.State, before, path)
}

// setAside renames the database and its -wal and -shm to
// path.<why>-<unix time>.
func (h *Hub) setAside(path, why string) error {
	aside := fmt.Sprintf("%s.%s-%d", path, why, h.cfg.Now().Unix())
	for _, suf := range []string{"", "-wal", "-shm"} {
		if err := os.Rename(path+suf, aside+suf); err != nil && !errors.Is(err, os.ErrNotExist) {
			return wh.Wrap(err, "move the database aside")
		}
	}
	h.log.Warn("moved the database aside", "to", aside)
	return nil
}

// fromSnapshot puts the newest verified snapshot at path (there is no
// database), or leaves the rebuild to the whole log when nothing was
// compacted; it refuses when the log was compacted and no snapshot
// covers what is gone.
func (h *Hub) fromSnapshot(ctx context.Context, st jetstream.Stream, auth *eventlog.Auth, state jetstream.StreamState, before uint64, path string) error {
	last := state.LastSeq
	snaps, err := h.snapshotEvents(ctx, st, auth, state.FirstSeq)
	if err != nil {
		return err
	}
	var obs jetstream.ObjectStore
	if len(snaps) > 0 {
		if obs, err = h.snapshotBucket(ctx); err != nil {
			return err
		}
	}
	var refused []string
	for i := len(snaps) - 1; i >= 0; i-- {
		s := snaps[i]
		if s.Seq > last || s.Seq+1 < max(before, state.FirstSeq) {
			continue
		}
		if err := h.fetchSnapshot(ctx, obs, &s); err != nil {
			h.log.Error("a snapshot failed verification: not used", "event", s.Event, "seq", s.Seq, "err", err)
			refused = append(refused, fmt.Sprintf("event %d: %v", s.Event, err))
			continue
		}
		if err := os.Rename(s.File, path); err != nil {
			os.Remove(s.File)
			return wh.Wrap(err, "put the snapshot in place")
		}
		h.log.Info("no database: starting from the newest verified snapshot", "seq", s.Seq, "object", s.Object, "streamLast", last)
		return nil
	}
	if before > max(state.FirstSeq, 1) || state.FirstSeq > 1 {
		why := "no snapshot covers them"
		if len(refused) > 0 {
			why = "no snapshot that covers them passed verification: " + strings.Join(refused, "; ")
		}
		return wh.Errorf(wh.EInvalid, "the database is missing and the event log no longer holds its events before %d (it was compacted), and %s. Restore the data directory from a backup (wheelhouse restore)", max(before, state.FirstSeq), why)
	}
	if len(refused) > 0 {
		h.log.Warn("rebuilding the projection from the whole log: no snapshot passed verification", "refused", strings.Join(refused, "; "))
	}
	return nil
}
