package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"html"
	"strings"
	"unicode"
	"unicode/utf8"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/chat"
)

// Bounds on a search.
const (
	MaxSearchQuery  = 256
	MaxSearchTerms  = 16
	DefaultSearch   = 20
	MaxSearchLimit  = 100
	snippetTokens   = 16
	markChar        = "\x02" // starts a mark (markMarks); dropped from message text
	markEnd         = "\x03" // dropped from message text too
	snippetEllipsis = "…"
)

// FTSQuery turns what a person typed into an FTS5 query: every word is a
// term (all must match), "a quoted phrase" matches as a phrase, and a word
// or phrase ending in * matches as a prefix. Each term is quoted as an FTS5
// string, so nothing the person types is FTS5 syntax (a "/" or "-" in a word
// is just part of it; a lone * or quote matches nothing and is dropped).
func FTSQuery(q string) (string, error) {
	if len(q) > MaxSearchQuery {
		return "", wh.Errorf(wh.EInvalid, "the search is longer than %d bytes", MaxSearchQuery)
	}
	if !utf8.ValidString(q) {
		return "", wh.Errorf(wh.EInvalid, "the search is not valid UTF-8")
	}
	// A control character (NUL ends an FTS5 string) separates words, as a
	// space does: it is never part of a term.
	q = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, q)
	var terms []string
	add := func(t string, prefix bool) {
		t = strings.TrimSpace(t)
		if !hasWordChar(t) {
			return
		}
		term := `"` + strings.ReplaceAll(t, `"`, `""`) + `"`
		if prefix {
			term += "*"
		}
		terms = append(terms, term)
	}
	for i := 0; i < len(q); {
		r, w := utf8.DecodeRuneInString(q[i:])
		switch {
		case unicode.IsSpace(r):
			i += w
		case r == '"':
			end := strings.IndexByte(q[i+1:], '"')
			phrase := q[i+1:]
			next := len(q)
			if end >= 0 {
				phrase, next = q[i+1:i+1+end], i+1+end+1
			}
			prefix := next < len(q) && q[next] == '*'
			if prefix {
				next++
			}
			add(phrase, prefix)
			i = next
		default:
			j := i
			for j < len(q) {
				r, w := utf8.DecodeRuneInString(q[j:])
				if unicode.IsSpace(r) || r == '"' {
					break
				}
				j += w
			}
			word := q[i:j]
			add(strings.TrimRight(word, "*"), strings.HasSuffix(word, "*"))
			i = j
		}
	}
	if len(terms) == 0 {
		return "", wh.Errorf(wh.EInvalid, "search for at least one word")
	}
	if len(terms) > MaxSearchTerms {
		return "", wh.Errorf(wh.EInvalid, "search for at most %d words or phrases", MaxSearchTerms)
	}
	return strings.Join(terms, " "), nil
}

// hasWordChar: the tokenizer indexes letters and digits only.
func hasWordChar(s string) bool {
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return true
		}
	}
	return false
}

// SearchQuery is one search by one user.
type SearchQuery struct {
	UserID int64
	Match  string // an FTS5 query (FTSQuery)
	RoomID int64  // 0: every room the user is a member of
	From   string // author (user name or owner/agent); "" any
	Before int64  // page back: results older than this id (0: newest)
	Limit  int
}

// SearchResult is one message found, with a snippet of its text around the
// match: HTML-escaped, the matched words in <mark>…</mark>.
type SearchResult struct {
	Message chat.Message `json:"message"`
	Snippet string       `json:"snippet"`
}

// Search finds messages, newest first, in the rooms the user is a member
// of now (leaving a room takes its messages out of the user's results).
// Deleted messages are not found; an edited one is found by its new text.
func (s *Store) Search(ctx context.Context, q SearchQuery) ([]SearchResult, error) {
	if q.Limit <= 0 {
		q.Limit = DefaultSearch
	}
	q.Limit = min(q.Limit, MaxSearchLimit)
	where := `messages_fts MATCH ? AND m.deleted = 0 AND m.room_id IN (SELECT room_id FROM members WHERE user_id = ?)`
	args := []any{q.Match, q.UserID}
	if q.RoomID != 0 {
		where += ` AND m.room_id = ?`
		args = append(args, q.RoomID)
	}
	if q.From != "" {
		where += ` AND m.author = ?`
		args = append(args, q.From)
	}
	if q.Before > 0 {
		where += ` AND messages_fts.rowid < ?`
		args = append(args, q.Before)
	}
	open, close := snippetMarks()
	rows, err := s.db.r.QueryContext(ctx, `SELECT messages_fts.rowid, snippet(messages_fts, 0, ?, ?, '`+snippetEllipsis+`', `+itoa(snippetTokens)+`)
		FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid WHERE `+where+` ORDER BY messages_fts.rowid DESC LIMIT ?`, append(append([]any{open, close}, args...), q.Limit)...)
	if err != nil {
		if strings.Contains(err.Error(), "fts5") {
			return nil, wh.Errorf(wh.EInvalid, "the search could not be read; use words, \"a phrase\" or a prefix*")
		}
		return nil, wh.Wrap(err, "search")
	}
	var ids []int64
	snippets := map[int64]string{}
	for rows.Next() {
		var id int64
		var snip string
		if err := rows.Scan(&id, &snip); err != nil {
			rows.Close()
			return nil, wh.Wrap(err, "search")
		}
		ids = append(ids, id)
		snippets[id] = markSnippet(snip, open, close)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, wh.Wrap(err, "search")
	}
	out := []SearchResult{}
	if len(ids) == 0 {
		return out, nil
	}
	ph, args := placeholders(ids)
	ms, err := messagesWith(ctx, s.db.r, `SELECT `+messageCols+` WHERE m.id IN (`+ph+`) ORDER BY m.id DESC`, args...)
	if err != nil {
		return nil, err
	}
	for _, m := range ms {
		out = append(out, SearchResult{Message: m, Snippet: snippets[m.ID]})
	}
	return out, nil
}

// snippetMarks are the match marks of one search: a control character and
// a fresh nonce, so that no message text can contain them (a message can
// hold \x02, never a nonce it cannot know).
func snippetMarks() (open, close string) {
	var b [8]byte
	rand.Read(b[:])
	n := hex.EncodeToString(b[:])
	return markChar + n + "[", markChar + n + "]"
}

// markSnippet escapes a snippet for HTML and turns the match marks (open,
// close) into <mark> elements, balanced: the text itself can add none (the
// mark characters in a message are dropped).
func markSnippet(s, open, close string) string {
	var b strings.Builder
	text := func(t string) {
		t = strings.NewReplacer(markChar, "", markEnd, "").Replace(t)
		b.WriteString(html.EscapeString(t))
	}
	in := false
	for len(s) > 0 {
		i, j := strings.Index(s, open), strings.Index(s, close)
		if i < 0 && j < 0 {
			text(s)
			break
		}
		isOpen := i >= 0 && (j < 0 || i < j)
		k, mark := j, close
		if isOpen {
			k, mark = i, open
		}
		text(s[:k])
		switch {
		case isOpen && !in:
			b.WriteString("<mark>")
			in = true
		case !isOpen && in:
			b.WriteString("</mark>")
			in = false
		}
		s = s[k+len(mark):]
	}
	if in {
		b.WriteString("</mark>")
	}
	return b.String()
}
