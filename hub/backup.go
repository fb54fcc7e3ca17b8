package hub

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/eventlog"
	"github.com/wheelhouse-dev/wheelhouse/room"
	"github.com/wheelhouse-dev/wheelhouse/store"
)

// A backup is a directory: the database (a consistent SQLite copy, taken
// first, at some sequence S), then JetStream's own snapshots of the event
// stream (ending at or past S) and of the files' and the snapshots'
// buckets, and the event key. Restored, the hub opens the database and
// applies the events after S: every change acknowledged before the backup
// began is in it. The login attempts bucket is not kept (rate limits).
//
// The streams are read with JetStream's snapshot API as the hub's ops
// user (nc), so a backup runs while the hub runs.

// BackupStreams are the streams a backup holds.
var BackupStreams = []string{eventlog.StreamName, "OBJ_" + room.FilesBucket, "OBJ_" + SnapshotsBucket}

// BackupManifest describes a backup (manifest.json).
type BackupManifest struct {
	Taken    time.Time         `json:"taken"`
	Database uint64            `json:"database"` // the sequence the database has applied
	Streams  map[string]uint64 `json:"streams"`  // each stream's last sequence
}

const backupManifest = "manifest.json"

// streamMeta is a stream's config and state as the snapshot API gives
// them, and the restore API takes them back.
type streamMeta struct {
	Config json.RawMessage `json:"config"`
	State  json.RawMessage `json:"state"`
}

// Backup writes a backup of the hub whose data directory is dataDir into
// dir (which must not exist or be empty), reading its streams as ops.
func Backup(ctx context.Context, nc *nats.Conn, dataDir, dir string) (BackupManifest, error) {
	m := BackupManifest{Taken: time.Now().UTC(), Streams: map[string]uint64{}}
	if err := emptyDir(dir); err != nil {
		return m, err
	}
	seq, err := store.CopyDatabase(ctx, filepath.Join(dataDir, store.DBFile), filepath.Join(dir, store.DBFile))
	if err != nil {
		return m, err
	}
	m.Database = seq
	if err := copyIfExists(filepath.Join(dataDir, LogKeyFile), filepath.Join(dir, LogKeyFile)); err != nil {
		return m, err
	}
	for _, name := range BackupStreams {
		last, err := snapshotStream(ctx, nc, name, dir)
		if errors.Is(err, errNoStream) {
			continue
		}
		if err != nil {
			return m, err
		}
		m.Streams[name] = last
	}
	if m.Streams[eventlog.StreamName] < m.Database {
		return m, wh.Errorf(wh.EInternal, "the event stream's snapshot ends at %d, before the database's %d: take the backup again", m.Streams[eventlog.StreamName], m.Database)
	}
	b, _ := json.MarshalIndent(m, "", "  ")
	return m, writeFileAtomic(filepath.Join(dir, backupManifest), append(b, '\n'))
}

var errNoStream = errors.New("no such stream")

// snapshotStream writes the stream's snapshot (NAME.tar.s2) and its config
// and state (NAME.json) into dir and returns its last sequence.
func snapshotStream(ctx context.Context, nc *nats.Conn, name, dir string) (uint64, error) {
	deliver := nc.NewRespInbox()
	sub, err := nc.SubscribeSync(deliver)
	if err != nil {
		return 0, wh.Wrap(err, "back up %s", name)
	}
	defer sub.Unsubscribe()
	req, _ := json.Marshal(map[string]any{"deliver_subject": deliver, "no_consumers": true})
	resp, err := nc.RequestWithContext(ctx, "$JS.API.STREAM.SNAPSHOT."+name, req)
	if err != nil {
		return 0, wh.Wrap(err, "back up %s", name)
	}
	var r struct {
		streamMeta
		Error *struct {
			Code    int    `json:"code"`
			ErrCode int    `json:"err_code"`
			Desc    string `json:"description"`
		} `json:"error"`
	}
	if err := json.Unmarshal(resp.Data, &r); err != nil {
		return 0, wh.Wrap(err, "back up %s", name)
	}
	if r.Error != nil {
		if r.Error.Code == 404 {
			return 0, errNoStream
		}
		return 0, wh.Errorf(wh.EUnavailable, "back up %s: %s", name, r.Error.Desc)
	}
	var state struct {
		LastSeq uint64 `json:"last_seq"`
	}
	json.Unmarshal(r.State, &state)
	f, err := os.OpenFile(filepath.Join(dir, name+".tar.s2"), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return 0, wh.Wrap(err, "back up %s", name)
	}
	defer f.Close()
	for {
		msg, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			return 0, wh.Wrap(err, "back up %s", name)
		}
		if len(msg.Data) == 0 { // the end: a status 204, or an error's
			if st := msg.Header.Get("Status"); st != "" && st != "204" {
				return 0, wh.Errorf(wh.EUnavailable, "back up %s: the server ended the snapshot with %s %s", name, st, msg.Header.Get("Description"))
			}
			break
		}
		if _, err := f.Write(msg.Data); err != nil {
			return 0, wh.Wrap(err, "back up %s", name)
		}
		if msg.Reply != "" {
			msg.Respond(nil)
		}
	}
	if err := f.Sync(); err != nil {
		return 0, wh.Wrap(err, "back up %s", name)
	}
	meta, _ := json.MarshalIndent(r.streamMeta, "", "  ")
	return state.LastSeq, writeFileAtomic(filepath.Join(dir, name+".json"), meta)
}

