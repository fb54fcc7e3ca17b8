package chat

// FeedItem is a projected change that live clients receive. Body is the
// JSON sent to WebSocket clients, serialized once at apply time.
type FeedItem struct {
	Seq        uint64
	Idx        int    // its place among the event's items ("n" in Body when > 0)
	Kind       string // the event type ("message", "member.added", …)
	RoomID     int64
	Recipients []int64 // user ids that receive it
	Body       []byte
	// Access, when set, says that credentials stopped working or an
	// account changed with this event. It is for the hub nodes themselves
	// (their credential caches, the sockets opened with those credentials)
	// and is never sent to clients.
	Access *AccessChange
}

// AccessChange is what a node must forget after an account event.
type AccessChange struct {
	User   int64    // whose account; cached credentials of this user are dropped
	Ended  []string // hashes of the credentials that no longer work
	Reason string   // End*
}

// After reports whether the item comes after position (seq, idx).
func (it *FeedItem) After(seq uint64, idx int) bool {
	return it.Seq > seq || (it.Seq == seq && it.Idx > idx)
}
