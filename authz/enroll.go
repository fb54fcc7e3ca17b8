package authz

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"strings"
)

// Enrolling a device: the bridge shows the owner a short code (out of
// band: on the bridge's own terminal); the owner types it on the device,
// which sends its public key through the hub with a MAC keyed by the code.
// The hub relays the request but cannot substitute its own key without the
// code, and cannot guess the code from the MAC in the code's lifetime: the
// MAC key is PBKDF2 of the code (50 bits) with EnrollIterations rounds, and
// the bridge kills a code after a few wrong tries.

// EnrollCodeLen is the number of characters of an enrollment code (5 bits
// each, shown as two groups of five).
const EnrollCodeLen = 10

// EnrollIterations is the PBKDF2-SHA256 work factor of the MAC key.
const EnrollIterations = 100_000

// enrollAlphabet is Crockford's base 32: no I, L, O or U.
const enrollAlphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// NewEnrollCode returns a fresh enrollment code, normalized (no dash).
func NewEnrollCode() string {
	b := make([]byte, EnrollCodeLen)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	for i := range b {
		b[i] = enrollAlphabet[b[i]&31]
	}
	return string(b)
}

// ShowEnrollCode formats a code for people: "ABCDE-FGHIJ".
func ShowEnrollCode(code string) string {
	if len(code) != EnrollCodeLen {
		return code
	}
	return code[:5] + "-" + code[5:]
}

// NormalizeEnrollCode reads a code as a person typed it: case, spaces and
// dashes do not matter, and O, I and L read as 0, 1 and 1.
func NormalizeEnrollCode(s string) string {
	var b strings.Builder
	for _, r := range strings.ToUpper(s) {
		switch {
		case r == ' ' || r == '-':
			continue
		case r == 'O':
			r = '0'
		case r == 'I' || r == 'L':
			r = '1'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Enrollment is what a device sends to be trusted, and what the MAC covers.
type Enrollment struct {
	Bridge       string `json:"bridge"`
	Name         string `json:"name"`
	Kind         string `json:"kind"`      // DeviceWebCrypto or DeviceWebAuthn
	PublicKey    string `json:"publicKey"` // base64 (standard) SPKI DER
	CredentialID string `json:"credentialId,omitempty"`
	RPID         string `json:"rpId,omitempty"`
	Origin       string `json:"origin,omitempty"`
}

// Canonical is the canonical JSON the MAC covers.
func (e Enrollment) Canonical() []byte {
	raw, _ := json.Marshal(struct {
		V    int    `json:"v"`
		Type string `json:"type"`
		Enrollment
	}{1, "enroll", e})
	out, _ := Canonicalize(raw)
	return out
}

// EnrollKey derives the MAC key from a code: PBKDF2-SHA256 of the
// normalized code, salted with the bridge id.
func EnrollKey(code, bridgeID string) []byte {
	k, _ := pbkdf2.Key(sha256.New, NormalizeEnrollCode(code), []byte("wheelhouse-enroll:"+bridgeID), EnrollIterations, 32)
	return k
}

// EnrollProof is the MAC of an enrollment under key.
func EnrollProof(key []byte, e Enrollment) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(e.Canonical())
	return m.Sum(nil)
}

// CheckEnrollProof reports whether proof is the MAC of e under key.
func CheckEnrollProof(key []byte, e Enrollment, proof []byte) bool {
	return hmac.Equal(EnrollProof(key, e), proof)
}
