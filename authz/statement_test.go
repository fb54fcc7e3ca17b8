package authz

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

var stmtNow = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func newKey(t *testing.T) (*ecdsa.PrivateKey, []byte) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	spki, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return k, spki
}

// signP1363 signs as WebCrypto does: SHA-256, r‖s.
func signP1363(t *testing.T, k *ecdsa.PrivateKey, msg []byte) []byte {
	t.Helper()
	h := sha256.Sum256(msg)
	r, s, err := ecdsa.Sign(rand.Reader, k, h[:])
	if err != nil {
		t.Fatal(err)
	}
	out := make([]byte, 64)
	r.FillBytes(out[:32])
	s.FillBytes(out[32:])
	return out
}

// assert signs as a passkey does: authenticatorData ‖ SHA-256(clientData),
// the challenge being SHA-256 of the statement.
func assert(t *testing.T, k *ecdsa.PrivateKey, statement []byte, rpID, origin string, flags byte) Signature {
	t.Helper()
	ch := sha256.Sum256(statement)
	cd, _ := json.Marshal(map[string]any{"type": "webauthn.get", "challenge": base64.RawURLEncoding.EncodeToString(ch[:]), "origin": origin, "crossOrigin": false})
	rp := sha256.Sum256([]byte(rpID))
	ad := append(rp[:], flags, 0, 0, 0, 7)
	cdh := sha256.Sum256(cd)
	msg := sha256.Sum256(append(append([]byte{}, ad...), cdh[:]...))
	sig, err := ecdsa.SignASN1(rand.Reader, k, msg[:])
	if err != nil {
		t.Fatal(err)
	}
	return Signature{Sig: sig, AuthData: ad, ClientData: cd}
}

func approvalStatement(nonce string, exp time.Time) Statement {
	return Statement{V: 1, Kind: StatementApproval, Agent: "alice/codex", Decision: "approve", Approval: "a0011", PayloadHash: strings.Repeat("ab", 32),
		Expires: exp.UTC().Format(time.RFC3339), Nonce: nonce}
}

