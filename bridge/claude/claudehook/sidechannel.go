package claudehook

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The side channel between the claude-attach harness (bridge side) and the
// hook (Claude Code side) is a folder in the project:
//
//	<project>/.wheelhouse/
//	    inbox/       pending notes, one JSON file each, names sort in arrival order
//	    claimed/     notes a hook delivered (moved here by rename: exactly once)
//	    hook.sock    the bridge's unix socket for PermissionRequest decisions
//	    hook-seen    touched by every hook run (its mtime is the last run)
//	    hook-delivered    touched when a hook delivers notes (its mtime is the last delivery)
//	    hook-status.json  the hook's last error, for doctor
//
// The bridge creates the folders; the hook never creates a folder.
const (
	sideDirName    = ".wheelhouse"
	inboxDirName   = "inbox"
	claimedDirName = "claimed"
	socketName     = "hook.sock"
	seenName       = "hook-seen"
	deliveredName  = "hook-delivered"
	statusName     = "hook-status.json"
	noteExt        = ".json"
	maxSocketPath  = 100 // sun_path is 104 (BSD) or 108 (Linux) bytes
)

// Dir names the files of one project's side channel; Root is
// <project>/.wheelhouse.
type Dir struct{ Root string }

// ForProject is the side channel of the project in projectDir.
func ForProject(projectDir string) Dir {
	return Dir{Root: filepath.Join(projectDir, sideDirName)}
}

// Inbox holds pending notes.
func (s Dir) Inbox() string { return filepath.Join(s.Root, inboxDirName) }

// Claimed holds notes a hook took.
func (s Dir) Claimed() string { return filepath.Join(s.Root, claimedDirName) }

// Seen is the marker every hook run touches.
func (s Dir) Seen() string { return filepath.Join(s.Root, seenName) }

// Delivered is the marker a delivering hook run touches.
func (s Dir) Delivered() string { return filepath.Join(s.Root, deliveredName) }

// Status is the hook's error record.
func (s Dir) Status() string { return filepath.Join(s.Root, statusName) }

// Socket is where the bridge listens for permission requests. A project path
// too long for a unix socket address falls back to a fixed name in /tmp
// derived from the project path, which both sides compute the same way.
func (s Dir) Socket() string {
	p := filepath.Join(s.Root, socketName)
	if len(p) <= maxSocketPath {
		return p
	}
	sum := sha256.Sum256([]byte(s.Root))
	return filepath.Join("/tmp", "wheelhouse-"+hex.EncodeToString(sum[:8])+".sock")
}

// Create makes the folders (bridge side only), a .gitignore so nothing in
// them is ever committed, and the marker files.
func (s Dir) Create() error {
	for _, d := range []string{s.Inbox(), s.Claimed()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	gi := filepath.Join(s.Root, ".gitignore")
	if _, err := os.Stat(gi); errors.Is(err, fs.ErrNotExist) {
		if err := os.WriteFile(gi, []byte("*\n"), 0o600); err != nil {
			return err
		}
	}
	// The markers start dated 1970 so doctor can tell "never" apart. A
	// touch (one syscall) is all a hook run then costs to record itself.
	for _, m := range []string{s.Seen(), s.Delivered()} {
		f, err := os.OpenFile(m, os.O_CREATE|os.O_EXCL|os.O_RDONLY, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return err
		}
		f.Close()
		if err := os.Chtimes(m, time.Unix(0, 0), time.Unix(0, 0)); err != nil {
			return err
		}
	}
	return nil
}

// Note is one steer waiting for the owner's Claude Code session.
type Note struct {
	SteerID       string    `json:"steerId"`
	TurnID        string    `json:"turnId,omitempty"`
	Sender        string    `json:"sender,omitempty"`
	SenderIsOwner bool      `json:"senderIsOwner,omitempty"`
	Text          string    `json:"text"`
	QueuedAt      time.Time `json:"queuedAt"`
	Expires       time.Time `json:"expires,omitzero"`
}

// NoteName sorts in arrival order: time, then a per-writer sequence.
func NoteName(t time.Time, seq uint64, steerID string) string {
	return fmt.Sprintf("%020d-%08d-%s%s", t.UnixNano(), seq, safeName(steerID), noteExt)
}

func safeName(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
		if b.Len() >= 64 {
			break
		}
	}
	if b.Len() == 0 {
		return "note"
	}
	return b.String()
}

