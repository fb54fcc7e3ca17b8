package openai

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
)

// maxFileBytes bounds a file the tools read whole.
const maxFileBytes = 16 << 20

// workspace is the agent's directory. Every file operation goes through an
// os.Root opened on it, which resolves each path component inside the
// directory (openat, no following of a symlink that leads out), so a path
// checked here cannot be swapped for one outside between the check and the
// use. On top of that, paths with ".." and absolute paths outside are
// refused before any lookup, with words the model can act on.
type workspace struct {
	dir   string // absolute, symlinks resolved
	alias string // the directory as configured, if it differs
	root  *os.Root
}

func openWorkspace(dir, alias string) (*workspace, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	w := &workspace{dir: dir, root: r}
	if alias != dir {
		w.alias = alias
	}
	return w, nil
}

func (w *workspace) Close() error { return w.root.Close() }

// errRefused is a path the tools will not touch.
type errRefused struct{ msg string }

func (e *errRefused) Error() string { return e.msg }

func refusef(format string, args ...any) error { return &errRefused{msg: fmt.Sprintf(format, args...)} }

// rel checks a path the model gave and returns it relative to the
// directory, slash-separated and clean ("." for the directory itself).
func (w *workspace) rel(p string) (string, error) {
	if strings.ContainsRune(p, 0) {
		return "", refusef("refused: the path contains a NUL byte")
	}
	if strings.TrimSpace(p) == "" {
		return ".", nil
	}
	if filepath.IsAbs(p) || strings.HasPrefix(p, "/") {
		clean := filepath.Clean(p)
		var base string
		switch {
		case within(w.dir, clean):
			base = w.dir
		case w.alias != "" && within(w.alias, clean):
			base = w.alias
		default:
			return "", refusef("refused: %s is outside the agent's directory; use a path relative to it", p)
		}
		r, err := filepath.Rel(base, clean)
		if err != nil {
			return "", refusef("refused: %s is outside the agent's directory", p)
		}
		p = r
	}
	p = filepath.ToSlash(p)
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return "", refusef("refused: %q goes up with \"..\"; paths stay inside the agent's directory", p)
		}
	}
	return path.Clean(p), nil
}

// explain turns an os.Root error into words for the model.
func (w *workspace) explain(rel string, err error) error {
	var re *errRefused
	switch {
	case errors.As(err, &re):
		return err
	case strings.Contains(err.Error(), "path escapes from parent"):
		return refusef("refused: %s leads outside the agent's directory (through a symbolic link)", rel)
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s does not exist", rel)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%s: permission denied", rel)
	case errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("%s: a part of the path is not a directory", rel)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %v", rel, pe.Err)
	}
	return fmt.Errorf("%s: %v", rel, err)
}

// readFile returns a regular file's content (at most maxFileBytes).
func (w *workspace) readFile(rel string) ([]byte, error) {
	// O_NONBLOCK: a FIFO must not hang the turn; it is refused below.
	f, err := w.root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, w.explain(rel, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, w.explain(rel, err)
	}
	if st.IsDir() {
		return nil, fmt.Errorf("%s is a directory; list it with list_files", rel)
	}
	if !st.Mode().IsRegular() {
		return nil, refusef("refused: %s is not a regular file", rel)
	}
	if st.Size() > maxFileBytes {
		return nil, fmt.Errorf("%s is %d bytes, more than the %d MiB the tools read", rel, st.Size(), maxFileBytes>>20)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, w.explain(rel, err)
	}
	if len(b) > maxFileBytes {
		return nil, fmt.Errorf("%s is more than the %d MiB the tools read", rel, maxFileBytes>>20)
	}
	return b, nil
}

// stat describes what is at rel without following a final symlink; exists
// is false if nothing is.
func (w *workspace) lstat(rel string) (fi fs.FileInfo, exists bool, err error) {
	fi, err = w.root.Lstat(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, w.explain(rel, err)
	}
	return fi, true, nil
}

// checkWritable reports why rel cannot be written as a regular file, if
// it cannot: the directory itself, a directory, a symlink or a device.
func (w *workspace) checkWritable(rel string) error {
	if rel == "." {
		return refusef("refused: the path names the agent's directory itself, not a file")
	}
	fi, exists, err := w.lstat(rel)
	if err != nil {
		return err
	}
	if !exists {
		// The parent must not lead out either (a symlinked directory).
		if dir := path.Dir(rel); dir != "." {
			pfi, pexists, err := w.lstat(dir)
			if err != nil {
				return err
			}
			if pexists && pfi.Mode()&fs.ModeSymlink != 0 {
				if _, err := w.root.Stat(dir); err != nil {
					return w.explain(dir, err)
				}
			}
		}
		return nil
	}
	switch {
	case fi.IsDir():
		return fmt.Errorf("%s is a directory", rel)
	case fi.Mode()&fs.ModeSymlink != 0:
		return refusef("refused: %s is a symbolic link; write the file it points to instead", rel)
	case !fi.Mode().IsRegular():
		return refusef("refused: %s is not a regular file", rel)
	}
	return nil
}

// writeFile replaces (or creates) rel with data: written to a temporary
// file beside it, then renamed over it, so a reader never sees half a file.
// An existing file keeps its permissions; a new one gets 0644 (less the
// umask). Missing parent directories are made.
func (w *workspace) writeFile(rel string, data []byte) error {
	if err := w.checkWritable(rel); err != nil {
		return err
	}
	perm := fs.FileMode(0o644)
	if fi, exists, err := w.lstat(rel); err != nil {
		return err
	} else if exists {
		perm = fi.Mode().Perm()
	}
	if dir := path.Dir(rel); dir != "." {
		if err := w.root.MkdirAll(dir, 0o755); err != nil {
			return w.explain(dir, err)
		}
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	tmp := path.Join(path.Dir(rel), ".wheelhouse-"+hex.EncodeToString(rnd[:])+".tmp")
	f, err := w.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return w.explain(rel, err)
	}
	_, werr := f.Write(data)
	if err := f.Close(); werr == nil {
		werr = err
	}
	if werr == nil {
		werr = w.root.Chmod(tmp, perm) // the umask may have narrowed it
	}
	if werr == nil {
		werr = w.root.Rename(tmp, rel)
	}
	if werr != nil {
		_ = w.root.Remove(tmp)
		return w.explain(rel, werr)
	}
	return nil
}

// remove deletes the regular file rel.
func (w *workspace) remove(rel string) error {
	if err := w.checkWritable(rel); err != nil {
		return err
	}
	if err := w.root.Remove(rel); err != nil {
		return w.explain(rel, err)
	}
	return nil
}

// isBinary guesses from the first 8 KiB: a NUL byte means binary.
func isBinary(b []byte) bool {
	return bytes.IndexByte(b[:min(len(b), 8<<10)], 0) >= 0
}
