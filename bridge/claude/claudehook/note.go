package claudehook

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
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

// Note is one steer waiting for the owner's Claude Code session. The bridge
// signs it (SignNote); the hook delivers only notes whose signature
// verifies and that are addressed to its project and session.
type Note struct {
	V       int    `json:"v"`       // NoteVersion
	ID      string `json:"id"`      // the file name without .json: a note cannot be copied under another name
	Project string `json:"project"` // the project it is for (CanonicalProject)
	// Session is the Claude Code session the note is for: a session id,
	// SessionAll for every session in the project, or "" for the first
	// session whose hook takes it (no session was known when it was
	// written).
	Session       string `json:"session"`
	SteerID       string `json:"steerId"`
	TurnID        string `json:"turnId,omitempty"`
	Sender        string `json:"sender,omitempty"`
	SenderIsOwner bool   `json:"senderIsOwner,omitempty"`
	// Taints: the note is not the owner's own typed words (another
	// sender, or the owner's pasted text): the session it reaches needs
	// the owner for every side effect from then on.
	Taints   bool      `json:"taints,omitempty"`
	Text     string    `json:"text"`
	QueuedAt time.Time `json:"queuedAt"`
	Expires  time.Time `json:"expires"`
}

// NoteVersion is the note format; SessionAll addresses every session.
const (
	NoteVersion = 2
	SessionAll  = "*"
)

// signedNote is the file: the note's exact bytes and their MAC.
type signedNote struct {
	Note json.RawMessage `json:"note"`
	MAC  string          `json:"mac"`
}

const macDomain = "wheelhouse claude note v2\x00"

func noteMAC(key, note []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(macDomain))
	m.Write(note)
	return hex.EncodeToString(m.Sum(nil))
}

// NoteName sorts in arrival order: time, then a per-writer sequence.
func NoteName(t time.Time, seq uint64, steerID string) string {
	return fmt.Sprintf("%020d-%08d-%s%s", t.UnixNano(), seq, safeName(steerID), noteExt)
}

// IsNoteName reports whether a directory entry is a finished note file.
func IsNoteName(name string) bool {
	return !strings.HasPrefix(name, ".") && strings.HasSuffix(name, noteExt)
}

// keyLen is the note key's size in bytes (HMAC-SHA256).
const keyLen = 32

// LoadOrCreateKey returns the note key, creating it (0600, random) on first
// use. Bridge side only.
func (p Project) LoadOrCreateKey() ([]byte, error) {
	if k, err := p.ReadKey(); err == nil {
		return k, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if err := os.MkdirAll(p.claudeDir(), 0o700); err != nil {
		return nil, err
	}
	k := make([]byte, keyLen)
	if _, err := rand.Read(k); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(p.KeyFile(), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return p.ReadKey() // another bridge made it just now
	}
	if err != nil {
		return nil, err
	}
	_, werr := f.WriteString(hex.EncodeToString(k) + "\n")
	if err := errors.Join(werr, f.Close()); err != nil {
		os.Remove(p.KeyFile())
		return nil, err
	}
	return k, nil
}

// ReadKey reads the note key. A key file others may read or write is
// refused: whoever can write it can forge notes.
func (p Project) ReadKey() ([]byte, error) {
	f, err := os.Open(p.KeyFile())
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("the note key %s is readable or writable by others (mode %v); remove it and restart the bridge", p.KeyFile(), fi.Mode().Perm())
	}
	var buf [2*keyLen + 2]byte
	n, _ := f.Read(buf[:])
	k, err := hex.DecodeString(strings.TrimSpace(string(buf[:n])))
	if err != nil || len(k) != keyLen {
		return nil, fmt.Errorf("the note key %s is damaged; remove it and restart the bridge", p.KeyFile())
	}
	return k, nil
}

// WriteNote signs n with key and puts it into the inbox atomically under
// name (n.ID, n.Project and n.V are set from name and p). Bridge side only.
func (p Project) WriteNote(key []byte, name string, n Note) error {
	n.V, n.ID, n.Project = NoteVersion, strings.TrimSuffix(name, noteExt), p.Dir
	b, err := signNote(key, n)
	if err != nil {
		return err
	}
	return WriteFileAtomic(p.Inbox(), name, b)
}

