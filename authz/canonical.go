package authz

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gowebpki/jcs"
)

// Canonicalize returns the RFC 8785 (JSON Canonicalization Scheme) form of
// raw: object members sorted by UTF-16 code units, no insignificant
// whitespace, numbers in ECMAScript form (4.50 → 4.5, 1e30 → 1e+30,
// -0 → 0), strings with the minimal escapes. Invalid JSON, invalid UTF-8,
// duplicate keys and numbers outside the IEEE 754 double range are errors.
func Canonicalize(raw []byte) ([]byte, error) {
	if !utf8.Valid(raw) {
		return nil, errors.New("canonical json: input is not valid UTF-8")
	}
	if !json.Valid(raw) {
		return nil, errors.New("canonical json: input is not valid JSON")
	}
	out, err := jcs.Transform(raw)
	if err != nil {
		return nil, fmt.Errorf("canonical json: %w", err)
	}
	return out, nil
}

// PayloadHash is what an approval is bound to: the lower-case hex SHA-256 of
// the canonical JSON of {"args":args,"tool":tool}, returned with that
// canonical JSON. Args that encode as JSON null become {} so a nil map and
// an empty one are the same call.
//
// Two different calls must never share a hash, so PayloadHash refuses what
// canonical JSON would silently merge: numbers that do not survive the trip
// through a double (9007199254740993, 0.10000000000000000001) and strings
// that are not valid UTF-8 (encoding/json would turn every bad byte into
// U+FFFD).
func PayloadHash(tool string, args any) (hash string, canonical []byte, err error) {
	a, err := json.Marshal(args)
	if err != nil {
		return "", nil, fmt.Errorf("payload hash: args: %w", err)
	}
	if bytes.Equal(a, []byte("null")) {
		a = []byte("{}")
	}
	if err := checkExact(a); err != nil {
		return "", nil, fmt.Errorf("payload hash: %w", err)
	}
	t, err := json.Marshal(tool)
	if err != nil {
		return "", nil, fmt.Errorf("payload hash: tool: %w", err)
	}
	if !utf8.ValidString(tool) {
		return "", nil, errors.New("payload hash: tool name is not valid UTF-8")
	}
	raw := make([]byte, 0, len(a)+len(t)+20)
	raw = append(raw, `{"tool":`...)
	raw = append(raw, t...)
	raw = append(raw, `,"args":`...)
	raw = append(raw, a...)
	raw = append(raw, '}')
	canonical, err = Canonicalize(raw)
	if err != nil {
		return "", nil, fmt.Errorf("payload hash: %w", err)
	}
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:]), canonical, nil
}

// checkExact rejects JSON (as encoding/json wrote it) holding a \ufffd
// escape — the mark of invalid UTF-8 in a Go string — or a number whose
// value changes on the way through a double.
func checkExact(doc []byte) error {
	for i := 0; i < len(doc); i++ {
		if doc[i] != '\\' {
			continue
		}
		if i+5 < len(doc) && doc[i+1] == 'u' && bytes.EqualFold(doc[i+2:i+6], []byte("fffd")) {
			return errors.New("args hold a string that is not valid UTF-8")
		}
		i++ // skip the escaped character
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if n, ok := tok.(json.Number); ok && !exactNumber(string(n)) {
			return fmt.Errorf("number %.40s cannot be hashed exactly (it does not survive a double); pass it as a string", n)
		}
	}
}

// exactNumber reports whether the decimal literal n has the same value as the
// shortest decimal form of the double nearest to it.
func exactNumber(n string) bool {
	f, err := strconv.ParseFloat(n, 64)
	if err != nil {
		return false
	}
	want, ok := decimalForm(n)
	if !ok {
		return false
	}
	got, _ := decimalForm(strconv.FormatFloat(f, 'g', -1, 64))
	return want == got
}

// decimalForm writes a JSON number as sign, significant digits and a
// power of ten ("-45e-1" for -4.50), so equal values compare equal as text.
func decimalForm(n string) (string, bool) {
	neg := strings.HasPrefix(n, "-")
	n = strings.TrimPrefix(n, "-")
	exp := 0
	if i := strings.IndexAny(n, "eE"); i >= 0 {
		e, err := strconv.Atoi(strings.TrimPrefix(n[i+1:], "+"))
		if err != nil {
			return "", false
		}
		exp, n = e, n[:i]
	}
	intPart, frac, _ := strings.Cut(n, ".")
	digits := strings.TrimLeft(intPart+frac, "0")
	exp -= len(frac)
	for strings.HasSuffix(digits, "0") {
		digits = digits[:len(digits)-1]
		exp++
	}
	if digits == "" {
		return "0", true
	}
	sign := ""
	if neg {
		sign = "-"
	}
	return sign + digits + "e" + strconv.Itoa(exp), true
}
