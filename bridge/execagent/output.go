package execagent

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"unicode/utf8"
)

// MaxOutput caps the message a turn reports, in bytes.
const MaxOutput = 16 << 10

// stderrTail is how much of stderr a failed turn reports, from the end.
const stderrTail = 2 << 10

// headBuffer keeps the first max bytes written and counts the rest. It never
// fails a write, so the command never sees a broken pipe.
type headBuffer struct {
	buf   []byte
	max   int
	total int
}

func (b *headBuffer) Write(p []byte) (int, error) {
	b.total += len(p)
	if room := b.max - len(b.buf); room > 0 {
		b.buf = append(b.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// tailBuffer keeps the last max bytes written.
type tailBuffer struct {
	buf   []byte
	max   int
	total int
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.total += len(p)
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

// formatOutput is stdout as the turn's message: trimmed, valid UTF-8, at most
// MaxOutput bytes, with a note when cut.
func formatOutput(b *headBuffer) string {
	s := strings.TrimSpace(strings.ToValidUTF8(string(b.buf), "\uFFFD"))
	cut := b.total > len(b.buf)
	if len(s) > MaxOutput {
		s = cutRunes(s, MaxOutput)
		cut = true
	}
	if cut {
		s = strings.TrimSpace(s) + fmt.Sprintf("\n\n[output truncated: showing the first %d of %d bytes]", len(s), b.total)
	}
	return s
}

// cutRunes returns the longest prefix of s of at most n bytes that does not
// split a rune.
func cutRunes(s string, n int) string {
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// failure says why a command failed, with the end of its stderr.
func failure(err error, stderr *tailBuffer) string {
	msg := err.Error()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.Exited() {
		msg = fmt.Sprintf("exit status %d", ee.ExitCode())
	}
	tail := strings.TrimSpace(strings.ToValidUTF8(string(stderr.buf), "\uFFFD"))
	if tail == "" {
		return msg
	}
	if stderr.total > len(stderr.buf) {
		tail = "…" + tail
	}
	return msg + "; stderr: " + tail
}
