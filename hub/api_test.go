package hub_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
)

func TestSetup(t *testing.T) {
	h := testhub.Start(t, testhub.Options{})
	c := testhub.NewClient(t, h.URL())
	if r := c.Must(200, "GET", "/api/v1/setup", nil); r.Body["needed"] != true {
		t.Fatalf("setup needed = %v", r.Body["needed"])
	}
	t.Run("ErrWrongToken", func(t *testing.T) {
		r := c.Must(403, "POST", "/api/v1/setup", map[string]string{"token": "nope", "name": "root", "password": "long-enough"})
		if r.ErrCode() != "forbidden" {
			t.Fatalf("code %q", r.ErrCode())
		}
	})
	t.Run("ErrShortPassword", func(t *testing.T) {
		c.Must(400, "POST", "/api/v1/setup", map[string]string{"token": h.SetupToken(), "name": "root", "password": "short"})
	})
	t.Run("OK", func(t *testing.T) {
		admin := h.Setup("root", "correct horse")
		me := admin.Must(200, "GET", "/api/v1/me", nil)
		if u := me.Body["user"].(map[string]any); u["name"] != "root" || u["admin"] != true {
			t.Fatalf("me = %v", u)
		}
	})
	t.Run("ErrAlreadyDone", func(t *testing.T) {
		c.Must(409, "POST", "/api/v1/setup", map[string]string{"token": "x", "name": "other", "password": "long-enough"})
	})
}

