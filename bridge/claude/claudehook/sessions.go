package claudehook

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Session is a Claude Code session the hook has seen in a project. The
// file is written when the session is first seen (SessionStart, or its
// first hook run); every hook run of the session updates its mtime, and
// SessionEnd removes it.
type Session struct {
	ID        string    `json:"sessionId"`
	FirstSeen time.Time `json:"firstSeen"`
	Source    string    `json:"source,omitempty"` // SessionStart's source: startup, resume, clear, compact
	LastSeen  time.Time `json:"-"`                // the file's mtime
}

func (p Project) sessionFile(id string) string {
	return filepath.Join(p.Sessions(), id+".json")
}

// touchSession records a hook run of session id: the mtime of its file, or
// the file itself the first time (or at SessionStart, start = true).
func (p Project) touchSession(id, source string, start bool, now time.Time) error {
	if !validSessionID(id) {
		return errors.New("bad session id")
	}
	path := p.sessionFile(id)
	if !start {
		if err := os.Chtimes(path, now, now); err == nil || !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	b, _ := json.Marshal(Session{ID: id, FirstSeen: now.UTC(), Source: source})
	if err := WriteFileAtomic(p.Sessions(), id+".json", b); err != nil {
		return err
	}
	return os.Chtimes(path, now, now) // the file system's clock may be coarser
}

// endSession forgets session id (SessionEnd).
func (p Project) endSession(id string) error {
	if !validSessionID(id) {
		return errors.New("bad session id")
	}
	err := os.Remove(p.sessionFile(id))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// ListSessions returns the sessions seen in the project, the most recently
// active first.
func (p Project) ListSessions() ([]Session, error) {
	entries, err := os.ReadDir(p.Sessions())
	if err != nil {
		return nil, err
	}
	var out []Session
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || !validSessionID(id) {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		s := Session{ID: id}
		if b, err := os.ReadFile(filepath.Join(p.Sessions(), e.Name())); err == nil {
			_ = json.Unmarshal(b, &s)
			s.ID = id
		}
		s.LastSeen = fi.ModTime()
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].LastSeen.After(out[j].LastSeen) })
	return out, nil
}

// HasSession reports whether session id is known and has not ended.
func (p Project) HasSession(id string) bool {
	if !validSessionID(id) {
		return false
	}
	_, err := os.Stat(p.sessionFile(id))
	return err == nil
}
