// Package eventlog owns the hub's event log: the JetStream stream every
// state change is appended to, and the loop that hands it, in order and
// without ever skipping an event, to a Projector (the SQLite read model).
// It imports chat and the root error package; never store or room.
package eventlog
