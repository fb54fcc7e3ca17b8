package authz

import "testing"

func TestMaySeeActivity(t *testing.T) {
	for _, c := range []struct {
		name string
		in   ActivityCheck
		want bool
	}{
		{"OwnerSeesItsAgentEverywhere", ActivityCheck{Viewer: "alice", Owner: "alice", Room: "secret"}, true},
		{"OwnerSeesAgentLevelEntries", ActivityCheck{Viewer: "alice", Owner: "alice"}, true},
		{"MemberOfTheRoom", ActivityCheck{Viewer: "bob", Owner: "alice", Room: "dev", ViewerMember: true}, true},
		{"MemberOfAnotherRoom", ActivityCheck{Viewer: "bob", Owner: "alice", Room: "secret"}, false},
		{"NonMemberOfAPublicRoom", ActivityCheck{Viewer: "bob", Owner: "alice", Room: "general"}, false},
		{"AgentLevelEntryToOthers", ActivityCheck{Viewer: "bob", Owner: "alice", ViewerMember: true}, false},
		{"NoViewer", ActivityCheck{Owner: "alice", Room: "dev", ViewerMember: false}, false},
		{"EmptyOwnerIsNoOne", ActivityCheck{Viewer: "", Owner: "", Room: "dev"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if d := MaySeeActivity(c.in); d.Allow != c.want {
				t.Fatalf("%+v: %v (%s)", c.in, d.Allow, d.Message)
			}
		})
	}
}

func TestMaySeeAgentRoom(t *testing.T) {
	for _, c := range []struct {
		name string
		in   RoomListCheck
		want bool
	}{
		{"OwnerSeesPrivate", RoomListCheck{Viewer: "alice", Owner: "alice", Private: true}, true},
		{"AnyoneSeesPublic", RoomListCheck{Viewer: "bob", Owner: "alice"}, true},
		{"MemberSeesPrivate", RoomListCheck{Viewer: "bob", Owner: "alice", Private: true, ViewerMember: true}, true},
		{"OthersDoNotSeePrivateOrDM", RoomListCheck{Viewer: "bob", Owner: "alice", Private: true}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if d := MaySeeAgentRoom(c.in); d.Allow != c.want {
				t.Fatalf("%+v: %v", c.in, d.Allow)
			}
		})
	}
}

func TestMaySeePolicy(t *testing.T) {
	if !MaySeePolicy("alice", "alice").Allow || MaySeePolicy("bob", "alice").Allow || MaySeePolicy("", "").Allow {
		t.Fatal("the policy is the owner's alone")
	}
}
