package web_test

import (
	"testing"

	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
)

// An Idempotency-Key reused with another body is refused (422), over
// HTTP and over the events socket, instead of answering with the first
// post and silently dropping the second.
func TestIdempotencyKeyReusedWithAnotherBody(t *testing.T) {
	tm := newTeam(t, testhub.Options{})
	key := map[string]string{"Idempotency-Key": "k-123"}
	first := tm.alice.DoWith("POST", "/api/v1/rooms/dev/messages", map[string]any{"text": "idem alice"}, key)
	if first.Status != 201 {
		t.Fatalf("first: %d %s", first.Status, first.Raw)
	}
	again := tm.alice.DoWith("POST", "/api/v1/rooms/dev/messages", map[string]any{"text": "idem alice"}, key)
	if again.Status != 201 || id(again.Body["message"].(map[string]any)) != id(first.Body["message"].(map[string]any)) {
		t.Fatalf("a retry: %d %s", again.Status, again.Raw)
	}
	other := tm.alice.DoWith("POST", "/api/v1/rooms/dev/messages", map[string]any{"text": "different body same key"}, key)
	if other.Status != 422 || other.ErrReason() != "idempotency-key-reused" {
		t.Fatalf("another body with the same key: %d %s", other.Status, other.Raw)
	}
	st := tm.alice.Events(0, false)
	st.Ready()
	r := st.Request(map[string]any{"type": "post", "req": "r1", "room": "dev", "text": "another again", "key": "k-123"})
	if r.Status != 422 || r.Error == nil || r.Error.Reason != "idempotency-key-reused" {
		t.Fatalf("over the socket: %+v", r)
	}
	// Another person's same key is theirs.
	if r := tm.bob.DoWith("POST", "/api/v1/rooms/dev/messages", map[string]any{"text": "bob's own"}, key); r.Status != 201 {
		t.Fatalf("bob with the same key: %d %s", r.Status, r.Raw)
	}
	for _, m := range messages(t, tm.alice, "dev", "") {
		if m["text"] == "different body same key" || m["text"] == "another again" {
			t.Fatalf("a refused post was stored: %v", m)
		}
	}
}
