// Package bridge is the per-machine daemon: it connects to the hub over NATS
// with its own credentials, runs the owner's agents through harness adapters
// (bridge/<harness>), re-checks every steer and approval locally, puts words
// that are not the owner's own only into turns whose every side effect
// reaches its gate, keeps an append-only journal per agent, and reports
// status, receipts, turn output and approval requests. It never imports web.
package bridge
