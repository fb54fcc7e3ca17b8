package authz

import "strings"

// The quoted, pasted and forwarded parts of a message, read from its text
// alone. The hub computes them for the log; the bridge computes them again
// from the very text it received, so a hub that drops a part cannot make
// pasted text pass for the owner's typed words.

// Part kinds QuotedParts finds (they are data kinds).
const (
	PartCode      = DataCode
	PartQuote     = DataQuote
	PartForwarded = DataForwarded
)

// QuotedParts returns the spans of text the sender quoted, pasted or
// forwarded, in order and not overlapping: fenced code blocks (``` lines; an
// unclosed block runs to the end), runs of "> " quote lines, and forwarded
// text (from a "---------- Forwarded message ----------" line, or a line
// starting with "Forwarded from", to the end). A span covers whole lines and
// excludes the final line break. Inline `code` is not a part.
func QuotedParts(text string) []Part {
	var parts []Part
	for i := 0; i < len(text); {
		le, next := lineAt(text, i)
		line := text[i:le]
		switch {
		case fenceOpen(line) > 0:
			n := fenceOpen(line)
			end, j := trimmedEnd(text, len(text)), len(text)
			for k := next; k < len(text); {
				kle, knext := lineAt(text, k)
				if fenceClose(text[k:kle], n) {
					end, j = stripCR(text, kle), knext
					break
				}
				k = knext
			}
			parts = append(parts, Part{Kind: PartCode, Start: i, End: max(end, i)})
			i = j
		case isForwardMarker(line):
			return append(parts, Part{Kind: PartForwarded, Start: i, End: max(trimmedEnd(text, len(text)), stripCR(text, le))})
		case isQuoteLine(line):
			end, j := stripCR(text, le), next
			for j < len(text) {
				jle, jnext := lineAt(text, j)
				if !isQuoteLine(text[j:jle]) {
					break
				}
				end, j = stripCR(text, jle), jnext
			}
			parts = append(parts, Part{Kind: PartQuote, Start: i, End: end})
			i = j
		default:
			i = next
		}
	}
	return parts
}

// lineAt returns the end of the line starting at i (before its '\n') and the
// start of the next line.
func lineAt(text string, i int) (end, next int) {
	if k := strings.IndexByte(text[i:], '\n'); k >= 0 {
		return i + k, i + k + 1
	}
	return len(text), len(text)
}

// stripCR moves a line end before a '\r' that ends the line.
func stripCR(text string, end int) int {
	if end > 0 && text[end-1] == '\r' {
		return end - 1
	}
	return end
}

func trimmedEnd(text string, end int) int { return len(strings.TrimRight(text[:end], "\r\n")) }

// indent strips up to three leading spaces, as Markdown allows.
func indent(line string) string {
	for k := 0; k < 3 && strings.HasPrefix(line, " "); k++ {
		line = line[1:]
	}
	return line
}

// Backticks is the length of the run of backticks s starts with.
func Backticks(s string) int {
	n := 0
	for n < len(s) && s[n] == '`' {
		n++
	}
	return n
}

// fenceOpen returns the length of the backtick fence line opens, or 0.
func fenceOpen(line string) int {
	line = indent(line)
	n := Backticks(line)
	if n < 3 || strings.Contains(line[n:], "`") {
		return 0
	}
	return n
}

func fenceClose(line string, open int) bool {
	line = indent(line)
	n := Backticks(line)
	return n >= open && strings.TrimSpace(line[n:]) == ""
}

func isQuoteLine(line string) bool { return strings.HasPrefix(indent(line), ">") }

func isForwardMarker(line string) bool {
	t := strings.TrimSpace(line)
	if strings.HasPrefix(t, "---") && ASCIIEqualFold(strings.Trim(t, "- "), "forwarded message") {
		return true
	}
	const from = "forwarded from"
	return len(t) >= len(from) && ASCIIEqualFold(t[:len(from)], from)
}

// ASCIIEqualFold compares with ASCII-only case folding (no Unicode
// look-alikes such as 'ſ' or the Kelvin sign).
func ASCIIEqualFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
