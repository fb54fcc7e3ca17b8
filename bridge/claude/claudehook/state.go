package claudehook

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// EnvStateDir, if set, is the state root the bridge and the hook share;
// otherwise it is $XDG_STATE_HOME/wheelhouse, else ~/.local/state/wheelhouse.
const EnvStateDir = "WHEELHOUSE_STATE_DIR"

// The side channel between the claude-attach harness (bridge side) and the
// hook (Claude Code side) lives in the user's state directory, out of reach
// of anything committed to a project:
//
//	<root>/claude/                 0700
//	    note.key                   0600: the key notes are signed with
//	    taint/<session>            a session some non-owner's words reached
//	    known/<session>            a session the hook saw start clean (SessionStart, source startup)
//	    p/<hash of the project>/   one folder per attached project, 0700
//	        project                the project's path, for people and doctor
//	        inbox/                 signed notes, one JSON file each, names sort in arrival order
//	        claimed/<note>~<session>.json  a note a session's hook took
//	        delivered/<note>       a note delivered once (mtime: its expiry); a copy is refused
//	        rejected/              files in inbox/ the hook refused (unsigned, forged, misaddressed)
//	        rejected.log           one JSON line per refusal, for doctor
//	        sessions/<session>.json  Claude Code sessions seen in the project (mtime = last hook run)
//	        hook.sock              the bridge's socket for permission decisions, or
//	        socket-dir             where it is instead (a fresh private folder) when that path is too long
//	        hook-seen, hook-delivered, hook-status.json   doctor's markers
//
// The bridge creates the folders and the key; the hook never creates a
// folder (a project no bridge attached to has none, and the hook does
// nothing there).
const (
	claudeDirName    = "claude"
	projectsDirName  = "p"
	keyName          = "note.key"
	taintDirName     = "taint"
	knownDirName     = "known"
	deliveredDir     = "delivered"
	socketDirName    = "socket-dir"
	socketTempPrefix = "wheelhouse-hook-"
	projectFileName  = "project"
	inboxDirName     = "inbox"
	claimedDirName   = "claimed"
	rejectedDirName  = "rejected"
	rejectedLogName  = "rejected.log"
	sessionsDirName  = "sessions"
	socketName       = "hook.sock"
	seenName         = "hook-seen"
	deliveredName    = "hook-delivered"
	statusName       = "hook-status.json"
	noteExt          = ".json"
	maxSocketPath    = 100 // sun_path is 104 (BSD) or 108 (Linux) bytes
)

// StateRoot is the shared state directory for env (a process environment,
// KEY=value): WHEELHOUSE_STATE_DIR, else $XDG_STATE_HOME/wheelhouse, else
// $HOME/.local/state/wheelhouse. "" if none can be found.
func StateRoot(env []string) string {
	if d := lookupEnv(env, EnvStateDir); d != "" {
		return filepath.Clean(d)
	}
	if d := lookupEnv(env, "XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "wheelhouse")
	}
	if h := lookupEnv(env, "HOME"); h != "" {
		return filepath.Join(h, ".local", "state", "wheelhouse")
	}
	return ""
}

// CanonicalProject is the form of a project path both sides key the state
// by: absolute, cleaned, symlinks resolved where possible.
func CanonicalProject(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	return filepath.Clean(dir)
}

// Project names the state files of one attached project.
type Project struct {
	StateRoot string // the shared state root (StateRoot)
	Dir       string // the project, canonical (CanonicalProject)
	Root      string // <root>/claude/p/<hash>
}

// ForProject is the state of the project in projectDir under root.
func ForProject(root, projectDir string) Project {
	return forCanonical(root, CanonicalProject(projectDir))
}

// FindProject is the attached project dir is in: the nearest of dir and
// the folders above it that a bridge set up (Exists). Claude Code started
// in a subfolder names the subfolder as CLAUDE_PROJECT_DIR but still runs
// the project's hooks; nothing in the project (a .claude folder a teammate
// committed, say) stops the walk.
func FindProject(root, dir string) (Project, bool) {
	if root == "" || dir == "" {
		return Project{}, false
	}
	d := CanonicalProject(dir)
	for {
		if p := forCanonical(root, d); p.Exists() {
			return p, true
		}
		up := filepath.Dir(d)
		if up == d {
			return Project{}, false
		}
		d = up
	}
}

