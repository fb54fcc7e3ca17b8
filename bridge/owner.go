package bridge

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/authz"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// The owner's authority on the bridge: enrolling devices with a code shown
// here, checking the signed decisions the hub relays against them, and
// refusing — loudly — what is not signed as it must be.

// Enrollment codes.
const (
	// EnrollCodeTTL is how long an enrollment code works.
	EnrollCodeTTL = 10 * time.Minute
	// enrollTries is how many wrong proofs kill a code: nobody guesses a
	// 50-bit code in that many tries.
	enrollTries = 5
)

type enrollCode struct {
	mu      sync.Mutex
	code    string
	key     []byte
	expires time.Time
	tries   int
}

// NewEnrollCode makes a fresh enrollment code (any earlier one stops
// working), prints it on the bridge's terminal and returns it, formatted
// for people, with its expiry.
func (b *Bridge) NewEnrollCode() (string, time.Time) {
	code := authz.NewEnrollCode()
	key := authz.EnrollKey(code, b.cfg.Creds.BridgeID)
	exp := b.cfg.Now().Add(EnrollCodeTTL)
	b.enroll.mu.Lock()
	b.enroll.code, b.enroll.key, b.enroll.expires, b.enroll.tries = code, key, exp, 0
	b.enroll.mu.Unlock()
	shown := authz.ShowEnrollCode(code)
	b.printf("device enrollment code for @%s: %s — enter it in the browser (your name → Devices → Enroll this device); it works once, until %s",
		b.cfg.Creds.Owner, shown, exp.Local().Format("15:04:05"))
	return shown, exp
}

// Devices lists the owner devices this bridge trusts.
func (b *Bridge) Devices() []wire.Device { return b.trust.devices() }

// RevokeDevice revokes a device on this machine (the owner's own act).
func (b *Bridge) RevokeDevice(id string) (wire.Device, error) {
	d, err := b.trust.revoke(id)
	if err != nil {
		return d, err
	}
	b.printf("revoked device %q (%s): its signatures are refused from now on", d.Name, d.ID)
	b.publishDevices()
	return d, nil
}

// AllowRoom lets an agent act in a room at a ceiling: the owner's consent
// given on this machine (wheelhouse up, bridge accept).
func (b *Bridge) AllowRoom(agent, room, ceiling string) error {
	r := b.agents[agent]
	if r == nil {
		return wh.Errorf(wh.ENotFound, "this bridge runs no agent %q", agent)
	}
	if ceiling == "" {
		ceiling = authz.CeilingNormal
	}
	if !authz.ValidCeiling(ceiling) {
		return wh.Errorf(wh.EInvalid, "ceiling %q: want normal, ask or read-only", ceiling)
	}
	if err := b.trust.setGrant(agent, room, ceiling, "bridge", false); err != nil {
		return err
	}
	r.journalAdd(JournalEntry{Kind: JournalOwner, Room: room, Status: "consent " + ceiling, By: "bridge"})
	if b.nc != nil {
		b.heartbeat()
	}
	return nil
}

func (b *Bridge) publishDevices() {
	if b.nc != nil {
		b.publish(wire.KindDevices, wire.DeviceList{Devices: b.trust.devices()})
	}
}

// refuse reports a decision the bridge would not act on: on the terminal,
// in the agent's journal, and to the hub, which records it in the agent's
// timeline as a refused forgery.
func (b *Bridge) refuse(r *runner, kind, subject, device string, d authz.Decision) {
	who := "@" + b.cfg.Creds.Owner
	agent := ""
	if r != nil {
		who, agent = r.handle(), r.cfg.Name
		r.journalAdd(JournalEntry{Kind: JournalForgery, Status: kind + " " + d.Reason, Room: subjectRoom(kind, subject), ApprovalID: subjectApproval(kind, subject), Text: d.Message, By: device})
	}
	if kind == authz.StatementMessage {
		b.printf("REFUSED the owner's signature on a message for %s (%s): %s — the words count as a teammate's", who, d.Reason, d.Message)
	} else {
		b.printf("REFUSED a %s decision for %s (%s): %s — not signed by one of your devices as it must be; nothing was done", kind, who, d.Reason, d.Message)
	}
	b.log.Warn("refused an unsigned or wrongly signed decision", "kind", kind, "agent", agent, "subject", subject, "reason", d.Reason, "device", device)
	if b.nc != nil {
		b.publish(wire.KindForgery, wire.Forgery{Agent: agent, Kind: kind, Subject: clipText(subject, 256), Reason: d.Reason,
			Detail: clipText(d.Message, wire.MaxDetail), Device: validDevice(device), At: b.cfg.Now().UTC()})
	}
}

