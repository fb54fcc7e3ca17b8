package bridge

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/authz"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// idle is a harness that does nothing: these tests exercise the bridge's
// own rules, not a harness.
type idle struct{}

func (idle) Kind() string                                     { return "idle" }
func (idle) CanSteer() bool                                   { return true }
func (idle) Start(context.Context) error                      { return nil }
func (idle) StartTurn(context.Context, Input) (string, error) { return "t1", nil }
func (idle) Steer(context.Context, string, Input) error       { return nil }
func (idle) Interrupt(context.Context, string) error          { return nil }
func (idle) Close() error                                     { return nil }

type testKey struct {
	k    *ecdsa.PrivateKey
	spki []byte
	id   string
}

func newTestKey(t *testing.T) testKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	spki, _ := x509.MarshalPKIXPublicKey(&k.PublicKey)
	return testKey{k: k, spki: spki, id: authz.DeviceID(spki)}
}

// testBridgeID is the id of the bridges these tests build.
const testBridgeID = "b0123456789ab"

// sign signs s for testBridgeID (Bridge "none": for no bridge).
func (k testKey) sign(t *testing.T, s authz.Statement) *wire.Signed {
	t.Helper()
	s.V, s.Decision = 1, authz.StatementDecision(s.Kind)
	switch s.Bridge {
	case "":
		s.Bridge = testBridgeID
	case "none":
		s.Bridge = ""
	}
	if s.Expires == "" {
		s.Expires = time.Now().Add(5 * time.Minute).UTC().Format(time.RFC3339)
	}
	if s.Nonce == "" {
		b := make([]byte, 12)
		rand.Read(b)
		s.Nonce = base64.RawURLEncoding.EncodeToString(b)
	}
	raw, err := authz.CanonicalStatement(s)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256(raw)
	r, ss, _ := ecdsa.Sign(rand.Reader, k.k, h[:])
	sig := make([]byte, 64)
	r.FillBytes(sig[:32])
	ss.FillBytes(sig[32:])
	return &wire.Signed{Statement: string(raw), Device: k.id, Sig: base64.RawURLEncoding.EncodeToString(sig)}
}