func TestAccounts(t *testing.T) {
	h := testhub.Start(t, testhub.Options{})
	admin := h.Setup("root", "correct horse")
	bob := h.AddUser(admin, "bob")

	t.Run("ErrNonAdminCreatesUser", func(t *testing.T) {
		r := bob.Must(403, "POST", "/api/v1/users", map[string]string{"name": "eve", "password": "long-enough"})
		if r.ErrCode() != "forbidden" {
			t.Fatal(r.ErrCode())
		}
	})
	t.Run("ErrDuplicateUser", func(t *testing.T) {
		admin.Must(409, "POST", "/api/v1/users", map[string]string{"name": "bob", "password": "long-enough"})
	})
	t.Run("ErrWrongPassword", func(t *testing.T) {
		testhub.NewClient(t, h.URL()).Must(401, "POST", "/api/v1/sessions", map[string]string{"name": "bob", "password": "wrong-password"})
	})
	t.Run("ErrTooManyWrongPasswords", func(t *testing.T) {
		c := testhub.NewClient(t, h.URL())
		for i := 0; i < 3; i++ {
			c.Must(401, "POST", "/api/v1/sessions", map[string]string{"name": "mallory-target", "password": "guess-guess"})
		}
		r := c.Must(429, "POST", "/api/v1/sessions", map[string]string{"name": "mallory-target", "password": "guess-guess"})
		if r.ErrCode() != "rate_limited" {
			t.Fatalf("%s", r.Raw)
		}
	})
	t.Run("ErrNoAuth", func(t *testing.T) {
		r := testhub.NewClient(t, h.URL()).Must(401, "GET", "/api/v1/rooms", nil)
		if r.ErrCode() != "unauthenticated" {
			t.Fatal(r.ErrCode())
		}
	})
	t.Run("SessionCookieFlags", func(t *testing.T) {
		c := testhub.NewClient(t, h.URL())
		req, _ := http.NewRequest("POST", h.URL()+"/api/v1/sessions", strings.NewReader(`{"name":"bob","password":"pw-bob-secret"}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := c.HTTP.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		sc := resp.Header.Get("Set-Cookie")
		if !strings.Contains(sc, "HttpOnly") || !strings.Contains(sc, "SameSite=Lax") {
			t.Fatalf("cookie flags missing: %s", sc)
		}
	})
	t.Run("BearerToken", func(t *testing.T) {
		r := bob.Must(201, "POST", "/api/v1/tokens", map[string]string{"label": "script"})
		tok := r.Body["token"].(string)
		sc := testhub.NewClient(t, h.URL())
		sc.Token = tok
		if me := sc.Must(200, "GET", "/api/v1/me", nil); me.Body["user"].(map[string]any)["name"] != "bob" {
			t.Fatalf("token user = %v", me.Body)
		}
		sc.Token = tok + "x"
		sc.Must(401, "GET", "/api/v1/me", nil)

		list := testhub.AsList(bob.Must(200, "GET", "/api/v1/tokens", nil).Body["tokens"])
		if len(list) != 1 || list[0]["label"] != "script" || strings.Contains(string(mustJSON(list)), tok) {
			t.Fatalf("tokens %v", list)
		}
		admin.Must(404, "DELETE", "/api/v1/tokens/"+list[0]["id"].(string), nil) // not admin's token
		bob.Must(204, "DELETE", "/api/v1/tokens/"+list[0]["id"].(string), nil)
		sc.Token = tok
		sc.Must(401, "GET", "/api/v1/me", nil)
	})
	t.Run("Logout", func(t *testing.T) {
		c := h.Login("bob", "pw-bob-secret")
		c.Must(204, "DELETE", "/api/v1/sessions", nil)
		c.Must(401, "GET", "/api/v1/me", nil)
	})
	t.Run("ErrCrossOriginCookieWrite", func(t *testing.T) {
		req, _ := http.NewRequest("POST", h.URL()+"/api/v1/rooms", strings.NewReader(`{"name":"evil"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Origin", "https://evil.example")
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		resp, err := bob.HTTP.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 403 {
			t.Fatalf("cross-origin write: status %d", resp.StatusCode)
		}
	})
}

func TestRoomsAndMembership(t *testing.T) { testRoomsAndMembership(t, testhub.Options{}) }

func testRoomsAndMembership(t *testing.T, o testhub.Options) {
	h := testhub.Start(t, o)
	admin := h.Setup("root", "correct horse")
	alice := h.AddUser(admin, "alice")
	bob := h.AddUser(admin, "bob")
	carol := h.AddUser(admin, "carol")

	alice.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "town", "topic": "everyone"})
	alice.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "secret", "private": true})

	t.Run("ErrDuplicateRoom", func(t *testing.T) {
		bob.Must(409, "POST", "/api/v1/rooms", map[string]any{"name": "town"})
	})
	t.Run("ErrBadRoomName", func(t *testing.T) {
		bob.Must(400, "POST", "/api/v1/rooms", map[string]any{"name": "Bad Name!"})
	})
	t.Run("ErrNonMemberReadsPublic", func(t *testing.T) {
		r := bob.Must(403, "GET", "/api/v1/rooms/town/messages", nil)
		if r.ErrCode() != "forbidden" {
			t.Fatal(r.ErrCode())
		}
		bob.Must(403, "POST", "/api/v1/rooms/town/messages", map[string]string{"text": "hi"})
	})
	t.Run("ErrNonMemberPrivateIsNotFound", func(t *testing.T) {
		bob.Must(404, "GET", "/api/v1/rooms/secret/messages", nil)
		bob.Must(404, "POST", "/api/v1/rooms/secret/members", map[string]any{})
	})
	t.Run("ErrUnknownRoom", func(t *testing.T) {
		r := bob.Must(404, "GET", "/api/v1/rooms/nowhere/messages", nil)
		if r.ErrCode() != "not_found" {
			t.Fatal(r.ErrCode())
		}
	})
	t.Run("BrowseAndJoinPublic", func(t *testing.T) {
		r := bob.Must(200, "GET", "/api/v1/rooms?public=1", nil)
		if n := len(r.Body["rooms"].([]any)); n != 1 {
			t.Fatalf("public rooms = %d, want 1 (private stays hidden)", n)
		}
		bob.Must(200, "POST", "/api/v1/rooms/town/members", nil)
		bob.Post("town", "hello town")
	})
	t.Run("AdminAddsThemselvesToTheirPrivateRoom", func(t *testing.T) {
		// Already in it: a no-op, not the 404 a stranger's join gets.
		r := alice.Must(200, "POST", "/api/v1/rooms/secret/members", map[string]string{"user": "alice"})
		if rm, _ := r.Body["room"].(map[string]any); rm["name"] != "secret" || rm["role"] != "admin" {
			t.Fatalf("answer %s", r.Raw)
		}
	})
	t.Run("ErrNonAdminAddsToPrivate", func(t *testing.T) {
		alice.Must(200, "POST", "/api/v1/rooms/secret/members", map[string]string{"user": "bob"})
		r := bob.Must(403, "POST", "/api/v1/rooms/secret/members", map[string]string{"user": "carol"})
		if r.ErrCode() != "forbidden" {
			t.Fatal(r.ErrCode())
		}
		bob.Must(403, "DELETE", "/api/v1/rooms/secret/members/alice", nil)
	})
	t.Run("AdminRemovesAndMemberLeaves", func(t *testing.T) {
		alice.Must(200, "POST", "/api/v1/rooms/secret/members", map[string]string{"user": "carol"})
		carol.Post("secret", "carol was here")
		alice.Must(204, "DELETE", "/api/v1/rooms/secret/members/carol", nil)
		carol.Must(404, "GET", "/api/v1/rooms/secret/messages", nil)
		bob.Must(204, "DELETE", "/api/v1/rooms/secret/members/bob", nil)
		bob.Must(404, "POST", "/api/v1/rooms/secret/messages", map[string]string{"text": "still here?"})
	})
	t.Run("DMCreatedOnce", func(t *testing.T) {
		r1 := alice.Must(200, "POST", "/api/v1/dms", map[string]string{"with": "bob"})
		r2 := bob.Must(200, "POST", "/api/v1/dms", map[string]string{"with": "@alice"})
		n1 := r1.Body["room"].(map[string]any)["name"]
		n2 := r2.Body["room"].(map[string]any)["name"]
		if n1 != n2 || n1 != "dm:alice:bob" {
			t.Fatalf("DM names %v %v", n1, n2)
		}
		bob.Post("dm:alice:bob", "psst")
		carol.Must(404, "GET", "/api/v1/rooms/dm:alice:bob/messages", nil)
		alice.Must(400, "POST", "/api/v1/rooms/dm:alice:bob/members", map[string]string{"user": "carol"})
	})
	t.Run("MyRooms", func(t *testing.T) {
		r := alice.Must(200, "GET", "/api/v1/rooms", nil)
		var names []string
		for _, x := range r.Body["rooms"].([]any) {
			names = append(names, x.(map[string]any)["name"].(string))
		}
		if strings.Join(names, ",") != "secret,town,dm:alice:bob" {
			t.Fatalf("rooms = %v", names)
		}
	})
}

