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
}

// After reports whether the item comes after position (seq, idx).
func (it *FeedItem) After(seq uint64, idx int) bool {
	return it.Seq > seq || (it.Seq == seq && it.Idx > idx)
}