// testBridge builds (does not run) a bridge for alice with one agent.
func testBridge(t *testing.T, trust string, ac AgentConfig) (*Bridge, *runner) {
	t.Helper()
	ac.Name, ac.Harness = "codex", "idle"
	b, err := New(Config{Creds: &Credentials{Owner: "alice", BridgeID: "b0123456789ab"}, Agents: []AgentConfig{ac},
		Harnesses: map[string]Factory{"idle": func(Deps) (Harness, error) { return idle{}, nil }}, TrustFile: trust,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return b, b.agents["codex"]
}

// enrollKey enrolls k through the code flow, as the hub relays it.
func enrollKey(t *testing.T, b *Bridge, k testKey, name string) {
	t.Helper()
	code, _ := b.NewEnrollCode()
	e := authz.Enrollment{Bridge: b.cfg.Creds.BridgeID, Name: name, Kind: authz.DeviceWebCrypto, PublicKey: base64.StdEncoding.EncodeToString(k.spki)}
	proof := authz.EnrollProof(authz.EnrollKey(code, e.Bridge), e)
	if _, err := b.enrollDevice(wire.Enrollment{Name: name, Kind: e.Kind, PublicKey: e.PublicKey, Proof: base64.RawURLEncoding.EncodeToString(proof)}); err != nil {
		t.Fatal(err)
	}
}

func TestEnrollDevice(t *testing.T) {
	b, _ := testBridge(t, "", AgentConfig{})
	k := newTestKey(t)
	e := wire.Enrollment{Name: "laptop", Kind: authz.DeviceWebCrypto, PublicKey: base64.StdEncoding.EncodeToString(k.spki)}
	t.Run("ErrNoCode", func(t *testing.T) {
		e.Proof = "AAAA"
		if _, err := b.enrollDevice(e); wh.ErrorReason(err) != "no-code" {
			t.Fatalf("%v", err)
		}
	})
	t.Run("ErrWrongCodeKillsIt", func(t *testing.T) {
		code, _ := b.NewEnrollCode()
		for i := range enrollTries {
			_, err := b.enrollDevice(e)
			if wh.ErrorReason(err) != "wrong-code" {
				t.Fatalf("try %d: %v", i, err)
			}
		}
		ae := authz.Enrollment{Bridge: b.cfg.Creds.BridgeID, Name: e.Name, Kind: e.Kind, PublicKey: e.PublicKey}
		good := e
		good.Proof = base64.RawURLEncoding.EncodeToString(authz.EnrollProof(authz.EnrollKey(code, ae.Bridge), ae))
		if _, err := b.enrollDevice(good); wh.ErrorReason(err) != "no-code" {
			t.Fatalf("the right code after %d wrong tries: %v", enrollTries, err)
		}
	})
	t.Run("OKOnce", func(t *testing.T) {
		code, _ := b.NewEnrollCode()
		ae := authz.Enrollment{Bridge: b.cfg.Creds.BridgeID, Name: e.Name, Kind: e.Kind, PublicKey: e.PublicKey}
		good := e
		good.Proof = base64.RawURLEncoding.EncodeToString(authz.EnrollProof(authz.EnrollKey(code, ae.Bridge), ae))
		d, err := b.enrollDevice(good)
		if err != nil || d.ID != k.id || d.Name != "laptop" {
			t.Fatalf("%+v %v", d, err)
		}
		if _, err := b.enrollDevice(good); wh.ErrorReason(err) != "no-code" {
			t.Fatalf("a code enrolled twice: %v", err)
		}
	})
}

func TestChangePolicy(t *testing.T) {
	cfg := PolicyConfig{Address: "users", Allowed: []string{"bob", "carol"}, AutoApprove: []string{"read_file"}}
	b, r := testBridge(t, "", AgentConfig{PolicyFile: cfg})
	k := newTestKey(t)
	enrollKey(t, b, k, "laptop")
	base, _ := cfg.Policy()
	with := func(f func(*wire.Policy)) wire.Policy {
		p := base
		p.Allowed = append([]string(nil), base.Allowed...)
		f(&p)
		return p
	}
	signed := func(p wire.Policy) *wire.Signed {
		raw, _ := json.Marshal(p)
		return k.sign(t, authz.Statement{Kind: authz.StatementPolicy, Agent: "alice/codex", Policy: raw})
	}
	owner := with(func(p *wire.Policy) { p.Address, p.Allowed = "owner", nil })
	for _, tt := range []struct {
		name   string
		from   wire.Policy // the agent's policy before
		p      wire.Policy
		signed func(wire.Policy) *wire.Signed
		reason string // "" ok
	}{
		{"NarrowUnsignedOK", base, owner, nil, ""},
		{"WidenUnsignedRefused", owner, base, nil, authz.ReasonSignatureRequired},
		{"WidenSignedOK", owner, base, signed, ""},
		{"NarrowWithAnyOrNoSignatureOK", base, owner, func(wire.Policy) *wire.Signed { return signed(base) }, ""},
		{"WidenSignedOtherPolicyRefused", owner, with(func(p *wire.Policy) { p.Allowed = []string{"bob"} }), func(wire.Policy) *wire.Signed { return signed(base) }, authz.ReasonWrongStatement},
		{"BeyondConfigRefusedEvenSigned", base, with(func(p *wire.Policy) { p.AutoApprove = []string{"read_file", "exec_command"} }), signed, "beyond-config"},
		{"MembersBeyondConfigRefused", base, with(func(p *wire.Policy) { p.Address = "members" }), signed, "beyond-config"},
		{"ModerateWithinConfigOK", owner, with(func(p *wire.Policy) { p.Address = "moderate" }), signed, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r.setPolicy(tt.from)
			c := wire.Control{Agent: "codex", Action: wire.ControlPolicy, Policy: &tt.p, By: "alice"}
			if tt.signed != nil {
				c.Signed = tt.signed(tt.p)
			}
			err := r.changePolicy(c)
			if tt.reason == "" && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if tt.reason != "" && wh.ErrorReason(err) != tt.reason {
				t.Fatalf("err %v (reason %q), want %s", err, wh.ErrorReason(err), tt.reason)
			}
			if tt.reason == "" && !policyEqual(r.getPolicy(), tt.p) {
				t.Fatalf("policy %+v after the change", r.getPolicy())
			}
		})
	}
	t.Run("ReplayRefused", func(t *testing.T) {
		r.setPolicy(owner)
		c := wire.Control{Agent: "codex", Action: wire.ControlPolicy, Policy: &base, By: "alice", Signed: signed(base)}
		if err := r.changePolicy(c); err != nil {
			t.Fatal(err)
		}
		r.setPolicy(owner)
		if err := r.changePolicy(c); wh.ErrorReason(err) != authz.ReasonReplayed {
			t.Fatalf("a replayed widening: %v", err)
		}
	})
}

func TestConsentAndCeilings(t *testing.T) {
	b, r := testBridge(t, "", AgentConfig{Rooms: map[string]string{"dev": "normal"}})
	k := newTestKey(t)
	enrollKey(t, b, k, "laptop")
	consent := func(c wire.Consent) error { c.Agent, c.By = "codex", "alice"; return r.consent(c) }
	if c, ok := r.roomGrant("dm:alice:alice+codex"); !ok || c != authz.CeilingNormal {
		t.Fatal("the owner's own DM is not allowed")
	}
	if _, ok := r.roomGrant("dm:bob:alice+codex"); ok {
		t.Fatal("bob's DM with the agent is allowed without consent")
	}
	if err := consent(wire.Consent{Room: "public", Action: wire.ConsentAdd}); wh.ErrorReason(err) != authz.ReasonSignatureRequired {
		t.Fatalf("unsigned consent: %v", err)
	}
	if err := consent(wire.Consent{Room: "dev", Action: wire.ConsentAdd}); err != nil {
		t.Fatalf("a room the config lists needs no signature: %v", err)
	}
	s := k.sign(t, authz.Statement{Kind: authz.StatementConsent, Agent: "alice/codex", Room: "public", Ceiling: authz.CeilingReadOnly})
	if err := consent(wire.Consent{Room: "public", Action: wire.ConsentAdd, Signed: s}); err != nil {
		t.Fatal(err)
	}
	if c, ok := r.roomGrant("public"); !ok || c != authz.CeilingReadOnly {
		t.Fatalf("public: %q %v", c, ok)
	}
	if err := consent(wire.Consent{Room: "public", Action: wire.ConsentCeiling, Ceiling: authz.CeilingAsk}); wh.ErrorReason(err) != authz.ReasonSignatureRequired {
		t.Fatalf("an unsigned looser ceiling: %v", err)
	}
	if err := consent(wire.Consent{Room: "dev", Action: wire.ConsentCeiling, Ceiling: authz.CeilingAsk}); err != nil {
		t.Fatalf("a stricter ceiling: %v", err)
	}
	if err := consent(wire.Consent{Room: "public", Action: wire.ConsentRemove}); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.roomGrant("public"); ok {
		t.Fatal("removed, still allowed")
	}
	if err := consent(wire.Consent{Room: "dev", Action: wire.ConsentRemove}); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.roomGrant("dev"); ok {
		t.Fatal("a room the config lists, removed by the owner, is still allowed")
	}
	if err := consent(wire.Consent{Room: "public", Action: wire.ConsentAdd, Signed: s}); wh.ErrorReason(err) != authz.ReasonReplayed {
		t.Fatalf("a replayed consent: %v", err)
	}
}

func TestTrustStorePersists(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bridge.trust.json")
	cfg := AgentConfig{PolicyFile: PolicyConfig{Address: "members"}, Rooms: map[string]string{"dev": "normal"}}
	b, r := testBridge(t, path, cfg)
	k := newTestKey(t)
	enrollKey(t, b, k, "laptop")
	owner := wire.DefaultPolicy()
	if err := r.changePolicy(wire.Control{Agent: "codex", Action: wire.ControlPolicy, Policy: &owner, By: "alice"}); err != nil {
		t.Fatal(err)
	}
	if err := r.consent(wire.Consent{Agent: "codex", Room: "dev", Action: wire.ConsentCeiling, Ceiling: "ask", By: "alice"}); err != nil {
		t.Fatal(err)
	}
	s := k.sign(t, authz.Statement{Kind: authz.StatementConsent, Agent: "alice/codex", Room: "ops"})
	if err := r.consent(wire.Consent{Agent: "codex", Room: "ops", Action: wire.ConsentAdd, By: "alice", Signed: s}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("trust store %v %v", fi, err)
	}

	t.Run("RestartKeepsEverything", func(t *testing.T) {
		b2, r2 := testBridge(t, path, cfg)
		if r2.getPolicy().Address != "owner" {
			t.Fatalf("policy after restart: %+v", r2.getPolicy())
		}
		if c, _ := r2.roomGrant("dev"); c != "ask" {
			t.Fatalf("dev ceiling %q", c)
		}
		if _, ok := r2.roomGrant("ops"); !ok {
			t.Fatal("signed consent lost")
		}
		if len(b2.Devices()) != 1 {
			t.Fatalf("devices %v", b2.Devices())
		}
		if err := r2.consent(wire.Consent{Agent: "codex", Room: "ops2", Action: wire.ConsentAdd, By: "alice", Signed: s}); wh.ErrorReason(err) != authz.ReasonWrongStatement {
			t.Fatalf("a signature for another room: %v", err)
		}
		// The nonces survive too: the same signed consent, replayed after
		// the owner took the room away, is refused.
		if err := r2.consent(wire.Consent{Agent: "codex", Room: "ops", Action: wire.ConsentRemove, By: "alice"}); err != nil {
			t.Fatal(err)
		}
		if err := r2.consent(wire.Consent{Agent: "codex", Room: "ops", Action: wire.ConsentAdd, By: "alice", Signed: s}); wh.ErrorReason(err) != authz.ReasonReplayed {
			t.Fatalf("a consent replayed after a restart: %v", err)
		}
		again := k.sign(t, authz.Statement{Kind: authz.StatementConsent, Agent: "alice/codex", Room: "ops"})
		if err := r2.consent(wire.Consent{Agent: "codex", Room: "ops", Action: wire.ConsentAdd, By: "alice", Signed: again}); err != nil {
			t.Fatalf("a fresh signature after the restart: %v", err)
		}
	})
	t.Run("EditedConfigStartsOver", func(t *testing.T) {
		edited := cfg
		edited.Rooms = map[string]string{"dev": "normal", "docs": "read-only"}
		_, r3 := testBridge(t, path, edited)
		if r3.getPolicy().Address != "members" {
			t.Fatalf("an edited config keeps the old policy: %+v", r3.getPolicy())
		}
		if c, _ := r3.roomGrant("dev"); c != "normal" {
			t.Fatalf("dev ceiling %q: the override of a config room should go with the edit", c)
		}
		if c, ok := r3.roomGrant("docs"); !ok || c != "read-only" {
			t.Fatalf("docs %q %v", c, ok)
		}
		if _, ok := r3.roomGrant("ops"); !ok {
			t.Fatal("signed consent lost with the edit")
		}
	})
	t.Run("RevokedOffline", func(t *testing.T) {
		if _, err := RevokeTrusted(path, k.id); err != nil {
			t.Fatal(err)
		}
		ds, _ := TrustedDevices(path)
		if len(ds) != 1 || !ds[0].Revoked {
			t.Fatalf("devices %+v", ds)
		}
		_, r4 := testBridge(t, path, cfg)
		s := k.sign(t, authz.Statement{Kind: authz.StatementConsent, Agent: "alice/codex", Room: "new"})
		if err := r4.consent(wire.Consent{Agent: "codex", Room: "new", Action: wire.ConsentAdd, By: "alice", Signed: s}); wh.ErrorReason(err) != authz.ReasonDeviceRevoked {
			t.Fatalf("a revoked device's consent: %v", err)
		}
	})
	if strings.Contains(string(must(os.ReadFile(path))), "PRIVATE") {
		t.Fatal("a private key in the trust store")
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// recording is a harness that keeps the inputs of the turns it starts and
// guarantees strict turns (every side effect reaches the gate).
type recording struct {
	idle
	mu      sync.Mutex
	started []Input
}

func (h *recording) StartTurn(_ context.Context, in Input) (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.started = append(h.started, in)
	return fmt.Sprintf("t%d", len(h.started)), nil
}
func (*recording) StrictTurns() error     { return nil }
func (*recording) TurnStrict(string) bool { return true }
func (*recording) OwnerTurns() string     { return "" }

// A message that waits in the queue starts under the room's ceiling as it
// is when it starts: the owner made #dev read-only meanwhile, so the turn
// is strict and read-only and the model is told so, though the message
// was decided under a normal ceiling.
func TestQueuedMessageStartsUnderTheCeilingOfItsStart(t *testing.T) {
	h := &recording{}
	b, err := New(Config{Creds: &Credentials{Owner: "alice", BridgeID: "b0123456789ab"},
		Agents:    []AgentConfig{{Name: "codex", Harness: "rec", Rooms: map[string]string{"dev": "normal"}}},
		Harnesses: map[string]Factory{"rec": func(Deps) (Harness, error) { return h, nil }},
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	r := b.agents["codex"]
	r.mu.Lock()
	r.turnID, r.status = "t0", wire.AgentWorking // a turn runs in another thread
	r.mu.Unlock()
	now := time.Now()
	rc, _ := r.deliver(wire.Steer{ID: "s-1", Agent: "codex", Owner: "alice", Room: "dev", RoomKind: "room", MessageID: 7,
		Sender: "alice", SenderIsOwner: true, SentAt: now, Deadline: now.Add(time.Minute), Text: "tidy the repo", NewTurn: true})
	if rc.Status != wire.StatusQueued {
		t.Fatalf("receipt %+v: want queued behind the running turn", rc)
	}
	if err := r.consent(wire.Consent{Agent: "codex", By: "alice", Room: "dev", Action: wire.ConsentCeiling, Ceiling: authz.CeilingReadOnly}); err != nil {
		t.Fatal(err) // stricter: no signature needed
	}
	r.clearTurn("t0", wire.TurnCompleted)
	r.deliverQueued()
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.started) != 1 {
		t.Fatalf("%d turns started, want the queued one", len(h.started))
	}
	in := h.started[0]
	if !in.Strict || !in.ReadOnly || !strings.Contains(in.Text, "only read") {
		t.Fatalf("the queued message started strict=%v read-only=%v with:\n%s", in.Strict, in.ReadOnly, in.Text)
	}
}

// The bridge re-checks a forward against the steer the hub sent: a hub
// that hides a file's digest, renames a file or adds one after alice
// signed is refused, whatever it shows her.
func TestForwardCoversTheSteersFiles(t *testing.T) {
	b, r := testBridge(t, filepath.Join(t.TempDir(), "trust.json"), AgentConfig{})
	k := newTestKey(t)
	enrollKey(t, b, k, "laptop")
	notes := wire.FileRef{ID: "f0123456789abcdef", Name: "notes.txt", Type: "text/plain", Size: 6, SHA256: authz.FileHash([]byte("notes\n"))}
	steer := func(files ...wire.FileRef) wire.Steer {
		return wire.Steer{ID: "s9.codex", Agent: "codex", Owner: "alice", Room: "dev", Sender: "bob", Text: "@alice/codex read my notes",
			ForwardedBy: "alice", Files: files}
	}
	signed := k.sign(t, authz.Statement{Kind: authz.StatementForward, Agent: "alice/codex", Steer: "s9.codex", Room: "dev", Sender: "bob",
		TextHash: authz.TextHash("@alice/codex read my notes"), Files: []authz.StatementFile{{Name: notes.Name, SHA256: notes.SHA256}}})
	noDigest, renamed, extra := notes, notes, notes
	noDigest.SHA256 = ""
	renamed.Name = "READ-ME-FIRST-then-run-setup.sh"
	extra.ID, extra.SHA256 = "f0123456789abcdee", authz.FileHash([]byte("more\n"))
	for _, tc := range []struct {
		name  string
		files []wire.FileRef
		want  string // "" for allowed
	}{
		{"ErrDigestHidden", []wire.FileRef{noDigest}, "no SHA-256"},
		{"ErrRenamed", []wire.FileRef{renamed}, "named"},
		{"ErrFileAdded", []wire.FileRef{notes, extra}, "it names 1 file, and the message has 2 files"},
		{"ErrFilesDropped", nil, "the message has 0 files"},
		{"OK", []wire.FileRef{notes}, ""}, // last: a signature works once
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := steer(tc.files...)
			st.Forward = signed
			d := r.checkForward(st)
			if tc.want == "" && !d.Allow {
				t.Fatalf("refused: %s", d.Message)
			}
			if tc.want != "" && (d.Allow || d.Reason != authz.ReasonWrongStatement || !strings.Contains(d.Message, tc.want)) {
				t.Fatalf("%+v, want refused (wrong-statement) saying %q", d, tc.want)
			}
		})
	}
}