func TestMessagesAndPagination(t *testing.T) { testMessagesAndPagination(t, testhub.Options{}) }

func testMessagesAndPagination(t *testing.T, o testhub.Options) {
	h := testhub.Start(t, o)
	admin := h.Setup("root", "correct horse")
	admin.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "log"})
	var ids []int64
	for i := 0; i < 25; i++ {
		ids = append(ids, admin.Post("log", fmt.Sprintf("message %d", i)))
	}
	get := func(q string) []int64 {
		r := admin.Must(200, "GET", "/api/v1/rooms/log/messages"+q, nil)
		var out []int64
		for _, m := range r.Body["messages"].([]any) {
			out = append(out, int64(m.(map[string]any)["id"].(float64)))
		}
		return out
	}
	t.Run("NewestPage", func(t *testing.T) {
		got := get("?limit=10")
		if fmt.Sprint(got) != fmt.Sprint(ids[15:]) {
			t.Fatalf("got %v want %v", got, ids[15:])
		}
	})
	t.Run("Before", func(t *testing.T) {
		got := get(fmt.Sprintf("?before=%d&limit=10", ids[15]))
		if fmt.Sprint(got) != fmt.Sprint(ids[5:15]) {
			t.Fatalf("got %v want %v", got, ids[5:15])
		}
	})
	t.Run("After", func(t *testing.T) {
		got := get(fmt.Sprintf("?after=%d&limit=3", ids[20]))
		if fmt.Sprint(got) != fmt.Sprint(ids[21:24]) {
			t.Fatalf("got %v want %v", got, ids[21:24])
		}
	})
	t.Run("MentionsParsed", func(t *testing.T) {
		admin.Must(201, "POST", "/api/v1/users", map[string]string{"name": "bob", "password": "long-enough"})
		r := admin.Must(201, "POST", "/api/v1/rooms/log/messages", map[string]string{"text": "hey @bob, ask @root/codex <b>now</b>"})
		m := r.Body["message"].(map[string]any)
		ms := m["mentions"].([]any)
		if len(ms) != 2 || ms[0].(map[string]any)["user"] != "bob" || ms[1].(map[string]any)["agent"] != "codex" {
			t.Fatalf("mentions = %v", ms)
		}
		if m["text"] != "hey @bob, ask @root/codex <b>now</b>" {
			t.Fatalf("text not stored raw: %v", m["text"])
		}
	})
	t.Run("ErrTooLarge", func(t *testing.T) {
		r := admin.Must(413, "POST", "/api/v1/rooms/log/messages", map[string]string{"text": strings.Repeat("x", 16<<10+1)})
		if r.ErrCode() != "too_large" || !strings.Contains(r.Body["error"].(map[string]any)["message"].(string), "16 KiB") {
			t.Fatalf("error %s", r.Raw)
		}
	})
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
