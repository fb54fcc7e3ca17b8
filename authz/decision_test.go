package authz

import (
	"strings"
	"testing"
	"time"
)

// role is one kind of actor every decision is tested against.
type role struct {
	name     string
	user     string
	isMember bool
	isAgent  bool
}

const owner = "bob"

var allowed = []string{"alice"}

var roles = []role{
	{name: "Owner", user: "bob", isMember: true},
	{name: "AllowedUser", user: "alice", isMember: true},
	{name: "PlainMember", user: "carol", isMember: true},
	{name: "NonMember", user: "dave"},
	// An instance admin who is not the owner: admin status appears nowhere
	// in the inputs, which is the point — it must grant nothing.
	{name: "AdminNotOwner", user: "root", isMember: true},
	{name: "AnotherAgent", user: "erin/claude", isMember: true, isAgent: true},
}

// outcomes per role, in roles order: "" = allow, else the reason.
type outcomes [6]string

func TestMayAddress(t *testing.T) {
	cases := []struct {
		action  string
		address string
		stop    bool
		want    outcomes
	}{
		//                                  owner allowed        member         non-member      admin          agent
		{"AddressOwnerPolicy", AddressOwner, false, outcomes{"", "not-allowed", "not-allowed", "not-a-member", "not-allowed", "peer-agent"}},
		{"AddressUsersPolicy", AddressUsers, false, outcomes{"", "", "not-allowed", "not-a-member", "not-allowed", "peer-agent"}},
		{"AddressMembersPolicy", AddressMembers, false, outcomes{"", "", "", "not-a-member", "", "peer-agent"}},
		{"AddressModeratePolicy", AddressModerate, false, outcomes{"", "", "moderated", "not-a-member", "moderated", "peer-agent"}},
		{"StopModeratePolicy", AddressModerate, true, outcomes{"", "not-allowed", "not-allowed", "not-a-member", "not-allowed", "peer-agent"}},
		{"AddressUnknownPolicyIsOwner", "everyone", false, outcomes{"", "not-allowed", "not-allowed", "not-a-member", "not-allowed", "peer-agent"}},
		{"AddressEmptyPolicyIsOwner", "", false, outcomes{"", "not-allowed", "not-allowed", "not-a-member", "not-allowed", "peer-agent"}},
		{"StopOwnerPolicy", AddressOwner, true, outcomes{"", "not-allowed", "not-allowed", "not-a-member", "not-allowed", "peer-agent"}},
		{"StopUsersPolicy", AddressUsers, true, outcomes{"", "not-allowed", "not-allowed", "not-a-member", "not-allowed", "peer-agent"}},
		{"StopMembersPolicy", AddressMembers, true, outcomes{"", "not-allowed", "not-allowed", "not-a-member", "not-allowed", "peer-agent"}},
	}
	for _, c := range cases {
		for i, r := range roles {
			t.Run(c.action+"/"+r.name+"/"+outcomeName(c.want[i]), func(t *testing.T) {
				d := MayAddress(AddressCheck{
					Sender: r.user, SenderIsAgent: r.isAgent, SenderIsMember: r.isMember,
					AgentInRoom: true, Owner: owner, Address: c.address, Allowed: allowed, Stop: c.stop,
				})
				checkDecision(t, d, c.want[i])
			})
		}
	}
}

func TestMayAddressAgentNotInRoom(t *testing.T) {
	for _, r := range roles {
		want := "agent-not-in-room"
		if !r.isMember {
			want = "not-a-member"
		}
		t.Run(r.name+"/"+outcomeName(want), func(t *testing.T) {
			d := MayAddress(AddressCheck{Sender: r.user, SenderIsAgent: r.isAgent, SenderIsMember: r.isMember,
				Owner: owner, Address: AddressMembers})
			checkDecision(t, d, want)
		})
	}
}

func TestMayAddressEdges(t *testing.T) {
	cases := []struct {
		name string
		c    AddressCheck
		want string
	}{
		{"EmptySenderEmptyOwnerNotAllowed", AddressCheck{SenderIsMember: true, AgentInRoom: true, Address: AddressOwner}, "not-allowed"},
		{"EmptySenderNotInAllowedEmptyName", AddressCheck{SenderIsMember: true, AgentInRoom: true, Owner: owner, Address: AddressUsers, Allowed: []string{""}}, "not-allowed"},
		{"EmptySenderMembersNotAllowed", AddressCheck{SenderIsMember: true, AgentInRoom: true, Owner: owner, Address: AddressMembers}, "not-allowed"},
		{"OwnerNameCaseMatters", AddressCheck{Sender: "Bob", SenderIsMember: true, AgentInRoom: true, Owner: owner, Address: AddressOwner}, "not-allowed"},
		{"OwnerAgentIsStillPeer", AddressCheck{Sender: owner, SenderIsAgent: true, SenderIsMember: true, AgentInRoom: true, Owner: owner, Address: AddressMembers}, "peer-agent"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { checkDecision(t, MayAddress(c.c), c.want) })
	}
}

