package authz

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Password bounds: counted in characters (runes), not bytes; the upper
// bound is bytes (what the hash reads).
const (
	MinPasswordRunes = 8
	MaxPasswordBytes = 1024
)

// commonPasswords are refused whatever their case: the first ones any
// guesser tries (the head of the public breach lists) and this product's
// own name.
var commonPasswords = map[string]bool{}

func init() {
	for _, p := range strings.Fields(`password password1 password12 password123 passw0rd p@ssw0rd p@ssword
		12345678 123456789 1234567890 0123456789 87654321 12341234 11223344 12121212 123123123 147258369
		11111111 00000000 99999999 qwertyui qwertyuiop qwerty12 qwerty123 qwerty1234 1q2w3e4r 1qaz2wsx zaq12wsx
		asdfghjk asdfasdf asdf1234 zxcvbnm1 abcd1234 abc12345 abcdefgh iloveyou iloveyou1 sunshine princess
		football baseball superman batman12 trustno1 letmein1 letmein123 welcome1 welcome123 changeme changeme1
		admin123 administrator secret12 secret123 monkey12 dragon12 whatever starwars computer internet
		michael1 jennifer jordan23 master12 shadow12 mustang1 liverpool chelsea1 arsenal1 samsung1 google123
		wheelhouse wheelhouse1 wheelhouse123`) {
		commonPasswords[p] = true
	}
}

// PasswordProblem says what is wrong with pw as a new password, "" when
// nothing: at least MinPasswordRunes characters that are not all spaces
// or one repeated character, no control characters, at most
// MaxPasswordBytes bytes, and not one of the most common passwords.
func PasswordProblem(pw string) string {
	switch {
	case !utf8.ValidString(pw):
		return "the password is not valid UTF-8"
	case len(pw) > MaxPasswordBytes:
		return fmt.Sprintf("the password is too long (at most %d bytes)", MaxPasswordBytes)
	case utf8.RuneCountInString(pw) < MinPasswordRunes:
		return fmt.Sprintf("the password must have at least %d characters", MinPasswordRunes)
	}
	for _, r := range pw {
		if unicode.IsControl(r) {
			return "the password must not contain control characters"
		}
	}
	first, _ := utf8.DecodeRuneInString(pw)
	if strings.Trim(pw, string(first)) == "" || strings.TrimSpace(pw) == "" {
		return "the password must not be one character repeated"
	}
	if commonPasswords[strings.ToLower(strings.TrimSpace(pw))] {
		return "that password is one of the first any guesser tries: choose another"
	}
	return ""
}
