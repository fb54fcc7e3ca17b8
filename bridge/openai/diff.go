package openai

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// A unified diff, as `diff -u` and `git diff` write it, applied strictly:
// every context and removed line must match the file exactly (a hunk may sit
// at another line than its header says only if its lines occur exactly once
// there), hunks apply in order and must not overlap, and a patch that does
// not apply changes nothing.

// maxPatchFiles bounds the files one patch may touch.
const maxPatchFiles = 100

// filePatch is the part of a patch for one file.
type filePatch struct {
	OldPath, NewPath string // as written, without a/ b/ prefixes; "/dev/null" for none
	Hunks            []hunk
}

// Path is the file the patch changes.
func (f filePatch) Path() string {
	if f.NewPath == devNull {
		return f.OldPath
	}
	return f.NewPath
}

// Create and Delete report a patch that makes or removes the file.
func (f filePatch) Create() bool { return f.OldPath == devNull }
func (f filePatch) Delete() bool { return f.NewPath == devNull }

const devNull = "/dev/null"

type hunk struct {
	header             string
	OldStart, OldCount int
	NewStart, NewCount int
	Lines              []hunkLine
	OldNoEOL, NewNoEOL bool // "\ No newline at end of file" on that side
}

type hunkLine struct {
	Op   byte // ' ', '-', '+'
	Text string
}

// parsePatch reads a unified diff. Text outside the file sections (a commit
// message, "diff --git" and "index" lines) is skipped; renames, copies and
// binary patches are refused.
func parsePatch(text string) ([]filePatch, error) {
	lines := strings.Split(text, "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	for i := range lines {
		lines[i] = strings.TrimSuffix(lines[i], "\r")
	}
	var out []filePatch
	seen := map[string]bool{}
	for i := 0; i < len(lines); {
		l := lines[i]
		switch {
		case strings.HasPrefix(l, "rename from ") || strings.HasPrefix(l, "rename to ") ||
			strings.HasPrefix(l, "copy from ") || strings.HasPrefix(l, "copy to "):
			return nil, fmt.Errorf("line %d: renames and copies are not supported; delete and create the file instead", i+1)
		case strings.HasPrefix(l, "GIT binary patch") || (strings.HasPrefix(l, "Binary files ") && strings.HasSuffix(l, " differ")):
			return nil, fmt.Errorf("line %d: binary patches are not supported", i+1)
		case strings.HasPrefix(l, "--- ") && i+1 < len(lines) && strings.HasPrefix(lines[i+1], "+++ "):
			fp, next, err := parseFile(lines, i)
			if err != nil {
				return nil, err
			}
			if fp.OldPath == devNull && fp.NewPath == devNull {
				return nil, fmt.Errorf("line %d: both sides are /dev/null", i+1)
			}
			p := fp.Path()
			if seen[p] {
				return nil, fmt.Errorf("line %d: %s appears twice in the patch; put all its hunks in one section", i+1, p)
			}
			seen[p] = true
			if len(out) == maxPatchFiles {
				return nil, fmt.Errorf("the patch touches more than %d files", maxPatchFiles)
			}
			out = append(out, fp)
			i = next
		case strings.HasPrefix(l, "@@"):
			return nil, fmt.Errorf("line %d: a hunk without the file header (--- and +++ lines) before it", i+1)
		default:
			i++
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no file changes found: a unified diff has \"--- a/file\" and \"+++ b/file\" lines, then \"@@ -l,n +l,n @@\" hunks")
	}
	return out, nil
}

