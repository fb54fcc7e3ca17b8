package wire

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"time"
	"unicode/utf8"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/authz"
)

// Limits on what a bridge may send. A message that breaks one is refused
// whole (never stored), with a reason the bridge logs.
const (
	MaxAgents      = 256
	MaxText        = 64 << 10  // a turn event's text
	MaxSummary     = 8 << 10   // an approval's summary
	MaxDiff        = 256 << 10 // an approval's diff
	MaxPayload     = 256 << 10 // an approval's canonical payload
	MaxDetail      = 2 << 10   // a receipt's detail, an update's reason
	MaxSteeredBy   = 64
	MaxApprovalTTL = 24 * time.Hour
	MaxCallTimeout = 5 * time.Minute
	// ClockSkew is how far a bridge's clock may be from the hub's in the
	// times it reports.
	ClockSkew = 24 * time.Hour
)

var (
	nameRE     = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,31}$`)
	steerIDRE  = regexp.MustCompile(`^s[0-9a-z.-]{1,63}$`)
	approvalRE = regexp.MustCompile(`^a[0-9a-f]{16}$`)
	turnIDRE   = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)
	eventIDRE  = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	hashRE     = regexp.MustCompile(`^[0-9a-f]{64}$`)
	reasonRE   = regexp.MustCompile(`^[a-z][a-z-]{0,63}$`)
	roomRE     = regexp.MustCompile(`^([a-z0-9][a-z0-9_-]{0,63}|dm:[a-z0-9_.:+-]{1,200})$`)
	toolRE     = regexp.MustCompile(`^[A-Za-z0-9_.:/-]{1,128}$`)
	harnessRE  = regexp.MustCompile(`^[a-z0-9-]{1,32}$`)
	fileIDRE   = regexp.MustCompile(`^f[0-9a-f]{16}$`)
	typeRE     = regexp.MustCompile(`^[a-z0-9][a-z0-9!#$&^_.+-]{0,63}/[a-z0-9][a-z0-9!#$&^_.+-]{0,63}(; ?charset=[a-z0-9_.:-]{1,40})?$`)
)

// ValidFileID reports whether s has the form of a file id.
func ValidFileID(s string) bool { return fileIDRE.MatchString(s) }

// ValidName reports whether s is a valid user or agent name.
func ValidName(s string) bool { return nameRE.MatchString(s) }

// ValidSteerID reports whether s has the form of a steer id.
func ValidSteerID(s string) bool { return steerIDRE.MatchString(s) }

// ValidTurnID reports whether s has the form of a harness's turn id.
func ValidTurnID(s string) bool { return turnIDRE.MatchString(s) }

func invalid(format string, args ...any) error {
	return wh.Errorf(wh.EInvalid, format, args...)
}

func utf8Valid(s string) bool { return utf8.ValidString(s) }

func checkText(field, s string, max int) error {
	if len(s) > max {
		return invalid("%s is %d bytes, more than %d", field, len(s), max)
	}
	if !utf8.ValidString(s) {
		return invalid("%s is not valid UTF-8", field)
	}
	return nil
}

func checkTime(field string, t, now time.Time) error {
	if t.IsZero() {
		return invalid("%s is missing", field)
	}
	if d := t.Sub(now); d > ClockSkew || d < -ClockSkew {
		return invalid("%s %s is more than %s from the hub's clock", field, t.Format(time.RFC3339), ClockSkew)
	}
	return nil
}

func checkOpt(field, s string, re *regexp.Regexp) error {
	if s != "" && !re.MatchString(s) {
		return invalid("%s %q is not valid", field, clip(s))
	}
	return nil
}

func clip(s string) string {
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return s
}