func signNote(key []byte, n Note) ([]byte, error) {
	var raw bytes.Buffer
	enc := json.NewEncoder(&raw)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(n); err != nil {
		return nil, err
	}
	body := bytes.TrimSpace(raw.Bytes())
	// Built by hand: json.Marshal would re-encode the note's bytes (HTML
	// escaping), and the MAC is over these exact bytes.
	out := make([]byte, 0, len(body)+100)
	out = append(out, `{"note":`...)
	out = append(out, body...)
	out = append(out, `,"mac":"`...)
	out = append(out, noteMAC(key, body)...)
	return append(out, `"}`...), nil
}

// ErrNotSigned and the others say why a file in the inbox was refused.
var (
	ErrNotSigned     = errors.New("not a signed note")
	ErrBadSignature  = errors.New("the signature does not verify")
	ErrOtherProject  = errors.New("signed for another project")
	ErrRenamed       = errors.New("its name does not match the signed one")
	ErrBadNoteFormat = errors.New("unknown note format")
	ErrDelivered     = errors.New("a copy of a note delivered before")
)

// OpenNote verifies a note file's bytes: the MAC with key, the format, and
// that it was signed for this project under this file name.
func (p Project) OpenNote(key []byte, name string, b []byte) (Note, error) {
	var sn signedNote
	if err := json.Unmarshal(b, &sn); err != nil || len(sn.Note) == 0 || sn.MAC == "" {
		return Note{}, ErrNotSigned
	}
	want, err := hex.DecodeString(sn.MAC)
	if err != nil {
		return Note{}, ErrBadSignature
	}
	got, _ := hex.DecodeString(noteMAC(key, sn.Note))
	if !hmac.Equal(got, want) {
		return Note{}, ErrBadSignature
	}
	var n Note
	if err := json.Unmarshal(sn.Note, &n); err != nil || n.V != NoteVersion {
		return Note{}, ErrBadNoteFormat
	}
	if n.Project != p.Dir {
		return Note{}, ErrOtherProject
	}
	if n.ID+noteExt != name {
		return Note{}, ErrRenamed
	}
	return n, nil
}

// ClaimedName is the file a session's hook leaves in claimed/ for a note it
// took: <note id>~<session>.json.
func ClaimedName(noteName, session string) string {
	return strings.TrimSuffix(noteName, noteExt) + "~" + session + noteExt
}

// ParseClaimedName splits a claimed/ entry into the note's file name and
// the session that took it.
func ParseClaimedName(name string) (noteName, session string, ok bool) {
	if !IsNoteName(name) {
		return "", "", false
	}
	id, sess, ok := strings.Cut(strings.TrimSuffix(name, noteExt), "~")
	if !ok || id == "" || !validSessionID(sess) {
		return "", "", false
	}
	return id + noteExt, sess, true
}

// ClaimedNote is a note a hook took, with its file name.
type ClaimedNote struct {
	Name string
	Note Note
}

// Rejection is one inbox file the hook refused (rejected.log).
type Rejection struct {
	At     time.Time `json:"at"`
	File   string    `json:"file"`
	Reason string    `json:"reason"`
}

