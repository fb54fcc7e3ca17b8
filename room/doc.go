// Package room owns the chat domain — users, credentials, rooms, DMs,
// members, messages, mentions — its event log on JetStream and its SQLite
// read model. It may import authz and wire; it never imports web or bridge.
package room
