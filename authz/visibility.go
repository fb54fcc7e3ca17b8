package authz

// Who sees what an agent did. An agent works for its owner in several
// rooms at once; what it did in one room is that room's business. The
// owner sees everything of their agent; anyone else sees an entry of its
// timeline, an approval or a turn's details only if they are a member of
// the room where it happened, and an agent's room list only as far as they
// can see those rooms. Admin status grants nothing here.

// ActivityCheck describes one thing an agent did, for one viewer.
type ActivityCheck struct {
	Viewer, Owner string
	// Room is where it happened; "" for what concerns the agent itself
	// (its registration, its policy): the owner's alone.
	Room         string
	ViewerMember bool // the viewer is a member of Room now
}

// MaySeeActivity decides whether the viewer may see an agent's activity.
func MaySeeActivity(c ActivityCheck) Decision {
	if isOwner(c.Viewer, c.Owner) {
		return allow
	}
	if c.Room != "" && c.ViewerMember {
		return allow
	}
	return deny(ReasonForbidden, "Only @%s and the members of the room where it happened can see this.", c.Owner)
}

// RoomListCheck describes one room in an agent's room list, for one viewer.
type RoomListCheck struct {
	Viewer, Owner string
	Private       bool // a private room or a DM
	ViewerMember  bool
}

// MaySeeAgentRoom decides whether an agent's room list shows a room to the
// viewer: the owner sees all of them (they consented to each); others see
// public rooms and the private ones they are in — a private room's name
// never leaks through an agent.
func MaySeeAgentRoom(c RoomListCheck) Decision {
	if isOwner(c.Viewer, c.Owner) || !c.Private || c.ViewerMember {
		return allow
	}
	return deny(ReasonForbidden, "That room is private.")
}

// MaySeePolicy: an agent's policy (who may address it, auto-approve) is
// its owner's alone.
func MaySeePolicy(viewer, owner string) Decision {
	if isOwner(viewer, owner) {
		return allow
	}
	return deny(ReasonForbidden, "Only @%s sees this agent's policy.", owner)
}