func subjectRoom(kind, s string) string {
	if kind == authz.StatementConsent || kind == authz.StatementCeiling {
		return s
	}
	return ""
}

func subjectApproval(kind, s string) string {
	if kind == authz.StatementApproval {
		return s
	}
	return ""
}

func validDevice(id string) string {
	if wire.ValidDeviceID(id) {
		return id
	}
	return ""
}

func clipText(s string, n int) string {
	if len(s) > n {
		s = s[:n]
	}
	return strings.ToValidUTF8(s, "")
}

func signedDevice(s *wire.Signed) string {
	if s == nil {
		return ""
	}
	return s.Device
}

// deviceName is how the terminal names the device that signed: "laptop
// (d0123…)".
func (b *Bridge) deviceName(id string) string {
	if d := b.trust.device(id); d != nil {
		return fmt.Sprintf("%q (%s)", d.Name, id)
	}
	return id
}

// onDevice enrolls, revokes or lists the owner's devices for the hub.
func (b *Bridge) onDevice(m *nats.Msg) {
	var req wire.DeviceRequest
	if err := wire.Decode(m.Data, &req); err != nil {
		respond(m, wire.DeviceReply{Ack: wire.Ack{Code: wh.EInvalid, Message: "undecodable device request"}})
		return
	}
	if err := req.Validate(); err != nil {
		respond(m, wire.DeviceReply{Ack: wire.Ack{Code: wh.EInvalid, Message: wh.ErrorMessage(err)}})
		return
	}
	if req.By != b.cfg.Creds.Owner {
		respond(m, wire.DeviceReply{Ack: wire.Ack{Code: wh.EForbidden, Message: "only the owner enrolls or revokes devices"}})
		return
	}
	switch req.Op {
	case wire.DeviceListOp:
	case wire.DeviceRevoke:
		// Revoking takes authority away: it needs no signature.
		if _, err := b.RevokeDevice(req.ID); err != nil {
			respond(m, wire.DeviceReply{Ack: wire.Ack{Code: wh.ErrorCode(err), Message: wh.ErrorMessage(err)}})
			return
		}
	case wire.DeviceEnroll:
		d, err := b.enrollDevice(*req.Enroll)
		if err != nil {
			respond(m, wire.DeviceReply{Ack: wire.Ack{Code: wh.ErrorCode(err), Message: wh.ErrorMessage(err), Reason: wh.ErrorReason(err)}, Devices: b.trust.devices()})
			return
		}
		respond(m, wire.DeviceReply{Ack: wire.Ack{OK: true}, Device: &d, Devices: b.trust.devices()})
		return
	}
	respond(m, wire.DeviceReply{Ack: wire.Ack{OK: true}, Devices: b.trust.devices()})
}

