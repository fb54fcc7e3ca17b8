package authz

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"
)

// Owner decisions that let an agent do more are signed by one of the
// owner's enrolled devices over a Statement; the bridge verifies them
// (CheckSigned) before acting, so a hub can relay them but never make them.

// Statement kinds.
const (
	StatementApproval = "approval" // run one approved call: Approval, PayloadHash
	StatementPolicy   = "policy"   // the agent's new policy: Policy
	StatementConsent  = "consent"  // let the agent act in Room, at Ceiling
	StatementCeiling  = "ceiling"  // what turns started from Room may do: Ceiling
	StatementForward  = "forward"  // forward a held mention: Steer, Room, Sender, TextHash, Files
	// StatementMessage: the owner's own words to one of the owner's agents:
	// Bridge, Agent, Room, Thread, TextHash, Files, Turn. Every field is
	// compared, empty ones included.
	StatementMessage = "message"
)

// The one decision word of each kind (the statement says it in words).
var statementDecision = map[string]string{
	StatementApproval: "approve",
	StatementPolicy:   "set",
	StatementConsent:  "add",
	StatementCeiling:  "set",
	StatementForward:  "forward",
	StatementMessage:  "say",
}

// StatementDecision is the decision word a statement of kind carries.
func StatementDecision(kind string) string { return statementDecision[kind] }

// StatementVersion is the version of the statement format.
const StatementVersion = 1

// Limits on signed statements.
const (
	// MaxStatementAhead bounds how far in the future a statement may
	// expire: the bridge remembers every nonce until its statement
	// expires, and a long-lived signature is a standing permission.
	MaxStatementAhead = 30 * time.Minute
	// MaxStatementBytes bounds a statement's size.
	MaxStatementBytes = 16 << 10
)

// Statement is what an owner device signs: its RFC 8785 canonical JSON.
// Every field that says what is allowed is in it; nothing the hub adds
// beside it counts.
type Statement struct {
	V    int    `json:"v"`
	Kind string `json:"kind"`
	// Bridge is the id of the bridge the statement is for ("b" + 12 hex);
	// a bridge refuses a statement naming another.
	Bridge      string          `json:"bridge,omitempty"`
	Agent       string          `json:"agent"` // owner/name
	Decision    string          `json:"decision"`
	Approval    string          `json:"approval,omitempty"`
	PayloadHash string          `json:"payloadHash,omitempty"`
	Policy      json.RawMessage `json:"policy,omitempty"`
	Room        string          `json:"room,omitempty"`
	Ceiling     string          `json:"ceiling,omitempty"`
	Steer       string          `json:"steer,omitempty"`
	Sender      string          `json:"sender,omitempty"`
	TextHash    string          `json:"textHash,omitempty"`
	// Files are the files posted with a forwarded message, in the
	// message's order, each by the name the agent will see and the SHA-256
	// of its bytes; none: it has none.
	Files []StatementFile `json:"files,omitempty"`
	// Thread is the decimal id of the thread root a message is posted in
	// ("" = the channel); Turn is the turn the owner expects the words to
	// reach ("" = none: a new turn when the agent is idle).
	Thread  string `json:"thread,omitempty"`
	Turn    string `json:"turn,omitempty"`
	Expires string `json:"expires"` // RFC 3339
	Nonce   string `json:"nonce"`   // unique per statement; the bridge refuses a second use
}

// MaxFileName bounds a file's name, in bytes (wire.MaxFileName is this).
const MaxFileName = 255

// StatementFile is one file of a forwarded message as the owner saw it.
type StatementFile struct {
	Name   string `json:"name"`
	SHA256 string `json:"sha256"` // hex
}

// ExpiresAt is the statement's expiry (zero if it does not parse).
func (s Statement) ExpiresAt() time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s.Expires)
	return t
}

// CanonicalStatement returns the canonical JSON of s, the bytes a device
// signs.
func CanonicalStatement(s Statement) ([]byte, error) {
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	return Canonicalize(raw)
}

// TextHash is the lower-case hex SHA-256 of a message's text, as a forward
// statement names it.
func TextHash(text string) string { return FileHash([]byte(text)) }

