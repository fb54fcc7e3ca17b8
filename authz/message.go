package authz

// MayEditMessage: only a person edits, and only their own messages (an
// agent's or the system's messages are never edited by anyone).
func MayEditMessage(actor, author string, authorIsPerson bool) Decision {
	if authorIsPerson && actor != "" && actor == author {
		return allow
	}
	return deny(ReasonForbidden, "Only the author of a message can edit it.")
}

// MayDeleteMessage: people delete their own messages; a room's admins
// delete any message in it.
func MayDeleteMessage(actor, author string, authorIsPerson, actorIsRoomAdmin bool) Decision {
	if (authorIsPerson && actor != "" && actor == author) || actorIsRoomAdmin {
		return allow
	}
	return deny(ReasonForbidden, "Only the author of a message or an admin of the room can delete it.")
}
