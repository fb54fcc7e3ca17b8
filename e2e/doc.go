// Package e2e holds end-to-end tests across hub, bridge and harnesses, all
// real: embedded NATS, SQLite files, HTTP and WebSocket, harness processes.
package e2e
