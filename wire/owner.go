package wire

import (
	"encoding/base64"
	"regexp"
	"strings"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/authz"
)

// The owner's authority on the wire. Decisions that let an agent do more
// carry a Signed statement from one of the owner's devices, which the hub
// relays unchanged and the bridge verifies against the devices it enrolled
// itself; the hub cannot make such a decision, only pass it on.

// Kinds of the owner-authority messages.
const (
	KindConsent = "consent" // Consent, hub → bridge, request/reply: answer is Ack
	KindDevice  = "device"  // DeviceRequest, hub → bridge, request/reply: answer is DeviceReply
	KindDevices = "devices" // DeviceList, bridge → hub, publish: the bridge's devices changed
	KindForgery = "forgery" // Forgery, bridge → hub, publish: a decision the bridge refused
)

// AddressModerate: others' mentions wait for the owner to forward them.
const AddressModerate = authz.AddressModerate

// Room ceilings (authz.Ceiling*).
const (
	CeilingReadOnly = authz.CeilingReadOnly
	CeilingAsk      = authz.CeilingAsk
	CeilingNormal   = authz.CeilingNormal
)

// Receipt status and reasons of moderated mentions.
const (
	// StatusHeld: the mention waits for the owner to forward or decline it.
	StatusHeld      = "held"
	ReasonModerated = authz.ReasonModerated
	ReasonDeclined  = authz.ReasonDeclined
)

// Signed is an owner device's signature over a statement (the canonical
// JSON of an authz.Statement).
type Signed struct {
	Statement  string `json:"statement"`
	Device     string `json:"device"`               // authz.DeviceID of the signing key
	Sig        string `json:"sig"`                  // base64url
	AuthData   string `json:"authData,omitempty"`   // passkeys: authenticator data, base64url
	ClientData string `json:"clientData,omitempty"` // passkeys: clientDataJSON, base64url
}

// Signature decodes the signature parts.
func (s *Signed) Signature() (authz.Signature, error) {
	var out authz.Signature
	var err error
	for _, f := range []struct {
		dst  *[]byte
		src  string
		name string
	}{{&out.Sig, s.Sig, "sig"}, {&out.AuthData, s.AuthData, "authData"}, {&out.ClientData, s.ClientData, "clientData"}} {
		if *f.dst, err = b64url(f.src); err != nil {
			return out, invalid("signed.%s is not base64url", f.name)
		}
	}
	return out, nil
}

// b64url decodes base64url with or without padding.
func b64url(s string) ([]byte, error) {
	return base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
}

var (
	deviceIDRE = regexp.MustCompile(`^d[0-9a-f]{16}$`)
	b64urlRE   = regexp.MustCompile(`^[A-Za-z0-9_-]*={0,2}$`)
)

// ValidDeviceID reports whether s has the form of a device id.
func ValidDeviceID(s string) bool { return deviceIDRE.MatchString(s) }

// Validate checks a signature's shape (the bridge verifies it).
func (s *Signed) Validate() error {
	if s == nil {
		return nil
	}
	if s.Statement == "" || len(s.Statement) > authz.MaxStatementBytes {
		return invalid("the signed statement is empty or larger than %d bytes", authz.MaxStatementBytes)
	}
	if !deviceIDRE.MatchString(s.Device) {
		return invalid("signed.device %q is not a device id", clip(s.Device))
	}
	for _, f := range []struct{ name, v string }{{"sig", s.Sig}, {"authData", s.AuthData}, {"clientData", s.ClientData}} {
		if len(f.v) > 4096 || !b64urlRE.MatchString(f.v) {
			return invalid("signed.%s is not base64url (at most 4096 characters)", f.name)
		}
	}
	if s.Sig == "" {
		return invalid("signed.sig is missing")
	}
	return nil
}

// Consent changes the rooms an agent may act in, or what a room's turns
// may do. Adding a room and widening a ceiling need the owner's Signed
// statement (or a grant the bridge already holds); removing and narrowing
// do not.
type Consent struct {
	Agent   string  `json:"agent"`
	Room    string  `json:"room"`
	Action  string  `json:"action"`            // ConsentAdd, ConsentRemove, ConsentCeiling
	Ceiling string  `json:"ceiling,omitempty"` // for add (default normal) and ceiling
	By      string  `json:"by"`
	Signed  *Signed `json:"signed,omitempty"`
}

