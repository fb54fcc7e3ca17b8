// Package wire is the versioned protocol between hub and bridge: NATS
// subjects and the JSON messages sent on them, and the checks the hub runs
// on every message a bridge sends. Both sides import it; it imports only
// authz (whose words receipts carry).
package wire
