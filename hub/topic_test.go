package hub_test

import (
	"strings"
	"testing"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
)

// A room's topic: members of a public room change it, only admins of a
// private one, nobody in a DM; every member hears it live.
func TestRoomTopic(t *testing.T) {
	h := testhub.Start(t, testhub.Options{})
	admin := h.Setup("root", "correct horse")
	alice := h.AddUser(admin, "alice")
	bob := h.AddUser(admin, "bob")
	carol := h.AddUser(admin, "carol")
	alice.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "town", "topic": "everyone"})
	alice.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "secret", "private": true})
	bob.Must(200, "POST", "/api/v1/rooms/town/members", nil)
	alice.Must(200, "POST", "/api/v1/rooms/secret/members", map[string]string{"user": "bob"})

	t.Run("OKMemberOfPublicRoom", func(t *testing.T) {
		s := alice.Events(0, false)
		s.Ready()
		defer s.Close()
		r := bob.Must(200, "PATCH", "/api/v1/rooms/town", map[string]string{"topic": "  Release train: Friday  "})
		if got := r.Body["room"].(map[string]any)["topic"]; got != "Release train: Friday" {
			t.Fatalf("topic = %v", got)
		}
		ev := s.WaitType("room.topic", 1, 10*time.Second)
		if d := string(ev[0].Data); !strings.Contains(d, `"topic":"Release train: Friday"`) || !strings.Contains(d, `"by":"bob"`) {
			t.Fatalf("live event %s", d)
		}
		if got := alice.Must(200, "GET", "/api/v1/rooms/town", nil).Body["room"].(map[string]any)["topic"]; got != "Release train: Friday" {
			t.Fatalf("GET topic = %v", got)
		}
	})
	t.Run("OKClear", func(t *testing.T) {
		r := alice.Must(200, "PATCH", "/api/v1/rooms/town", map[string]string{"topic": ""})
		if got := r.Body["room"].(map[string]any)["topic"]; got != "" {
			t.Fatalf("topic = %v", got)
		}
	})
	t.Run("ErrPrivateRoomMember", func(t *testing.T) {
		r := bob.Must(403, "PATCH", "/api/v1/rooms/secret", map[string]string{"topic": "mine now"})
		if !strings.Contains(string(r.Raw), "admins") {
			t.Fatalf("answer %s", r.Raw)
		}
		alice.Must(200, "PATCH", "/api/v1/rooms/secret", map[string]string{"topic": "plans"})
	})
	t.Run("ErrNonMember", func(t *testing.T) {
		carol.Must(403, "PATCH", "/api/v1/rooms/town", map[string]string{"topic": "hijack"})
		carol.Must(404, "PATCH", "/api/v1/rooms/secret", map[string]string{"topic": "hijack"})
	})
	t.Run("ErrDM", func(t *testing.T) {
		alice.Must(200, "POST", "/api/v1/dms", map[string]string{"with": "bob"})
		alice.Must(403, "PATCH", "/api/v1/rooms/dm:alice:bob", map[string]string{"topic": "us"})
	})
	t.Run("ErrBadInput", func(t *testing.T) {
		alice.Must(400, "PATCH", "/api/v1/rooms/town", map[string]string{"topic": strings.Repeat("x", 257)})
		alice.Must(400, "PATCH", "/api/v1/rooms/town", map[string]string{"topic": "two\nlines"})
		alice.Must(400, "PATCH", "/api/v1/rooms/town", map[string]any{})
		alice.Must(400, "PATCH", "/api/v1/rooms/town", map[string]any{"topic": "x", "name": "renamed"})
		if got := alice.Must(200, "GET", "/api/v1/rooms/town", nil).Body["room"].(map[string]any)["topic"]; got != "" {
			t.Fatalf("a refused change left topic %v", got)
		}
		// A new room's topic follows the same rules.
		alice.Must(400, "POST", "/api/v1/rooms", map[string]any{"name": "twolines", "topic": "two\nlines"})
		r := alice.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "trimmed", "topic": "  spaced  "})
		if got := r.Body["room"].(map[string]any)["topic"]; got != "spaced" {
			t.Fatalf("a new room's topic = %q, want it trimmed", got)
		}
	})
}
