package chat

import (
	"unicode"
	"unicode/utf8"
)

// Bounds on a reaction's emoji.
const (
	MaxEmojiBytes = 64
	MaxEmojiRunes = 16
)

// ValidEmoji reports whether s may be a reaction: 1 to 16 characters (at
// most 64 bytes) of valid UTF-8 with no control or format characters (the
// zero-width joiner of emoji sequences excepted), no spaces and no '/'.
// Any such string is allowed (":shipit:" as well as "👍🏽"); the UI shows it
// as text.
func ValidEmoji(s string) bool {
	if s == "" || len(s) > MaxEmojiBytes || !utf8.ValidString(s) || utf8.RuneCountInString(s) > MaxEmojiRunes {
		return false
	}
	for _, r := range s {
		switch {
		case r == '\u200d': // ZWJ, joins emoji sequences
		case r == '/' || r == '\\':
			return false
		case unicode.IsControl(r), unicode.IsSpace(r), unicode.Is(unicode.Cf, r), unicode.Is(unicode.Co, r), unicode.Is(unicode.Cs, r):
			return false
		case r == utf8.RuneError:
			return false
		}
	}
	return true
}
