package chat

import (
	"strings"
	"testing"
)

func TestValidEmoji(t *testing.T) {
	for _, s := range []string{"👍", "👍🏽", "👨‍👩‍👧", ":shipit:", "+1", "❤️", "ok"} {
		if !ValidEmoji(s) {
			t.Errorf("%q refused", s)
		}
	}
	for _, s := range []string{"", "a b", "x\n", "\u0007", "a/b", `a\b`, "\u202e", "\u200b", strings.Repeat("x", 17), strings.Repeat("é", 40), "\xff"} {
		if ValidEmoji(s) {
			t.Errorf("%q accepted", s)
		}
	}
}
