package authz

import "testing"

func TestSteerMode(t *testing.T) {
	cases := []struct {
		name       string
		c          ModeCheck
		action     string
		reason     string
		hasMessage bool
	}{
		{"IdleStarts", ModeCheck{}, ActionStart, "", false},
		{"IdleStartsEvenAtLimit", ModeCheck{SteersThisTurn: 9, MaxSteers: 1}, ActionStart, "", false},
		{"BusySteers", ModeCheck{Busy: true, CanSteer: true, SteeringEnabled: true}, ActionSteer, "", false},
		{"BusyUnderLimitSteers", ModeCheck{Busy: true, CanSteer: true, SteeringEnabled: true, SteersThisTurn: 4, MaxSteers: 5}, ActionSteer, "", false},
		{"BusyUnlimitedSteers", ModeCheck{Busy: true, CanSteer: true, SteeringEnabled: true, SteersThisTurn: 1000}, ActionSteer, "", false},
		{"BusyNegativeLimitIsUnlimited", ModeCheck{Busy: true, CanSteer: true, SteeringEnabled: true, SteersThisTurn: 3, MaxSteers: -1}, ActionSteer, "", false},
		{"BusyAtLimitRejected", ModeCheck{Busy: true, CanSteer: true, SteeringEnabled: true, SteersThisTurn: 5, MaxSteers: 5}, ActionReject, ReasonSteerLimit, true},
		{"BusyOverLimitRejected", ModeCheck{Busy: true, CanSteer: true, SteeringEnabled: true, SteersThisTurn: 6, MaxSteers: 5}, ActionReject, ReasonSteerLimit, true},
		{"BusyCannotSteerQueues", ModeCheck{Busy: true, SteeringEnabled: true}, ActionQueue, "", true},
		{"BusyCannotSteerAtLimitQueues", ModeCheck{Busy: true, SteeringEnabled: true, SteersThisTurn: 5, MaxSteers: 5}, ActionQueue, "", true},
		{"BusySteeringOffQueues", ModeCheck{Busy: true, CanSteer: true}, ActionQueue, ReasonSteeringDisabled, true},
		{"BusySteeringOffAtLimitQueues", ModeCheck{Busy: true, CanSteer: true, SteersThisTurn: 5, MaxSteers: 5}, ActionQueue, ReasonSteeringDisabled, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := SteerMode(c.c)
			if m.Action != c.action || m.Reason != c.reason || (m.Message != "") != c.hasMessage {
				t.Fatalf("SteerMode(%+v) = %+v, want action %q reason %q message %v", c.c, m, c.action, c.reason, c.hasMessage)
			}
		})
	}
}