// enrollDevice trusts a device whose enrollment carries the MAC of the
// code this bridge is showing.
func (b *Bridge) enrollDevice(e wire.Enrollment) (wire.Device, error) {
	ae := authz.Enrollment{Bridge: b.cfg.Creds.BridgeID, Name: e.Name, Kind: e.Kind, PublicKey: e.PublicKey, CredentialID: e.CredentialID, RPID: e.RPID, Origin: e.Origin}
	proof, _ := base64.RawURLEncoding.DecodeString(strings.TrimRight(e.Proof, "="))
	ec := &b.enroll
	ec.mu.Lock()
	switch {
	case ec.code == "":
		ec.mu.Unlock()
		b.printf("refused to enroll device %q: no enrollment code is open (wheelhouse bridge devices add shows one)", clipText(e.Name, 64))
		return wire.Device{}, &wh.Error{Code: wh.EForbidden, Reason: "no-code", Message: "no enrollment code is open on the bridge: run wheelhouse bridge devices add on the bridge machine and type the code it shows"}
	case b.cfg.Now().After(ec.expires):
		ec.code, ec.key = "", nil
		ec.mu.Unlock()
		return wire.Device{}, &wh.Error{Code: wh.EForbidden, Reason: "code-expired", Message: "the enrollment code expired: run wheelhouse bridge devices add for a new one"}
	case !authz.CheckEnrollProof(ec.key, ae, proof):
		ec.tries++
		left := enrollTries - ec.tries
		if left <= 0 {
			ec.code, ec.key = "", nil
		}
		ec.mu.Unlock()
		d := authz.Decision{Reason: "wrong-code", Message: fmt.Sprintf("an enrollment of device %q did not carry the code this bridge shows (%d tries left)", clipText(e.Name, 64), max(left, 0))}
		b.refuse(nil, wire.ForgeryEnroll, e.Name, "", d)
		msg := "the code does not match the one the bridge shows; check it and try again"
		if left <= 0 {
			msg = "the code does not match, and it has been tried too often: run wheelhouse bridge devices add for a new one"
		}
		return wire.Device{}, &wh.Error{Code: wh.EForbidden, Reason: "wrong-code", Message: msg}
	}
	ec.code, ec.key = "", nil // a code enrolls one device
	ec.mu.Unlock()
	spki, err := base64.StdEncoding.DecodeString(e.PublicKey)
	if err != nil {
		return wire.Device{}, wh.Errorf(wh.EInvalid, "the device's public key is not base64")
	}
	if _, err := authz.ParseDeviceKey(spki); err != nil {
		return wire.Device{}, wh.Errorf(wh.EInvalid, "%v", err)
	}
	d, err := b.trust.enroll(trustedDevice{Device: wire.Device{ID: authz.DeviceID(spki), Name: e.Name, Kind: e.Kind, PublicKey: e.PublicKey},
		CredentialID: e.CredentialID, RPID: e.RPID, Origin: e.Origin})
	if err != nil {
		return d, err
	}
	what := "a browser key"
	if e.Kind == authz.DeviceWebAuthn {
		what = "a passkey for " + e.RPID
	}
	b.printf("trusted device %q (%s, %s) for @%s's decisions", d.Name, d.ID, what, b.cfg.Creds.Owner)
	b.publishDevices()
	return d, nil
}

// onConsent adds the agent to a room, removes it, or changes the room's
// ceiling, as the owner decided.
func (b *Bridge) onConsent(m *nats.Msg) {
	var c wire.Consent
	if err := wire.Decode(m.Data, &c); err != nil {
		respond(m, wire.Ack{Code: wh.EInvalid, Message: "undecodable consent"})
		return
	}
	if err := c.Validate(); err != nil {
		respond(m, wire.Ack{Code: wh.EInvalid, Message: wh.ErrorMessage(err)})
		return
	}
	r := b.agents[c.Agent]
	if r == nil {
		respond(m, wire.Ack{Code: wh.ENotFound, Message: "no agent " + c.Agent})
		return
	}
	if err := r.consent(c); err != nil {
		respond(m, wire.Ack{Code: wh.ErrorCode(err), Message: wh.ErrorMessage(err), Reason: wh.ErrorReason(err)})
		return
	}
	respond(m, wire.Ack{OK: true})
	b.heartbeat()
}

// ownerDM is the room name of the owner's own DM with the agent: the owner
// consented to it by being the owner.
func (r *runner) ownerDM() string {
	o := r.b.cfg.Creds.Owner
	return "dm:" + o + ":" + o + "+" + r.cfg.Name
}

// roomGrant is whether the agent may act in room, and at what ceiling.
func (r *runner) roomGrant(room string) (string, bool) {
	if room == r.ownerDM() {
		return authz.CeilingNormal, true
	}
	return r.b.trust.grant(r.cfg.Name, room)
}

// refusal turns a refused decision into the error the hub relays.
func refusal(d authz.Decision) error {
	return &wh.Error{Code: wh.EForbidden, Reason: d.Reason, Message: "the agent's bridge refused the decision: " + d.Message}
}

