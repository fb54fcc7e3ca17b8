package execagent

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestFormatOutput(t *testing.T) {
	big := strings.Repeat("é", MaxOutput) // 2 bytes a rune: twice the cap
	cases := []struct {
		name    string
		writes  []string
		max     int
		want    string // prefix of the result
		cut     bool
		maxSize int
	}{
		{"Trimmed", []string{"\n  hi\n", "there  \n\n"}, 100, "hi\nthere", false, 100},
		{"Empty", []string{" \n\t"}, 100, "", false, 0},
		{"CapNeverSplitsARune", []string{big}, MaxOutput + 4<<10, "éé", true, MaxOutput + 100},
		{"BufferFullCountsTheRest", []string{"abc", "defgh"}, 4, "abcd", true, 100},
		{"InvalidUTF8Replaced", []string{"ok \xff"}, 100, "ok \uFFFD", false, 100},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := &headBuffer{max: tc.max}
			for _, w := range tc.writes {
				if n, err := b.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			got := formatOutput(b)
			if !strings.HasPrefix(got, tc.want) || !utf8.ValidString(got) || len(got) > tc.maxSize {
				t.Fatalf("formatOutput = %.80q (len %d)", got, len(got))
			}
			if cut := strings.Contains(got, "[output truncated"); cut != tc.cut {
				t.Fatalf("truncation note %v, want %v: %.80q", cut, tc.cut, got)
			}
		})
	}
}

func TestTailBufferKeepsTheEnd(t *testing.T) {
	b := &tailBuffer{max: 5}
	for _, w := range []string{"abc", "defg", "hi"} {
		b.Write([]byte(w))
	}
	if string(b.buf) != "efghi" || b.total != 9 {
		t.Fatalf("buf %q total %d", b.buf, b.total)
	}
}
