package wire

import (
	"strings"
	"testing"

	"github.com/wheelhouse-dev/wheelhouse/authz"
)

// The owner's messages cross a hub that may be hostile: the bridge checks
// their shape before it verifies a signature or acts.

func validSigned() *Signed {
	return &Signed{Statement: `{"v":1}`, Device: "d0123456789abcdef", Sig: "c2ln"}
}

func TestSigned(t *testing.T) {
	cases := []struct {
		name string
		mut  func(*Signed)
		want string
	}{
		{"OK", func(*Signed) {}, ""},
		{"StatementEmpty", func(s *Signed) { s.Statement = "" }, "statement is empty or larger"},
		{"StatementTooLarge", func(s *Signed) { s.Statement = strings.Repeat("x", authz.MaxStatementBytes+1) }, "statement is empty or larger"},
		{"DeviceBad", func(s *Signed) { s.Device = "d0123" }, "signed.device"},
		{"SigNotBase64url", func(s *Signed) { s.Sig = "a+b/" }, "signed.sig is not base64url"},
		{"SigTooLong", func(s *Signed) { s.Sig = strings.Repeat("A", 4097) }, "signed.sig is not base64url"},
		{"ClientDataNotBase64url", func(s *Signed) { s.ClientData = "{}" }, "signed.clientData"},
		{"SigMissing", func(s *Signed) { s.Sig = "" }, "signed.sig is missing"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := validSigned()
			c.mut(s)
			check(t, s.Validate(), c.want)
		})
	}
	var none *Signed
	check(t, none.Validate(), "")
}

func TestConsent(t *testing.T) {
	cases := []struct {
		name string
		c    Consent
		want string
	}{
		{"OKAdd", Consent{Agent: "codex", Room: "dev", Action: ConsentAdd, Signed: validSigned()}, ""},
		{"OKNarrow", Consent{Agent: "codex", Room: "dm:alice:alice+codex", Action: ConsentCeiling, Ceiling: authz.CeilingReadOnly}, ""},
		{"AgentBad", Consent{Agent: "Codex!", Room: "dev", Action: ConsentAdd}, "agent"},
		{"RoomBad", Consent{Agent: "codex", Room: "../etc", Action: ConsentAdd}, "room"},
		{"ActionUnknown", Consent{Agent: "codex", Room: "dev", Action: "grant-all"}, "consent action"},
		{"CeilingUnknown", Consent{Agent: "codex", Room: "dev", Action: ConsentCeiling, Ceiling: "root"}, "ceiling"},
		{"CeilingMissing", Consent{Agent: "codex", Room: "dev", Action: ConsentCeiling}, "names the ceiling"},
		{"SignatureBad", Consent{Agent: "codex", Room: "dev", Action: ConsentAdd, Signed: &Signed{Statement: "x", Device: "nope", Sig: "c2ln"}}, "signed.device"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { check(t, c.c.Validate(), c.want) })
	}
}

func TestDeviceRequest(t *testing.T) {
	enroll := func(mut func(*Enrollment)) DeviceRequest {
		e := &Enrollment{Name: "laptop", Kind: authz.DeviceWebCrypto, PublicKey: "AAAA", Proof: "AAAA"}
		mut(e)
		return DeviceRequest{Op: DeviceEnroll, Enroll: e}
	}
	cases := []struct {
		name string
		r    DeviceRequest
		want string
	}{
		{"OKList", DeviceRequest{Op: DeviceListOp}, ""},
		{"OKRevoke", DeviceRequest{Op: DeviceRevoke, ID: "d0123456789abcdef"}, ""},
		{"OKEnroll", enroll(func(*Enrollment) {}), ""},
		{"RevokeIDBad", DeviceRequest{Op: DeviceRevoke, ID: "d01"}, "device id"},
		{"EnrollMissing", DeviceRequest{Op: DeviceEnroll}, "needs the device"},
		{"NameEmpty", enroll(func(e *Enrollment) { e.Name = "" }), "a name of at most 64"},
		{"NameNotUTF8", enroll(func(e *Enrollment) { e.Name = "\xff" }), "a name of at most 64"},
		{"KindUnknown", enroll(func(e *Enrollment) { e.Kind = "sms" }), "device kind"},
		{"ProofTooLarge", enroll(func(e *Enrollment) { e.Proof = strings.Repeat("A", 129) }), "too large"},
		{"PasskeyWithoutOrigin", enroll(func(e *Enrollment) { e.Kind = authz.DeviceWebAuthn; e.RPID = "example.com" }), "relying party and origin"},
		{"OpUnknown", DeviceRequest{Op: "wipe"}, "device op"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { check(t, c.r.Validate(), c.want) })
	}
}