// consent applies a consent change. Adding a room the bridge does not hold
// and widening a ceiling need the owner's signature; the rest narrows.
func (r *runner) consent(c wire.Consent) error {
	b := r.b
	if c.By != b.cfg.Creds.Owner {
		return wh.Errorf(wh.EForbidden, "only the owner decides where @%s acts", r.cfg.Name)
	}
	cur, held := r.roomGrant(c.Room)
	switch c.Action {
	case wire.ConsentRemove:
		if c.Room == r.ownerDM() {
			return nil
		}
		if err := b.trust.setGrant(r.cfg.Name, c.Room, cur, "hub", true); err != nil {
			return err
		}
		b.printf("%s may no longer act in %s (removed by @%s)", r.handle(), c.Room, c.By)
		r.journalAdd(JournalEntry{Kind: JournalOwner, Room: c.Room, Status: "consent removed", By: c.By})
		return nil
	case wire.ConsentAdd:
		want := c.Ceiling
		if held {
			// Nothing new: the bridge already lets it act there. A stricter
			// ceiling asked for with it is a narrowing.
			if want != "" && authz.CeilingWidens(want, cur) {
				return r.setCeiling(c.Room, want, c.By)
			}
			return nil
		}
		st, d := b.trust.checkSigned(c.Signed, authz.Statement{Kind: authz.StatementConsent, Agent: r.handleName(), Room: c.Room})
		if !d.Allow {
			b.refuse(r, authz.StatementConsent, c.Room, signedDevice(c.Signed), d)
			return refusal(d)
		}
		ceiling := st.Ceiling
		if ceiling == "" {
			ceiling = authz.CeilingNormal
		}
		if !authz.ValidCeiling(ceiling) {
			return wh.Errorf(wh.EInvalid, "the signed consent names ceiling %q", ceiling)
		}
		if err := b.trust.setGrant(r.cfg.Name, c.Room, ceiling, c.Signed.Device, false); err != nil {
			return err
		}
		b.printf("%s may act in %s (%s), signed by %s", r.handle(), c.Room, ceiling, b.deviceName(c.Signed.Device))
		r.journalAdd(JournalEntry{Kind: JournalOwner, Room: c.Room, Status: "consent " + ceiling, By: c.Signed.Device})
		return nil
	default: // ceiling
		if !held {
			return wh.Errorf(wh.ENotFound, "@%s may not act in %s on this bridge; add it to the room first", r.cfg.Name, c.Room)
		}
		if !authz.CeilingWidens(cur, c.Ceiling) {
			return r.setCeiling(c.Room, c.Ceiling, c.By)
		}
		_, d := b.trust.checkSigned(c.Signed, authz.Statement{Kind: authz.StatementCeiling, Agent: r.handleName(), Room: c.Room, Ceiling: c.Ceiling})
		if !d.Allow {
			b.refuse(r, authz.StatementCeiling, c.Room, signedDevice(c.Signed), d)
			return refusal(d)
		}
		return r.setCeiling(c.Room, c.Ceiling, c.Signed.Device)
	}
}

func (r *runner) setCeiling(room, ceiling, by string) error {
	if room == r.ownerDM() {
		return wh.Errorf(wh.EInvalid, "your own DM with @%s has no ceiling", r.cfg.Name)
	}
	if err := r.b.trust.setGrant(r.cfg.Name, room, ceiling, by, false); err != nil {
		return err
	}
	r.b.printf("%s in %s: %s (by %s)", r.handle(), room, ceiling, by)
	r.journalAdd(JournalEntry{Kind: JournalOwner, Room: room, Status: "ceiling " + ceiling, By: by})
	return nil
}

// handleName is the agent's handle without the @: owner/name.
func (r *runner) handleName() string { return r.b.cfg.Creds.Owner + "/" + r.cfg.Name }

// changePolicy applies a policy the hub relays: one that narrows the
// agent's current policy as it is; one that widens it only with the owner's
// signed statement of exactly that policy; and never one beyond the
// bridge's config.
func (r *runner) changePolicy(c wire.Control) error {
	b := r.b
	next := *c.Policy
	if err := next.Validate(); err != nil {
		return err
	}
	normalizePolicy(&next)
	cur := r.getPolicy()
	by := c.By
	if wider := authz.Beyond(limitsOf(cur), limitsOf(next)); len(wider) > 0 {
		st, d := b.trust.checkSigned(c.Signed, authz.Statement{Kind: authz.StatementPolicy, Agent: r.handleName()})
		if d.Allow {
			var signed wire.Policy
			if err := json.Unmarshal(st.Policy, &signed); err != nil || signed.Validate() != nil {
				d = authz.Decision{Reason: authz.ReasonWrongStatement, Message: "the signed policy does not decode"}
			} else if normalizePolicy(&signed); !reflect.DeepEqual(signed, next) {
				d = authz.Decision{Reason: authz.ReasonWrongStatement, Message: "the signed policy is not the one relayed"}
			}
		}
		if !d.Allow {
			d.Message += " (it widens " + strings.Join(wider, ", ") + ")"
			b.refuse(r, authz.StatementPolicy, strings.Join(wider, ","), signedDevice(c.Signed), d)
			return refusal(d)
		}
		by = b.deviceName(c.Signed.Device)
	}
	if over := authz.Beyond(limitsOf(r.cfg.Policy), limitsOf(next)); len(over) > 0 {
		b.printf("%s: refused a policy that goes beyond the bridge's config (%s); edit the config file to allow more", r.handle(), strings.Join(over, ", "))
		return &wh.Error{Code: wh.EForbidden, Reason: "beyond-config", Message: fmt.Sprintf(
			"the bridge's config file allows @%s at most %s for %s; the owner can raise that only in the config on the bridge machine", r.cfg.Name, describeLimits(r.cfg.Policy, over), strings.Join(over, ", "))}
	}
	if err := b.trust.setPolicy(r.cfg.Name, next); err != nil {
		return err
	}
	r.setPolicy(next)
	b.printf("@%s/%s policy changed by %s", b.cfg.Creds.Owner, r.cfg.Name, by)
	r.journalAdd(JournalEntry{Kind: JournalOwner, Status: "policy", By: by})
	return nil
}

