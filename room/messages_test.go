package room

import (
	"context"
	"testing"

	"github.com/wheelhouse-dev/wheelhouse/eventlog"
	"github.com/wheelhouse-dev/wheelhouse/internal/natstest"
)

// A message that mentions no agent is published on the plain subject, so
// the hub's router (whose consumer filters on the message type's subject)
// never receives it; one that mentions an agent is on the type's subject.
func TestPostSubjects(t *testing.T) {
	js := natstest.JetStream(t)
	ctx := context.Background()
	s, err := Open(ctx, Config{DataDir: t.TempDir(), JS: js})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	admin, err := s.Setup(ctx, "root", "correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateRoom(ctx, admin, "dev", false, ""); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		text, subject string
	}{
		{"hello", eventlog.SubjectPrefix + "message.posted" + eventlog.PlainSuffix},
		{"@alice hello", eventlog.SubjectPrefix + "message.posted" + eventlog.PlainSuffix},
		{"@root/demo hello", eventlog.SubjectPrefix + "message.posted"},
	} {
		m, err := s.Post(ctx, admin, "dev", tc.text, nil)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := s.Log.Stream().GetMsg(ctx, uint64(m.ID))
		if err != nil {
			t.Fatal(err)
		}
		if raw.Subject != tc.subject {
			t.Errorf("%q published on %s, want %s", tc.text, raw.Subject, tc.subject)
		}
	}
}
