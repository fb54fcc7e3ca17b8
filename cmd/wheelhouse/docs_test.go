package main

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/wheelhouse-dev/wheelhouse/hub"
	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
)

var shellBlock = regexp.MustCompile("(?s)```sh\n(.*?)```")

// TestDocsCommandLines checks that the hub, up, nats-secrets and bridge
// command lines in README.md and docs/operations.md parse with the real
// flags, and that the hub's make a valid config: the docs work as written.
func TestDocsCommandLines(t *testing.T) {
	checked := 0
	for _, doc := range []string{"README.md", "docs/operations.md"} {
		b, err := os.ReadFile(testhub.RepoFile(doc))
		if err != nil {
			t.Fatal(err)
		}
		for _, block := range shellBlock.FindAllStringSubmatch(string(b), -1) {
			text := strings.ReplaceAll(block[1], "\\\n", " ")
			for _, line := range strings.Split(text, "\n") {
				line, _, _ = strings.Cut(line, "#")
				fields := strings.Fields(line)
				for len(fields) > 0 && strings.Contains(fields[0], "=") { // VAR=value prefixes
					fields = fields[1:]
				}
				if len(fields) < 2 || fields[0] != "wheelhouse" {
					continue
				}
				fs, rest, ok := flagSetFor(fields[1:])
				if !ok {
					continue
				}
				if err := fs.Parse(rest); err != nil {
					t.Errorf("%s: %q: %v", doc, line, err)
					continue
				}
				if fields[1] == "hub" {
					var f hubFlags
					hfs := newFlags("hub", "", io.Discard)
					f.register(hfs, "", hub.DefaultHTTPAddr)
					hfs.Parse(rest)
					if cfg := f.config(io.Discard); cfg.Validate() != nil {
						t.Errorf("%s: %q: %v", doc, line, cfg.Validate())
					}
				}
				checked++
			}
		}
	}
	t.Logf("%d command lines", checked)
	if checked < 8 {
		t.Fatalf("checked only %d command lines", checked)
	}
}

// TestCompromisedHubTable checks that every row of docs/architecture.md's
// table of what a compromised hub can and cannot do names tests, and that
// each of them exists: the table is a claim the tests hold.
func TestCompromisedHubTable(t *testing.T) {
	b, err := os.ReadFile(testhub.RepoFile("docs/architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "### What a compromised hub can and cannot do")
	if !ok {
		t.Fatal("docs/architecture.md has no section on what a compromised hub can and cannot do")
	}
	section, _, _ = strings.Cut(section, "\n#")
	defined := map[string]bool{}
	root := testhub.RepoFile(".")
	testFunc := regexp.MustCompile(`(?m)^func (Test\w+)\(`)
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range testFunc.FindAllStringSubmatch(string(src), -1) {
			defined[m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	named := regexp.MustCompile("`(Test\\w+)`")
	rows := 0
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(strings.Trim(line, " |"), "|")
		if len(cells) != 4 || strings.HasPrefix(strings.TrimSpace(cells[0]), "---") || strings.TrimSpace(cells[0]) == "a compromised hub…" {
			continue
		}
		rows++
		tests := named.FindAllStringSubmatch(cells[3], -1)
		if len(tests) == 0 && strings.TrimSpace(cells[3]) != "—" {
			t.Errorf("row %q names no test", strings.TrimSpace(cells[0]))
		}
		for _, m := range tests {
			if !defined[m[1]] {
				t.Errorf("row %q names %s, which no test file defines", strings.TrimSpace(cells[0]), m[1])
			}
		}
	}
	if rows < 10 {
		t.Fatalf("found %d rows in the table", rows)
	}
}
