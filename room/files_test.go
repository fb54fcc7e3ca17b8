package room

import (
	"strings"
	"testing"
)

func TestCleanFileName(t *testing.T) {
	cases := map[string]string{
		"report.pdf":             "report.pdf",
		"../../etc/passwd":       "passwd",
		`C:\Users\x\shot.png`:    "shot.png",
		"a\nb\tc.txt":            "a b c.txt",
		"\u202etxt.exe":          "txt.exe",
		"":                       "file",
		"..":                     "file",
		"dir/":                   "dir",
		"  spaced  ":             "spaced",
		"bad\xffutf8.txt":        "badutf8.txt",
		strings.Repeat("é", 200): strings.Repeat("é", 127),
	}
	for in, want := range cases {
		if got := CleanFileName(in); got != want {
			t.Errorf("CleanFileName(%q) = %q, want %q", in, got, want)
		}
	}
}
