package authz

import "testing"

// TestMayManagePerson runs every people action for every kind of actor on
// every kind of target.
func TestMayManagePerson(t *testing.T) {
	root := Person{Name: "root", Admin: true}
	other := Person{Name: "ann", Admin: true}
	user := Person{Name: "bob"}
	gone := Person{Name: "carl", Deactivated: true}
	goneAdmin := Person{Name: "dora", Admin: true, Deactivated: true}
	cases := []struct {
		name   string
		actor  Person
		target Person
		admins int
		want   map[string]string // action → "" or reason
	}{
		{"AdminOnUser", root, user, 2, map[string]string{
			ActDeactivate: "", ActReactivate: "", ActGrantAdmin: "", ActRevokeAdmin: "", ActResetPassword: ""}},
		{"AdminOnOtherAdmin", root, other, 2, map[string]string{
			ActDeactivate: "", ActReactivate: "", ActGrantAdmin: "", ActRevokeAdmin: "", ActResetPassword: ""}},
		{"AdminOnSelfWithAnother", root, root, 2, map[string]string{
			ActDeactivate: ReasonSelf, ActReactivate: "", ActGrantAdmin: "", ActRevokeAdmin: "", ActResetPassword: ReasonSelf}},
		{"LastAdminOnSelf", root, root, 1, map[string]string{
			ActDeactivate: ReasonSelf, ActReactivate: "", ActGrantAdmin: "", ActRevokeAdmin: ReasonLastAdmin, ActResetPassword: ReasonSelf}},
		{"AdminOnDeactivated", root, gone, 1, map[string]string{
			ActDeactivate: "", ActReactivate: "", ActGrantAdmin: ReasonDeactivated, ActRevokeAdmin: "", ActResetPassword: ReasonDeactivated}},
		{"AdminOnDeactivatedAdmin", root, goneAdmin, 1, map[string]string{
			ActDeactivate: "", ActReactivate: "", ActGrantAdmin: ReasonDeactivated, ActRevokeAdmin: "", ActResetPassword: ReasonDeactivated}},
		// A count that says the target is the last one (a race the
		// projection settles) refuses whoever asks.
		{"AdminOnLastOtherAdmin", root, other, 1, map[string]string{
			ActDeactivate: ReasonLastAdmin, ActRevokeAdmin: ReasonLastAdmin}},
		{"UserOnUser", user, Person{Name: "eve"}, 1, map[string]string{
			ActDeactivate: ReasonForbidden, ActReactivate: ReasonForbidden, ActGrantAdmin: ReasonForbidden, ActRevokeAdmin: ReasonForbidden, ActResetPassword: ReasonForbidden}},
		{"UserOnSelf", user, user, 1, map[string]string{
			ActDeactivate: ReasonForbidden, ActReactivate: ReasonForbidden, ActGrantAdmin: ReasonForbidden, ActRevokeAdmin: ReasonForbidden, ActResetPassword: ReasonForbidden}},
		{"UserOnAdmin", user, root, 1, map[string]string{
			ActDeactivate: ReasonForbidden, ActRevokeAdmin: ReasonForbidden, ActResetPassword: ReasonForbidden}},
		// A deactivated admin's leftover credential decides nothing.
		{"DeactivatedAdminOnUser", goneAdmin, user, 1, map[string]string{
			ActDeactivate: ReasonForbidden, ActReactivate: ReasonForbidden, ActGrantAdmin: ReasonForbidden, ActResetPassword: ReasonForbidden}},
		{"NoActor", Person{}, user, 1, map[string]string{ActDeactivate: ReasonForbidden}},
	}
	for _, c := range cases {
		for action, want := range c.want {
			t.Run(c.name+"/"+action+"/"+outcomeName(want), func(t *testing.T) {
				checkDecision(t, MayManagePerson(PeopleCheck{Actor: c.actor, Target: c.target, Action: action, ActiveAdmins: c.admins}), want)
			})
		}
	}
	t.Run("UnknownAction/forbidden", func(t *testing.T) {
		checkDecision(t, MayManagePerson(PeopleCheck{Actor: root, Target: user, Action: "promote-to-god", ActiveAdmins: 1}), ReasonForbidden)
	})
}

func TestKeepsAnAdmin(t *testing.T) {
	checkDecision(t, KeepsAnAdmin(1, true), ReasonLastAdmin)
	checkDecision(t, KeepsAnAdmin(0, true), ReasonLastAdmin)
	checkDecision(t, KeepsAnAdmin(2, true), "")
	checkDecision(t, KeepsAnAdmin(1, false), "")
}

func TestMayEndSession(t *testing.T) {
	checkDecision(t, MayEndSession("bob", "bob"), "")
	checkDecision(t, MayEndSession("root", "bob"), ReasonForbidden)
	checkDecision(t, MayEndSession("", ""), ReasonForbidden)
}