func canon(t *testing.T, s Statement) []byte {
	t.Helper()
	b, err := CanonicalStatement(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCheckSigned(t *testing.T) {
	key, spki := newKey(t)
	other, _ := newKey(t)
	dev := &Device{ID: DeviceID(spki), Kind: DeviceWebCrypto, PublicKey: spki}
	good := approvalStatement("n-0123456789abcdef", stmtNow.Add(5*time.Minute))
	raw := canon(t, good)
	want := Statement{Kind: StatementApproval, Agent: "alice/codex", Approval: "a0011", PayloadHash: strings.ToUpper(good.PayloadHash)}
	used := map[string]bool{"n-used-used-used-1": true}
	nonceUsed := func(n string) bool { return used[n] }
	withRaw := func(s Statement) []byte { return canon(t, s) }

	tests := []struct {
		name   string
		raw    []byte
		dev    *Device
		sig    func(raw []byte) Signature
		want   Statement
		reason string
	}{
		{name: "OK", raw: raw, dev: dev, sig: func(r []byte) Signature { return Signature{Sig: signP1363(t, key, r)} }, want: want},
		{name: "ErrUnsigned", raw: nil, dev: dev, want: want, reason: ReasonSignatureRequired},
		{name: "ErrUnknownDevice", raw: raw, dev: nil, sig: func(r []byte) Signature { return Signature{Sig: signP1363(t, key, r)} }, want: want, reason: ReasonUnknownDevice},
		{name: "ErrRevoked", raw: raw, dev: &Device{Kind: DeviceWebCrypto, PublicKey: spki, Revoked: true},
			sig: func(r []byte) Signature { return Signature{Sig: signP1363(t, key, r)} }, want: want, reason: ReasonDeviceRevoked},
		{name: "ErrOtherKey", raw: raw, dev: dev, sig: func(r []byte) Signature { return Signature{Sig: signP1363(t, other, r)} }, want: want, reason: ReasonBadSignature},
		{name: "ErrTamperedAfterSigning", raw: withRaw(func() Statement { s := good; s.PayloadHash = strings.Repeat("cd", 32); return s }()), dev: dev,
			sig: func([]byte) Signature { return Signature{Sig: signP1363(t, key, raw)} }, want: want, reason: ReasonBadSignature},
		{name: "ErrOtherCall", raw: withRaw(func() Statement { s := good; s.PayloadHash = strings.Repeat("cd", 32); return s }()), dev: dev,
			sig: func(r []byte) Signature { return Signature{Sig: signP1363(t, key, r)} }, want: want, reason: ReasonWrongStatement},
		{name: "ErrOtherApproval", raw: raw, dev: dev, sig: func(r []byte) Signature { return Signature{Sig: signP1363(t, key, r)} },
			want: Statement{Kind: StatementApproval, Agent: "alice/codex", Approval: "a0012", PayloadHash: good.PayloadHash}, reason: ReasonWrongStatement},
		{name: "ErrOtherAgent", raw: raw, dev: dev, sig: func(r []byte) Signature { return Signature{Sig: signP1363(t, key, r)} },
			want: Statement{Kind: StatementApproval, Agent: "alice/other", Approval: "a0011", PayloadHash: good.PayloadHash}, reason: ReasonWrongStatement},
		{name: "ErrOtherKind", raw: raw, dev: dev, sig: func(r []byte) Signature { return Signature{Sig: signP1363(t, key, r)} },
			want: Statement{Kind: StatementPolicy, Agent: "alice/codex"}, reason: ReasonWrongStatement},
		{name: "ErrExpired", raw: withRaw(approvalStatement("n-0123456789abcdef", stmtNow.Add(-time.Second))), dev: dev,
			sig: func(r []byte) Signature { return Signature{Sig: signP1363(t, key, r)} }, want: want, reason: ReasonSignatureExpired},
		{name: "ErrTooFarAhead", raw: withRaw(approvalStatement("n-0123456789abcdef", stmtNow.Add(2*time.Hour))), dev: dev,
			sig: func(r []byte) Signature { return Signature{Sig: signP1363(t, key, r)} }, want: want, reason: ReasonSignatureExpired},
		{name: "ErrReplayed", raw: withRaw(approvalStatement("n-used-used-used-1", stmtNow.Add(time.Minute))), dev: dev,
			sig: func(r []byte) Signature { return Signature{Sig: signP1363(t, key, r)} }, want: want, reason: ReasonReplayed},
		{name: "ErrNotCanonical", raw: []byte(strings.Replace(string(raw), `{"agent"`, `{ "agent"`, 1)), dev: dev,
			sig: func(r []byte) Signature { return Signature{Sig: signP1363(t, key, r)} }, want: want, reason: ReasonWrongStatement},
		{name: "ErrTruncatedSig", raw: raw, dev: dev, sig: func(r []byte) Signature { return Signature{Sig: signP1363(t, key, r)[:63]} }, want: want, reason: ReasonBadSignature},
		{name: "PasskeyOK", raw: raw, dev: &Device{Kind: DeviceWebAuthn, PublicKey: spki, RPID: "localhost", Origin: "http://localhost:8080"},
			sig: func(r []byte) Signature { return assert(t, key, r, "localhost", "http://localhost:8080", 0x05) }, want: want},
		{name: "ErrPasskeyOtherOrigin", raw: raw, dev: &Device{Kind: DeviceWebAuthn, PublicKey: spki, RPID: "localhost", Origin: "http://localhost:8080"},
			sig: func(r []byte) Signature { return assert(t, key, r, "localhost", "http://evil.example", 0x05) }, want: want, reason: ReasonBadSignature},
		{name: "ErrPasskeyOtherRP", raw: raw, dev: &Device{Kind: DeviceWebAuthn, PublicKey: spki, RPID: "localhost", Origin: "http://localhost:8080"},
			sig: func(r []byte) Signature { return assert(t, key, r, "evil.example", "http://localhost:8080", 0x05) }, want: want, reason: ReasonBadSignature},
		{name: "ErrPasskeyUserNotVerified", raw: raw, dev: &Device{Kind: DeviceWebAuthn, PublicKey: spki, RPID: "localhost", Origin: "http://localhost:8080"},
			sig: func(r []byte) Signature { return assert(t, key, r, "localhost", "http://localhost:8080", 0x01) }, want: want, reason: ReasonBadSignature},
		{name: "ErrPasskeyOtherStatement", raw: raw, dev: &Device{Kind: DeviceWebAuthn, PublicKey: spki, RPID: "localhost", Origin: "http://localhost:8080"},
			sig: func([]byte) Signature {
				return assert(t, key, withRaw(approvalStatement("n-other-other-other", stmtNow.Add(time.Minute))), "localhost", "http://localhost:8080", 0x05)
			}, want: want, reason: ReasonBadSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var sig Signature
			if tt.sig != nil {
				sig = tt.sig(tt.raw)
			}
			_, d := CheckSigned(SignedCheck{Raw: tt.raw, Device: tt.dev, Sig: sig, Want: tt.want, Now: stmtNow, NonceUsed: nonceUsed})
			if tt.reason == "" && !d.Allow {
				t.Fatalf("refused: %s (%s)", d.Reason, d.Message)
			}
			if tt.reason != "" && (d.Allow || d.Reason != tt.reason) {
				t.Fatalf("got %+v, want %s", d, tt.reason)
			}
			if !d.Allow && d.Message == "" {
				t.Fatal("a refusal without words")
			}
		})
	}
}

func TestParseStatement(t *testing.T) {
	exp := stmtNow.Add(time.Minute).Format(time.RFC3339)
	for _, tt := range []struct{ name, raw, err string }{
		{"OKPolicy", `{"agent":"a/b","decision":"set","expires":"` + exp + `","kind":"policy","nonce":"0123456789abcdef","policy":{"address":"members"},"v":1}`, ""},
		{"OKForward", `{"agent":"a/b","decision":"forward","expires":"` + exp + `","kind":"forward","nonce":"0123456789abcdef","room":"dev","sender":"bob","steer":"s1.0","textHash":"ab","v":1}`, ""},
		{"ErrUnknownField", `{"agent":"a/b","decision":"add","evil":1,"expires":"` + exp + `","kind":"consent","nonce":"0123456789abcdef","room":"dev","v":1}`, "unknown field"},
		{"ErrWrongDecision", `{"agent":"a/b","decision":"deny","expires":"` + exp + `","kind":"approval","nonce":"0123456789abcdef","v":1}`, "decision"},
		{"ErrUnknownKind", `{"agent":"a/b","decision":"x","expires":"` + exp + `","kind":"root","nonce":"0123456789abcdef","v":1}`, "unknown statement kind"},
		{"ErrShortNonce", `{"agent":"a/b","decision":"add","expires":"` + exp + `","kind":"consent","nonce":"short","room":"dev","v":1}`, "nonce"},
		{"ErrNoRoom", `{"agent":"a/b","decision":"add","expires":"` + exp + `","kind":"consent","nonce":"0123456789abcdef","v":1}`, "needs room"},
		{"ErrBadExpiry", `{"agent":"a/b","decision":"add","expires":"soon","kind":"consent","nonce":"0123456789abcdef","room":"dev","v":1}`, "expiry"},
		{"ErrVersion", `{"agent":"a/b","decision":"add","expires":"` + exp + `","kind":"consent","nonce":"0123456789abcdef","room":"dev","v":2}`, "version"},
		{"ErrDuplicateKey", `{"agent":"a/b","agent":"a/c","decision":"add","expires":"` + exp + `","kind":"consent","nonce":"0123456789abcdef","room":"dev","v":1}`, "Duplicate key"},
		{"OKForwardWithFiles", `{"agent":"a/b","decision":"forward","expires":"` + exp + `","files":[{"name":"notes.txt","sha256":"` + strings.Repeat("ab", 32) + `"}],"kind":"forward","nonce":"0123456789abcdef","room":"dev","sender":"bob","steer":"s1.0","textHash":"ab","v":1}`, ""},
		{"ErrForwardFileNotADigest", `{"agent":"a/b","decision":"forward","expires":"` + exp + `","files":[{"name":"notes.txt","sha256":"notes.txt"}],"kind":"forward","nonce":"0123456789abcdef","room":"dev","sender":"bob","steer":"s1.0","textHash":"ab","v":1}`, "SHA-256"},
		{"ErrForwardFileUnnamed", `{"agent":"a/b","decision":"forward","expires":"` + exp + `","files":[{"name":"","sha256":"` + strings.Repeat("ab", 32) + `"}],"kind":"forward","nonce":"0123456789abcdef","room":"dev","sender":"bob","steer":"s1.0","textHash":"ab","v":1}`, "by its name"},
		{"ErrForwardFileUnknownField", `{"agent":"a/b","decision":"forward","expires":"` + exp + `","files":[{"name":"a","run":true,"sha256":"` + strings.Repeat("ab", 32) + `"}],"kind":"forward","nonce":"0123456789abcdef","room":"dev","sender":"bob","steer":"s1.0","textHash":"ab","v":1}`, "unknown field"},
		{"ErrPolicyNotObject", `{"agent":"a/b","decision":"set","expires":"` + exp + `","kind":"policy","nonce":"0123456789abcdef","policy":[],"v":1}`, "policy"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseStatement([]byte(tt.raw))
			if tt.err == "" && err != nil {
				t.Fatal(err)
			}
			if tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
				t.Fatalf("err %v, want %q", err, tt.err)
			}
		})
	}
}

