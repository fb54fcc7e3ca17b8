package e2e_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// startNATS runs a separate, real NATS server (JetStream on, its store in
// a temp dir) on a random port, as an operator would run one next to the
// hub.
func startNATS(t *testing.T) *server.Server {
	t.Helper()
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	t.Cleanup(ns.Shutdown)
	return ns
}