// Restore puts a backup into the data directory dataDir of a hub that is
// not running, whose NATS (nc, as ops) holds none of its streams.
func Restore(ctx context.Context, nc *nats.Conn, dir, dataDir string) (BackupManifest, error) {
	var m BackupManifest
	b, err := os.ReadFile(filepath.Join(dir, backupManifest))
	if err != nil {
		return m, wh.Errorf(wh.EInvalid, "%s is not a Wheelhouse backup (no %s): %v", dir, backupManifest, err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, wh.Errorf(wh.EInvalid, "%s: %v", filepath.Join(dir, backupManifest), err)
	}
	if _, err := os.Stat(filepath.Join(dataDir, store.DBFile)); err == nil {
		return m, wh.Errorf(wh.EInvalid, "%s already holds a database: restore into an empty data directory", dataDir)
	}
	for _, name := range BackupStreams {
		if _, ok := m.Streams[name]; !ok {
			continue
		}
		if err := restoreStream(ctx, nc, name, dir); err != nil {
			return m, err
		}
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return m, wh.Wrap(err, "create %s", dataDir)
	}
	if err := copyIfExists(filepath.Join(dir, LogKeyFile), filepath.Join(dataDir, LogKeyFile)); err != nil {
		return m, err
	}
	return m, copyIfExists(filepath.Join(dir, store.DBFile), filepath.Join(dataDir, store.DBFile))
}

func restoreStream(ctx context.Context, nc *nats.Conn, name, dir string) error {
	meta, err := os.ReadFile(filepath.Join(dir, name+".json"))
	if err != nil {
		return wh.Wrap(err, "restore %s", name)
	}
	resp, err := nc.RequestWithContext(ctx, "$JS.API.STREAM.RESTORE."+name, meta)
	if err != nil {
		return wh.Wrap(err, "restore %s", name)
	}
	var r struct {
		DeliverSubject string `json:"deliver_subject"`
		Error          *struct {
			Desc string `json:"description"`
		} `json:"error"`
	}
	if err := json.Unmarshal(resp.Data, &r); err != nil {
		return wh.Wrap(err, "restore %s", name)
	}
	if r.Error != nil {
		return wh.Errorf(wh.EInvalid, "restore %s: %s (restore into a NATS that does not hold it)", name, r.Error.Desc)
	}
	f, err := os.Open(filepath.Join(dir, name+".tar.s2"))
	if err != nil {
		return wh.Wrap(err, "restore %s", name)
	}
	defer f.Close()
	buf := make([]byte, 128<<10)
	for {
		n, rerr := io.ReadFull(f, buf)
		if n > 0 {
			ack, err := nc.RequestWithContext(ctx, r.DeliverSubject, buf[:n])
			if err != nil {
				return wh.Wrap(err, "restore %s", name)
			}
			if len(ack.Data) > 0 {
				return wh.Errorf(wh.EInvalid, "restore %s: %s", name, ack.Data)
			}
		}
		if rerr != nil {
			break
		}
	}
	done, err := nc.RequestWithContext(ctx, r.DeliverSubject, nil)
	if err != nil {
		return wh.Wrap(err, "restore %s", name)
	}
	var cr struct {
		Error *struct {
			Desc string `json:"description"`
		} `json:"error"`
	}
	if json.Unmarshal(done.Data, &cr) == nil && cr.Error != nil {
		return wh.Errorf(wh.EInvalid, "restore %s: %s", name, cr.Error.Desc)
	}
	return nil
}

// RestoreEmbedded restores a backup into dataDir for a hub with the
// embedded NATS server: it runs that server on dataDir's store for the
// time of the restore.
func RestoreEmbedded(ctx context.Context, dir, dataDir string) (BackupManifest, error) {
	if err := emptyDir(dataDir); err != nil {
		return BackupManifest{}, err
	}
	ns, err := startNATS("", filepath.Join(dataDir, "jetstream"), 0, true, slog.New(slog.DiscardHandler))
	if err != nil {
		return BackupManifest{}, err
	}
	defer ns.ns.Shutdown()
	k, _ := ns.secrets.keys()
	nc, err := nats.Connect("", nats.InProcessServer(ns.ns), nats.Nkey(pubKey(k.ops), k.ops.Sign), nats.CustomInboxPrefix(inboxOf(roleOps)))
	if err != nil {
		return BackupManifest{}, wh.Wrap(err, "connect to the embedded NATS")
	}
	defer nc.Close()
	return Restore(ctx, nc, dir, dataDir)
}

// emptyDir creates dir, or checks that it is empty.
func emptyDir(dir string) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return os.MkdirAll(dir, 0o700)
	}
	if err != nil {
		return wh.Wrap(err, "read %s", dir)
	}
	if len(ents) > 0 {
		return wh.Errorf(wh.EInvalid, "%s is not empty: give a new or empty directory", dir)
	}
	return nil
}

func copyIfExists(src, dst string) error {
	b, err := os.ReadFile(src)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return wh.Wrap(err, "read %s", src)
	}
	return writeFileAtomic(dst, b)
}
