package termsafe

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestLine(t *testing.T) {
	for _, c := range []struct {
		name, in, want string
	}{
		{"PlainUnchanged", "rm -rf build/", "rm -rf build/"},
		{"UnicodeUnchanged", "café → ok ✓", "café → ok ✓"},
		// The forgery from the approvals list: the summary shows a harmless
		// command, returns the cursor and erases the line.
		{"CarriageReturnEraseCannotHideCommand", "rm -rf build/\r\x1b[2K\x1b[1A\x1b[32mls -la\x1b[0m",
			`rm -rf build/\r\x1b[2K\x1b[1A\x1b[32mls -la\x1b[0m`},
		// The forgery from the bridge log: a teammate's turn id that ends the
		// line and prints an approval the owner never gave.
		{"TurnIDForgesApprovedLine", "t-1\n12:00:01  @owner/claude: approved a1b2 by @owner",
			`t-1\n12:00:01  @owner/claude: approved a1b2 by @owner`},
		{"CROnlyForgery", "t-1\r12:00:01  approved by @owner", `t-1\r12:00:01  approved by @owner`},
		{"BackspacesShown", "rm -rf /\b\b\b\b\b\b\b\bls     ", `rm -rf /\b\b\b\b\b\b\b\bls     `},
		{"NULAndBell", "a\x00b\x07c", `a\x00b\x07c`},
		{"DELShown", "a\x7fb", `a\x7fb`},
		{"OSCHyperlinkShown", "\x1b]8;;https://evil.example/\x07click\x1b]8;;\x07", `\x1b]8;;https://evil.example/\x07click\x1b]8;;\x07`},
		{"OSCClipboardWriteShown", "x\x1b]52;c;cm0gLXJmIH4=\x1b\\y", `x\x1b]52;c;cm0gLXJmIH4=\x1b\y`},
		{"DCSShown", "a\x1bPq#0\x1b\\b", `a\x1bPq#0\x1b\b`},
		{"TwoByteEscShown", "a\x1bcb\x1b7c", `a\x1bcb\x1b7c`},
		{"LoneEscAtEnd", "abc\x1b", `abc\x1b`},
		{"C1CSIEscaped", "a\u009b2Kb", `a\x9b2Kb`},
		{"InvalidUTF8Replaced", "a\xffb", "a\uFFFDb"},
		{"BidiOverrideEscaped", "access\u202e//:ptth", `access\u202e//:ptth`},
		{"BidiIsolatesEscaped", "\u2066\u2067\u2068x\u2069", `\u2066\u2067\u2068x\u2069`},
		{"BidiMarksEscaped", "a\u200eb\u200fc\u061cd", `a\u200eb\u200fc\u061cd`},
		{"ZeroWidthEscaped", "r\u200bm", `r\u200bm`},
		{"LineSeparatorEscaped", "a\u2028b", `a\u2028b`},
		{"TabEscapedInLine", "a\tb", `a\tb`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Line(c.in)
			if got != c.want {
				t.Errorf("Line(%q)\n got %q\nwant %q", c.in, got, c.want)
			}
			if !printable(got) {
				t.Errorf("Line(%q) = %q still holds a control or format character", c.in, got)
			}
			if Line(got) != got {
				t.Errorf("Line is not idempotent on %q", got)
			}
		})
	}
}

func TestText(t *testing.T) {
	in := "line one\n\tindented\r\x1b[2Kforged\nthird \u202eevil"
	want := "line one\n\tindented\\r\\x1b[2Kforged\nthird \\u202eevil"
	if got := Text(in); got != want {
		t.Fatalf("Text\n got %q\nwant %q", got, want)
	}
	if !Safe(want) || Safe(in) {
		t.Error("Safe disagrees with Text")
	}
}

func TestLongLinesCut(t *testing.T) {
	t.Run("Line", func(t *testing.T) {
		got := Line(strings.Repeat("x", MaxLine+500))
		if !strings.HasSuffix(got, "…(+500)") || utf8.RuneCountInString(got) > MaxLine+10 {
			t.Fatalf("cut to %d runes, ends %q", utf8.RuneCountInString(got), got[len(got)-12:])
		}
	})
	t.Run("TextPerLine", func(t *testing.T) {
		got := Text(strings.Repeat("y", MaxLine+1) + "\nshort")
		if !strings.Contains(got, "…(+1)\nshort") {
			t.Fatalf("got tail %q", got[len(got)-20:])
		}
	})
	t.Run("LineN", func(t *testing.T) {
		if got := LineN("abcdef\x1b[31m", 3); got != "abc…(+11)" {
			t.Fatalf("got %q", got)
		}
	})
}

type stringer struct{ s string }

func (s stringer) String() string { return s.s }

func TestSprintfSanitizesArguments(t *testing.T) {
	got := Sprintf("steered turn %s by @%s (%v) %d %v %v", "t-1\n12:00  approved", "bob\x1b[2K",
		errors.New("boom\r"), 7, stringer{"s\x07"}, []string{"a\nb"})
	want := `steered turn t-1\n12:00  approved by @bob\x1b[2K (boom\r) 7 s\x07 [a\nb]`
	if got != want {
		t.Fatalf("\n got %q\nwant %q", got, want)
	}
	// A value of another kind printed with %v still cannot break the line.
	if got := Sprintf("%v", struct{ S string }{"x\ny"}); got != `{x\ny}` {
		t.Fatalf("struct: %q", got)
	}
}

// printable: no C0/C1 control, no DEL, no format character we escape.
func printable(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) || invisible(r) {
			return false
		}
	}
	return true
}

func FuzzLine(f *testing.F) {
	for _, s := range []string{"rm -rf build/\r\x1b[2K", "\x1b]8;;x\x07", "a\u202eb", "\xff\xfe", "\x1b[", "\x1bP"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, got := range []string{Line(s), Text(s)} {
			if !utf8.ValidString(got) {
				t.Fatalf("invalid UTF-8 from %q", s)
			}
			for _, r := range got {
				if (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f || (r >= 0x80 && r <= 0x9f) || invisible(r) {
					t.Fatalf("%q kept %U", s, r)
				}
			}
		}
		if strings.ContainsAny(Line(s), "\n\t") {
			t.Fatalf("Line(%q) spans lines", s)
		}
		// Escapes take at most four runes per byte: short inputs are never
		// cut, and then cleaning twice changes nothing.
		if len(s) < MaxLine/4 && Line(Line(s)) != Line(s) {
			t.Fatalf("not idempotent on %q", s)
		}
	})
}

func TestJSON(t *testing.T) {
	in := []byte(`{"summary":"a` + "\u202e\x7f\u009b" + `b","ok":"café"}`)
	got := JSON(in)
	want := `{"summary":"a\u202e\u007f\u009bb","ok":"café"}`
	if string(got) != want {
		t.Fatalf("got %s", got)
	}
	var a, b map[string]string
	if json.Unmarshal(in, &a) != nil || json.Unmarshal(got, &b) != nil || a["summary"] != b["summary"] {
		t.Fatalf("the escaped JSON means something else: %q vs %q", a, b)
	}
	if plain := []byte(`{"a":"b"}`); &JSON(plain)[0] != &plain[0] {
		t.Error("plain ASCII was copied")
	}
}