// A forward names the message's files by digest, all of them in order, or
// none when it has none: a file added, dropped, swapped or moved is a
// different statement.
func TestForwardNamesTheFiles(t *testing.T) {
	key, spki := newKey(t)
	dev := &Device{ID: DeviceID(spki), Kind: DeviceWebCrypto, PublicKey: spki}
	f := func(name, content string) StatementFile {
		return StatementFile{Name: name, SHA256: FileHash([]byte(content))}
	}
	a, b, c := f("a.txt", "a"), f("b.txt", "b"), f("c.txt", "c")
	upper := a
	upper.SHA256 = strings.ToUpper(upper.SHA256)
	renamed := a
	renamed.Name = "run-this-first.txt"
	forward := func(files ...StatementFile) Statement {
		return Statement{V: 1, Kind: StatementForward, Decision: "forward", Agent: "alice/codex", Steer: "s9.0", Room: "dev", Sender: "bob",
			TextHash: TextHash("look at these"), Files: files, Expires: stmtNow.Add(time.Minute).Format(time.RFC3339), Nonce: "n-0123456789abcdef"}
	}
	for _, tt := range []struct {
		name          string
		signed, their []StatementFile
		ok            bool
	}{
		{"OKNoFiles", nil, nil, true},
		{"OKSameFiles", []StatementFile{a, b}, []StatementFile{a, b}, true},
		{"OKUpperCaseDigest", []StatementFile{upper}, []StatementFile{a}, true},
		{"ErrFileAdded", []StatementFile{a}, []StatementFile{a, c}, false},
		{"ErrFileDropped", []StatementFile{a, b}, []StatementFile{a}, false},
		{"ErrFileSwapped", []StatementFile{a, b}, []StatementFile{a, c}, false},
		{"ErrFileRenamed", []StatementFile{a}, []StatementFile{renamed}, false},
		{"ErrFilesReordered", []StatementFile{a, b}, []StatementFile{b, a}, false},
		{"ErrFilesOnAMessageWithout", []StatementFile{a}, nil, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			raw := canon(t, forward(tt.signed...))
			want := forward(tt.their...)
			want.V, want.Decision, want.Expires, want.Nonce = 0, "", "", ""
			_, d := CheckSigned(SignedCheck{Raw: raw, Device: dev, Sig: Signature{Sig: signP1363(t, key, raw)}, Want: want, Now: stmtNow})
			if d.Allow != tt.ok || (!tt.ok && d.Reason != ReasonWrongStatement) {
				t.Fatalf("got %+v, want allowed=%v", d, tt.ok)
			}
		})
	}
}

