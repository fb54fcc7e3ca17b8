// Package store owns the hub's SQLite read model: its schema (migrations),
// the projection of every event of the log (one applier per event type,
// deterministic, so every hub node reaches the same state), and the
// queries the room rules and the API read. It imports chat and eventlog;
// never room, web or hub.
package store
