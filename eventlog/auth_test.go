package eventlog

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/internal/natstest"
)

func TestAuthCheck(t *testing.T) {
	a := &Auth{Key: []byte("0123456789abcdef0123456789abcdef"), LegacyHorizon: 10}
	other := &Auth{Key: []byte("fedcba9876543210fedcba9876543210")}
	e := Entry{Seq: 11, Subject: "wh.log.user.admin", MsgID: "e1", Data: []byte(`{"id":"e1"}`)}
	good := a.MAC(e.Subject, e.MsgID, e.Data)
	with := func(f func(*Entry)) Entry { c := e; f(&c); return c }
	for _, c := range []struct {
		name string
		e    Entry
		mac  string
		ok   bool
	}{
		{"Valid", e, good, true},
		{"LegacyWithoutMAC", with(func(e *Entry) { e.Seq = 10 }), "", true},
		{"ErrNoMACAfterHorizon", e, "", false},
		{"ErrBadMACBeforeHorizon", with(func(e *Entry) { e.Seq = 3 }), "00", false},
		{"ErrOtherKey", e, other.MAC(e.Subject, e.MsgID, e.Data), false},
		{"ErrOtherSubject", with(func(e *Entry) { e.Subject = "wh.log.user.admin.plain" }), good, false},
		{"ErrOtherMsgID", with(func(e *Entry) { e.MsgID = "e2" }), good, false},
		{"ErrNoMsgID", with(func(e *Entry) { e.MsgID = "" }), a.MAC(e.Subject, "", e.Data), false},
		{"ErrOtherBody", with(func(e *Entry) { e.Data = []byte(`{"id":"e1","x":1}`) }), good, false},
		// Field boundaries are length-prefixed: moving bytes between
		// subject and message id changes the MAC.
		{"ErrShiftedFields", with(func(e *Entry) { e.Subject, e.MsgID = "wh.log.user.admine", "1" }), good, false},
	} {
		err := a.Check(c.e, c.mac)
		if (err == nil) != c.ok {
			t.Errorf("%s: Check = %v, want ok=%v", c.name, err, c.ok)
		}
		var we *wh.Error
		if err != nil && (!errors.As(err, &we) || we.Reason != ReasonUnauthentic || we.Code != wh.EForbidden) {
			t.Errorf("%s: refusal %#v, want a forbidden %s", c.name, err, ReasonUnauthentic)
		}
	}
}

// With a key, this node's appends and another node's (the same key) reach
// the projector as the hub's own; an entry published on a log subject
// without the MAC reaches it marked Unauthentic, and is counted.
func TestLogMarksUnauthenticEntries(t *testing.T) {
	js := natstest.JetStream(t)
	rec := &recorder{}
	auth := &Auth{Key: make([]byte, KeySize)}
	l := New(Config{JS: js, Projector: rec, Auth: auth})
	ctx := context.Background()
	if err := l.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Stop)
	if _, err := l.Append(ctx, newEvent(t, "mine")); err != nil {
		t.Fatal(err)
	}
	other := newEvent(t, "another node's")
	data, _ := json.Marshal(other)
	subj := SubjectPrefix + other.Type
	m := &nats.Msg{Subject: subj, Data: data, Header: nats.Header{}}
	m.Header.Set(MACHeader, auth.MAC(subj, other.ID, data))
	if _, err := js.PublishMsg(ctx, m, jetstream.WithMsgID(other.ID)); err != nil {
		t.Fatal(err)
	}
	stray := newEvent(t, "stray")
	data, _ = json.Marshal(stray)
	ack, err := js.Publish(ctx, subj, data, jetstream.WithMsgID(stray.ID))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.WaitApplied(ctx, ack.Sequence); err != nil {
		t.Fatal(err)
	}
	got := rec.entries()
	if len(got) != 3 || got[0].Unauthentic != nil || got[1].Unauthentic != nil || got[2].Unauthentic == nil {
		t.Fatalf("entries %+v: want the first two the hub's own, the third marked", got)
	}
	if l.Forged() != 1 {
		t.Fatalf("Forged = %d, want 1", l.Forged())
	}
}