func TestDeviceKey(t *testing.T) {
	_, spki := newKey(t)
	if id := DeviceID(spki); len(id) != 17 || id[0] != 'd' {
		t.Fatalf("device id %q", id)
	}
	k384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	spki384, _ := x509.MarshalPKIXPublicKey(&k384.PublicKey)
	if _, err := ParseDeviceKey(spki384); err == nil {
		t.Fatal("a P-384 key was accepted")
	}
	if _, err := ParseDeviceKey([]byte("junk")); err == nil {
		t.Fatal("junk was accepted as a key")
	}
}

func TestEnrollProof(t *testing.T) {
	code := NewEnrollCode()
	if len(code) != EnrollCodeLen || NormalizeEnrollCode(ShowEnrollCode(code)) != code {
		t.Fatalf("code %q shows as %q", code, ShowEnrollCode(code))
	}
	if NormalizeEnrollCode("abcde-fgh1o") != "ABCDEFGH10" || NormalizeEnrollCode(" il ") != "11" {
		t.Fatal("normalization")
	}
	_, spki := newKey(t)
	e := Enrollment{Bridge: "b0123456789ab", Name: "laptop", Kind: DeviceWebCrypto, PublicKey: base64.StdEncoding.EncodeToString(spki)}
	key := EnrollKey(code, e.Bridge)
	proof := EnrollProof(key, e)
	t.Run("OK", func(t *testing.T) {
		if !CheckEnrollProof(EnrollKey(strings.ToLower(ShowEnrollCode(code)), e.Bridge), e, proof) {
			t.Fatal("the proof made with the code does not check")
		}
	})
	t.Run("ErrSubstitutedKey", func(t *testing.T) {
		_, spki2 := newKey(t)
		e2 := e
		e2.PublicKey = base64.StdEncoding.EncodeToString(spki2)
		if CheckEnrollProof(key, e2, proof) {
			t.Fatal("another key passed with the first key's proof")
		}
	})
	t.Run("ErrOtherName", func(t *testing.T) {
		e2 := e
		e2.Name = "hub's laptop"
		if CheckEnrollProof(key, e2, proof) {
			t.Fatal("a renamed enrollment passed")
		}
	})
	t.Run("ErrOtherBridge", func(t *testing.T) {
		if CheckEnrollProof(EnrollKey(code, "b999999999999"), e, proof) {
			t.Fatal("the proof passed on another bridge")
		}
	})
	t.Run("ErrWrongCode", func(t *testing.T) {
		if CheckEnrollProof(EnrollKey("0000000000", e.Bridge), e, proof) {
			t.Fatal("a wrong code passed")
		}
	})
	// The browser computes the same canonical bytes (see web/static/js/devices.js).
	if got := string(e.Canonical()); !strings.HasPrefix(got, `{"bridge":"b0123456789ab","kind":"webcrypto","name":"laptop","publicKey":"`) || !strings.HasSuffix(got, `","type":"enroll","v":1}`) {
		t.Fatalf("canonical enrollment %s", got)
	}
}

