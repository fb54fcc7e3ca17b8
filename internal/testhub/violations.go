package testhub

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// Violations collects the asynchronous errors the NATS server sends a
// connection (permission violations among them), to prove a credential's
// fences hold.
type Violations struct {
	mu   sync.Mutex
	errs []string
}

// Handler is the connection's error handler (nats.ErrorHandler, or
// nc.SetErrorHandler).
func (v *Violations) Handler(_ *nats.Conn, _ *nats.Subscription, err error) {
	v.mu.Lock()
	v.errs = append(v.errs, err.Error())
	v.mu.Unlock()
}

// Refused runs do on nc and waits for the server to report a permissions
// violation for it; an error from do itself must be a permission error.
func (v *Violations) Refused(t *testing.T, nc *nats.Conn, what string, do func() error) {
	t.Helper()
	v.mu.Lock()
	before := len(v.errs)
	v.mu.Unlock()
	if err := do(); err != nil && !strings.Contains(strings.ToLower(err.Error()), "permission") {
		t.Fatalf("%s: %v", what, err)
	}
	nc.Flush()
	WaitFor(t, 5*time.Second, "a permissions violation for "+what, func() bool {
		v.mu.Lock()
		defer v.mu.Unlock()
		for _, e := range v.errs[before:] {
			if strings.Contains(strings.ToLower(e), "permissions violation") {
				return true
			}
		}
		return false
	})
}
