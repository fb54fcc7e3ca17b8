package authz

import (
	"slices"
	"strings"
	"unicode/utf8"
)

// normalizeParts makes parts safe to fence: clamped to the text, widened to
// whole UTF-8 characters, empty ones dropped, sorted, overlaps merged (the
// earlier part's kind wins). Offsets come over the wire; they are not
// trusted to be tidy.
func normalizeParts(text string, parts []Part) []Part {
	var out []Part
	for _, p := range parts {
		s, e := max(0, min(p.Start, len(text))), max(0, min(p.End, len(text)))
		for s > 0 && s < len(text) && !utf8.RuneStart(text[s]) {
			s--
		}
		for e < len(text) && !utf8.RuneStart(text[e]) {
			e++
		}
		if s >= e {
			continue
		}
		out = append(out, Part{Kind: fenceKind(p.Kind), Start: s, End: e})
	}
	slices.SortStableFunc(out, func(a, b Part) int { return a.Start - b.Start })
	merged := out[:0]
	for _, p := range out {
		if n := len(merged); n > 0 && p.Start < merged[n-1].End {
			merged[n-1].End = max(merged[n-1].End, p.End)
			continue
		}
		merged = append(merged, p)
	}
	return merged
}

func fenceKind(k string) string {
	switch k {
	case "code", "quote", "forwarded":
		return k
	}
	return "pasted"
}

// writeBody writes text with every line prefixed by textMark and each fence
// between <<<DATA-tag kind and DATA-tag>>> lines. A line break right next
// to a fence belongs to the fence line and is not repeated as an empty line.
func writeBody(b *strings.Builder, text string, fences []Part, tag string) {
	if len(fences) == 0 {
		if text == "" {
			b.WriteString(textMark + "\n")
		}
		writeLines(b, text)
		return
	}
	at := 0
	for i, f := range fences {
		plain := text[at:f.Start]
		if i > 0 {
			plain = trimLeadingBreak(plain)
		}
		writeLines(b, trimTrailingBreak(plain))
		b.WriteString("<<<DATA-" + tag + " " + f.Kind + "\n")
		writeLines(b, trimTrailingBreak(trimLeadingBreak(text[f.Start:f.End])))
		b.WriteString("DATA-" + tag + ">>>\n")
		at = f.End
	}
	writeLines(b, trimLeadingBreak(text[at:]))
}

// writeLines writes s as lines prefixed by textMark, breaking at every line
// terminator a reader might honour (\n, \r\n, \r, NEL, LS, PS) and replacing
// other control characters and invalid UTF-8 with U+FFFD. Empty s writes
// nothing.
func writeLines(b *strings.Builder, s string) {
	if s == "" {
		return
	}
	b.WriteString(textMark)
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		if n := breakLen(s[i:]); n > 0 {
			b.WriteString("\n" + textMark)
			i += n
			continue
		}
		switch {
		case r == utf8.RuneError && w == 1, r < 0x20 && r != '\t', r == 0x7f, 0x80 <= r && r < 0xa0:
			b.WriteRune(utf8.RuneError)
		default:
			b.WriteString(s[i : i+w])
		}
		i += w
	}
	b.WriteByte('\n')
}

// breakLen returns the length of the line terminator s starts with, or 0.
func breakLen(s string) int {
	switch {
	case strings.HasPrefix(s, "\r\n"):
		return 2
	case strings.HasPrefix(s, "\n"), strings.HasPrefix(s, "\r"):
		return 1
	case strings.HasPrefix(s, "\u0085"):
		return len("\u0085")
	case strings.HasPrefix(s, "\u2028"), strings.HasPrefix(s, "\u2029"):
		return len("\u2028")
	}
	return 0
}

func trimLeadingBreak(s string) string { return s[breakLen(s):] }

func trimTrailingBreak(s string) string {
	for _, t := range []string{"\r\n", "\n", "\r", "\u0085", "\u2028", "\u2029"} {
		if strings.HasSuffix(s, t) {
			return s[:len(s)-len(t)]
		}
	}
	return s
}