// A message statement is compared field by field, empty ones included:
// a statement with no thread, no turn or no files does not cover words in
// a thread, for a turn or with files, nor the other way round.
func TestMessageStatement(t *testing.T) {
	key, spki := newKey(t)
	dev := &Device{ID: DeviceID(spki), Kind: DeviceWebCrypto, PublicKey: spki}
	file := StatementFile{Name: "notes.txt", SHA256: FileHash([]byte("notes\n"))}
	msg := func(f func(*Statement)) Statement {
		s := Statement{V: 1, Kind: StatementMessage, Decision: "say", Bridge: "b0123456789ab", Agent: "alice/codex", Room: "dev",
			TextHash: TextHash("fix the build"), Expires: stmtNow.Add(time.Minute).Format(time.RFC3339), Nonce: "n-0123456789abcdef"}
		if f != nil {
			f(&s)
		}
		return s
	}
	want := func(f func(*Statement)) Statement {
		s := msg(f)
		s.V, s.Decision, s.Expires, s.Nonce = 0, "", "", ""
		return s
	}
	for _, tt := range []struct {
		name         string
		signed, have func(*Statement)
		ok           bool
	}{
		{"OK", nil, nil, true},
		{"OKThreadTurnFiles", func(s *Statement) { s.Thread, s.Turn, s.Files = "42", "t-1", []StatementFile{file} },
			func(s *Statement) { s.Thread, s.Turn, s.Files = "42", "t-1", []StatementFile{file} }, true},
		{"ErrOtherBridge", func(s *Statement) { s.Bridge = "b999999999999" }, nil, false},
		{"ErrOtherAgent", func(s *Statement) { s.Agent = "alice/other" }, nil, false},
		{"ErrOtherRoom", func(s *Statement) { s.Room = "dm:alice,codex" }, nil, false},
		{"ErrChannelWordsInAThread", nil, func(s *Statement) { s.Thread = "42" }, false},
		{"ErrThreadWordsInTheChannel", func(s *Statement) { s.Thread = "42" }, nil, false},
		{"ErrNoTurnNamedButTurnRuns", nil, func(s *Statement) { s.Turn = "t-1" }, false},
		{"ErrOtherTurn", func(s *Statement) { s.Turn = "t-1" }, func(s *Statement) { s.Turn = "t-2" }, false},
		{"ErrTurnNamedButIdle", func(s *Statement) { s.Turn = "t-1" }, nil, false},
		{"ErrOtherText", nil, func(s *Statement) { s.TextHash = TextHash("rm -rf /") }, false},
		{"ErrFileAdded", nil, func(s *Statement) { s.Files = []StatementFile{file} }, false},
		{"ErrFileDropped", func(s *Statement) { s.Files = []StatementFile{file} }, nil, false},
		{"ErrWithPolicy", func(s *Statement) { s.Policy = json.RawMessage(`{"autoApprove":true}`) }, nil, false},
		{"ErrWithSender", func(s *Statement) { s.Sender = "bob" }, nil, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			raw := canon(t, msg(tt.signed))
			_, d := CheckSigned(SignedCheck{Raw: raw, Device: dev, Sig: Signature{Sig: signP1363(t, key, raw)}, Want: want(tt.have), Now: stmtNow})
			if d.Allow != tt.ok || (!tt.ok && d.Reason != ReasonWrongStatement) {
				t.Fatalf("got %+v, want allowed=%v", d, tt.ok)
			}
		})
	}
	for _, tt := range []struct {
		name string
		mut  func(*Statement)
		err  string
	}{
		{"ErrNoBridge", func(s *Statement) { s.Bridge = "" }, "needs bridge"},
		{"ErrNoRoom", func(s *Statement) { s.Room = "" }, "needs room"},
		{"ErrNoTextHash", func(s *Statement) { s.TextHash = "" }, "needs textHash"},
		{"ErrTextHashNotADigest", func(s *Statement) { s.TextHash = "ab" }, "SHA-256"},
		{"ErrFileNotADigest", func(s *Statement) { s.Files = []StatementFile{{Name: "a", SHA256: "a"}} }, "SHA-256"},
		{"ErrWrongDecision", func(s *Statement) { s.Decision = "forward" }, "decision"},
	} {
		t.Run("Parse"+tt.name, func(t *testing.T) {
			_, err := ParseStatement(canon(t, msg(tt.mut)))
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("err %v, want %q", err, tt.err)
			}
		})
	}
}
