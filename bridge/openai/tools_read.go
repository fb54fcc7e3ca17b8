package openai

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strings"
)

// The read-only tools: they run without asking, inside the agent's dir.

func (e *toolEnv) list(call toolCall) toolOutcome {
	var a struct {
		Path      string `json:"path"`
		Recursive bool   `json:"recursive"`
	}
	if _, err := decodeArgs(toolList, call.Function.Arguments, &a); err != nil {
		return toolError("list_files: bad arguments", "%v", err)
	}
	rel, err := e.ws.rel(a.Path)
	if err != nil {
		return toolError("list_files "+a.Path+": refused", "%v", err)
	}
	summary := "list_files " + rel
	fi, err := e.ws.root.Stat(rel)
	if err != nil {
		return toolError(summary, "%v", e.ws.explain(rel, err))
	}
	if !fi.IsDir() {
		return toolError(summary, "%s is not a directory", rel)
	}
	var lines []string
	more := 0
	add := func(p string, d fs.DirEntry) {
		if len(lines) >= maxListEntries {
			more++
			return
		}
		switch {
		case d.IsDir():
			lines = append(lines, p+"/")
		case d.Type()&fs.ModeSymlink != 0:
			lines = append(lines, p+" (symbolic link)")
		default:
			size := ""
			if info, err := d.Info(); err == nil {
				size = fmt.Sprintf(" (%d bytes)", info.Size())
			}
			lines = append(lines, p+size)
		}
	}
	fsys := e.ws.root.FS()
	if a.Recursive {
		err = fs.WalkDir(fsys, rel, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if p == rel {
					return err
				}
				return nil // unreadable below: skip it
			}
			if p == rel {
				return nil
			}
			if d.IsDir() && d.Name() == ".git" {
				return fs.SkipDir
			}
			add(p, d)
			return nil
		})
	} else {
		var ents []fs.DirEntry
		ents, err = fs.ReadDir(fsys, rel)
		for _, d := range ents {
			add(pathJoin(rel, d.Name()), d)
		}
	}
	if err != nil {
		return toolError(summary, "%v", e.ws.explain(rel, err))
	}
	if len(lines) == 0 {
		return toolOutcome{Output: rel + " is empty", Summary: summary}
	}
	sort.Strings(lines)
	if more > 0 {
		lines = append(lines, fmt.Sprintf("… and %d more", more))
	}
	return toolOutcome{Output: strings.Join(lines, "\n"), Summary: fmt.Sprintf("%s (%d entries)", summary, len(lines))}
}

func pathJoin(dir, name string) string {
	if dir == "." {
		return name
	}
	return dir + "/" + name
}

func (e *toolEnv) read(call toolCall) toolOutcome {
	var a struct {
		Path      string `json:"path"`
		StartLine int    `json:"start_line"`
		EndLine   int    `json:"end_line"`
	}
	if _, err := decodeArgs(toolRead, call.Function.Arguments, &a); err != nil {
		return toolError("read_file: bad arguments", "%v", err)
	}
	rel, err := e.ws.rel(a.Path)
	if err != nil {
		return toolError("read_file "+a.Path+": refused", "%v", err)
	}
	summary := "read_file " + rel
	b, err := e.ws.readFile(rel)
	if err != nil {
		return toolError(summary, "%v", err)
	}
	if isBinary(b) {
		return toolOutcome{Output: fmt.Sprintf("%s is a binary file of %d bytes; not shown", rel, len(b)), Summary: summary + " (binary)"}
	}
	lines, _ := fileLines(b)
	n := len(lines)
	from, to := 1, n
	if a.StartLine > 0 {
		from = a.StartLine
	}
	if a.EndLine > 0 {
		to = min(a.EndLine, n)
	}
	if a.StartLine < 0 || a.EndLine < 0 || (a.EndLine > 0 && a.EndLine < from) {
		return toolError(summary, "start_line and end_line are 1-based, with start_line ≤ end_line")
	}
	if n == 0 {
		return toolOutcome{Output: rel + " is empty", Summary: summary + " (empty)"}
	}
	if from > n {
		return toolError(summary, "%s has %d lines; start_line %d is past the end", rel, n, from)
	}
	text := strings.Join(lines[from-1:to], "\n")
	head := fmt.Sprintf("%s, lines %d-%d of %d:\n", rel, from, to, n)
	if from != 1 || to != n {
		summary += fmt.Sprintf(" (lines %d-%d)", from, to)
	}
	return toolOutcome{Output: head + text, Summary: summary}
}

func (e *toolEnv) search(ctx context.Context, call toolCall) toolOutcome {
	var a struct {
		Query      string `json:"query"`
		Path       string `json:"path"`
		Regex      bool   `json:"regex"`
		MaxResults int    `json:"max_results"`
	}
	if _, err := decodeArgs(toolSearch, call.Function.Arguments, &a); err != nil {
		return toolError("search_text: bad arguments", "%v", err)
	}
	summary := fmt.Sprintf("search_text %q", clip([]byte(a.Query), 60))
	if a.Query == "" {
		return toolError(summary, "the query is empty")
	}
	match := func(s string) bool { return strings.Contains(s, a.Query) }
	if a.Regex {
		re, err := regexp.Compile(a.Query)
		if err != nil {
			return toolError(summary, "bad regular expression (Go RE2 syntax): %v", err)
		}
		match = re.MatchString
	}
	limit := defSearchResults
	if a.MaxResults > 0 {
		limit = min(a.MaxResults, maxSearchResults)
	}
	rel, err := e.ws.rel(a.Path)
	if err != nil {
		return toolError(summary+": refused", "%v", err)
	}
	if rel != "." {
		summary += " in " + rel
	}
	var hits []string
	truncated := false
	searchFile := func(p string) {
		b, err := e.ws.readFile(p)
		if err != nil || len(b) > maxSearchFileSize || isBinary(b) {
			return
		}
		for i, line := range bytes.Split(b, []byte("\n")) {
			if match(string(line)) {
				if len(hits) >= limit {
					truncated = true
					return
				}
				hits = append(hits, fmt.Sprintf("%s:%d: %s", p, i+1, clip(bytes.TrimRight(line, "\r"), maxSearchLine)))
			}
		}
	}
	fi, err := e.ws.root.Stat(rel)
	if err != nil {
		return toolError(summary, "%v", e.ws.explain(rel, err))
	}
	if !fi.IsDir() {
		searchFile(rel)
	} else {
		err = fs.WalkDir(e.ws.root.FS(), rel, func(p string, d fs.DirEntry, err error) error {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err != nil {
				if p == rel {
					return err
				}
				return nil
			}
			if d.IsDir() && d.Name() == ".git" {
				return fs.SkipDir
			}
			if d.Type().IsRegular() {
				searchFile(p)
			}
			if truncated {
				return fs.SkipAll
			}
			return nil
		})
		if err != nil {
			return toolError(summary, "%v", e.ws.explain(rel, err))
		}
	}
	if len(hits) == 0 {
		return toolOutcome{Output: "no matches", Summary: summary + " (no matches)"}
	}
	out := strings.Join(hits, "\n")
	if truncated {
		out += fmt.Sprintf("\n… more matches left out (max_results %d)", limit)
	}
	return toolOutcome{Output: out, Summary: fmt.Sprintf("%s (%d matches)", summary, len(hits))}
}