// Validate checks an agent's description.
func (a *AgentInfo) Validate() error {
	if !nameRE.MatchString(a.Name) {
		return invalid("agent name %q is not valid: use lowercase letters, digits, '.', '_' or '-'", clip(a.Name))
	}
	if err := checkOpt("harness", a.Harness, harnessRE); err != nil {
		return err
	}
	switch a.Status {
	case AgentOffline, AgentIdle, AgentWorking, AgentNeedsApproval, AgentFailed:
	default:
		return invalid("agent %s: unknown status %q", a.Name, clip(a.Status))
	}
	if err := checkOpt("turn id", a.TurnID, turnIDRE); err != nil {
		return err
	}
	if err := checkOpt("turn room", a.TurnRoom, roomRE); err != nil {
		return err
	}
	if len(a.SteeredBy) > MaxSteeredBy {
		return invalid("agent %s: more than %d senders", a.Name, MaxSteeredBy)
	}
	for _, s := range a.SteeredBy {
		if !nameRE.MatchString(s) {
			return invalid("agent %s: sender %q is not a user name", a.Name, clip(s))
		}
	}
	if len(a.Pending) > 1000 || len(a.Queued) > 1000 || len(a.Ending) > 1000 {
		return invalid("agent %s: too many pending approvals or queued steers", a.Name)
	}
	for _, id := range a.Pending {
		if !approvalRE.MatchString(id) {
			return invalid("agent %s: approval id %q is not valid", a.Name, clip(id))
		}
	}
	for _, id := range a.Queued {
		if !steerIDRE.MatchString(id) {
			return invalid("agent %s: steer id %q is not valid", a.Name, clip(id))
		}
	}
	for _, id := range a.Ending {
		if !turnIDRE.MatchString(id) {
			return invalid("agent %s: turn id %q is not valid", a.Name, clip(id))
		}
	}
	if len(a.Rooms) > 10000 {
		return invalid("agent %s: too many rooms", a.Name)
	}
	for i := range a.Rooms {
		if err := a.Rooms[i].validate(); err != nil {
			return err
		}
	}
	if j := a.Journal; j != nil && (j.N == 0 || !hashRE.MatchString(j.Hash) || !hashRE.MatchString(j.MAC)) {
		return invalid("agent %s: the journal head needs a position from 1 and a hash and MAC of 64 lower-case hex digits", a.Name)
	}
	return a.Policy.Validate()
}

// Validate checks a policy's shape (the hub applies its own defaults).
func (p *Policy) Validate() error {
	switch p.Address {
	case "", AddressOwner, AddressUsers, AddressMembers, AddressModerate:
	default:
		return invalid("policy address %q: want owner, users, moderate or members", clip(p.Address))
	}
	if len(p.Allowed) > 1000 || len(p.AutoApprove) > 1000 {
		return invalid("policy lists are too long")
	}
	for _, u := range p.Allowed {
		if !nameRE.MatchString(u) {
			return invalid("policy allowed: %q is not a user name", clip(u))
		}
	}
	for _, t := range p.AutoApprove {
		if !toolRE.MatchString(t) {
			return invalid("policy autoApprove: %q is not a tool name", clip(t))
		}
	}
	if p.MaxSteers < 0 || p.MaxSteers > 1000 {
		return invalid("policy maxSteers must be between 0 and 1000")
	}
	if p.Grace < 0 || p.MaxAge < 0 || p.ApprovalTTL < 0 || p.ApprovalTTL.D() > MaxApprovalTTL {
		return invalid("policy durations must not be negative, and approvals expire within %s", MaxApprovalTTL)
	}
	return nil
}

// Validate checks an announcement.
func (a *Announce) Validate() error {
	if len(a.Agents) > MaxAgents {
		return invalid("more than %d agents", MaxAgents)
	}
	if a.CallTimeout < 0 || a.CallTimeout.D() > MaxCallTimeout {
		return invalid("call timeout must be between 0 and %s", MaxCallTimeout)
	}
	if len(a.Devices) > 1000 {
		return invalid("more than 1000 devices")
	}
	for i := range a.Devices {
		if err := a.Devices[i].validate(); err != nil {
			return err
		}
	}
	seen := map[string]bool{}
	for i := range a.Agents {
		if err := a.Agents[i].Validate(); err != nil {
			return err
		}
		if seen[a.Agents[i].Name] {
			return invalid("agent %s is announced twice", a.Agents[i].Name)
		}
		seen[a.Agents[i].Name] = true
	}
	return nil
}

// Validate checks a heartbeat.
func (h *Heartbeat) Validate(now time.Time) error {
	if err := checkTime("heartbeat time", h.At, now); err != nil {
		return err
	}
	if len(h.Agents) > MaxAgents {
		return invalid("more than %d agents", MaxAgents)
	}
	for i := range h.Agents {
		if err := h.Agents[i].Validate(); err != nil {
			return err
		}
	}
	return nil
}