// parseFile reads one file section starting at its "---" line.
func parseFile(lines []string, i int) (filePatch, int, error) {
	oldP, err := headerPath(lines[i], "--- ")
	if err != nil {
		return filePatch{}, 0, fmt.Errorf("line %d: %v", i+1, err)
	}
	newP, err := headerPath(lines[i+1], "+++ ")
	if err != nil {
		return filePatch{}, 0, fmt.Errorf("line %d: %v", i+2, err)
	}
	// git's a/ and b/ prefixes, when both sides (or the one real side) use them.
	if (strings.HasPrefix(oldP, "a/") || oldP == devNull) && (strings.HasPrefix(newP, "b/") || newP == devNull) {
		oldP = strings.TrimPrefix(oldP, "a/")
		newP = strings.TrimPrefix(newP, "b/")
	}
	if oldP != devNull && newP != devNull && oldP != newP {
		return filePatch{}, 0, fmt.Errorf("line %d: the old and new names differ (%s, %s); renames are not supported", i+1, oldP, newP)
	}
	fp := filePatch{OldPath: oldP, NewPath: newP}
	i += 2
	for i < len(lines) && strings.HasPrefix(lines[i], "@@") {
		h, next, err := parseHunk(lines, i)
		if err != nil {
			return filePatch{}, 0, err
		}
		if n := len(fp.Hunks); n > 0 {
			prev := fp.Hunks[n-1]
			if h.OldStart < prev.OldStart+prev.OldCount {
				return filePatch{}, 0, fmt.Errorf("line %d: hunks of %s overlap or are out of order", i+1, fp.Path())
			}
		}
		fp.Hunks = append(fp.Hunks, h)
		i = next
		// A miscounted header must not drop the lines after it silently.
		if i < len(lines) && lines[i] != "" && strings.ContainsRune(" +-", rune(lines[i][0])) &&
			!(strings.HasPrefix(lines[i], "--- ") && i+1 < len(lines) && strings.HasPrefix(lines[i+1], "+++ ")) {
			return filePatch{}, 0, fmt.Errorf("line %d: hunk %q has more lines than its header says", i+1, h.header)
		}
	}
	if len(fp.Hunks) == 0 {
		return filePatch{}, 0, fmt.Errorf("line %d: %s has no hunks (\"@@ -l,n +l,n @@\")", i+1, fp.Path())
	}
	if fp.Create() && (len(fp.Hunks) != 1 || fp.Hunks[0].OldCount != 0) {
		return filePatch{}, 0, fmt.Errorf("%s: a new file's patch is one hunk \"@@ -0,0 +1,n @@\"", fp.Path())
	}
	if fp.Delete() && (len(fp.Hunks) != 1 || fp.Hunks[0].NewCount != 0) {
		return filePatch{}, 0, fmt.Errorf("%s: a deleted file's patch is one hunk \"@@ -1,n +0,0 @@\"", fp.Path())
	}
	return fp, i, nil
}

// headerPath reads the name of a "--- " or "+++ " line (a tab and a time
// stamp may follow it).
func headerPath(l, prefix string) (string, error) {
	p := strings.TrimPrefix(l, prefix)
	if t := strings.IndexByte(p, '\t'); t >= 0 {
		p = p[:t]
	}
	p = strings.TrimSpace(p)
	if strings.HasPrefix(p, `"`) {
		u, err := strconv.Unquote(p)
		if err != nil {
			return "", fmt.Errorf("cannot read the quoted file name %s", p)
		}
		p = u
	}
	if p == "" {
		return "", fmt.Errorf("no file name after %q", strings.TrimSpace(prefix))
	}
	return p, nil
}

