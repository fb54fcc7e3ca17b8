package authz

import (
	"slices"
	"testing"
)

func TestMessageData(t *testing.T) {
	text := "fix this:\n```\nrm -rf /\n```\n> said carol"
	code := Part{Kind: "code", Start: 10, End: 27}
	quote := Part{Kind: "quote", Start: 28, End: len(text)}
	cases := []struct {
		name    string
		agent   bool
		parts   []Part
		want    []string
		clean   bool
		phrased string
	}{
		{"OwnWordsNoData", false, nil, nil, true, ""},
		{"CodeFence", false, []Part{code}, []string{DataCode}, false, "pasted code"},
		{"CodeAndQuote", false, []Part{quote, code}, []string{DataCode, DataQuote}, false, "pasted code and a quote"},
		{"UnknownKindIsPasted", false, []Part{{Kind: "html", Start: 0, End: 3}}, []string{DataPasted}, false, "pasted text"},
		{"EmptyPartIsNothing", false, []Part{{Kind: "code", Start: 4, End: 4}}, nil, true, ""},
		{"OutOfRangePartIsNothing", false, []Part{{Kind: "quote", Start: 900, End: 990}}, nil, true, ""},
		{"PeerAgentIsDataWhole", true, nil, []string{DataPeerAgent}, false, "another agent's output"},
		{"PeerAgentWithPartsStillPeer", true, []Part{code}, []string{DataPeerAgent}, false, "another agent's output"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := MessageData(text, c.agent, c.parts)
			if !slices.Equal(got, c.want) {
				t.Fatalf("MessageData = %q, want %q", got, c.want)
			}
			if p := DataPhrase(got); p != c.phrased {
				t.Fatalf("DataPhrase = %q, want %q", p, c.phrased)
			}
			in := TurnInputs{Owner: owner}
			in.Add(owner, got)
			if in.Clean() != c.clean || in.DataTainted() == c.clean || in.Tainted() {
				t.Fatalf("owner's message: clean %v data %v tainted %v, want clean %v", in.Clean(), in.DataTainted(), in.Tainted(), c.clean)
			}
		})
	}
	t.Run("ThreeKindsPhrase", func(t *testing.T) {
		if p := DataPhrase([]string{DataForwarded, DataCode, DataPasted}); p != "pasted text, pasted code and a forwarded message" {
			t.Fatal(p)
		}
	})
}

func TestTurnInputsAutoApprove(t *testing.T) {
	auto := []string{"exec_command"}
	cases := []struct {
		name string
		msgs []struct {
			sender string
			data   []string
		}
		tool  string
		needs bool
	}{
		{"OwnersOwnWordsAutoApproved", []struct {
			sender string
			data   []string
		}{{owner, nil}}, "exec_command", false},
		{"OwnerNotListedAsks", []struct {
			sender string
			data   []string
		}{{owner, nil}}, "apply_patch", true},
		{"OwnerPasteAsks", []struct {
			sender string
			data   []string
		}{{owner, []string{DataCode}}}, "exec_command", true},
		{"OwnerPasteLaterInTurnAsks", []struct {
			sender string
			data   []string
		}{{owner, nil}, {owner, []string{DataQuote}}}, "exec_command", true},
		{"TeammateAsks", []struct {
			sender string
			data   []string
		}{{owner, nil}, {"carol", nil}}, "exec_command", true},
		{"PeerAgentAsks", []struct {
			sender string
			data   []string
		}{{"erin/claude", []string{DataPeerAgent}}}, "exec_command", true},
		{"NoInputsStillNeedsOwnerForEmptyTool", nil, "", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := TurnInputs{Owner: owner}
			for _, m := range c.msgs {
				in.Add(m.sender, m.data)
			}
			if got := in.NeedsOwnerDecision(c.tool, auto); got != c.needs {
				t.Fatalf("NeedsOwnerDecision = %v, want %v (inputs %+v)", got, c.needs, in)
			}
		})
	}
	t.Run("LeavingTheSandboxIsNeverAutoApproved", func(t *testing.T) {
		in := TurnInputs{Owner: owner}
		in.Add(owner, nil)
		if !in.AutoApprovable("exec_command", auto, false) || in.AutoApprovable("exec_command", auto, true) {
			t.Fatal("auto-approve must cover a clean in-sandbox call and never one that leaves the sandbox")
		}
	})
	t.Run("AddKeepsSendersOnceAndDataSorted", func(t *testing.T) {
		in := TurnInputs{Owner: owner}
		in.Add("carol", []string{DataQuote})
		in.Add("carol", []string{DataCode, DataQuote})
		if !slices.Equal(in.SteeredBy, []string{"carol"}) || !slices.Equal(in.Data, []string{DataCode, DataQuote}) {
			t.Fatalf("%+v", in)
		}
	})
}

func TestMessageNeedsStrict(t *testing.T) {
	cases := []struct {
		name            string
		sender          string
		verified, agent bool
		data            []string
		want            bool
	}{
		{"OwnersOwnWords", owner, true, false, nil, false},
		{"OwnerWithPaste", owner, true, false, []string{DataCode}, true},
		{"Teammate", "carol", false, false, nil, true},
		{"LabelDisagreesWithName", "carol", true, false, nil, true},
		{"OwnerNameButNotVerified", owner, false, false, nil, true},
		{"AgentNamedLikeOwner", owner, true, true, nil, true},
		{"EmptySender", "", false, false, nil, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := MessageNeedsStrict(owner, c.sender, c.verified, c.agent, c.data); got != c.want {
				t.Fatalf("got %v, want %v", got, c.want)
			}
		})
	}
}

// Words labelled as the owner's but not verified taint the turn as a
// teammate's would: no auto-approval, whoever steered it.
func TestTurnInputsUnverified(t *testing.T) {
	in := TurnInputs{Owner: owner, SteeredBy: []string{owner}, Unverified: true}
	if in.Clean() || !in.Tainted() || in.AutoApprovable("exec_command", []string{"exec_command"}, false) {
		t.Fatalf("unverified owner words: clean=%v tainted=%v", in.Clean(), in.Tainted())
	}
	in.Unverified = false
	if !in.Clean() || !in.AutoApprovable("exec_command", []string{"exec_command"}, false) {
		t.Fatal("the owner's verified words are not clean")
	}
}