// Consent actions.
const (
	ConsentAdd     = "add"
	ConsentRemove  = "remove"
	ConsentCeiling = "ceiling"
)

// RoomGrant is one room an agent may act in, as its bridge holds it.
type RoomGrant struct {
	Room    string `json:"room"`
	Ceiling string `json:"ceiling"`
}

// Device is an owner device a bridge trusts (or trusted: revoked).
type Device struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Kind      string    `json:"kind"`      // authz.DeviceWebCrypto or DeviceWebAuthn
	PublicKey string    `json:"publicKey"` // base64 SPKI DER
	AddedAt   time.Time `json:"addedAt"`
	Revoked   bool      `json:"revoked,omitempty"`
	RevokedAt time.Time `json:"revokedAt,omitzero"`
}

// Enrollment is a device asking to be trusted: its key and the MAC of it
// under the code the bridge showed the owner (authz.EnrollProof).
type Enrollment struct {
	Name         string `json:"name"`
	Kind         string `json:"kind"`
	PublicKey    string `json:"publicKey"` // base64 SPKI DER
	CredentialID string `json:"credentialId,omitempty"`
	RPID         string `json:"rpId,omitempty"`
	Origin       string `json:"origin,omitempty"`
	Proof        string `json:"proof"` // base64url HMAC-SHA256
}

// DeviceRequest asks a bridge to enroll or revoke a device, or to list them.
type DeviceRequest struct {
	Op     string      `json:"op"` // DeviceEnroll, DeviceRevoke, DeviceListOp
	Enroll *Enrollment `json:"enroll,omitempty"`
	ID     string      `json:"id,omitempty"`
	By     string      `json:"by"`
}

// Device operations.
const (
	DeviceEnroll = "enroll"
	DeviceRevoke = "revoke"
	DeviceListOp = "list"
)

// DeviceReply answers a DeviceRequest with the device concerned and the
// bridge's devices.
type DeviceReply struct {
	Ack
	Device  *Device  `json:"device,omitempty"`
	Devices []Device `json:"devices,omitempty"`
}

// DeviceList is the bridge's devices, sent whenever they change.
type DeviceList struct {
	Devices []Device `json:"devices"`
}

// Forgery reports a decision the bridge refused because it was not signed
// by one of the owner's devices as it must be (or replayed, or expired).
type Forgery struct {
	Agent   string    `json:"agent,omitempty"`
	Kind    string    `json:"kind"`              // an authz.Statement* kind, or "enroll"
	Subject string    `json:"subject,omitempty"` // the approval id, room, or steer id concerned
	Reason  string    `json:"reason"`            // authz.Reason*
	Detail  string    `json:"detail"`
	Device  string    `json:"device,omitempty"` // the device the decision named
	At      time.Time `json:"at"`
}

// Forgery kinds beyond the statement kinds.
const ForgeryEnroll = "enroll"

// Validate checks a consent request (the bridge's side).
func (c *Consent) Validate() error {
	if !nameRE.MatchString(c.Agent) {
		return invalid("agent %q is not valid", clip(c.Agent))
	}
	if !roomRE.MatchString(c.Room) {
		return invalid("room %q is not valid", clip(c.Room))
	}
	switch c.Action {
	case ConsentAdd, ConsentRemove, ConsentCeiling:
	default:
		return invalid("consent action %q: want add, remove or ceiling", clip(c.Action))
	}
	if c.Ceiling != "" && !authz.ValidCeiling(c.Ceiling) {
		return invalid("ceiling %q: want read-only, ask or normal", clip(c.Ceiling))
	}
	if c.Action == ConsentCeiling && c.Ceiling == "" {
		return invalid("a ceiling change names the ceiling")
	}
	return c.Signed.Validate()
}

