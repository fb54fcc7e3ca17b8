package main

import (
	"io"
	"os"
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