// Validate checks a receipt a bridge sends.
func (r *Receipt) Validate(now time.Time) error {
	if !steerIDRE.MatchString(r.SteerID) {
		return invalid("steer id %q is not valid", clip(r.SteerID))
	}
	if err := checkOpt("agent", r.Agent, nameRE); err != nil {
		return err
	}
	switch r.Status {
	case StatusStarted, StatusSteered, StatusQueued, StatusDelivered, StatusExpired, StatusRejected:
	default:
		return invalid("receipt status %q is not one a bridge sends", clip(r.Status))
	}
	if err := checkOpt("reason", r.Reason, reasonRE); err != nil {
		return err
	}
	if err := checkText("detail", r.Detail, MaxDetail); err != nil {
		return err
	}
	if err := checkOpt("turn id", r.TurnID, turnIDRE); err != nil {
		return err
	}
	if !r.Expires.IsZero() {
		if err := checkTime("expiry", r.Expires, now); err != nil {
			return err
		}
	}
	if !r.At.IsZero() {
		return checkTime("receipt time", r.At, now)
	}
	return nil
}

// Validate checks a turn event.
func (t *TurnEvent) Validate(now time.Time) error {
	if !nameRE.MatchString(t.Agent) {
		return invalid("agent %q is not valid", clip(t.Agent))
	}
	if !turnIDRE.MatchString(t.TurnID) {
		return invalid("turn id %q is not valid", clip(t.TurnID))
	}
	switch t.Kind {
	case TurnStarted, TurnMessage, TurnProgress, TurnTool:
	case TurnEnded:
		switch t.Status {
		case TurnCompleted, TurnInterrupted, TurnFailed:
		default:
			return invalid("turn end status %q: want completed, interrupted or failed", clip(t.Status))
		}
	default:
		return invalid("turn event kind %q is not known", clip(t.Kind))
	}
	if err := checkText("text", t.Text, MaxText); err != nil {
		return err
	}
	if err := checkOpt("room", t.Room, roomRE); err != nil {
		return err
	}
	if err := checkOpt("by", t.By, nameRE); err != nil {
		return err
	}
	if err := checkOpt("item id", t.ItemID, turnIDRE); err != nil {
		return err
	}
	if t.Thread < 0 {
		return invalid("thread must be a message id")
	}
	if err := checkOpt("event id", t.EventID, eventIDRE); err != nil {
		return err
	}
	if t.Partial && (t.Kind != TurnMessage || t.ItemID == "") {
		return invalid("only a message with an item id can be partial")
	}
	if u := t.Usage; u != nil && (t.Kind != TurnEnded || u.InputTokens < 0 || u.OutputTokens < 0 || u.ModelCalls < 0) {
		return invalid("usage belongs to a turn's end and counts from 0")
	}
	return checkTime("turn event time", t.At, now)
}

// Validate checks an approval request. The payload hash is recomputed from
// the payload: a request that shows one call and binds another is refused.
func (a *ApprovalRequest) Validate(now time.Time) error {
	if !approvalRE.MatchString(a.ID) {
		return invalid("approval id %q is not valid (a + 16 hex digits)", clip(a.ID))
	}
	if !nameRE.MatchString(a.Agent) {
		return invalid("agent %q is not valid", clip(a.Agent))
	}
	if !turnIDRE.MatchString(a.TurnID) {
		return invalid("turn id %q is not valid", clip(a.TurnID))
	}
	if !toolRE.MatchString(a.Tool) {
		return invalid("tool %q is not valid", clip(a.Tool))
	}
	for _, f := range []struct {
		name string
		s    string
		max  int
	}{{"summary", a.Summary, MaxSummary}, {"diff", a.Diff, MaxDiff}, {"payload", a.Payload, MaxPayload}} {
		if err := checkText(f.name, f.s, f.max); err != nil {
			return err
		}
	}
	if err := checkOpt("room", a.Room, roomRE); err != nil {
		return err
	}
	if len(a.SteeredBy) > MaxSteeredBy {
		return invalid("more than %d senders", MaxSteeredBy)
	}
	for _, s := range a.SteeredBy {
		if !nameRE.MatchString(s) {
			return invalid("sender %q is not a user name", clip(s))
		}
	}
	if a.Expires.Before(now) || a.Expires.After(now.Add(MaxApprovalTTL+ClockSkew)) {
		return invalid("approval expiry %s is in the past or too far ahead", a.Expires.Format(time.RFC3339))
	}
	if !hashRE.MatchString(a.PayloadHash) {
		return invalid("payload hash must be 64 lower-case hex digits")
	}
	if err := checkText("sandbox", a.Sandbox, MaxDetail); err != nil {
		return err
	}
	if len(a.Data) > 8 {
		return invalid("more than 8 kinds of data")
	}
	for _, k := range a.Data {
		if !reasonRE.MatchString(k) {
			return invalid("data kind %q is not valid", clip(k))
		}
	}
	if a.Thread < 0 {
		return invalid("thread must be a message id")
	}
	return CheckPayload(a.Tool, a.Payload, a.PayloadHash)
}

