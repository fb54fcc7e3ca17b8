package authz

import (
	"slices"
	"testing"
	"time"
)

func TestBeyond(t *testing.T) {
	base := Limits{Address: AddressUsers, Allowed: []string{"bob", "carol"}, Steering: true, MaxSteers: 5, Grace: 5 * time.Second,
		StartOnEnded: true, MaxAge: 10 * time.Minute, AutoApprove: []string{"read_file"}}
	with := func(f func(*Limits)) Limits {
		l := base
		l.Allowed = slices.Clone(base.Allowed)
		l.AutoApprove = slices.Clone(base.AutoApprove)
		f(&l)
		return l
	}
	for _, tt := range []struct {
		name string
		p    Limits
		want []string
	}{
		{"SameIsWithin", base, nil},
		{"OwnerOnlyNarrows", with(func(l *Limits) { l.Address, l.Allowed = AddressOwner, nil }), nil},
		{"FewerUsersNarrows", with(func(l *Limits) { l.Allowed = []string{"bob"} }), nil},
		{"ModerateSameUsersWithin", with(func(l *Limits) { l.Address = AddressModerate }), nil},
		{"AnotherUserWidens", with(func(l *Limits) { l.Allowed = append(l.Allowed, "mallory") }), []string{"address"}},
		{"MembersWidens", with(func(l *Limits) { l.Address = AddressMembers }), []string{"address"}},
		{"UnknownAddressNarrows", with(func(l *Limits) { l.Address = "everyone" }), nil},
		{"FewerSteersNarrows", with(func(l *Limits) { l.MaxSteers = 1 }), nil},
		{"MoreSteersWidens", with(func(l *Limits) { l.MaxSteers = 6 }), []string{"maxSteers"}},
		{"UnlimitedSteersWidens", with(func(l *Limits) { l.MaxSteers = 0 }), []string{"maxSteers"}},
		{"SteeringOffNarrows", with(func(l *Limits) { l.Steering = false }), nil},
		{"NoGraceLimitWidens", with(func(l *Limits) { l.Grace = 0 }), []string{"grace"}},
		{"LongerQueueWidens", with(func(l *Limits) { l.MaxAge = time.Hour }), []string{"maxAge"}},
		{"AutoApproveMoreWidens", with(func(l *Limits) { l.AutoApprove = append(l.AutoApprove, "exec_command") }), []string{"autoApprove"}},
		{"AutoApproveNoneNarrows", with(func(l *Limits) { l.AutoApprove = nil }), nil},
		{"Several", with(func(l *Limits) { l.Address, l.AutoApprove = AddressMembers, []string{"x"} }), []string{"address", "autoApprove"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := Beyond(base, tt.p); !slices.Equal(got, tt.want) {
				t.Fatalf("Beyond = %v, want %v", got, tt.want)
			}
		})
	}
	t.Run("NoSteeringLimitAllowsOn", func(t *testing.T) {
		open := with(func(l *Limits) { l.Steering, l.MaxSteers = false, 0 })
		if got := Beyond(open, with(func(l *Limits) { l.Steering = false })); len(got) != 0 {
			t.Fatalf("a finite steer limit under no limit: %v", got)
		}
		if got := Beyond(open, base); !slices.Equal(got, []string{"steering"}) {
			t.Fatalf("steering on under off: %v", got)
		}
	})
}

func TestCeilings(t *testing.T) {
	for _, tt := range []struct {
		cur, next string
		widens    bool
	}{
		{CeilingNormal, CeilingReadOnly, false},
		{CeilingNormal, CeilingAsk, false},
		{CeilingAsk, CeilingReadOnly, false},
		{CeilingReadOnly, CeilingAsk, true},
		{CeilingAsk, CeilingNormal, true},
		{CeilingReadOnly, CeilingNormal, true},
		{"bogus", CeilingAsk, true},
		{CeilingAsk, "bogus", false},
	} {
		if got := CeilingWidens(tt.cur, tt.next); got != tt.widens {
			t.Errorf("CeilingWidens(%q, %q) = %v", tt.cur, tt.next, got)
		}
	}
	if StricterCeiling(CeilingNormal, CeilingAsk) != CeilingAsk || StricterCeiling(CeilingReadOnly, CeilingAsk) != CeilingReadOnly || StricterCeiling("x", CeilingNormal) != CeilingReadOnly {
		t.Error("StricterCeiling")
	}
	if !CeilingNeedsStrict(CeilingAsk) || CeilingNeedsStrict(CeilingNormal) || CeilingAutoApproves(CeilingAsk) || !CeilingDeniesAll(CeilingReadOnly) || CeilingDeniesAll(CeilingAsk) {
		t.Error("ceiling rules")
	}
}

// Words said to come from the owner's DM but not verified as the owner's
// get the strictest ceiling of the agent's rooms, at most ask.
func TestUnverifiedDMCeiling(t *testing.T) {
	for _, tc := range []struct {
		name  string
		rooms []string
		want  string
	}{
		{"NoRoomsAsk", nil, CeilingAsk},
		{"NormalRoomsAsk", []string{CeilingNormal, CeilingNormal}, CeilingAsk},
		{"AReadOnlyRoomReadOnly", []string{CeilingNormal, CeilingReadOnly, CeilingAsk}, CeilingReadOnly},
		{"UnknownIsStrictest", []string{"wide-open"}, CeilingReadOnly},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := UnverifiedDMCeiling(tc.rooms); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}
