// Package bridge is the per-machine daemon: it connects to the hub over NATS
// with its own credentials, runs the owner's agents through harness adapters
// (bridge/<harness>), re-checks every steer and approval locally, and reports
// status, receipts, turn output and approval requests. It never imports web.
package bridge
