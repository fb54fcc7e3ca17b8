package room

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/nats-io/nats.go/jetstream"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/chat"
	"github.com/wheelhouse-dev/wheelhouse/store"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// Files live in a JetStream object store bucket (replicated like the event
// log); their records are events (file.uploaded) the projection applies.

// Defaults for files.
const (
	FilesBucket         = "wheelhouse-files"
	DefaultFileMaxBytes = 25 << 20 // one file
	DefaultFileQuota    = 1 << 30  // all of one user's files
)

// safeImageTypes are shown inline (an <img>); anything else is served as
// an attachment.
var safeImageTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// SafeImage reports whether a sniffed type is an image browsers may show
// inline.
func SafeImage(typ string) bool { return safeImageTypes[typ] }

// files is the object store, opened on first use: created (and its bytes
// removed) through admin, written and read through js.
type files struct {
	js, admin jetstream.JetStream
	replicas  int
	maxBytes  int64 // the bucket's limit (0: none but the server's)
	mu        sync.Mutex
	obs       jetstream.ObjectStore // through js
	adminObs  jetstream.ObjectStore // through admin
}

// remover is the object store as admin sees it (Delete purges the
// object's chunks: a stream purge, which only ops may do). Uploads go
// through it too: a Put that fails part-way (a file over the limit, a
// client that hangs up) purges the chunks it wrote, and through js that
// purge would be refused and the upload left waiting for its answer.
func (f *files) remover(ctx context.Context) (jetstream.ObjectStore, error) {
	if _, err := f.store(ctx); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.adminObs, nil
}

func (f *files) store(ctx context.Context) (jetstream.ObjectStore, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.obs != nil {
		return f.obs, nil
	}
	if f.admin == nil {
		f.admin = f.js
	}
	if f.js == nil {
		return nil, wh.Errorf(wh.EUnavailable, "this hub has no file storage")
	}
	max := f.maxBytes
	if max == 0 {
		max = -1
	}
	adminObs, err := f.admin.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: FilesBucket, Description: "files posted in Wheelhouse rooms",
		Storage: jetstream.FileStorage, Replicas: f.replicas, MaxBytes: max})
	if err != nil {
		return nil, &wh.Error{Code: wh.EUnavailable, Message: "the file storage is unavailable; try again later", Err: err}
	}
	obs, err := f.js.ObjectStore(ctx, FilesBucket)
	if err != nil {
		return nil, &wh.Error{Code: wh.EUnavailable, Message: "the file storage is unavailable; try again later", Err: err}
	}
	f.obs, f.adminObs = obs, adminObs
	return obs, nil
}

// storeErr says what went wrong writing to the object store: full (507)
// or unavailable (503).
func storeErr(err error) error {
	var api *jetstream.APIError
	full := errors.As(err, &api) && (api.ErrorCode == 10077 || api.ErrorCode == 10023 || api.ErrorCode == 10047)
	if full || strings.Contains(err.Error(), "maximum bytes exceeded") || strings.Contains(err.Error(), "insufficient") {
		return &wh.Error{Code: wh.EStorageFull, Message: "the hub's file storage is full; ask an admin to make room", Err: err}
	}
	return &wh.Error{Code: wh.EUnavailable, Message: "the file storage is unavailable; try again later", Err: err}
}

// FileLimits are the per-file and per-user bounds.
func (s *Service) FileLimits() (perFile, quota int64) { return s.fileMax, s.fileQuota }

// CleanFileName makes an uploaded file's name safe to store and show: the
// last path element, no control or format characters, at most 255 bytes;
// "file" if nothing is left.
func CleanFileName(name string) string {
	name = strings.ToValidUTF8(name, "")
	name = path.Base(strings.ReplaceAll(name, "\\", "/"))
	var b strings.Builder
	for _, r := range name {
		switch {
		case unicode.IsSpace(r):
			b.WriteByte(' ')
		case unicode.IsControl(r), unicode.Is(unicode.Cf, r), r == '/', r == utf8.RuneError:
			continue
		default:
			b.WriteRune(r)
		}
	}
	out := strings.TrimSpace(b.String())
	for len(out) > wire.MaxFileName {
		_, w := utf8.DecodeLastRuneInString(out)
		out = out[:len(out)-w]
	}
	if out == "" || out == "." || out == ".." {
		return "file"
	}
	return out
}

