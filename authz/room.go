package authz

// MayReadRoom: only members read a room's messages.
func MayReadRoom(isMember bool) Decision {
	if isMember {
		return allow
	}
	return deny(ReasonNotAMember, "You are not a member of this room; join it (or ask a room admin to add you) to read it.")
}

// MayJoin: anyone may join a public room themselves; a private room is
// joined only by being added by one of its admins.
func MayJoin(private bool) Decision {
	if !private {
		return allow
	}
	return deny(ReasonForbidden, "This room is private; ask one of its admins to add you.")
}

// MayManageMembers decides whether the actor may add others to a room: in a
// public room anyone may (they could join themselves anyway), in a private
// room only its admins. Removing others is MayRemoveMember's rule.
func MayManageMembers(actorIsRoomAdmin bool, private bool) Decision {
	if !private || actorIsRoomAdmin {
		return allow
	}
	return deny(ReasonForbidden, "Only this private room's admins can add or remove members; ask one of them.")
}

// MayRemoveMember: anyone may leave; only room admins remove others.
func MayRemoveMember(actor, target string, actorIsRoomAdmin bool) Decision {
	if (actor != "" && actor == target) || actorIsRoomAdmin {
		return allow
	}
	return deny(ReasonForbidden, "Only a room admin can remove @%s from this room.", target)
}

// MaySetTopic: in a public room any member may change the topic (as in
// most team chats); in a private room only its admins; a DM has none.
func MaySetTopic(actorIsRoomAdmin, private, dm bool) Decision {
	switch {
	case dm:
		return deny(ReasonForbidden, "A DM has no topic; create a room to give a conversation one.")
	case !private || actorIsRoomAdmin:
		return allow
	}
	return deny(ReasonForbidden, "Only this private room's admins can change its topic; ask one of them.")
}
