package main

import (
	"flag"
	"io"
	"os"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// flagSetFor returns the flag set of a (sub)command named by args, and the
// remaining args.
func flagSetFor(args []string) (*flag.FlagSet, []string, bool) {
	sets := map[string]func() *flag.FlagSet{
		"hub": func() *flag.FlagSet { fs, _ := hubFlagSet(io.Discard); return fs },
		"up":  func() *flag.FlagSet { fs, _ := upFlagSet(io.Discard); return fs },
	}
	for k, v := range bridgeFlagSets() {
		sets["bridge "+k] = v
	}
	for n := 2; n >= 1; n-- {
		if len(args) >= n {
			if f, ok := sets[strings.Join(args[:n], " ")]; ok {
				return f(), args[n:], true
			}
		}
	}
	return nil, nil, false
}

// TestComposeFile checks that every wheelhouse command and flag in
// docker-compose.yml exists (no Docker engine runs in CI).
func TestComposeFile(t *testing.T) {
	b, err := os.ReadFile("../../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Services map[string]struct {
			Command []string `yaml:"command"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	checked := 0
	for name, svc := range doc.Services {
		if len(svc.Command) == 0 || svc.Command[0] != "wheelhouse" {
			continue
		}
		fs, rest, ok := flagSetFor(svc.Command[1:])
		if !ok {
			t.Errorf("service %s: unknown command %v", name, svc.Command[1:])
			continue
		}
		fs.SetOutput(io.Discard)
		if err := fs.Parse(rest); err != nil {
			t.Errorf("service %s: %v", name, err)
		}
		if fs.NArg() > 0 {
			t.Errorf("service %s: stray arguments %v", name, fs.Args())
		}
		checked++
	}
	if checked < 3 {
		t.Fatalf("checked %d wheelhouse services, want at least 3 (two hubs and a bridge)", checked)
	}
}