// Claim takes the notes in the inbox that session may deliver, in arrival
// order: those addressed to it, to SessionAll, or to no session yet. A
// note for one session (or none) is moved to claimed/<note>~<session>.json;
// rename is atomic, so when several hooks race each note goes to exactly
// one of them. A note for every session leaves a marker per session in
// claimed/ (created exclusively) and stays in the inbox until it expires.
// Notes for other sessions and expired notes are left alone. A file that
// is not a note signed with key for this project under its own name is
// moved to rejected/ and logged; the returned rejections say which.
func (p Project) Claim(key []byte, session string, now time.Time) ([]ClaimedNote, []Rejection, error) {
	if !validSessionID(session) {
		return nil, nil, fmt.Errorf("bad session id %q: notes left in place", session)
	}
	entries, err := os.ReadDir(p.Inbox())
	if err != nil {
		return nil, nil, err
	}
	var out []ClaimedNote
	var rejected []Rejection
	var errs []error
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue // a note being written
		}
		src := filepath.Join(p.Inbox(), name)
		if !e.Type().IsRegular() || !IsNoteName(name) {
			rejected = append(rejected, p.reject(name, "not a note file", now))
			continue
		}
		b, err := os.ReadFile(src)
		if errors.Is(err, fs.ErrNotExist) {
			continue // another hook or the bridge took it
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		n, err := p.OpenNote(key, name, b)
		if err != nil {
			rejected = append(rejected, p.reject(name, err.Error(), now))
			continue
		}
		if now.After(n.Expires) {
			continue // the bridge removes and reports it
		}
		switch n.Session {
		case session, "":
			claimed := filepath.Join(p.Claimed(), ClaimedName(name, session))
			err := os.Rename(src, claimed)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				errs = append(errs, err)
				continue
			}
			// One delivery per note, ever: a copy put back into the inbox
			// (it still verifies) finds the record and is refused.
			if err := p.markDelivered(name, n.Expires); errors.Is(err, fs.ErrExist) {
				rejected = append(rejected, p.rejectFile(claimed, name, ErrDelivered.Error(), now))
				continue
			} else if err != nil {
				_ = os.Rename(claimed, src)
				errs = append(errs, fmt.Errorf("cannot record note %s as delivered, so it is held back: %w", name, err))
				continue
			}
		case SessionAll:
			f, err := os.OpenFile(filepath.Join(p.Claimed(), ClaimedName(name, session)), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
			if errors.Is(err, fs.ErrExist) {
				continue // this session has it already
			}
			if err != nil {
				errs = append(errs, err)
				continue
			}
			f.Close()
		default:
			continue // another session's
		}
		out = append(out, ClaimedNote{Name: name, Note: n})
	}
	return out, rejected, errors.Join(errs...)
}

// reject moves an inbox file the hook will not deliver to rejected/ and
// logs why.
func (p Project) reject(name, reason string, now time.Time) Rejection {
	return p.rejectFile(filepath.Join(p.Inbox(), name), name, reason, now)
}

// rejectFile moves src (the file name) to rejected/ and logs why.
func (p Project) rejectFile(src, name, reason string, now time.Time) Rejection {
	r := Rejection{At: now.UTC(), File: name, Reason: reason}
	dst := filepath.Join(p.Rejected(), fmt.Sprintf("%d-%s", now.UnixNano(), name))
	_ = os.Rename(src, dst)
	if b, err := json.Marshal(r); err == nil {
		if f, err := os.OpenFile(p.RejectedLog(), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600); err == nil {
			_, _ = f.Write(append(b, '\n'))
			f.Close()
		}
	}
	return r
}

// unclaim puts taken notes back (their delivery failed).
func (p Project) unclaim(notes []ClaimedNote, session string) {
	for _, c := range notes {
		marker := filepath.Join(p.Claimed(), ClaimedName(c.Name, session))
		if c.Note.Session == SessionAll {
			_ = os.Remove(marker)
			continue
		}
		_ = os.Remove(filepath.Join(p.DeliveredDir(), c.Name))
		_ = os.Rename(marker, filepath.Join(p.Inbox(), c.Name))
	}
}

// markDelivered records that note name was delivered, exclusively: the
// error wraps fs.ErrExist if it was delivered before. The record's mtime
// is the note's expiry; after it the note is refused as expired anyway,
// and the bridge removes the record (SweepDelivered).
func (p Project) markDelivered(name string, expires time.Time) error {
	path := filepath.Join(p.DeliveredDir(), name)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	f.Close()
	return os.Chtimes(path, expires, expires)
}

// SweepDelivered removes the delivery records of notes that have expired
// (bridge side).
func (p Project) SweepDelivered(now time.Time) {
	entries, _ := os.ReadDir(p.DeliveredDir())
	for _, e := range entries {
		if fi, err := e.Info(); err == nil && now.After(fi.ModTime().Add(time.Minute)) {
			_ = os.Remove(filepath.Join(p.DeliveredDir(), e.Name()))
		}
	}
}

// ReadRejections returns the refusals logged so far (at most the last max).
func (p Project) ReadRejections(max int) ([]Rejection, error) {
	b, err := os.ReadFile(p.RejectedLog())
	if err != nil {
		return nil, err
	}
	var out []Rejection
	for _, l := range bytes.Split(b, []byte("\n")) {
		var r Rejection
		if json.Unmarshal(l, &r) == nil && r.File != "" {
			out = append(out, r)
		}
	}
	if max > 0 && len(out) > max {
		out = out[len(out)-max:]
	}
	return out, nil
}