// WriteNote puts n into the inbox atomically: a hook sees the whole file or
// nothing.
func (s Dir) WriteNote(name string, n Note) error {
	b, err := json.Marshal(n)
	if err != nil {
		return err
	}
	return WriteFileAtomic(s.Inbox(), name, b)
}

// WriteFileAtomic writes data to dir/name through a temporary dot-file in the
// same folder and a rename.
func WriteFileAtomic(dir, name string, data []byte) error {
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, werr := f.Write(data)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// IsNoteName reports whether a directory entry is a finished note.
func IsNoteName(name string) bool {
	return !strings.HasPrefix(name, ".") && strings.HasSuffix(name, noteExt)
}

// ClaimedNote is a note a hook took, with its file name.
type ClaimedNote struct {
	Name string
	Note Note
}

// Claim moves every pending, unexpired note from the inbox to claimed/ and
// returns them in arrival order. Rename is atomic, so when several hooks race
// each note goes to exactly one of them. Expired notes stay for the bridge to
// remove and report. Problems with single notes are returned joined, beside
// the notes that were claimed.
func (s Dir) Claim(now time.Time) ([]ClaimedNote, error) {
	entries, err := os.ReadDir(s.Inbox())
	if err != nil {
		return nil, err
	}
	var out []ClaimedNote
	var errs []error
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !IsNoteName(name) {
			continue
		}
		src := filepath.Join(s.Inbox(), name)
		b, err := os.ReadFile(src)
		if errors.Is(err, fs.ErrNotExist) {
			continue // another hook or the bridge took it
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var n Note
		if err := json.Unmarshal(b, &n); err != nil {
			errs = append(errs, fmt.Errorf("note %s: %w", name, err))
			continue
		}
		if !n.Expires.IsZero() && now.After(n.Expires) {
			continue
		}
		if err := os.Rename(src, filepath.Join(s.Claimed(), name)); err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
			continue
		}
		out = append(out, ClaimedNote{Name: name, Note: n})
	}
	return out, errors.Join(errs...)
}

// unclaim puts taken notes back into the inbox (their delivery failed).
func (s Dir) unclaim(notes []ClaimedNote) {
	for _, c := range notes {
		_ = os.Rename(filepath.Join(s.Claimed(), c.Name), filepath.Join(s.Inbox(), c.Name))
	}
}

// HookStatus is what the hook records for doctor when something fails.
type HookStatus struct {
	LastError   string    `json:"lastError,omitempty"`
	LastErrorAt time.Time `json:"lastErrorAt,omitzero"`
}

// MarkerTime is a marker file's mtime, zero while it still says 1970.
func MarkerTime(path string) time.Time {
	fi, err := os.Stat(path)
	if err != nil || fi.ModTime().Unix() <= 0 {
		return time.Time{}
	}
	return fi.ModTime()
}

func ReadStatus(path string) (HookStatus, error) {
	var st HookStatus
	b, err := os.ReadFile(path)
	if err != nil {
		return st, err
	}
	err = json.Unmarshal(b, &st)
	return st, err
}

// updateHookStatus rewrites the status file atomically. Concurrent hooks may
// lose each other's update of a field; the file stays whole.
func updateStatus(path string, f func(*HookStatus)) error {
	st, _ := ReadStatus(path)
	f(&st)
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	return WriteFileAtomic(filepath.Dir(path), filepath.Base(path), b)
}
