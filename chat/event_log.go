package chat

// Events about the log itself: no projection changes with them, but a
// rebuild reads them to know what the stream still holds.
const (
	// EvSnapshotTaken records a snapshot of the projection in the
	// snapshots bucket (never the upload store).
	EvSnapshotTaken = "snapshot.taken"
	// EvLogCompacted records that events before a sequence were purged
	// from the stream: a rebuild must start from a snapshot at or past it.
	EvLogCompacted = "log.compacted"
)

// SnapshotTaken is the payload of EvSnapshotTaken: the object holds a
// SQLite database that has applied the stream up to Seq, whose bytes have
// this SHA-256 (hex).
type SnapshotTaken struct {
	Seq    uint64 `json:"seq"`
	SHA256 string `json:"sha256"`
	Bytes  int64  `json:"bytes"`
	Object string `json:"object"`
}

// LogCompacted is the payload of EvLogCompacted: the events of Subjects
// before sequence Before were purged; the snapshot at Snapshot (its
// event's sequence SnapshotEvent) covers them.
type LogCompacted struct {
	Before        uint64   `json:"before"`
	Snapshot      uint64   `json:"snapshot"`
	SnapshotEvent uint64   `json:"snapshotEvent"`
	Subjects      []string `json:"subjects"`
}