// errFileTooLarge is what the upload's reader returns past the limit.
var errFileTooLarge = errors.New("file too large")

// limitedHash counts and hashes what it reads, failing past max bytes.
type limitedHash struct {
	r   io.Reader
	n   int64
	max int64
	h   interface {
		io.Writer
		Sum([]byte) []byte
	}
}

func (l *limitedHash) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	l.n += int64(n)
	l.h.Write(p[:n])
	if l.n > l.max {
		return n, errFileTooLarge
	}
	return n, err
}

// Upload stores a file for a room: its bytes in the object store, then its
// record (file.uploaded). Members only; the type is sniffed from the bytes.
// size is the declared length (-1: unknown), checked before any byte is
// stored when known.
func (s *Service) Upload(ctx context.Context, actor *chat.User, roomName, name string, body io.Reader, size int64) (*chat.File, error) {
	if _, err := s.access(ctx, actor, roomName); err != nil {
		return nil, err
	}
	name = CleanFileName(name)
	used, err := s.FileBytesOf(ctx, actor.ID)
	if err != nil {
		return nil, err
	}
	if size > s.fileMax {
		return nil, tooLargeErr(s.fileMax)
	}
	if size >= 0 && used+size > s.fileQuota || used >= s.fileQuota {
		return nil, &wh.Error{Code: wh.ETooLarge, Reason: "quota", Message: fmt.Sprintf("this file does not fit in your upload quota of %s (you have %s in files); delete messages with files you no longer need",
			human(s.fileQuota), human(used))}
	}
	if err := s.spend(ctx, LimitUploads, actor); err != nil {
		return nil, err
	}
	obs, err := s.files.remover(ctx)
	if err != nil {
		return nil, err
	}
	br := bufio.NewReaderSize(body, 512)
	head, err := br.Peek(512)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return nil, wh.Errorf(wh.EInvalid, "could not read the upload: %v", err)
	}
	typ := http.DetectContentType(head)
	id := newFileID()
	lr := &limitedHash{r: br, max: s.fileMax, h: sha256.New()}
	_, err = obs.Put(ctx, jetstream.ObjectMeta{Name: id, Metadata: map[string]string{"room": roomName, "uploader": actor.Name}}, lr)
	if err != nil {
		s.dropObject(id)
		if errors.Is(err, errFileTooLarge) {
			return nil, tooLargeErr(s.fileMax)
		}
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return nil, tooLargeErr(s.fileMax)
		}
		if ctx.Err() != nil || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, wh.Errorf(wh.EInvalid, "the upload ended before the whole file arrived")
		}
		return nil, storeErr(err)
	}
	f := chat.FileUploaded{ID: id, Room: roomName, Name: name, Size: lr.n, Type: typ, SHA256: hex.EncodeToString(lr.h.Sum(nil)), Uploader: actor.Name, Quota: s.fileQuota}
	if _, err := s.append(ctx, chat.EvFileUploaded, f); err != nil {
		s.dropObject(id)
		return nil, err
	}
	return &chat.File{ID: id, Name: name, Size: lr.n, Type: typ, URL: chat.FileURL(roomName, id)}, nil
}

func tooLargeErr(max int64) error {
	return &wh.Error{Code: wh.ETooLarge, Reason: "file-too-large", Message: "the file is larger than " + human(max) + ", the most this hub takes in one file"}
}

