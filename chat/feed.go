package chat

// FeedItem is a projected change that live clients receive. Body is the
// JSON sent to WebSocket clients, serialized once at apply time.
type FeedItem struct {
	Seq        uint64
	Kind       string // the event type ("message", "member.added", …)
	RoomID     int64
	Recipients []int64 // user ids that receive it
	Body       []byte
}