// checkHead checks a timeline head the hub names.
func checkHead(h *ChainHead) error {
	if h != nil && (h.Seq == 0 || h.Idx < 0 || !hashRE.MatchString(h.Hash)) {
		return invalid("the timeline head is not valid")
	}
	return nil
}

// CheckPayload recomputes an approval's hash from its payload: the payload
// must be the canonical JSON of {"tool","args"} for this tool, and its
// SHA-256 the hash.
func CheckPayload(tool, payload, hash string) error {
	canon, err := authz.Canonicalize([]byte(payload))
	if err != nil {
		return invalid("the payload is not canonical JSON: %v", err)
	}
	if string(canon) != payload {
		return invalid("the payload is not in canonical form (RFC 8785)")
	}
	var call struct {
		Tool *string        `json:"tool"`
		Args map[string]any `json:"args"`
	}
	if err := json.Unmarshal(canon, &call); err != nil || call.Tool == nil || call.Args == nil {
		return invalid(`the payload must be {"tool":…,"args":{…}}`)
	}
	if *call.Tool != tool {
		return invalid("the payload is for tool %q, the request says %q", clip(*call.Tool), clip(tool))
	}
	var keys map[string]json.RawMessage
	json.Unmarshal(canon, &keys)
	if len(keys) != 2 {
		return invalid(`the payload must hold exactly "tool" and "args"`)
	}
	sum := sha256.Sum256(canon)
	if hex.EncodeToString(sum[:]) != hash {
		return invalid("the payload hash does not match the payload")
	}
	return nil
}

// Validate checks an approval update.
func (u *ApprovalUpdate) Validate() error {
	if !approvalRE.MatchString(u.ApprovalID) {
		return invalid("approval id %q is not valid", clip(u.ApprovalID))
	}
	if !nameRE.MatchString(u.Agent) {
		return invalid("agent %q is not valid", clip(u.Agent))
	}
	switch u.Status {
	case ApprovalApproved, ApprovalDenied, ApprovalExpired, ApprovalVoided:
	default:
		return invalid("approval status %q is not one a bridge reports", clip(u.Status))
	}
	if err := checkOpt("by", u.By, nameRE); err != nil {
		return err
	}
	if u.PayloadHash != "" && !hashRE.MatchString(u.PayloadHash) {
		return invalid("payload hash must be 64 lower-case hex digits")
	}
	return checkText("reason", u.Reason, MaxDetail)
}

// Validate checks an invitations request.
func (r *InvitationsRequest) Validate() error {
	switch r.Decide {
	case "":
	case "accept", "decline":
		if r.ID <= 0 {
			return invalid("name the invitation to %s", r.Decide)
		}
	default:
		return invalid("decide must be accept or decline")
	}
	return nil
}

// Validate checks a steer (the bridge's side of the boundary).
func (s *Steer) Validate() error {
	if !steerIDRE.MatchString(s.ID) {
		return invalid("steer id %q is not valid", clip(s.ID))
	}
	if !nameRE.MatchString(s.Agent) || !nameRE.MatchString(s.Owner) {
		return invalid("steer for %q/%q: not valid names", clip(s.Owner), clip(s.Agent))
	}
	if !nameRE.MatchString(s.Sender) {
		return invalid("sender %q is not a user name", clip(s.Sender))
	}
	if err := checkOpt("room", s.Room, roomRE); err != nil {
		return err
	}
	if err := checkOpt("expected turn", s.ExpectedTurn, turnIDRE); err != nil {
		return err
	}
	if err := checkText("text", s.Text, MaxText); err != nil {
		return err
	}
	for _, p := range s.Parts {
		if p.Start < 0 || p.End < p.Start || p.End > len(s.Text) {
			return invalid("a quoted part lies outside the text")
		}
	}
	if s.Deadline.IsZero() {
		return invalid("the steer has no deadline")
	}
	if err := checkOpt("forwarded by", s.ForwardedBy, nameRE); err != nil {
		return err
	}
	if err := s.Forward.Validate(); err != nil {
		return err
	}
	if err := s.Words.Validate(); err != nil {
		return err
	}
	if s.Thread < 0 {
		return invalid("thread must be a message id")
	}
	if err := checkOpt("follows", s.Follows, turnIDRE); err != nil {
		return err
	}
	if s.Follows != "" && !s.NewTurn {
		return invalid("only a steer for a new turn follows an ended one")
	}
	if err := checkFiles(s.Files); err != nil {
		return err
	}
	return checkHead(s.TimelineHead)
}