// parseHunk reads one hunk starting at its "@@" line.
func parseHunk(lines []string, i int) (hunk, int, error) {
	var err error
	hdr := lines[i]
	h := hunk{header: clip([]byte(hdr), 80)}
	rest, ok := strings.CutPrefix(hdr, "@@ -")
	end := strings.Index(rest, " @@")
	if !ok || end < 0 {
		return h, 0, fmt.Errorf("line %d: a hunk header reads \"@@ -l,n +l,n @@\", not %q", i+1, clip([]byte(hdr), 80))
	}
	oldR, newR, ok := strings.Cut(rest[:end], " +")
	if !ok {
		return h, 0, fmt.Errorf("line %d: a hunk header reads \"@@ -l,n +l,n @@\", not %q", i+1, clip([]byte(hdr), 80))
	}
	if h.OldStart, h.OldCount, err = hunkRange(oldR); err != nil {
		return h, 0, fmt.Errorf("line %d: %v", i+1, err)
	}
	if h.NewStart, h.NewCount, err = hunkRange(newR); err != nil {
		return h, 0, fmt.Errorf("line %d: %v", i+1, err)
	}
	if h.OldCount > 0 && h.OldStart == 0 {
		return h, 0, fmt.Errorf("line %d: a hunk's lines start at line 1", i+1)
	}
	oldN, newN := 0, 0
	i++
	for oldN < h.OldCount || newN < h.NewCount {
		if i >= len(lines) {
			return h, 0, fmt.Errorf("hunk %q ends early: it promises %d old and %d new lines, the patch has %d and %d",
				hdr, h.OldCount, h.NewCount, oldN, newN)
		}
		l := lines[i]
		op, text := byte(' '), ""
		if l != "" { // an empty line is an empty context line whose space got lost
			op, text = l[0], l[1:]
		}
		switch op {
		case ' ':
			oldN++
			newN++
		case '-':
			oldN++
		case '+':
			newN++
		case '\\':
			if len(h.Lines) == 0 {
				return h, 0, fmt.Errorf("line %d: \"\\ No newline at end of file\" before any line of the hunk", i+1)
			}
			markNoEOL(&h)
			i++
			continue
		default:
			return h, 0, fmt.Errorf("line %d: a hunk line starts with ' ', '-' or '+', not %q (hunk %q)", i+1, op, hdr)
		}
		if oldN > h.OldCount || newN > h.NewCount {
			return h, 0, fmt.Errorf("line %d: hunk %q has more lines than its header says", i+1, hdr)
		}
		h.Lines = append(h.Lines, hunkLine{Op: op, Text: text})
		i++
	}
	// "\ No newline at end of file" after the hunk's last line.
	for i < len(lines) && strings.HasPrefix(lines[i], `\`) && len(h.Lines) > 0 {
		markNoEOL(&h)
		i++
	}
	return h, i, nil
}

// markNoEOL records "\ No newline at end of file" after the hunk's last line
// so far: it is the last line of the old side, the new side, or both.
func markNoEOL(h *hunk) {
	switch h.Lines[len(h.Lines)-1].Op {
	case '-':
		h.OldNoEOL = true
	case '+':
		h.NewNoEOL = true
	default:
		h.OldNoEOL, h.NewNoEOL = true, true
	}
}

// hunkRange reads "l,n" or "l" (n = 1).
func hunkRange(s string) (start, count int, err error) {
	a, b, hasCount := strings.Cut(s, ",")
	start, err = strconv.Atoi(a)
	if err != nil || start < 0 || start > 1<<30 {
		return 0, 0, fmt.Errorf("bad line number %q in a hunk header", a)
	}
	count = 1
	if hasCount {
		count, err = strconv.Atoi(b)
		if err != nil || count < 0 || count > 1<<30 {
			return 0, 0, fmt.Errorf("bad line count %q in a hunk header", b)
		}
	}
	return start, count, nil
}

// fileLines splits content into lines without their "\n"; noEOL reports a
// last line without one.
func fileLines(content []byte) (lines []string, noEOL bool) {
	if len(content) == 0 {
		return nil, false
	}
	s := string(content)
	noEOL = !strings.HasSuffix(s, "\n")
	s = strings.TrimSuffix(s, "\n")
	return strings.Split(s, "\n"), noEOL
}

// applyFile applies fp to the file's content (nil for a new file) and
// returns the new content.
func applyFile(content []byte, fp filePatch) ([]byte, error) {
	lines, noEOL := fileLines(content)
	// CRLF: every line that ends in a newline ends in "\r\n" (and one does).
	ended := len(lines)
	if noEOL {
		ended--
	}
	crlf := ended > 0
	for _, l := range lines[:max(0, ended)] {
		if !strings.HasSuffix(l, "\r") {
			crlf = false
			break
		}
	}
	if crlf { // compare and write without the CRs; put them back at the end
		for i := range lines {
			lines[i] = strings.TrimSuffix(lines[i], "\r")
		}
	}
	var out []string
	pos := 0 // lines[:pos] are done
	newNoEOL := noEOL
	for n, h := range fp.Hunks {
		var old, repl []string
		for _, l := range h.Lines {
			if l.Op != '+' {
				old = append(old, strings.TrimSuffix(l.Text, "\r"))
			}
			if l.Op != '-' {
				repl = append(repl, strings.TrimSuffix(l.Text, "\r"))
			}
		}
		at, err := locate(lines, pos, old, h, n+1)
		if err != nil {
			return nil, err
		}
		out = append(out, lines[pos:at]...)
		out = append(out, repl...)
		pos = at + len(old)
		if pos == len(lines) {
			// The hunk reaches the end of the file. A patch that marks
			// neither side keeps the file's own last newline (models rarely
			// write the marker); a marker that contradicts the file refuses.
			if h.OldNoEOL && !noEOL && len(lines) > 0 {
				return nil, fmt.Errorf("hunk %d: the patch says the file's last line has no newline, but it has one", n+1)
			}
			if h.OldNoEOL || h.NewNoEOL {
				newNoEOL = h.NewNoEOL
			}
		} else if h.OldNoEOL {
			return nil, fmt.Errorf("hunk %d: the patch marks a line in the middle of the file as the last one", n+1)
		}
	}
	out = append(out, lines[pos:]...)
	if fp.Delete() {
		if len(out) > 0 {
			return nil, fmt.Errorf("the patch deletes %s but does not remove all its lines", fp.Path())
		}
		return nil, nil
	}
	if len(out) == 0 {
		return []byte{}, nil
	}
	eol := "\n"
	if crlf {
		eol = "\r\n"
	}
	var b bytes.Buffer
	for i, l := range out {
		b.WriteString(l)
		if i < len(out)-1 || !newNoEOL {
			b.WriteString(eol)
		}
	}
	return b.Bytes(), nil
}

// locate finds where a hunk's old lines sit, at or after from: at the line
// its header names, else at the one other place they occur.
func locate(lines []string, from int, old []string, h hunk, n int) (int, error) {
	want := h.OldStart - 1
	if h.OldCount == 0 {
		want = h.OldStart // an insertion goes after line OldStart
	}
	if len(old) == 0 {
		if want < from || want > len(lines) {
			return 0, fmt.Errorf("hunk %d inserts after line %d, but the file has %d lines", n, h.OldStart, len(lines))
		}
		return want, nil
	}
	if want >= from && matchAt(lines, want, old) {
		return want, nil
	}
	var found []int
	for i := from; i+len(old) <= len(lines); i++ {
		if matchAt(lines, i, old) {
			found = append(found, i)
			if len(found) > 1 {
				break
			}
		}
	}
	switch len(found) {
	case 0:
		return 0, fmt.Errorf("hunk %d (%q) does not match the file: its context and removed lines are not there as written; read the file again and make the patch from its current text",
			n, clip([]byte(old[0]), 60))
	case 1:
		return found[0], nil
	default:
		return 0, fmt.Errorf("hunk %d does not match at line %d, and its lines occur more than once further on; give the right line numbers or more context", n, h.OldStart)
	}
}

func matchAt(lines []string, at int, old []string) bool {
	if at < 0 || at+len(old) > len(lines) {
		return false
	}
	for i, l := range old {
		if lines[at+i] != l {
			return false
		}
	}
	return true
}
