package hub_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/wheelhouse-dev/wheelhouse/eventlog"
	"github.com/wheelhouse-dev/wheelhouse/hub"
	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
)

// opsStream is the event stream as the hub's ops user sees it.
func opsStream(t *testing.T, h *testhub.Hub) (jetstream.JetStream, jetstream.Stream) {
	t.Helper()
	js, err := jetstream.New(h.ConnectAs(t, hub.RoleOps))
	if err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(context.Background(), eventlog.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	return js, st
}

// TestOperatorStreamLimitsSurviveRestart: a max_age (and max_bytes) an
// operator set on the event stream is still there after the hub restarts;
// the hub resets only what it owns.
func TestOperatorStreamLimitsSurviveRestart(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	h := testhub.Start(t, testhub.Options{DataDir: data})
	js, st := opsStream(t, h)
	cfg := st.CachedInfo().Config
	cfg.MaxAge, cfg.MaxBytes, cfg.Description = 720*time.Hour, 1<<30, "the operator's"
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	h.Stop()

	h2 := testhub.Start(t, testhub.Options{DataDir: data})
	_, st2 := opsStream(t, h2)
	got := st2.CachedInfo().Config
	if got.MaxAge != 720*time.Hour || got.MaxBytes != 1<<30 || got.Description != "the operator's" {
		t.Fatalf("after a restart: max_age %v, max_bytes %d, description %q; want the operator's 720h, 1 GiB, kept", got.MaxAge, got.MaxBytes, got.Description)
	}
	if got.Duplicates != eventlog.DedupWindow || len(got.Subjects) != 1 || got.Subjects[0] != eventlog.SubjectPrefix+">" {
		t.Fatalf("the hub's own settings: duplicates %v, subjects %v", got.Duplicates, got.Subjects)
	}
}