func forCanonical(root, dir string) Project {
	sum := sha256.Sum256([]byte(dir))
	return Project{StateRoot: root, Dir: dir,
		Root: filepath.Join(root, claudeDirName, projectsDirName, hex.EncodeToString(sum[:8]))}
}

func (p Project) claudeDir() string { return filepath.Join(p.StateRoot, claudeDirName) }

// KeyFile is where the note key lives.
func (p Project) KeyFile() string { return filepath.Join(p.claudeDir(), keyName) }

// Inbox holds pending notes.
func (p Project) Inbox() string { return filepath.Join(p.Root, inboxDirName) }

// Claimed holds the records of notes a hook took.
func (p Project) Claimed() string { return filepath.Join(p.Root, claimedDirName) }

// Rejected holds files the hook refused to deliver.
func (p Project) Rejected() string { return filepath.Join(p.Root, rejectedDirName) }

// RejectedLog lists the refusals, one JSON line each.
func (p Project) RejectedLog() string { return filepath.Join(p.Root, rejectedLogName) }

// Sessions holds one file per Claude Code session seen in the project.
func (p Project) Sessions() string { return filepath.Join(p.Root, sessionsDirName) }

// Seen is the marker every hook run touches.
func (p Project) Seen() string { return filepath.Join(p.Root, seenName) }

// Delivered is the marker a delivering hook run touches.
func (p Project) Delivered() string { return filepath.Join(p.Root, deliveredName) }

// Status is the hook's error record.
func (p Project) Status() string { return filepath.Join(p.Root, statusName) }

// LegacyInbox is where earlier versions kept notes: inside the project,
// where anyone who can commit to it can write. Nothing reads it any more;
// doctor warns when it exists.
func (p Project) LegacyInbox() string { return filepath.Join(p.Dir, ".wheelhouse", "inbox") }

// Socket is where the bridge listens for permission requests: hook.sock in
// the project's state folder, or, when that path is too long for a unix
// socket address, hook.sock in the private folder the bridge made for it
// (PrepareSocket) and recorded in socket-dir. "" if there is no record.
func (p Project) Socket() string {
	s := filepath.Join(p.Root, socketName)
	if len(s) <= maxSocketPath {
		return s
	}
	b, err := os.ReadFile(filepath.Join(p.Root, socketDirName))
	if err != nil {
		return ""
	}
	dir := strings.TrimSpace(string(b))
	if !filepath.IsAbs(dir) {
		return ""
	}
	return filepath.Join(dir, socketName)
}

// PrepareSocket makes sure the socket's folder is private to this user
// and returns the socket's path (bridge side only). For a path too long
// for a unix socket address it makes a fresh folder (mkdtemp, 0700) and
// records it in socket-dir, replacing an earlier one of its own: a folder
// at a name anyone can guess could be someone else's.
func (p Project) PrepareSocket() (string, error) {
	s := filepath.Join(p.Root, socketName)
	if len(s) <= maxSocketPath {
		return s, ownedPrivateDir(p.Root)
	}
	if old := p.Socket(); old != "" && ownedPrivateDir(filepath.Dir(old)) == nil {
		if c, err := net.DialTimeout("unix", old, time.Second); err == nil {
			c.Close()
			return "", fmt.Errorf("another bridge is already attached to this project (it listens on %s)", old)
		}
		removeSocketDir(old)
	}
	dir, err := os.MkdirTemp("", socketTempPrefix+"*")
	if err != nil {
		return "", err
	}
	if err := ownedPrivateDir(dir); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	s = filepath.Join(dir, socketName)
	if len(s) > maxSocketPath {
		os.RemoveAll(dir)
		return "", fmt.Errorf("the temporary folder %s is too long a path for a unix socket; set TMPDIR to a shorter one", dir)
	}
	if err := WriteFileAtomic(p.Root, socketDirName, []byte(dir+"\n")); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return s, nil
}

