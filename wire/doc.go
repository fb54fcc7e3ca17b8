// Package wire is the versioned protocol between hub and bridge: NATS
// subjects and the JSON messages sent on them. Both sides import it; it
// imports nothing of ours.
package wire