// normalizePolicy makes equal policies compare equal: nil lists, defaults.
func normalizePolicy(p *wire.Policy) {
	d := wire.DefaultPolicy()
	if p.Address == "" {
		p.Address = d.Address
	}
	if p.MaxAge == 0 {
		p.MaxAge = d.MaxAge
	}
	if p.ApprovalTTL == 0 {
		p.ApprovalTTL = d.ApprovalTTL
	}
	if len(p.Allowed) == 0 {
		p.Allowed = nil
	}
	if len(p.AutoApprove) == 0 {
		p.AutoApprove = nil
	}
}

func limitsOf(p wire.Policy) authz.Limits { return p.Limits() }

// describeLimits says what the config allows for the named fields.
func describeLimits(p wire.Policy, fields []string) string {
	var out []string
	for _, f := range fields {
		switch f {
		case "address":
			who := p.Address
			if p.Address == wire.AddressUsers || p.Address == wire.AddressModerate {
				who += " " + strings.Join(p.Allowed, ", ")
			}
			out = append(out, "address = "+who)
		case "steering":
			out = append(out, fmt.Sprintf("steering = %v", p.Steering))
		case "maxSteers":
			out = append(out, fmt.Sprintf("max_steers = %d", p.MaxSteers))
		case "startOnEnded":
			out = append(out, fmt.Sprintf("start_on_ended = %v", p.StartOnEnded))
		case "grace":
			out = append(out, "grace = "+p.Grace.D().String())
		case "maxAge":
			out = append(out, "max_age = "+p.MaxAge.D().String())
		case "autoApprove":
			out = append(out, "auto_approve = ["+strings.Join(p.AutoApprove, ", ")+"]")
		}
	}
	return strings.Join(out, ", ")
}

// checkForward verifies the owner's signed forward of a held mention.
func (r *runner) checkForward(st wire.Steer) authz.Decision {
	if st.ForwardedBy != r.b.cfg.Creds.Owner {
		return authz.Decision{Reason: authz.ReasonWrongStatement, Message: "only the owner forwards messages to @" + r.cfg.Name}
	}
	// The owner hands on the words and the files they were shown: a hub
	// that added, dropped, renamed or swapped a file has it refused here, and the
	// bytes fetched later must be the ones named (attachments.go).
	var files []authz.StatementFile
	for _, f := range st.Files {
		if f.SHA256 == "" {
			return authz.Decision{Reason: authz.ReasonWrongStatement, Message: "the hub sent no SHA-256 for " + f.Name + ", so the bridge cannot tell that it is the file the owner forwarded"}
		}
		files = append(files, authz.StatementFile{Name: f.Name, SHA256: f.SHA256})
	}
	_, d := r.b.trust.checkSigned(st.Forward, authz.Statement{Kind: authz.StatementForward, Agent: r.handleName(), Steer: st.ID, Room: st.Room,
		Sender: st.Sender, TextHash: authz.TextHash(st.Text), Files: files})
	return d
}

// effectivePolicy is the policy an agent starts with: the store's, as long
// as it stays within the config (the config file is the ceiling), else the
// config's.
func effectivePolicy(cfg wire.Policy, stored *wire.Policy) wire.Policy {
	if stored == nil || len(authz.Beyond(limitsOf(cfg), limitsOf(*stored))) > 0 {
		return cfg
	}
	return *stored
}

func policyEqual(a, b wire.Policy) bool {
	normalizePolicy(&a)
	normalizePolicy(&b)
	return reflect.DeepEqual(a, b)
}