// SocketProblem says what is wrong with the folder the socket is in (a
// folder of another user, or one others may enter), nil if nothing or if
// there is none yet.
func (p Project) SocketProblem() error {
	s := p.Socket()
	if s == "" {
		return nil
	}
	if err := ownedPrivateDir(filepath.Dir(s)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// ReleaseSocket removes the private folder PrepareSocket made for a long
// path (bridge side, at Close).
func (p Project) ReleaseSocket() {
	if len(filepath.Join(p.Root, socketName)) <= maxSocketPath {
		return
	}
	if s := p.Socket(); s != "" && ownedPrivateDir(filepath.Dir(s)) == nil {
		removeSocketDir(s)
	}
	_ = os.Remove(filepath.Join(p.Root, socketDirName))
}

// removeSocketDir removes a socket and the folder PrepareSocket made for
// it — only a folder of that name, and only if nothing else is in it.
func removeSocketDir(sock string) {
	dir := filepath.Dir(sock)
	if !strings.HasPrefix(filepath.Base(dir), socketTempPrefix) {
		return
	}
	_ = os.Remove(sock)
	_ = os.Remove(dir)
}

// DeliveredDir holds a record of every note delivered once.
func (p Project) DeliveredDir() string { return filepath.Join(p.Root, deliveredDir) }

// Exists reports whether a bridge set this project up.
func (p Project) Exists() bool {
	fi, err := os.Stat(p.Inbox())
	return err == nil && fi.IsDir()
}

// Create makes the folders (bridge side only), records the project path and
// creates the marker files.
func (p Project) Create() error {
	if p.StateRoot == "" {
		return errors.New("no state directory: set WHEELHOUSE_STATE_DIR or HOME")
	}
	for _, d := range []string{p.StateRoot, p.claudeDir(), filepath.Join(p.claudeDir(), taintDirName), filepath.Join(p.claudeDir(), knownDirName),
		filepath.Dir(p.Root), p.Root, p.Inbox(), p.Claimed(), p.Rejected(), p.Sessions(), p.DeliveredDir()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
		if err := os.Chmod(d, 0o700); err != nil {
			return err
		}
	}
	if err := WriteFileAtomic(p.Root, projectFileName, []byte(p.Dir+"\n")); err != nil {
		return err
	}
	// The markers start dated 1970 so doctor can tell "never" apart. A
	// touch (one syscall) is all a hook run then costs to record itself.
	for _, m := range []string{p.Seen(), p.Delivered()} {
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

// ownedPrivateDir checks that dir is a real folder (not a symlink) owned
// by this user that no one else may enter. A folder someone else made,
// even with the right mode, is refused: its owner can put anything in it.
func ownedPrivateDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() || fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("%s is not a private folder (mode %v)", dir, fi.Mode())
	}
	if uid, ok := fileOwner(fi); ok && uid != os.Getuid() {
		return fmt.Errorf("%s belongs to another user (uid %d)", dir, uid)
	}
	return nil
}

// validSessionID accepts Claude Code's session ids (UUIDs) and nothing that
// could name a path.
func validSessionID(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}

// TaintFile marks a session some non-owner's words reached. Its presence
// is what counts; anyone may create it (that only makes the session
// stricter), and nothing but the owner's own hand removes it.
func TaintFile(root, session string) string {
	return filepath.Join(root, claudeDirName, taintDirName, session)
}

// MarkTainted records that non-owner words reached session.
func MarkTainted(root, session string) error {
	if !validSessionID(session) {
		return fmt.Errorf("bad session id %q", session)
	}
	f, err := os.OpenFile(TaintFile(root, session), os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	return f.Close()
}

// IsTainted reports whether non-owner words reached session. A session id
// that cannot be checked counts as tainted.
func IsTainted(root, session string) bool {
	if !validSessionID(session) {
		return true
	}
	_, err := os.Lstat(TaintFile(root, session))
	return err == nil || !errors.Is(err, fs.ErrNotExist)
}

// WriteFileAtomic writes data to dir/name (mode 0600) through a temporary
// dot-file in the same folder and a rename.
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

// MarkerTime is a marker file's mtime, zero while it still says 1970.
func MarkerTime(path string) time.Time {
	fi, err := os.Stat(path)
	if err != nil || fi.ModTime().Unix() <= 0 {
		return time.Time{}
	}
	return fi.ModTime()
}

// safeName keeps [A-Za-z0-9_-] of s (others become _), at most 64 bytes.
func safeName(s string) string {
	var b strings.Builder
	for _, r := range s {
		if b.Len() >= 64 {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "note"
	}
	return b.String()
}
