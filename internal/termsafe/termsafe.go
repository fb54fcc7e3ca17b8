package termsafe

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Limits on what one printed value may occupy.
const (
	// MaxLine is how many runes Line keeps, and Text keeps per line.
	MaxLine = 1000
)

// Line makes s safe to print as part of one terminal line: every control
// character, newlines and the ESC that starts an escape sequence included,
// is shown escaped (\r, \n, \x1b, \x9b …), as are bidi overrides, isolates
// and marks and other invisible format characters (\u202e …), so a forgery
// shows as what it is; and the result is cut to MaxLine runes.
func Line(s string) string { return LineN(s, MaxLine) }

// LineN is Line with a limit of max runes (max <= 0: MaxLine).
func LineN(s string, max int) string {
	if max <= 0 {
		max = MaxLine
	}
	return clean(s, false, max)
}

// Text is Line for text that may span lines: newlines and tabs stay, every
// line is cut to MaxLine runes.
func Text(s string) string { return clean(s, true, MaxLine) }

// Safe reports whether s would print unchanged by Text: no escape
// sequences, no control characters other than newline and tab, no bidi or
// other invisible format characters, valid UTF-8, no overlong line.
func Safe(s string) bool { return Text(s) == s }

// Args returns a copy of args for a fmt format in which every string,
// error, fmt.Stringer and []string has gone through Line, so formatting
// them cannot write control characters. Other values are kept as they are.
func Args(args []any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case string:
			out[i] = Line(v)
		case error:
			if v == nil {
				out[i] = v
				continue
			}
			out[i] = Line(v.Error())
		case fmt.Stringer:
			out[i] = Line(v.String())
		case []string:
			c := make([]string, len(v))
			for j, s := range v {
				c[j] = Line(s)
			}
			out[i] = c
		default:
			out[i] = a
		}
	}
	return out
}

// Sprintf is fmt.Sprintf with Args applied and the result passed through
// Line: nothing in the formatted text can move the cursor or end the line.
func Sprintf(format string, args ...any) string {
	return Line(fmt.Sprintf(format, Args(args)...))
}

// clean does the work for Line and Text.
func clean(s string, multiline bool, max int) string {
	if isPlain(s, multiline, max) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	col := 0 // runes on the current output line
	cut := 0 // runes dropped from the current line
	emit := func(str string, runes int) {
		if cut > 0 || col+runes > max {
			cut += runes
			return
		}
		b.WriteString(str)
		col += runes
	}
	endLine := func() {
		if cut > 0 {
			fmt.Fprintf(&b, "…(+%d)", cut)
		}
		col, cut = 0, 0
	}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == utf8.RuneError && size == 1:
			emit("\uFFFD", 1)
		case r == '\n' && multiline:
			endLine()
			b.WriteByte('\n')
		case r == '\t' && multiline:
			emit("\t", 1)
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f):
			e := escapeRune(r)
			emit(e, len(e))
		case invisible(r):
			e := fmt.Sprintf(`\u%04x`, r)
			emit(e, len(e))
		default:
			emit(s[i-size:i], 1)
		}
	}
	endLine()
	return b.String()
}

// isPlain is the fast path: printable ASCII (plus newline and tab when
// multiline) within the limit needs no copy.
func isPlain(s string, multiline bool, max int) bool {
	col := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\n' && multiline:
			col = 0
			continue
		case c == '\t' && multiline:
		case c < 0x20 || c >= 0x7f:
			return false
		}
		col++
		if col > max {
			return false
		}
	}
	return true
}

func escapeRune(r rune) string {
	switch r {
	case '\n':
		return `\n`
	case '\r':
		return `\r`
	case '\t':
		return `\t`
	case '\b':
		return `\b`
	case 0x1b:
		return `\x1b`
	}
	if r < 0x100 {
		return fmt.Sprintf(`\x%02x`, r)
	}
	return fmt.Sprintf(`\u%04x`, r)
}

// invisible reports format characters that reorder or hide text: the bidi
// embeddings, overrides, isolates and marks, zero-width characters, the
// line and paragraph separators, and the byte-order mark.
func invisible(r rune) bool {
	switch {
	case r == 0x061c, r == 0x200e, r == 0x200f: // ALM, LRM, RLM
		return true
	case r >= 0x202a && r <= 0x202e: // LRE RLE PDF LRO RLO
		return true
	case r >= 0x2066 && r <= 0x2069: // LRI RLI FSI PDI
		return true
	case r == 0x200b, r == 0x2060, r == 0xfeff: // zero width space, word joiner, BOM
		return true
	case r == 0x2028, r == 0x2029: // line and paragraph separators
		return true
	case r == 0x00ad: // soft hyphen
		return true
	}
	return false
}

// JSON makes encoding/json output safe to print: the encoder already
// escapes C0 controls, but leaves DEL, C1 controls and bidi or other
// invisible characters raw inside strings. They are rewritten as \uXXXX
// escapes, which mean the same characters to any JSON reader. Invalid
// UTF-8 becomes U+FFFD, as a JSON reader would read it.
func JSON(b []byte) []byte {
	safe := true
	for _, c := range b {
		if c == 0x7f || c >= 0x80 {
			safe = false
			break
		}
	}
	if safe {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			out = append(out, `\ufffd`...)
		case r == 0x7f || (r >= 0x80 && r <= 0x9f) || invisible(r):
			out = fmt.Appendf(out, `\u%04x`, r)
		default:
			out = append(out, b[i:i+size]...)
		}
		i += size
	}
	return out
}