// human writes a size the way people read it.
func human(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20:
		return fmt.Sprintf("%.3g MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.3g KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

func newFileID() string {
	var b [8]byte
	rand.Read(b[:])
	return "f" + hex.EncodeToString(b[:])
}

// dropObject removes a file's bytes, best effort (they are unreachable
// without a record, and an upload that failed has none).
func (s *Service) dropObject(id string) {
	obs, err := s.files.remover(context.Background())
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := obs.Delete(ctx, id); err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
		s.logger.Warn("removing a file's bytes failed", "file", id, "err", err)
	}
}

// dropFileBytes removes the bytes of a deleted message's files.
func (s *Service) dropFileBytes(ctx context.Context, messageID int64) {
	ids, err := s.FilesOfMessage(ctx, messageID)
	if err != nil {
		s.logger.Warn("listing a deleted message's files failed", "message", messageID, "err", err)
		return
	}
	for _, id := range ids {
		s.dropObject(id)
	}
}

// OpenFile returns a file a member may download, and its bytes: a file
// posted in the room, or one its uploader has not posted yet.
func (s *Service) OpenFile(ctx context.Context, actor *chat.User, roomName, id string) (*store.StoredFile, io.ReadCloser, error) {
	if _, err := s.access(ctx, actor, roomName); err != nil {
		return nil, nil, err
	}
	if !wire.ValidFileID(id) {
		return nil, nil, wh.Errorf(wh.ENotFound, "no file %s in %s", clipID(id), roomName)
	}
	f, err := s.FileByID(ctx, id)
	if err != nil || f.Room != roomName || f.Deleted || (f.MessageID == 0 && f.Uploader != actor.Name) {
		return nil, nil, wh.Errorf(wh.ENotFound, "no file %s in %s", id, roomName)
	}
	rc, err := s.fileBytes(ctx, id)
	return f, rc, err
}

// OpenRequestFile opens a file posted with a moderated mention for the
// owner of the agent it asks (or its sender): the owner decides what to
// forward, and may not be a member of the room it was posted in.
func (s *Service) OpenRequestFile(ctx context.Context, actor *chat.User, steerID, id string) (*store.StoredFile, io.ReadCloser, error) {
	notFound := wh.Errorf(wh.ENotFound, "no file %s with moderated message %s", clipID(id), clipID(steerID))
	q, err := s.Request(ctx, steerID)
	if err != nil && wh.ErrorCode(err) != wh.ENotFound {
		return nil, nil, err // the hub cannot read it now, which is not "no such file"
	}
	if err != nil || (q.Owner != actor.Name && q.Sender != actor.Name) || !wire.ValidFileID(id) {
		return nil, nil, notFound
	}
	f, err := s.FileByID(ctx, id)
	if err != nil && wh.ErrorCode(err) != wh.ENotFound {
		return nil, nil, err
	}
	if err != nil || f.Deleted || f.MessageID != q.MessageID { // posted with this message, and still there
		return nil, nil, notFound
	}
	rc, err := s.fileBytes(ctx, id)
	return f, rc, err
}

// fileBytes opens a file's bytes in the object store.
func (s *Service) fileBytes(ctx context.Context, id string) (io.ReadCloser, error) {
	obs, err := s.files.store(ctx)
	if err != nil {
		return nil, err
	}
	res, err := obs.Get(ctx, id)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil, wh.Errorf(wh.ENotFound, "the file's bytes are gone")
	}
	if err != nil {
		return nil, &wh.Error{Code: wh.EUnavailable, Message: "the file storage is unavailable; try again later", Err: err}
	}
	return res, nil
}

// SteerFileBytes opens a file posted with a steer's message for the bridge
// that runs the steer's agent (and for no one else).
func (s *Service) SteerFileBytes(ctx context.Context, bridgeID, steerID, fileID string) (*store.StoredFile, io.ReadCloser, error) {
	f, err := s.SteerFile(ctx, bridgeID, steerID, fileID)
	if err != nil {
		return nil, nil, err
	}
	rc, err := s.fileBytes(ctx, fileID)
	return f, rc, err
}

// FileText returns a file's text when it is valid UTF-8 text of at most max
// bytes (for an agent's envelope); ok is false otherwise.
func (s *Service) FileText(ctx context.Context, f chat.File, max int64) (text string, ok bool, err error) {
	if f.Size > max || !strings.HasPrefix(f.Type, "text/") {
		return "", false, nil
	}
	rc, err := s.fileBytes(ctx, f.ID)
	if err != nil {
		return "", false, err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, max+1))
	if err != nil {
		return "", false, &wh.Error{Code: wh.EUnavailable, Message: "reading a file failed", Err: err}
	}
	if int64(len(b)) > max || !utf8.Valid(b) {
		return "", false, nil
	}
	return string(b), true, nil
}