// ParseStatement reads a signed statement strictly: it must be exactly its
// own canonical form (so the bytes signed are the bytes read), one object
// with known fields, a known kind with its decision word and fields, an
// expiry and a nonce.
func ParseStatement(raw []byte) (Statement, error) {
	var s Statement
	if len(raw) == 0 {
		return s, errors.New("the statement is empty")
	}
	if len(raw) > MaxStatementBytes {
		return s, fmt.Errorf("the statement is larger than %d bytes", MaxStatementBytes)
	}
	canon, err := Canonicalize(raw)
	if err != nil {
		return s, err
	}
	if !bytes.Equal(canon, raw) {
		return s, errors.New("the statement is not in canonical form (RFC 8785)")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return s, fmt.Errorf("the statement does not decode: %v", err)
	}
	if s.V != StatementVersion {
		return s, fmt.Errorf("statement version %d is not %d", s.V, StatementVersion)
	}
	want, ok := statementDecision[s.Kind]
	if !ok {
		return s, fmt.Errorf("unknown statement kind %q", s.Kind)
	}
	if s.Decision != want {
		return s, fmt.Errorf("a %s statement's decision is %q, not %q", s.Kind, want, s.Decision)
	}
	if s.Agent == "" || !strings.Contains(s.Agent, "/") {
		return s, errors.New("the statement names no agent (owner/name)")
	}
	if s.ExpiresAt().IsZero() {
		return s, fmt.Errorf("the statement's expiry %q is not an RFC 3339 time", s.Expires)
	}
	if !validNonce(s.Nonce) {
		return s, errors.New("the statement's nonce must be 16 to 64 characters of A-Z, a-z, 0-9, - and _")
	}
	missing := func(name, v string) error {
		if v == "" {
			return fmt.Errorf("a %s statement needs %s", s.Kind, name)
		}
		return nil
	}
	switch s.Kind {
	case StatementApproval:
		err = errors.Join(missing("approval", s.Approval), missing("payloadHash", s.PayloadHash))
	case StatementPolicy:
		if len(s.Policy) == 0 || s.Policy[0] != '{' {
			err = errors.New("a policy statement needs the policy (an object)")
		}
	case StatementConsent:
		err = missing("room", s.Room)
	case StatementCeiling:
		err = errors.Join(missing("room", s.Room), missing("ceiling", s.Ceiling))
	case StatementForward:
		err = errors.Join(missing("steer", s.Steer), missing("room", s.Room), missing("sender", s.Sender), missing("textHash", s.TextHash), checkFiles(s.Kind, s.Files))
	case StatementMessage:
		err = errors.Join(missing("bridge", s.Bridge), missing("room", s.Room), missing("textHash", s.TextHash), checkFiles(s.Kind, s.Files))
		if s.TextHash != "" && !isSHA256Hex(s.TextHash) {
			err = errors.Join(err, errors.New("a message statement's textHash is a SHA-256 (64 hex digits)"))
		}
	}
	return s, err
}

// checkFiles checks the files a statement names.
func checkFiles(kind string, fs []StatementFile) error {
	for _, f := range fs {
		if !isSHA256Hex(f.SHA256) {
			return fmt.Errorf("a %s statement names each file's SHA-256 (64 hex digits), not %.70q", kind, f.SHA256)
		}
		if f.Name == "" || len(f.Name) > MaxFileName {
			return fmt.Errorf("a %s statement names each file by its name (1 to %d bytes)", kind, MaxFileName)
		}
	}
	return nil
}

func files(n int) string { return fmt.Sprintf("%d %s", n, plural(n, "file", "files")) }

// isSHA256Hex: 64 hex digits, either case (statements are matched
// without regard to case, as payloadHash is).
func isSHA256Hex(s string) bool { return len(s) == 2*sha256.Size && lowerHex(strings.ToLower(s)) }

