package authz

import (
	"strings"
	"testing"
)

func TestPasswordProblem(t *testing.T) {
	for _, c := range []struct {
		pw string
		ok bool
	}{
		{"correct horse", true},
		{"pw-u1-secret", true},
		{"éàéàéàéà", true},       // 8 characters, 16 bytes
		{"éééé", false},          // 8 bytes, 4 characters
		{"        ", false},      // 8 spaces
		{"aaaaaaaaaaaa", false},  // one character repeated
		{"password", false},      // common
		{"PassWord", false},      // common, any case
		{"12345678", false},      // common
		{"pass\x00word9", false}, // control character
		{"with\ttab and", false}, // control character
		{string([]byte{0xff, 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'}), false},
		{strings.Repeat("ab", 512), true},
		{strings.Repeat("ab", 512) + "c", false},
	} {
		if got := PasswordProblem(c.pw); (got == "") != c.ok {
			t.Errorf("PasswordProblem(%q) = %q, want ok=%v", c.pw, got, c.ok)
		}
	}
}