func TestBridgeAccepts(t *testing.T) {
	now := time.Date(2025, 3, 4, 10, 0, 0, 0, time.UTC)
	base := func(r role, address string, stop bool) BridgeCheck {
		return BridgeCheck{Owner: owner, SteerOwner: owner, Sender: r.user, SenderIsOwner: r.user == owner,
			SenderIsAgent: r.isAgent, Address: address, Allowed: allowed, Stop: stop,
			SentAt: now.Add(-time.Minute), Now: now, MaxAge: 10 * time.Minute}
	}
	// Membership is the hub's job: the bridge cannot see it, so the
	// non-member row equals the plain member row.
	cases := []struct {
		action  string
		address string
		stop    bool
		want    outcomes
	}{
		{"OwnerPolicy", AddressOwner, false, outcomes{"", "not-allowed", "not-allowed", "not-allowed", "not-allowed", "peer-agent"}},
		{"UsersPolicy", AddressUsers, false, outcomes{"", "", "not-allowed", "not-allowed", "not-allowed", "peer-agent"}},
		{"MembersPolicy", AddressMembers, false, outcomes{"", "", "", "", "", "peer-agent"}},
		{"StopMembersPolicy", AddressMembers, true, outcomes{"", "not-allowed", "not-allowed", "not-allowed", "not-allowed", "peer-agent"}},
		// Unforwarded, a moderated message never reaches the agent.
		{"ModeratePolicy", AddressModerate, false, outcomes{"", "", "not-allowed", "not-allowed", "not-allowed", "peer-agent"}},
	}
	for _, c := range cases {
		for i, r := range roles {
			t.Run(c.action+"/"+r.name+"/"+outcomeName(c.want[i]), func(t *testing.T) {
				checkDecision(t, BridgeAccepts(base(r, c.address, c.stop)), c.want[i])
			})
		}
	}
	// Forwarded by the owner (signature verified by the bridge), anyone's
	// words get through — but never a stop, and never another agent's.
	forwarded := []struct {
		action string
		stop   bool
		want   outcomes
	}{
		{"ForwardedOwnerPolicy", false, outcomes{"", "", "", "", "", "peer-agent"}},
		{"ForwardedStop", true, outcomes{"", "not-allowed", "not-allowed", "not-allowed", "not-allowed", "peer-agent"}},
	}
	for _, c := range forwarded {
		for i, r := range roles {
			t.Run(c.action+"/"+r.name+"/"+outcomeName(c.want[i]), func(t *testing.T) {
				bc := base(r, AddressOwner, c.stop)
				bc.Forwarded = true
				checkDecision(t, BridgeAccepts(bc), c.want[i])
			})
		}
	}
	for _, r := range roles {
		t.Run("Expired/"+r.name, func(t *testing.T) {
			c := base(r, AddressMembers, false)
			c.SentAt = now.Add(-11 * time.Minute)
			want := "expired"
			if r.isAgent {
				want = "peer-agent" // who may speak is decided before age
			}
			checkDecision(t, BridgeAccepts(c), want)
		})
	}

	edges := []struct {
		name   string
		mutate func(*BridgeCheck)
		want   string
	}{
		{"OK", func(c *BridgeCheck) {}, ""},
		{"OwnerLabelOnTeammateRejected", func(c *BridgeCheck) { c.Sender = "carol"; c.SenderIsOwner = true }, "not-allowed"},
		{"MissingOwnerLabelRejected", func(c *BridgeCheck) { c.SenderIsOwner = false }, "not-allowed"},
		{"SteerForOtherOwnerRejected", func(c *BridgeCheck) { c.SteerOwner = "mallory" }, "not-allowed"},
		{"UnconfiguredBridgeRejects", func(c *BridgeCheck) { c.Owner, c.SteerOwner = "", "" }, "not-allowed"},
		{"ExactlyMaxAgeAccepted", func(c *BridgeCheck) { c.SentAt = now.Add(-10 * time.Minute) }, ""},
		{"NoMaxAgeNeverExpires", func(c *BridgeCheck) { c.MaxAge = 0; c.SentAt = now.Add(-24 * time.Hour) }, ""},
		{"FutureSentAtAccepted", func(c *BridgeCheck) { c.SentAt = now.Add(time.Minute) }, ""},
	}
	for _, e := range edges {
		t.Run(e.name, func(t *testing.T) {
			c := base(roles[0], AddressOwner, false)
			e.mutate(&c)
			checkDecision(t, BridgeAccepts(c), e.want)
		})
	}
}

