package hub_test

import (
	"strings"
	"testing"

	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
)

func TestBadInput(t *testing.T) {
	h := testhub.Start(t, testhub.Options{})
	admin := h.Setup("root", "correct horse")
	admin.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "r"})
	anon := testhub.NewClient(t, h.URL())
	huge := `{"text":"` + strings.Repeat("a", 70<<10) + `"}`

	endpoints := []struct {
		method, path string
		wrongType    string // a body with a field of the wrong type
	}{
		{"POST", "/api/v1/sessions", `{"name":1,"password":"x"}`},
		{"POST", "/api/v1/users", `{"name":"x","password":true}`},
		{"POST", "/api/v1/tokens", `{"label":[]}`},
		{"POST", "/api/v1/rooms", `{"name":"ok","private":"yes"}`},
		{"POST", "/api/v1/rooms/r/members", `{"user":5}`},
		{"POST", "/api/v1/rooms/r/messages", `{"text":{"a":1}}`},
		{"POST", "/api/v1/dms", `{"with":null,"x":1}`},
		{"POST", "/api/v1/devices", `{"name":1,"kind":"webcrypto"}`},
		{"POST", "/api/v1/requests/s1.0", `{"decision":["forward"]}`},
		{"PATCH", "/api/v1/rooms/r/agents/root/demo", `{"ceiling":1}`},
		{"POST", "/api/v1/approvals/a0123456789abcdef", `{"decision":"approve","signed":"yes"}`},
	}
	for _, e := range endpoints {
		t.Run(e.method+e.path, func(t *testing.T) {
			cases := []struct {
				name   string
				client *testhub.Client
				body   string
				status int
				code   string
			}{
				{"MalformedJSON", admin, `{"text": "unterminated`, 400, "invalid"},
				{"NotAnObject", admin, `[1,2,3]`, 400, "invalid"},
				{"TrailingData", admin, `{} {}`, 400, "invalid"},
				{"WrongType", admin, e.wrongType, 400, "invalid"},
				{"UnknownField", admin, `{"bogus":1}`, 400, "invalid"},
				{"Oversized", admin, huge, 413, "too_large"},
			}
			if e.path != "/api/v1/sessions" {
				cases = append(cases, struct {
					name   string
					client *testhub.Client
					body   string
					status int
					code   string
				}{"MissingAuth", anon, `{}`, 401, "unauthenticated"})
			}
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					r := c.client.Do(e.method, e.path, c.body)
					if r.Status != c.status || r.ErrCode() != c.code {
						t.Fatalf("status %d code %q, want %d %q: %s", r.Status, r.ErrCode(), c.status, c.code, r.Raw)
					}
					if msg := r.Body["error"].(map[string]any)["message"].(string); msg == "" || msg == "internal error" {
						t.Fatalf("unhelpful message %q", msg)
					}
				})
			}
		})
	}
	t.Run("BadQuery", func(t *testing.T) {
		for _, q := range []string{"?after=-1", "?before=x", "?limit=1000", "?limit=abc"} {
			if r := admin.Do("GET", "/api/v1/rooms/r/messages"+q, nil); r.Status != 400 || r.ErrCode() != "invalid" {
				t.Errorf("%s: %d %s", q, r.Status, r.Raw)
			}
		}
	})
	t.Run("UnknownEndpoint", func(t *testing.T) {
		if r := admin.Do("GET", "/api/v1/nope", nil); r.Status != 404 || r.ErrCode() != "not_found" {
			t.Fatalf("%d %s", r.Status, r.Raw)
		}
	})
	t.Run("NothingHalfWritten", func(t *testing.T) {
		r := admin.Must(200, "GET", "/api/v1/rooms/r/messages", nil)
		if n := len(r.Body["messages"].([]any)); n != 0 {
			t.Fatalf("bad input left %d messages behind", n)
		}
	})
}
