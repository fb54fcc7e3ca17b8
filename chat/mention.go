package chat

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/wheelhouse-dev/wheelhouse/authz"
)

// Mention is one @mention in a message's text: a user (@alice) or an agent
// (@owner/agent). Names are lower-cased; Start and End are byte offsets of
// the whole mention, '@' included.
type Mention struct {
	Kind  string `json:"kind"` // MentionUser or MentionAgent
	User  string `json:"user,omitempty"`
	Owner string `json:"owner,omitempty"`
	Agent string `json:"agent,omitempty"`
	Start int    `json:"start"`
	End   int    `json:"end"`
}

// Mention kinds.
const (
	MentionUser  = "user"
	MentionAgent = "agent"
)

// Part is a span of a message's text (byte offsets, End exclusive) that the
// sender quoted, pasted or forwarded; the envelope fences it as data. It is
// authz.Part: the parser lives in authz, which the bridge imports too.
type Part = authz.Part

// Part kinds.
const (
	PartCode      = authz.PartCode
	PartQuote     = authz.PartQuote
	PartForwarded = authz.PartForwarded
)

// QuotedParts returns the spans of text the sender quoted, pasted or
// forwarded (authz.QuotedParts: one parser for the hub and the bridge).
func QuotedParts(text string) []Part { return authz.QuotedParts(text) }

// maxName is the longest user or agent name: [a-z0-9][a-z0-9_.-]{0,31}.
const maxName = 32

// ParseMentions returns the mentions in text, in order. Mentions inside code
// (fenced blocks and `inline spans`), inside quoted ("> ") or forwarded text
// and inside e-mail addresses are not mentions: quoting or pasting someone
// else's words never addresses anyone. An agent mentioned twice appears once
// (its first occurrence); user mentions are all kept. A name's trailing '.'
// or '-' is read as punctuation ("thanks @bob.").
func ParseMentions(text string) []Mention {
	skip := QuotedParts(text)
	skip = append(skip, codeSpans(text, skip)...)
	slices.SortFunc(skip, func(a, b Part) int { return a.Start - b.Start })
	var out []Mention
	seen := map[string]bool{}
	next := 0 // first span in skip that may still contain i
	for i := 0; i < len(text); i++ {
		if text[i] != '@' {
			continue
		}
		for next < len(skip) && skip[next].End <= i {
			next++
		}
		if next < len(skip) && skip[next].Start <= i || !mentionMayStart(text, i) {
			continue
		}
		m, ok := parseMention(text, i)
		if !ok {
			continue
		}
		if m.Kind == MentionAgent {
			key := m.Owner + "/" + m.Agent
			if seen[key] {
				continue
			}
			seen[key] = true
		}
		out = append(out, m)
		i = m.End - 1
	}
	return out
}

// mentionMayStart reports whether the '@' at i may open a mention: it must
// not follow a word character (that is an e-mail address, a path or a
// handle fragment).
func mentionMayStart(text string, i int) bool {
	if i == 0 {
		return true
	}
	r, _ := utf8.DecodeLastRuneInString(text[:i])
	return !(isNameByte(r) || r == '/' || r == '@' || r == '`' || r == '\\' || unicode.IsLetter(r) || unicode.IsDigit(r))
}

func parseMention(text string, at int) (Mention, bool) {
	user, end, ok := scanName(text, at+1)
	if !ok {
		return Mention{}, false
	}
	if end < len(text) && text[end] == '/' {
		agent, aend, ok := scanName(text, end+1)
		if !ok || (aend < len(text) && (text[aend] == '/' || text[aend] == '@')) {
			return Mention{}, false
		}
		return Mention{Kind: MentionAgent, Owner: user, Agent: agent, Start: at, End: aend}, true
	}
	if end < len(text) && text[end] == '@' {
		return Mention{}, false // user@host
	}
	return Mention{Kind: MentionUser, User: user, Start: at, End: end}, true
}

// scanName reads a name at i: the longest run of name characters, less any
// trailing '.' or '-'. It fails if the run is followed by '@' or '/' after a
// trimmed tail, is empty, too long, or does not start with a letter/digit.
func scanName(text string, i int) (name string, end int, ok bool) {
	j := i
	for j < len(text) && isNameByte(rune(text[j])) {
		j++
	}
	end = j
	for end > i && (text[end-1] == '.' || text[end-1] == '-') {
		end--
	}
	if end < j && j < len(text) && (text[j] == '@' || text[j] == '/') {
		return "", 0, false
	}
	if r, _ := utf8.DecodeRuneInString(text[j:]); j < len(text) && unicode.Is(unicode.M, r) {
		// A combining mark changes the name's last letter ("@alice/demó"
		// is not @alice/demo): no name at all.
		return "", 0, false
	}
	n := end - i
	if n == 0 || n > maxName || !isAlnum(text[i]) {
		return "", 0, false
	}
	return strings.ToLower(text[i:end]), end, true
}

func isNameByte(r rune) bool {
	return r < utf8.RuneSelf && (isAlnum(byte(r)) || r == '_' || r == '.' || r == '-')
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// IsStopCommand reports whether text is just "@owner/agent stop" (ASCII
// case-insensitive, surrounding space, an optional ':' or ',' after the
// handle and trailing '.' or '!' allowed).
func IsStopCommand(text, owner, agent string) bool {
	if owner == "" || agent == "" {
		return false
	}
	s := strings.TrimRight(strings.TrimSpace(text), ".!")
	handle := "@" + owner + "/" + agent
	if len(s) < len(handle) || !authz.ASCIIEqualFold(s[:len(handle)], handle) {
		return false
	}
	rest := s[len(handle):]
	sep := strings.TrimLeft(rest, ":,")
	if len(rest)-len(sep) > 1 {
		return false
	}
	word := strings.TrimSpace(sep)
	if word == sep && len(sep) == len(rest) {
		return false // "@bob/codexstop"
	}
	return authz.ASCIIEqualFold(word, "stop")
}

// codeSpans returns the `inline code` spans outside the fenced blocks among
// parts: a run of n backticks up to the next run of exactly n.
func codeSpans(text string, parts []Part) []Part {
	var spans []Part
	a := 0
	scan := func(b int) {
		for i := a; i < b; {
			if text[i] != '`' {
				i++
				continue
			}
			n := authz.Backticks(text[i:b])
			closed := -1
			for k := i + n; k < b; {
				if text[k] != '`' {
					k++
					continue
				}
				m := authz.Backticks(text[k:b])
				if m == n {
					closed = k + m
					break
				}
				k += m
			}
			if closed < 0 {
				i += n
				continue
			}
			spans = append(spans, Part{Kind: PartCode, Start: i, End: closed})
			i = closed
		}
	}
	for _, p := range parts {
		if p.Kind == PartCode {
			scan(p.Start)
			a = p.End
		}
	}
	scan(len(text))
	return spans
}