func TestOwnerOnlyDecisions(t *testing.T) {
	fns := []struct {
		name string
		fn   func(actor, owner string) Decision
	}{
		{"MayDecideApproval", MayDecideApproval},
		{"MayChangePolicy", MayChangePolicy},
		{"MayInterrupt", MayInterrupt},
	}
	for _, f := range fns {
		for _, r := range roles {
			want := "forbidden"
			if r.user == owner {
				want = ""
			}
			t.Run(f.name+"/"+r.name+"/"+outcomeName(want), func(t *testing.T) {
				checkDecision(t, f.fn(r.user, owner), want)
			})
		}
		t.Run(f.name+"/EmptyActorEmptyOwner/forbidden", func(t *testing.T) { checkDecision(t, f.fn("", ""), "forbidden") })
	}
}

func TestAddAgentToRoom(t *testing.T) {
	want := map[string]string{
		"Owner": AddDirect, "AllowedUser": AddInvite, "PlainMember": AddInvite,
		"NonMember": AddDeny, "AdminNotOwner": AddInvite, "AnotherAgent": AddInvite,
	}
	for _, r := range roles {
		t.Run(r.name+"/"+want[r.name], func(t *testing.T) {
			if got := AddAgentToRoom(r.user, owner, r.isMember); got != want[r.name] {
				t.Fatalf("AddAgentToRoom(%q) = %q, want %q", r.user, got, want[r.name])
			}
		})
	}
	t.Run("OwnerNotMember/deny", func(t *testing.T) {
		if got := AddAgentToRoom(owner, owner, false); got != AddDeny {
			t.Fatalf("got %q", got)
		}
	})
	t.Run("EmptyActor/deny", func(t *testing.T) {
		if got := AddAgentToRoom("", "", true); got != AddDeny {
			t.Fatalf("got %q", got)
		}
	})
}

func TestCheckDecision(t *testing.T) {
	now := time.Date(2025, 3, 4, 10, 0, 0, 0, time.UTC)
	const h = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	base := DecisionCheck{Actor: owner, Owner: owner, ShownHash: h, RequestHash: h, State: StatePending,
		Expires: now.Add(time.Minute), Now: now}
	for _, r := range roles {
		want := "forbidden"
		if r.user == owner {
			want = ""
		}
		t.Run("Role/"+r.name+"/"+outcomeName(want), func(t *testing.T) {
			c := base
			c.Actor = r.user
			checkDecision(t, CheckDecision(c), want)
		})
	}
	cases := []struct {
		name   string
		mutate func(*DecisionCheck)
		want   string
	}{
		{"UpperCaseHashAccepted", func(c *DecisionCheck) { c.ShownHash = strings.ToUpper(h) }, ""},
		{"HashMismatch", func(c *DecisionCheck) { c.ShownHash = h[:63] + "9" }, "hash-mismatch"},
		{"EmptyShownHash", func(c *DecisionCheck) { c.ShownHash = "" }, "hash-mismatch"},
		{"EmptyBothHashes", func(c *DecisionCheck) { c.ShownHash, c.RequestHash = "", "" }, "hash-mismatch"},
		{"AlreadyApproved", func(c *DecisionCheck) { c.State = StateApproved }, "already-decided"},
		{"AlreadyDenied", func(c *DecisionCheck) { c.State = StateDenied }, "already-decided"},
		{"UnknownStateNotDecidable", func(c *DecisionCheck) { c.State = "weird" }, "already-decided"},
		{"StateExpired", func(c *DecisionCheck) { c.State = StateExpired }, "expired"},
		{"StateVoided", func(c *DecisionCheck) { c.State = StateVoided }, "voided"},
		{"PastExpiry", func(c *DecisionCheck) { c.Now = c.Expires.Add(time.Second) }, "expired"},
		{"AtExpiry", func(c *DecisionCheck) { c.Now = c.Expires }, "expired"},
		{"NoExpiry", func(c *DecisionCheck) { c.Expires = time.Time{} }, ""},
		{"ForbiddenBeforeHash", func(c *DecisionCheck) { c.Actor = "carol"; c.ShownHash = "x" }, "forbidden"},
		{"ForbiddenBeforeState", func(c *DecisionCheck) { c.Actor = "root"; c.State = StateApproved }, "forbidden"},
		{"ExpiredBeforeHash", func(c *DecisionCheck) { c.Now = c.Expires; c.ShownHash = "x" }, "expired"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dc := base
			c.mutate(&dc)
			checkDecision(t, CheckDecision(dc), c.want)
		})
	}
}

func outcomeName(reason string) string {
	if reason == "" {
		return "OK"
	}
	return reason
}

// checkDecision asserts d is an allow (want "") or a denial with reason
// want and a message a user can read.
func checkDecision(t *testing.T, d Decision, want string) {
	t.Helper()
	if want == "" {
		if !d.Allow || d.Reason != "" || d.Message != "" {
			t.Fatalf("got %+v, want allow", d)
		}
		return
	}
	if d.Allow || d.Reason != want {
		t.Fatalf("got %+v, want deny %q", d, want)
	}
	if len(d.Message) < 20 || !strings.HasSuffix(d.Message, ".") || strings.Contains(d.Message, "%!") {
		t.Fatalf("message %q is not a sentence a user can act on", d.Message)
	}
}