// checkFiles checks the files a steer names.
func checkFiles(fs []FileRef) error {
	if len(fs) > MaxSteerFiles {
		return invalid("more than %d files", MaxSteerFiles)
	}
	inline := 0
	for _, f := range fs {
		if !fileIDRE.MatchString(f.ID) {
			return invalid("file id %q is not valid", clip(f.ID))
		}
		if f.Name == "" || len(f.Name) > MaxFileName || !utf8.ValidString(f.Name) {
			return invalid("file %s: the name is empty, too long or not UTF-8", f.ID)
		}
		if !typeRE.MatchString(f.Type) {
			return invalid("file %s: type %q is not valid", f.ID, clip(f.Type))
		}
		if f.Size < 0 {
			return invalid("file %s: negative size", f.ID)
		}
		if !f.Inline && f.Text != "" {
			return invalid("file %s: text without inline", f.ID)
		}
		if f.SHA256 != "" && !hashRE.MatchString(f.SHA256) {
			return invalid("file %s: sha256 is not 64 lower-case hex digits", f.ID)
		}
		if f.Inline && f.SHA256 != "" && authz.FileHash([]byte(f.Text)) != f.SHA256 {
			return invalid("file %s: the inline text is not the file its sha256 names", f.ID)
		}
		if f.Inline {
			if err := checkText("file "+f.ID, f.Text, MaxInlineFile); err != nil {
				return err
			}
			if int64(len(f.Text)) != f.Size {
				return invalid("file %s: the inline text is not the whole file", f.ID)
			}
			inline += len(f.Text)
		}
	}
	if inline > MaxInlineTotal {
		return invalid("the inline files are more than %d bytes", MaxInlineTotal)
	}
	return nil
}

// Validate checks a file request (the hub's side of the boundary).
func (r *FileRequest) Validate() error {
	if !steerIDRE.MatchString(r.SteerID) {
		return invalid("steer id %q is not valid", clip(r.SteerID))
	}
	if !fileIDRE.MatchString(r.FileID) {
		return invalid("file id %q is not valid", clip(r.FileID))
	}
	return nil
}

// Validate checks a decision (the bridge's side of the boundary).
// MaxResync bounds the approvals and steers one resync names.
const MaxResync = 10_000

// Validate checks a control message from the hub (the bridge's side): the
// owner's and the signature's checks come after, on the bridge.
func (c *Control) Validate() error {
	if !nameRE.MatchString(c.Agent) {
		return invalid("control for %q: not an agent name", clip(c.Agent))
	}
	switch c.Action {
	case ControlInterrupt, ControlResync:
	case ControlPolicy:
		if c.Policy == nil {
			return invalid("a policy change names no policy")
		}
		if err := c.Policy.Validate(); err != nil {
			return err
		}
	default:
		return invalid("control action %q: want interrupt, policy or resync", clip(c.Action))
	}
	if c.By != "" && !nameRE.MatchString(c.By) {
		return invalid("by %q is not a user name", clip(c.By))
	}
	if err := checkOpt("turn id", c.TurnID, turnIDRE); err != nil {
		return err
	}
	if len(c.Approvals) > MaxResync || len(c.Steers) > MaxResync {
		return invalid("a resync names at most %d approvals and %d steers", MaxResync, MaxResync)
	}
	for _, id := range c.Approvals {
		if !approvalRE.MatchString(id) {
			return invalid("approval id %q is not valid", clip(id))
		}
	}
	for _, id := range c.Steers {
		if !steerIDRE.MatchString(id) {
			return invalid("steer id %q is not valid", clip(id))
		}
	}
	return c.Signed.Validate()
}

func (d *Decision) Validate() error {
	if !approvalRE.MatchString(d.ApprovalID) {
		return invalid("approval id %q is not valid", clip(d.ApprovalID))
	}
	if d.Decision != "approve" && d.Decision != "deny" {
		return invalid("decision must be approve or deny")
	}
	if d.PayloadHash != "" && !hashRE.MatchString(d.PayloadHash) {
		return invalid("payload hash must be 64 lower-case hex digits")
	}
	if err := checkHead(d.TimelineHead); err != nil {
		return err
	}
	if err := d.Signed.Validate(); err != nil {
		return err
	}
	return checkText("reason", d.Reason, MaxDetail)
}
