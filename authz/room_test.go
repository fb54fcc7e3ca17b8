package authz

import "testing"

func TestRoomRules(t *testing.T) {
	cases := []struct {
		name string
		d    Decision
		want string
	}{
		{"ReadMember/OK", MayReadRoom(true), ""},
		{"ReadNonMember/not-a-member", MayReadRoom(false), ReasonNotAMember},
		{"JoinPublic/OK", MayJoin(false), ""},
		{"JoinPrivate/forbidden", MayJoin(true), ReasonForbidden},
		{"ManagePublicMember/OK", MayManageMembers(false, false), ""},
		{"ManagePublicAdmin/OK", MayManageMembers(true, false), ""},
		{"ManagePrivateAdmin/OK", MayManageMembers(true, true), ""},
		{"ManagePrivateMember/forbidden", MayManageMembers(false, true), ReasonForbidden},
		{"RemoveSelf/OK", MayRemoveMember("carol", "carol", false), ""},
		{"RemoveSelfAdmin/OK", MayRemoveMember("root", "root", true), ""},
		{"RemoveOtherAsAdmin/OK", MayRemoveMember("root", "carol", true), ""},
		{"RemoveOtherAsMember/forbidden", MayRemoveMember("alice", "carol", false), ReasonForbidden},
		{"RemoveEmptyActor/forbidden", MayRemoveMember("", "", false), ReasonForbidden},
		{"TopicPublicMember/OK", MaySetTopic(false, false, false), ""},
		{"TopicPrivateAdmin/OK", MaySetTopic(true, true, false), ""},
		{"TopicPrivateMember/forbidden", MaySetTopic(false, true, false), ReasonForbidden},
		{"TopicDM/forbidden", MaySetTopic(true, true, true), ReasonForbidden},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { checkDecision(t, c.d, c.want) })
	}
}

// TestRoomRulesRoles runs the member-management rules over every role: only
// a room admin (a per-room role, unlike instance admin) manages others.
func TestRoomRulesRoles(t *testing.T) {
	for _, r := range roles {
		for _, private := range []bool{false, true} {
			for _, roomAdmin := range []bool{false, true} {
				want := ""
				if private && !roomAdmin {
					want = ReasonForbidden
				}
				name := r.name + map[bool]string{false: "/Public", true: "/Private"}[private] +
					map[bool]string{false: "/NotRoomAdmin", true: "/RoomAdmin"}[roomAdmin] + "/" + outcomeName(want)
				t.Run(name, func(t *testing.T) {
					checkDecision(t, MayManageMembers(roomAdmin, private), want)
					wantRemove := ""
					if !roomAdmin {
						wantRemove = ReasonForbidden
					}
					checkDecision(t, MayRemoveMember(r.user, "someone-else", roomAdmin), wantRemove)
					checkDecision(t, MayRemoveMember(r.user, r.user, roomAdmin), "")
				})
			}
		}
	}
}