// FileHash is the lower-case hex SHA-256 of a file's bytes, as a forward
// statement names it.
func FileHash(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func validNonce(n string) bool {
	if len(n) < 16 || len(n) > 64 {
		return false
	}
	for _, c := range n {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// Device kinds.
const (
	// DeviceWebCrypto: a non-extractable ECDSA P-256 key the browser keeps
	// (IndexedDB) or any P-256 key; it signs the statement's bytes, P1363.
	DeviceWebCrypto = "webcrypto"
	// DeviceWebAuthn: a passkey (ES256); it signs authenticatorData ‖
	// SHA-256(clientDataJSON) whose challenge is SHA-256 of the statement.
	DeviceWebAuthn = "webauthn"
)

// Device is an owner device as the bridge trusts it.
type Device struct {
	ID        string
	Kind      string
	PublicKey []byte // SPKI DER, ECDSA P-256
	RPID      string // WebAuthn: the relying party id (the hub's host name)
	Origin    string // WebAuthn: the page origin the passkey signs for
	Revoked   bool
}

// DeviceID names a device by its public key: "d" and the first 16 hex
// digits of the SHA-256 of its SPKI.
func DeviceID(spki []byte) string {
	sum := sha256.Sum256(spki)
	return "d" + hex.EncodeToString(sum[:8])
}

// ParseDeviceKey reads an SPKI DER public key; only ECDSA P-256 is
// accepted.
func ParseDeviceKey(spki []byte) (*ecdsa.PublicKey, error) {
	k, err := x509.ParsePKIXPublicKey(spki)
	if err != nil {
		return nil, fmt.Errorf("the device key is not an SPKI public key: %v", err)
	}
	pub, ok := k.(*ecdsa.PublicKey)
	if !ok || pub.Curve != elliptic.P256() {
		return nil, errors.New("the device key must be ECDSA P-256")
	}
	return pub, nil
}

// Signature is a device's signature over a statement. For a WebAuthn
// device AuthData and ClientData are the authenticator's outputs.
type Signature struct {
	Sig        []byte
	AuthData   []byte
	ClientData []byte
}

// WebAuthn authenticator data flags.
const (
	flagUserPresent  = 0x01
	flagUserVerified = 0x04
)

// VerifySignature checks that d signed statement.
func VerifySignature(d Device, statement []byte, s Signature) error {
	pub, err := ParseDeviceKey(d.PublicKey)
	if err != nil {
		return err
	}
	switch d.Kind {
	case DeviceWebCrypto:
		if len(s.Sig) != 64 {
			return fmt.Errorf("a P-256 signature is 64 bytes (r‖s), not %d", len(s.Sig))
		}
		h := sha256.Sum256(statement)
		r, ss := new(big.Int).SetBytes(s.Sig[:32]), new(big.Int).SetBytes(s.Sig[32:])
		if !ecdsa.Verify(pub, h[:], r, ss) {
			return errors.New("the signature does not verify with the device's key")
		}
		return nil
	case DeviceWebAuthn:
		return verifyAssertion(d, pub, statement, s)
	default:
		return fmt.Errorf("unknown device kind %q", d.Kind)
	}
}

// verifyAssertion checks a WebAuthn assertion over statement: the client
// data names the challenge SHA-256(statement), the type and the enrolled
// origin; the authenticator data names the enrolled relying party, with the
// user present and verified; the signature covers both.
func verifyAssertion(d Device, pub *ecdsa.PublicKey, statement []byte, s Signature) error {
	var cd struct {
		Type        string `json:"type"`
		Challenge   string `json:"challenge"`
		Origin      string `json:"origin"`
		CrossOrigin bool   `json:"crossOrigin"`
	}
	if err := json.Unmarshal(s.ClientData, &cd); err != nil {
		return errors.New("the passkey's client data is not JSON")
	}
	if cd.Type != "webauthn.get" {
		return fmt.Errorf("the passkey's client data is a %q, not a webauthn.get", cd.Type)
	}
	want := sha256.Sum256(statement)
	got, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(cd.Challenge, "="))
	if err != nil || subtle.ConstantTimeCompare(got, want[:]) != 1 {
		return errors.New("the passkey signed another challenge than this statement")
	}
	if d.Origin == "" || cd.Origin != d.Origin || cd.CrossOrigin {
		return fmt.Errorf("the passkey signed for origin %q, enrolled for %q", cd.Origin, d.Origin)
	}
	if len(s.AuthData) < 37 {
		return errors.New("the passkey's authenticator data is too short")
	}
	rp := sha256.Sum256([]byte(d.RPID))
	if d.RPID == "" || subtle.ConstantTimeCompare(s.AuthData[:32], rp[:]) != 1 {
		return fmt.Errorf("the passkey signed for another relying party than %q", d.RPID)
	}
	if f := s.AuthData[32]; f&flagUserPresent == 0 || f&flagUserVerified == 0 {
		return errors.New("the passkey did not verify the user")
	}
	cdh := sha256.Sum256(s.ClientData)
	msg := sha256.Sum256(append(append([]byte{}, s.AuthData...), cdh[:]...))
	if !ecdsa.VerifyASN1(pub, msg[:], s.Sig) {
		return errors.New("the passkey's signature does not verify with the device's key")
	}
	return nil
}

// Reasons a signed decision is refused (all are recorded as forgeries).
const (
	ReasonSignatureRequired = "signature-required" // a widening decision came unsigned
	ReasonUnknownDevice     = "unknown-device"     // signed by a key this bridge never enrolled
	ReasonDeviceRevoked     = "device-revoked"
	ReasonBadSignature      = "bad-signature"
	ReasonWrongStatement    = "wrong-statement" // the signed statement says something else
	ReasonSignatureExpired  = "signature-expired"
	ReasonReplayed          = "replayed" // a statement used before
)

// SignedCheck is a signed decision as it reaches the bridge.
type SignedCheck struct {
	Raw    []byte  // the statement as signed; empty: unsigned
	Device *Device // the enrolled device it names; nil: not enrolled here
	Sig    Signature
	// Want holds the fields the action requires: Kind, Agent and the kind's
	// own (a policy statement's Policy is compared by the caller).
	Want      Statement
	Now       time.Time
	NonceUsed func(nonce string) bool
}

// CheckSigned decides whether a signed decision may be acted on: an
// authentic statement (a known, unrevoked device's valid signature) that
// says exactly what is about to happen, not expired, not too far ahead, and
// never used before. The statement is returned when it parsed.
func CheckSigned(c SignedCheck) (Statement, Decision) {
	if len(c.Raw) == 0 {
		return Statement{}, deny(ReasonSignatureRequired, "This decision lets the agent do more, so it must be signed by one of the owner's enrolled devices; it was not.")
	}
	s, err := ParseStatement(c.Raw)
	if err != nil {
		return s, deny(ReasonWrongStatement, "The signed statement is malformed: %v.", err)
	}
	if c.Device == nil {
		return s, deny(ReasonUnknownDevice, "The decision is signed by a device this bridge has not enrolled.")
	}
	if c.Device.Revoked {
		return s, deny(ReasonDeviceRevoked, "The decision is signed by a device the owner revoked.")
	}
	if err := VerifySignature(*c.Device, c.Raw, c.Sig); err != nil {
		return s, deny(ReasonBadSignature, "The signature is not valid: %v.", err)
	}
	if err := matchStatement(s, c.Want); err != nil {
		return s, deny(ReasonWrongStatement, "The signed statement does not match this decision: %v.", err)
	}
	exp := s.ExpiresAt()
	if !c.Now.Before(exp) {
		return s, deny(ReasonSignatureExpired, "The signed decision expired at %s.", exp.UTC().Format(time.RFC3339))
	}
	if exp.Sub(c.Now) > MaxStatementAhead {
		return s, deny(ReasonSignatureExpired, "The signed decision expires more than %s from now; sign a new one.", MaxStatementAhead)
	}
	if c.NonceUsed != nil && c.NonceUsed(s.Nonce) {
		return s, deny(ReasonReplayed, "This signed decision was already used once; a signature works once.")
	}
	return s, allow
}

// matchStatement compares the fields want names with got. For a message
// statement every field is compared, empty ones included: an empty thread,
// no expected turn and no files are part of what the owner said.
func matchStatement(got, want Statement) error {
	every := want.Kind == StatementMessage
	if want.Bridge != "" && got.Bridge != want.Bridge {
		if got.Bridge == "" {
			return fmt.Errorf("it names no bridge, and a statement must name the bridge it is for (%s)", want.Bridge)
		}
		return fmt.Errorf("it is for bridge %.20q, not this one (%s)", got.Bridge, want.Bridge)
	}
	for _, f := range []struct{ name, got, want string }{
		{"thread", got.Thread, want.Thread},
		{"turn", got.Turn, want.Turn},
	} {
		if (every || f.want != "") && f.got != f.want {
			return fmt.Errorf("it names %s %q, not %q", f.name, f.got, f.want)
		}
	}
	for _, f := range []struct{ name, got, want string }{
		{"kind", got.Kind, want.Kind},
		{"agent", got.Agent, want.Agent},
		{"approval", got.Approval, want.Approval},
		{"room", got.Room, want.Room},
		{"ceiling", got.Ceiling, want.Ceiling},
		{"steer", got.Steer, want.Steer},
		{"sender", got.Sender, want.Sender},
	} {
		if (every || f.want != "") && f.got != f.want {
			return fmt.Errorf("it names %s %q, not %q", f.name, f.got, f.want)
		}
	}
	for _, f := range []struct{ name, got, want string }{
		{"payloadHash", got.PayloadHash, want.PayloadHash},
		{"textHash", got.TextHash, want.TextHash},
	} {
		if (every || f.want != "") && !strings.EqualFold(f.got, f.want) {
			return fmt.Errorf("it names %s %.12s…, not %.12s…", f.name, f.got, f.want)
		}
	}
	if every && len(got.Policy) != 0 {
		return errors.New("it carries a policy")
	}
	// A forward or a message names every file the message carries, or none
	// when it has none: the files are part of what the owner hands on.
	if want.Kind == StatementForward || every {
		if len(got.Files) != len(want.Files) {
			return fmt.Errorf("it names %s, and the message has %s", files(len(got.Files)), files(len(want.Files)))
		}
		for i, w := range want.Files {
			g := got.Files[i]
			if !strings.EqualFold(g.SHA256, w.SHA256) {
				return fmt.Errorf("its file %d is %.12s…, not %.12s…", i+1, g.SHA256, w.SHA256)
			}
			if g.Name != w.Name {
				return fmt.Errorf("its file %d is named %.70q, not %.70q", i+1, g.Name, w.Name)
			}
		}
	}
	return nil
}
