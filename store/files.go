package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/chat"
)

// StoredFile is a file's record: where it belongs and whether it was posted
// or deleted with its message.
type StoredFile struct {
	chat.File
	RoomID    int64
	Room      string
	Uploader  string
	MessageID int64
	Deleted   bool
	SHA256    string
	CreatedAt time.Time
}

// FileByID reads a file's record.
func (s *Store) FileByID(ctx context.Context, id string) (*StoredFile, error) {
	var f StoredFile
	var at string
	err := s.db.r.QueryRowContext(ctx, `SELECT f.id, f.name, f.size, f.type, f.room_id, r.name, u.name, f.message_id, f.deleted, f.sha256, f.created_at
		FROM files f JOIN rooms r ON r.id = f.room_id JOIN users u ON u.id = f.uploader_id WHERE f.id = ?`, id).
		Scan(&f.ID, &f.Name, &f.Size, &f.Type, &f.RoomID, &f.Room, &f.Uploader, &f.MessageID, &f.Deleted, &f.SHA256, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, wh.Errorf(wh.ENotFound, "no file %s", id)
	}
	if err != nil {
		return nil, wh.Wrap(err, "read file")
	}
	f.CreatedAt, _ = time.Parse(time.RFC3339Nano, at)
	f.URL = chat.FileURL(f.Room, f.ID)
	return &f, nil
}

// FileBytesOf is how many bytes of files a user has (their quota's use).
func (s *Store) FileBytesOf(ctx context.Context, userID int64) (int64, error) {
	var n int64
	err := s.db.r.QueryRowContext(ctx, `SELECT COALESCE(SUM(size), 0) FROM files WHERE uploader_id = ? AND deleted = 0`, userID).Scan(&n)
	if err != nil {
		return 0, wh.Wrap(err, "read file sizes")
	}
	return n, nil
}

// FilesOfMessage lists the ids of the files a message posted (deleted or not).
func (s *Store) FilesOfMessage(ctx context.Context, messageID int64) ([]string, error) {
	rows, err := s.db.r.QueryContext(ctx, `SELECT id FROM files WHERE message_id = ? ORDER BY id`, messageID)
	return collect("files", rows, err, scanString)
}

// SteerFile checks that file id was posted with the message of steer
// steerID, whose agent is run by bridge bridgeID: the only file a bridge may
// fetch for that steer.
func (s *Store) SteerFile(ctx context.Context, bridgeID, steerID, fileID string) (*StoredFile, error) {
	var n int
	err := s.db.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM steers st JOIN agents a ON a.id = st.agent_id JOIN files f ON f.message_id = st.message_id
		WHERE st.id = ? AND a.bridge_id = ? AND a.released = 0 AND f.id = ? AND f.deleted = 0 AND st.status NOT IN ('rejected', 'expired')`, steerID, bridgeID, fileID).Scan(&n)
	if err != nil {
		return nil, wh.Wrap(err, "check file")
	}
	if n == 0 {
		return nil, wh.Errorf(wh.EForbidden, "file %s was not posted with a message this bridge's agent received", fileID)
	}
	return s.FileByID(ctx, fileID)
}