func TestDeviceList(t *testing.T) {
	dev := Device{ID: "d0123456789abcdef", Name: "laptop", Kind: authz.DeviceWebCrypto, PublicKey: "AAAA"}
	check(t, (&DeviceList{Devices: []Device{dev}}).Validate(), "")
	tooMany := make([]Device, 1001)
	for i := range tooMany {
		tooMany[i] = dev
	}
	check(t, (&DeviceList{Devices: tooMany}).Validate(), "more than 1000 devices")
	for name, mut := range map[string]func(*Device){
		"device id":           func(d *Device) { d.ID = "x" },
		"a name of at most":   func(d *Device) { d.Name = strings.Repeat("n", 65) },
		"is not known":        func(d *Device) { d.Kind = "yubikey" },
		"the key is too long": func(d *Device) { d.PublicKey = strings.Repeat("A", 1025) },
	} {
		d := dev
		mut(&d)
		check(t, (&DeviceList{Devices: []Device{d}}).Validate(), name)
	}
}

func TestForgery(t *testing.T) {
	valid := func() Forgery {
		return Forgery{Agent: "codex", Kind: authz.StatementApproval, Subject: "a0123456789abcdef", Reason: "bad-signature", Detail: "the signature does not verify", At: now}
	}
	cases := []struct {
		name string
		mut  func(*Forgery)
		want string
	}{
		{"OK", func(*Forgery) {}, ""},
		{"OKEnrollWithoutAgent", func(f *Forgery) { f.Kind, f.Agent = ForgeryEnroll, "" }, ""},
		{"KindUnknown", func(f *Forgery) { f.Kind = "root" }, "forgery kind"},
		{"AgentMissing", func(f *Forgery) { f.Agent = "" }, "names its agent"},
		{"SubjectTooLong", func(f *Forgery) { f.Subject = strings.Repeat("s", 257) }, "subject is too long"},
		{"ReasonBad", func(f *Forgery) { f.Reason = "Bad Reason" }, "reason"},
		{"DeviceBad", func(f *Forgery) { f.Device = "d1" }, "device"},
		{"TimeFarOff", func(f *Forgery) { f.At = now.Add(48 * ClockSkew) }, "forgery time"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := valid()
			c.mut(&f)
			check(t, f.Validate(now), c.want)
		})
	}
}

func TestControl(t *testing.T) {
	pol := DefaultPolicy()
	cases := []struct {
		name string
		c    Control
		want string
	}{
		{"OKInterrupt", Control{Agent: "codex", Action: ControlInterrupt, By: "alice"}, ""},
		{"OKPolicy", Control{Agent: "codex", Action: ControlPolicy, Policy: &pol, By: "alice", Signed: validSigned()}, ""},
		{"OKResync", Control{Agent: "codex", Action: ControlResync, TurnID: "t-1", Approvals: []string{"a0123456789abcdef"}, Steers: []string{"s42.codex"}}, ""},
		{"AgentBad", Control{Agent: "", Action: ControlInterrupt}, "not an agent name"},
		{"ActionUnknown", Control{Agent: "codex", Action: "shell"}, "control action"},
		{"PolicyMissing", Control{Agent: "codex", Action: ControlPolicy, By: "alice"}, "names no policy"},
		{"PolicyBad", Control{Agent: "codex", Action: ControlPolicy, By: "alice", Policy: &Policy{Address: "everyone"}}, "address"},
		{"ByBad", Control{Agent: "codex", Action: ControlInterrupt, By: "Alice Smith"}, "not a user name"},
		{"TurnBad", Control{Agent: "codex", Action: ControlResync, TurnID: "t 1\n"}, "turn id"},
		{"ApprovalIDBad", Control{Agent: "codex", Action: ControlResync, Approvals: []string{"../x"}}, "approval id"},
		{"SteerIDBad", Control{Agent: "codex", Action: ControlResync, Steers: []string{"x"}}, "steer id"},
		{"TooMany", Control{Agent: "codex", Action: ControlResync, Steers: many(MaxResync+1, "s1.codex")}, "at most"},
		{"SignatureBad", Control{Agent: "codex", Action: ControlPolicy, Policy: &pol, By: "alice", Signed: &Signed{Statement: "x", Device: "d0123456789abcdef"}}, "signed.sig is missing"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { check(t, c.c.Validate(), c.want) })
	}
}
