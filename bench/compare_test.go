package bench

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/bridge/claude"
)

// A run compares with an earlier run's --json: the figures both have, each
// named by its section and case, with the change and a word where it is
// more than a tenth.
func TestCompare(t *testing.T) {
	earlier := &Results{Started: time.Date(2026, 12, 1, 20, 16, 13, 5, time.UTC), LoadStart: 0.5,
		Posts:    []PostResult{{Sync: "interval", Over: OverHTTP, Hub: Rate{N: 100, PerSecond: 10000}, Ratio: 0.15}},
		Mentions: []MentionResult{{Sender: "owner", Over: OverHTTP, Hub: Dist{N: 10, P50: 700 * time.Microsecond, P99: 2 * time.Millisecond}}},
		Idle:     &IdleResult{Hub: IdleCost{RSSPerSocket: 25 << 10}}}
	var buf bytes.Buffer
	if err := earlier.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "last.json")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	prev, err := LoadPrevious(path)
	if err != nil {
		t.Fatal(err)
	}
	now := &Results{
		Posts:    []PostResult{{Sync: "interval", Over: OverHTTP, Hub: Rate{N: 100, PerSecond: 12000}, Ratio: 0.16}, {Sync: "always", Over: OverHTTP, Hub: Rate{PerSecond: 3000}}},
		Mentions: []MentionResult{{Sender: "owner", Over: OverHTTP, Hub: Dist{N: 10, P50: 690 * time.Microsecond, P99: 3 * time.Millisecond}}}}
	changes, err := now.Compare(prev)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	WriteComparison(&out, prev, changes)
	got := out.String()
	for _, want := range []string{
		"Compared with " + path + " (started 2026-12-01T20:16:13Z, load average 0.50)",
		"posts interval http: durable posts",
		"+20%  better", // more posts
		"mentions owner http: p50",
		"mentions owner http: p99",
		"+50%  worse", // a slower p99
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the comparison lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "always") || strings.Contains(got, "idle") {
		t.Errorf("a figure only one run has was compared:\n%s", got)
	}
	if len(changes) != 4 {
		t.Errorf("%d changes, want 4 (posts ×2, mentions ×2): %+v", len(changes), changes)
	}
}

// Every headline figure --compare reads is where a run's JSON has it: a
// renamed field would otherwise drop out of every comparison unnoticed.
func TestCompareFiguresExist(t *testing.T) {
	full := &Results{Posts: []PostResult{{}}, Fanout: []RoomResult{{}}, Mentions: []MentionResult{{}}, Idle: &IdleResult{}, Cluster: &ClusterResult{},
		Start: &StartResult{}, Model: &ModelResult{}, Search: &SearchResult{}, Uploads: &UploadResult{}, Hook: &claude.HookBench{}}
	var buf bytes.Buffer
	if err := full.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	for _, s := range sectionFigures {
		cs := cases(doc[s.section], s.keys)
		if len(cs) != 1 {
			t.Errorf("section %s: %d cases in the JSON, want 1", s.section, len(cs))
			continue
		}
		for _, f := range s.figures {
			if _, ok := number(cs[0].v, f.path); !ok {
				t.Errorf("section %s: no number at %s", s.section, f.path)
			}
		}
	}
}
