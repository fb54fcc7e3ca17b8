package chat

// EvRoomTopicSet is the event recorded when a member changed a room's topic.
const EvRoomTopicSet = "room.topic"

// MaxTopicBytes bounds a room's topic.
const MaxTopicBytes = 256

// RoomTopicSet is the payload of the event recorded when a room's topic changed.
type RoomTopicSet struct {
	Room  string `json:"room"`
	Topic string `json:"topic"`
	By    string `json:"by"`
}
