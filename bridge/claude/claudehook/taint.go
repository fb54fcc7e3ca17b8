package claudehook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// RelayedMarker is in the header of every note that taints the session it
// reaches (a teammate's words, or the owner's pasted text). Claude Code
// keeps hook output in the session's transcript, and copies the
// transcript into a fork (--fork-session), so a transcript that holds it
// is a conversation such words reached, whatever its session id.
const RelayedMarker = "relayed by your user's Wheelhouse bridge"

// MaxTranscriptScan bounds how much of a transcript the hook reads at
// SessionStart; a longer one cannot be shown clean and counts as tainted.
const MaxTranscriptScan = 256 << 20

// KnownFile records a session the hook saw start clean: SessionStart with
// source startup, a transcript without a relayed note. A session the hook
// has no such record of comes from a conversation it cannot vouch for.
func KnownFile(root, session string) string {
	return filepath.Join(root, claudeDirName, knownDirName, session)
}

func isKnown(root, session string) bool {
	_, err := os.Lstat(KnownFile(root, session))
	return err == nil
}

func markKnown(root, session string) error {
	f, err := os.OpenFile(KnownFile(root, session), os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	return f.Close()
}

// startedClean reports whether the project's record of session id says
// the hook saw it start (source startup): how versions before known/ left
// it. Such a session counts as known (and is recorded so).
func (p Project) startedClean(id string) bool {
	b, err := os.ReadFile(p.sessionFile(id))
	if err != nil {
		return false
	}
	var s Session
	if json.Unmarshal(b, &s) != nil || s.Source != "startup" {
		return false
	}
	_ = markKnown(p.StateRoot, id)
	return true
}

// observe records this hook run of the session (its session file) and
// decides whether the session is tainted. The taint follows the
// conversation, not the session id: a session is tainted when
//
//   - its SessionStart source is anything but "startup" (resume, fork,
//     clear, compact, or one a later version adds) and the hook never saw
//     it start clean: Claude Code carried an earlier conversation into it;
//   - the hook first sees it at any other event (a tool call, a stop, a
//     prompt): it started where the hook could not look;
//   - its transcript (read at SessionStart, bounded, as bytes) holds a
//     relayed note, or cannot be read;
//   - a note that is not the owner's own words reached it (claim).
//
// A session that cannot be recorded as tainted is reported tainted, and
// the error returned.
func (h hookRun) observe(in hookInput) (bool, error) {
	sid := in.SessionID
	known := isKnown(h.root, sid) || h.p.startedClean(sid)
	var why string
	switch {
	case in.Event == "SessionStart" && in.Source != "startup" && !known:
		why = fmt.Sprintf("Claude Code started it from an earlier conversation (source %q) the hook never saw start", in.Source)
	case in.Event != "SessionStart" && in.Event != "SessionEnd" && !known:
		why = "the hook first saw it at " + in.Event + ", not at its start"
	}
	if in.Event == "SessionStart" && why == "" {
		if r := transcriptRelayed(in.TranscriptPath); r != "" {
			why = r
		}
	}
	var errs []error
	if why != "" {
		if err := MarkTainted(h.root, sid); err != nil {
			errs = append(errs, fmt.Errorf("session %s is tainted (%s) and cannot be recorded so: %w", sid, why, err))
		}
	} else if !known && in.Event == "SessionStart" {
		if err := markKnown(h.root, sid); err != nil {
			errs = append(errs, fmt.Errorf("cannot record session %s as started clean (its next run counts it as tainted): %w", sid, err))
		}
	}
	if in.Event != "SessionEnd" {
		errs = append(errs, h.p.touchSession(sid, in.Source, in.Event == "SessionStart", h.now))
	}
	return why != "" || IsTainted(h.root, sid), errors.Join(errs...)
}

// transcriptRelayed says why the transcript at path shows the session as
// tainted, or "" if it holds no relayed note (or does not exist yet, as
// at a fresh start). The file's bytes are only searched, never parsed.
func transcriptRelayed(path string) string {
	if path == "" {
		return ""
	}
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	switch {
	case err != nil:
		return fmt.Sprintf("its transcript cannot be checked: %v", err)
	case !fi.Mode().IsRegular():
		return "its transcript is not a regular file"
	case fi.Size() > MaxTranscriptScan:
		return fmt.Sprintf("its transcript is longer (%d bytes) than the hook checks (%d)", fi.Size(), MaxTranscriptScan)
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("its transcript cannot be checked: %v", err)
	}
	defer f.Close()
	found, err := containsBounded(f, []byte(RelayedMarker), MaxTranscriptScan)
	switch {
	case err != nil:
		return err.Error()
	case found:
		return "its transcript holds a note relayed by the bridge"
	}
	return ""
}

// containsBounded reports whether r holds pat within its first max bytes;
// more than max bytes is an error.
func containsBounded(r io.Reader, pat []byte, max int64) (bool, error) {
	buf := make([]byte, 0, 1<<20+len(pat))
	chunk := make([]byte, 1<<20)
	var total int64
	for {
		n, err := r.Read(chunk)
		total += int64(n)
		if total > max {
			return false, fmt.Errorf("its transcript grew past what the hook checks (%d bytes)", max)
		}
		buf = append(buf, chunk[:n]...)
		if bytes.Contains(buf, pat) {
			return true, nil
		}
		if keep := len(pat) - 1; len(buf) > keep {
			buf = append(buf[:0], buf[len(buf)-keep:]...)
		}
		if err == io.EOF {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("its transcript cannot be read: %v", err)
		}
	}
}
