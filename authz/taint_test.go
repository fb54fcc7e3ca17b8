package authz

import "testing"

func TestTainted(t *testing.T) {
	cases := []struct {
		name      string
		steeredBy []string
		want      bool
	}{
		{"NobodyClean", nil, false},
		{"OwnerOnlyClean", []string{"bob", "bob"}, false},
		{"AllowedUserTaints", []string{"bob", "alice"}, true},
		{"PlainMemberTaints", []string{"carol"}, true},
		{"AdminNotOwnerTaints", []string{"root"}, true},
		{"AgentTaints", []string{"erin/claude"}, true},
		{"OwnersAgentTaints", []string{"bob/codex"}, true},
		{"EmptyNameTaints", []string{""}, true},
		{"CaseVariantTaints", []string{"Bob"}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Tainted(owner, c.steeredBy); got != c.want {
				t.Fatalf("Tainted(%q) = %v, want %v", c.steeredBy, got, c.want)
			}
		})
	}
	t.Run("EmptyOwnerAlwaysTainted", func(t *testing.T) {
		if !Tainted("", []string{""}) {
			t.Fatal("an empty owner must not make an empty sender the owner")
		}
	})
}

func TestNeedsOwnerDecision(t *testing.T) {
	auto := []string{"read_file", "list_dir"}
	cases := []struct {
		name    string
		tainted bool
		tool    string
		want    bool
	}{
		{"CleanAutoApproved", false, "read_file", false},
		{"CleanNotListed", false, "shell", true},
		{"CleanCaseMismatchNeedsDecision", false, "READ_FILE", true},
		{"CleanEmptyToolNeedsDecision", false, "", true},
		{"TaintedAutoApprovedStillNeedsDecision", true, "read_file", true},
		{"TaintedNotListed", true, "shell", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := NeedsOwnerDecision(c.tainted, c.tool, auto); got != c.want {
				t.Fatalf("NeedsOwnerDecision(%v, %q) = %v, want %v", c.tainted, c.tool, got, c.want)
			}
		})
	}
}

func TestMayRemember(t *testing.T) {
	if !MayRemember(false) {
		t.Fatal("clean turn: want remember allowed")
	}
	if MayRemember(true) {
		t.Fatal("tainted turn: want remember refused")
	}
}

func TestVoidOnDeparture(t *testing.T) {
	steered := []string{"bob", "alice"}
	cases := []struct {
		name         string
		departed     string
		agentRemoved bool
		want         bool
	}{
		{"SteererLeftVoids", "alice", false, true},
		{"OwnerSteererLeftVoids", "bob", false, true},
		{"BystanderLeftKeeps", "carol", false, false},
		{"AgentRemovedVoids", "", true, true},
		{"AgentRemovedWithBystanderVoids", "carol", true, true},
		{"NobodyKeeps", "", false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := VoidOnDeparture(steered, c.departed, c.agentRemoved); got != c.want {
				t.Fatalf("VoidOnDeparture(%q, %v) = %v, want %v", c.departed, c.agentRemoved, got, c.want)
			}
		})
	}
}
