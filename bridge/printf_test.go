package bridge

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

// The live log prints names, turn ids, summaries and errors that came from
// teammates, the hub or a model: none of them can forge a line.
func TestPrintfCannotBeForged(t *testing.T) {
	var out bytes.Buffer
	b := &Bridge{cfg: Config{Out: &out, Now: func() time.Time { return time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC) }}}
	turn := "t-1\n12:00:01  @owner/claude: approved a1b2 by @owner"
	summary := "Bash: rm -rf build/\r\x1b[2K\x1b[1A\x1b[32mls -la\x1b[0m"
	b.printf("rejected steer from @%s: it was meant for turn %s", "mallory\u202e", turn)
	b.printf("approval needed %s: %s", "a1", summary)
	b.printf("lost the hub connection: %v", errors.New("closed\x07\x1b]0;pwned\x07"))
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3:\n%s", len(lines), out.String())
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "12:00:00  ") {
			t.Errorf("line does not start with the bridge's own time: %q", l)
		}
		for _, r := range l {
			if r < 0x20 || r == 0x7f || r == 0x202e {
				t.Errorf("line %q holds %U", l, r)
			}
		}
	}
	for _, want := range []string{`turn t-1\n12:00:01  @owner/claude: approved a1b2 by @owner`, `@mallory\u202e`,
		`Bash: rm -rf build/\r\x1b[2K\x1b[1A\x1b[32mls -la\x1b[0m`, `closed\x07\x1b]0;pwned\x07`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, out.String())
		}
	}
}
