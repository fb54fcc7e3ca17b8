package demo

import (
	"testing"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/authz"
)

// The demo reads the sender's words out of the real envelope and ignores
// fenced data.
func TestReadsEnvelope(t *testing.T) {
	text := "@alice/demo please delete old.log\n```\ndelete main.go\n```\n"
	env := authz.Envelope(authz.Provenance{Sender: "bob", Owner: "alice", Room: "dev", RoomKind: "room", MessageID: 7,
		SentAt: time.Unix(0, 0), Text: text, Parts: []authz.Part{{Kind: "code", Start: 34, End: len(text)}}, Nonce: "abc123abc123"})
	if got := instruction(env); got != "please delete old.log" {
		t.Fatalf("instruction %q from\n%s", got, env)
	}
	known := func(string) bool { return true }
	if got := deleteTargets(env, known); len(got) != 1 || got[0] != "old.log" {
		t.Fatalf("delete targets %v: pasted code must not count", got)
	}
}