// Validate checks a device request (the bridge's side).
func (r *DeviceRequest) Validate() error {
	switch r.Op {
	case DeviceListOp:
	case DeviceRevoke:
		if !deviceIDRE.MatchString(r.ID) {
			return invalid("device id %q is not valid", clip(r.ID))
		}
	case DeviceEnroll:
		e := r.Enroll
		if e == nil {
			return invalid("an enrollment needs the device")
		}
		if e.Name == "" || len(e.Name) > 64 || !utf8Valid(e.Name) {
			return invalid("a device needs a name of at most 64 bytes")
		}
		if e.Kind != authz.DeviceWebCrypto && e.Kind != authz.DeviceWebAuthn {
			return invalid("device kind %q: want webcrypto or webauthn", clip(e.Kind))
		}
		if len(e.PublicKey) > 1024 || len(e.CredentialID) > 1024 || len(e.RPID) > 253 || len(e.Origin) > 512 || len(e.Proof) > 128 {
			return invalid("the enrollment is too large")
		}
		if e.Kind == authz.DeviceWebAuthn && (e.RPID == "" || e.Origin == "") {
			return invalid("a passkey enrollment names its relying party and origin")
		}
	default:
		return invalid("device op %q: want enroll, revoke or list", clip(r.Op))
	}
	return nil
}

// Validate checks a device list a bridge sends.
func (l *DeviceList) Validate() error {
	if len(l.Devices) > 1000 {
		return invalid("more than 1000 devices")
	}
	for _, d := range l.Devices {
		if err := d.validate(); err != nil {
			return err
		}
	}
	return nil
}

func (d *Device) validate() error {
	if !deviceIDRE.MatchString(d.ID) {
		return invalid("device id %q is not valid", clip(d.ID))
	}
	if d.Name == "" || len(d.Name) > 64 || !utf8Valid(d.Name) {
		return invalid("device %s: a name of at most 64 bytes", d.ID)
	}
	if d.Kind != authz.DeviceWebCrypto && d.Kind != authz.DeviceWebAuthn {
		return invalid("device %s: kind %q is not known", d.ID, clip(d.Kind))
	}
	if len(d.PublicKey) > 1024 {
		return invalid("device %s: the key is too long", d.ID)
	}
	return nil
}

// Validate checks a forgery report a bridge sends.
func (f *Forgery) Validate(now time.Time) error {
	if err := checkOpt("agent", f.Agent, nameRE); err != nil {
		return err
	}
	switch f.Kind {
	case authz.StatementApproval, authz.StatementPolicy, authz.StatementConsent, authz.StatementCeiling, authz.StatementForward, authz.StatementMessage, ForgeryEnroll:
	default:
		return invalid("forgery kind %q is not known", clip(f.Kind))
	}
	if f.Agent == "" && f.Kind != ForgeryEnroll {
		return invalid("a refused %s names its agent", f.Kind)
	}
	if len(f.Subject) > 256 || !utf8Valid(f.Subject) {
		return invalid("the subject is too long")
	}
	if !reasonRE.MatchString(f.Reason) {
		return invalid("reason %q is not valid", clip(f.Reason))
	}
	if err := checkText("detail", f.Detail, MaxDetail); err != nil {
		return err
	}
	if f.Device != "" && !deviceIDRE.MatchString(f.Device) {
		return invalid("device %q is not valid", clip(f.Device))
	}
	return checkTime("forgery time", f.At, now)
}

func (g *RoomGrant) validate() error {
	if !roomRE.MatchString(g.Room) {
		return invalid("room %q is not valid", clip(g.Room))
	}
	if !authz.ValidCeiling(g.Ceiling) {
		return invalid("room %s: ceiling %q is not known", g.Room, clip(g.Ceiling))
	}
	return nil
}

// Limits is the part of p that says how much the agent lets others do.
func (p Policy) Limits() authz.Limits {
	return authz.Limits{Address: p.Address, Allowed: p.Allowed, Steering: p.Steering, MaxSteers: p.MaxSteers, Grace: p.Grace.D(),
		StartOnEnded: p.StartOnEnded, MaxAge: p.MaxAge.D(), AutoApprove: p.AutoApprove}
}
