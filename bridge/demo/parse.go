package demo

import (
	"path"
	"regexp"
	"strings"
	"unicode/utf8"
)

// The demo reads its instructions from the envelope the bridge hands it: plain
// text with header lines. It looks for them anywhere in the text, except
// inside ``` fences, where the envelope puts quoted or pasted text: that is
// data, never an instruction.

// deleteRE finds "delete X", "remove X", "rm [-flags] X", optionally with
// "the" and "file" before the name.
var deleteRE = regexp.MustCompile(`(?i)\b(?:delete|remove|rm)\s+(?:-[a-z]+\s+)*(?:the\s+)?(?:file\s+)?([A-Za-z0-9_./-]*[A-Za-z0-9_])`)

// headerRE matches an envelope header line such as "From: @alice".
var headerRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9 _-]{0,30}:(\s|$)`)

// unfenced returns the sender's own lines: inside a Wheelhouse envelope
// (authz.Envelope) the "| "-prefixed lines outside DATA fences, with
// leading @mentions dropped; in plain text the lines outside ``` fences.
func unfenced(text string) []string {
	if strings.Contains(text, "=== Wheelhouse message ") {
		return envelopeLines(text)
	}
	var out []string
	inFence := false
	for line := range strings.Lines(text) {
		line = strings.TrimRight(line, "\r\n")
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			continue
		}
		if !inFence {
			out = append(out, line)
		}
	}
	return out
}

// deleteTargets returns the files text asks to delete, in order, without
// duplicates. A name counts if it names a file in known or looks like a file
// name (has a dot or a slash); "delete everything" asks for nothing.
func deleteTargets(text string, known func(string) bool) []string {
	var names []string
	seen := map[string]bool{}
	for _, line := range unfenced(text) {
		for _, m := range deleteRE.FindAllStringSubmatch(line, -1) {
			name := cleanName(m[1])
			if name == "" || seen[name] {
				continue
			}
			if !known(name) && !strings.ContainsAny(name, "./") {
				continue
			}
			seen[name] = true
			names = append(names, name)
		}
	}
	return names
}

// cleanName turns "./old.log" into "old.log"; it returns "" for names that
// leave the workspace or name nothing.
func cleanName(s string) string {
	s = path.Clean(strings.TrimPrefix(s, "./"))
	if s == "." || s == ".." || strings.HasPrefix(s, "../") || strings.HasPrefix(s, "/") {
		return ""
	}
	return s
}

// instruction picks the line of text most likely to be the sender's words:
// the last non-empty line outside fences that is not a header, shortened to
// fit in a progress line.
func instruction(text string) string {
	lines := unfenced(text)
	pick := ""
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l == "" || strings.Trim(l, "-=*#_~") == "" {
			continue
		}
		if pick == "" {
			pick = l // fallback: the last non-empty line
		}
		if !headerRE.MatchString(l) {
			pick = l
			break
		}
	}
	return shorten(pick, 160)
}

// shorten cuts s to at most n runes, marking the cut.
func shorten(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

var leadingMentions = regexp.MustCompile(`^(?:@[A-Za-z0-9_./-]+[,:]?\s*)+`)

func envelopeLines(text string) []string {
	var out []string
	inData := false
	for line := range strings.Lines(text) {
		line = strings.TrimRight(line, "\r\n")
		switch {
		case strings.HasPrefix(line, "<<<DATA-"):
			inData = true
		case strings.HasPrefix(line, "DATA-") && strings.HasSuffix(line, ">>>"):
			inData = false
		case !inData && strings.HasPrefix(line, "| "):
			l := strings.TrimPrefix(line, "| ")
			if strings.HasPrefix(strings.TrimSpace(l), "```") {
				continue
			}
			out = append(out, leadingMentions.ReplaceAllString(l, ""))
		}
	}
	return out
}
