package openai

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// newWorkspace makes root/proj (the agent's directory) with a file, and
// root/outside.txt beside it.
func newWorkspace(t *testing.T) (*workspace, string, string) {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "proj")
	must(t, os.MkdirAll(filepath.Join(dir, "sub"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("hello\n"), 0o644))
	outside := filepath.Join(root, "outside.txt")
	must(t, os.WriteFile(outside, []byte("secret\n"), 0o644))
	must(t, os.Symlink(dir, filepath.Join(root, "alias")))
	ws, err := openWorkspace(dir, filepath.Join(root, "alias"))
	must(t, err)
	t.Cleanup(func() { ws.Close() })
	return ws, dir, outside
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestWorkspaceRel(t *testing.T) {
	ws, dir, outside := newWorkspace(t)
	ok := map[string]string{
		"":                                 ".",
		".":                                ".",
		"a.txt":                            "a.txt",
		"./sub//b.txt":                     "sub/b.txt",
		filepath.Join(dir, "sub", "b.txt"): "sub/b.txt",
		dir:                                ".",
		"sub/./c":                          "sub/c",
	}
	for in, want := range ok {
		got, err := ws.rel(in)
		if err != nil || got != want {
			t.Errorf("rel(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	refused := []string{"..", "../outside.txt", "sub/../../outside.txt", "sub/../a.txt", outside, "/etc/passwd",
		dir + "/../outside.txt", "a\x00b"}
	for _, in := range refused {
		if got, err := ws.rel(in); err == nil {
			t.Errorf("rel(%q) = %q, want refused", in, got)
		} else if !strings.HasPrefix(err.Error(), "refused:") {
			t.Errorf("rel(%q): %v, want a refusal", in, err)
		}
	}
}

func TestWorkspaceSymlinks(t *testing.T) {
	ws, dir, outside := newWorkspace(t)
	must(t, os.Symlink(outside, filepath.Join(dir, "out-link")))
	must(t, os.Symlink(filepath.Dir(outside), filepath.Join(dir, "out-dir")))
	must(t, os.Symlink("a.txt", filepath.Join(dir, "in-link")))

	t.Run("ReadThroughLinkOutRefused", func(t *testing.T) {
		for _, p := range []string{"out-link", "out-dir/outside.txt"} {
			_, err := ws.readFile(p)
			var re *errRefused
			if !errors.As(err, &re) || !strings.Contains(err.Error(), "outside the agent's directory") {
				t.Errorf("readFile(%s): %v, want refused", p, err)
			}
		}
	})
	t.Run("ReadThroughLinkInsideOK", func(t *testing.T) {
		b, err := ws.readFile("in-link")
		if err != nil || string(b) != "hello\n" {
			t.Fatalf("readFile(in-link) = %q, %v", b, err)
		}
	})
	t.Run("WriteThroughLinkRefused", func(t *testing.T) {
		for _, p := range []string{"out-link", "in-link", "out-dir/new.txt", "out-dir/outside.txt"} {
			if err := ws.writeFile(p, []byte("pwned\n")); err == nil {
				t.Errorf("writeFile(%s) succeeded", p)
			}
		}
		if b, _ := os.ReadFile(outside); string(b) != "secret\n" {
			t.Fatalf("outside.txt changed: %q", b)
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(outside), "new.txt")); err == nil {
			t.Fatal("new.txt was created outside")
		}
	})
	t.Run("LinkSwappedInAfterCheck", func(t *testing.T) {
		// The check passes for a plain directory; then it becomes a link out.
		// The write goes through os.Root, which refuses at use time.
		must(t, os.Mkdir(filepath.Join(dir, "swap"), 0o755))
		if err := ws.checkWritable("swap/x.txt"); err != nil {
			t.Fatal(err)
		}
		must(t, os.Remove(filepath.Join(dir, "swap")))
		must(t, os.Symlink(filepath.Dir(outside), filepath.Join(dir, "swap")))
		if err := ws.writeFile("swap/x.txt", []byte("x")); err == nil {
			t.Fatal("wrote through a link swapped in after the check")
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(outside), "x.txt")); err == nil {
			t.Fatal("x.txt was created outside")
		}
	})
}

func TestWorkspaceFiles(t *testing.T) {
	ws, dir, _ := newWorkspace(t)
	t.Run("WriteCreatesParentsAndKeepsMode", func(t *testing.T) {
		must(t, ws.writeFile("deep/er/new.txt", []byte("n\n")))
		b, err := os.ReadFile(filepath.Join(dir, "deep/er/new.txt"))
		if err != nil || string(b) != "n\n" {
			t.Fatalf("%q %v", b, err)
		}
		must(t, os.Chmod(filepath.Join(dir, "a.txt"), 0o600))
		must(t, ws.writeFile("a.txt", []byte("changed\n")))
		fi, _ := os.Stat(filepath.Join(dir, "a.txt"))
		if fi.Mode().Perm() != 0o600 {
			t.Fatalf("mode %v, want 0600 kept", fi.Mode().Perm())
		}
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ".tmp") {
				t.Fatalf("temporary file left: %s", e.Name())
			}
		}
	})
	t.Run("ErrWriteDirectory", func(t *testing.T) {
		if err := ws.writeFile("sub", []byte("x")); err == nil || !strings.Contains(err.Error(), "is a directory") {
			t.Fatalf("err = %v", err)
		}
		if err := ws.writeFile(".", []byte("x")); err == nil {
			t.Fatal("wrote the directory itself")
		}
	})
	t.Run("ErrMissing", func(t *testing.T) {
		if _, err := ws.readFile("nope.txt"); err == nil || !strings.Contains(err.Error(), "does not exist") {
			t.Fatalf("err = %v", err)
		}
	})
}
