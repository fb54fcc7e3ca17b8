package hub_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
)

// messageID reads the message id out of a post's answer (HTTP body or a
// socket reply's data).
func messageID(t *testing.T, data []byte) int64 {
	t.Helper()
	var out struct {
		Message struct {
			ID   int64  `json:"id"`
			Text string `json:"text"`
		} `json:"message"`
	}
	if err := json.Unmarshal(data, &out); err != nil || out.Message.ID == 0 {
		t.Fatalf("no message in %s (%v)", data, err)
	}
	return out.Message.ID
}

// postThenRetry posts text over the socket s with an idempotency key, then
// again over HTTP as c with the same key (the reply lost with its socket),
// and checks that both answers are the same message, whose id it returns.
func postThenRetry(t *testing.T, s *testhub.Stream, c *testhub.Client, room, text, key string) int64 {
	t.Helper()
	rep := s.Request(map[string]any{"type": "post", "req": key, "room": room, "text": text, "key": key})
	if rep.Status != 201 {
		t.Fatalf("reply %+v", rep)
	}
	id := messageID(t, rep.Data)
	r := c.DoWith("POST", "/api/v1/rooms/"+room+"/messages", map[string]string{"text": text}, map[string]string{"Idempotency-Key": key})
	if r.Status != 201 || messageID(t, r.Raw) != id {
		t.Fatalf("the retry over HTTP answered %d %s, want message %d", r.Status, r.Raw, id)
	}
	return id
}

func TestPostOverTheEventsSocket(t *testing.T) {
	h := testhub.Start(t, testhub.Options{})
	admin := h.Setup("root", "correct horse")
	admin.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "r"})
	admin.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "inner", "private": true})
	bob := h.AddUser(admin, "bob")
	bob.Must(200, "POST", "/api/v1/rooms/r/members", nil)
	s := bob.Events(0, false)
	s.Ready()

	t.Run("Posts", func(t *testing.T) {
		rep := s.Request(map[string]any{"type": "post", "req": "p1", "room": "r", "text": "over the socket"})
		if rep.Status != 201 || rep.Error != nil {
			t.Fatalf("reply %+v", rep)
		}
		id := messageID(t, rep.Data)
		// The message's own event came first, and the reply moved nothing:
		// it has no id of the log.
		var seen bool
		for _, e := range s.Events() {
			if e.Type == "message" && strings.Contains(string(e.Data), "over the socket") {
				seen = true
			}
			if e.Type == "reply" {
				if !seen {
					t.Fatal("the reply came before the message's event")
				}
				if e.ID != 0 {
					t.Fatalf("a reply carries id %d", e.ID)
				}
			}
		}
		got := admin.Must(200, "GET", fmt.Sprintf("/api/v1/rooms/r/messages?after=%d&limit=1", id-1), nil)
		if ms := testhub.AsList(got.Body["messages"]); len(ms) != 1 || ms[0]["text"] != "over the socket" || ms[0]["author"] != "bob" {
			t.Fatalf("stored %v", got.Body["messages"])
		}
	})

	t.Run("BadRequestsAnsweredNothingWritten", func(t *testing.T) {
		before := len(testhub.AsList(admin.Must(200, "GET", "/api/v1/rooms/r/messages?limit=100", nil).Body["messages"]))
		for _, c := range []struct {
			name  string
			frame any
			req   string
			code  string
			in    string
		}{
			{"malformed JSON", []byte(`{"type":"post","req":`), "", "invalid", "malformed JSON"},
			{"two objects", []byte(`{"type":"post","req":"x2","room":"r","text":"a"} {}`), "x2", "invalid", "exactly one JSON object"},
			{"trailing bracket", []byte(`{"type":"post","req":"x2b","room":"r","text":"a"}]`), "x2b", "invalid", "exactly one JSON object"},
			{"unknown field", map[string]any{"type": "post", "req": "x3", "room": "r", "text": "a", "admin": true}, "x3", "invalid", "admin"},
			{"unknown type", map[string]any{"type": "delete", "req": "x4"}, "x4", "invalid", "unknown request type"},
			{"no room", map[string]any{"type": "post", "req": "x5", "text": "a"}, "x5", "invalid", "room is required"},
			{"unknown room", map[string]any{"type": "post", "req": "x6", "room": "nowhere", "text": "a"}, "x6", "not_found", ""},
			{"not a member", map[string]any{"type": "post", "req": "x7", "room": "inner", "text": "a"}, "x7", "", ""},
			{"empty text", map[string]any{"type": "post", "req": "x8", "room": "r", "text": "  "}, "x8", "invalid", ""},
			{"long req", map[string]any{"type": "post", "req": strings.Repeat("q", 65), "room": "r", "text": "a"}, "", "invalid", "req is at most"},
			{"long type", []byte(`{"type":"` + strings.Repeat("<", 60<<10) + `","req":"x10"}`), "x10", "invalid", "unknown request type"},
			{"idempotency key not a key", map[string]any{"type": "post", "req": "x9", "room": "r", "text": "a", "key": strings.Repeat("k", 500)}, "x9", "invalid", ""},
		} {
			// A frame too broken to read its req (or with one too long) is
			// answered without one: the newest such reply is its.
			unnamed := func() []testhub.Event {
				var out []testhub.Event
				for _, e := range s.Events() {
					if e.Type == "reply" && e.Req == "" {
						out = append(out, e)
					}
				}
				return out
			}
			before := len(unnamed())
			s.Send(c.frame)
			var rep testhub.Event
			if c.req != "" {
				rep = s.Reply(c.req)
			} else {
				testhub.WaitFor(t, 10*time.Second, "the reply to "+c.name, func() bool { return len(unnamed()) > before })
				rep = unnamed()[before]
			}
			if rep.Status < 400 || rep.Error == nil {
				t.Fatalf("%s: reply %+v, want an error", c.name, rep)
			}
			if c.code != "" && rep.Error.Code != c.code {
				t.Fatalf("%s: code %q, want %q (%s)", c.name, rep.Error.Code, c.code, rep.Error.Message)
			}
			if len(rep.Error.Message) > 512 {
				t.Fatalf("%s: a %d-byte error message for a %d-byte frame", c.name, len(rep.Error.Message), len(fmt.Sprint(c.frame)))
			}
			if !strings.Contains(rep.Error.Message, c.in) {
				t.Fatalf("%s: message %q does not say %q", c.name, rep.Error.Message, c.in)
			}
		}
		after := len(testhub.AsList(admin.Must(200, "GET", "/api/v1/rooms/r/messages?limit=100", nil).Body["messages"]))
		if after != before {
			t.Fatalf("bad requests wrote %d messages", after-before)
		}
		if s.Closed() != nil {
			t.Fatalf("a bad request closed the socket: %v", s.Closed())
		}
	})

	t.Run("RetryOverHTTPGetsTheFirstAnswer", func(t *testing.T) {
		// The socket dropped before the reply, say: the client posts the
		// same message again over HTTP with the same key.
		id := postThenRetry(t, s, bob, "r", "once only", "retry-1")
		// And the other way round: a second socket post with the key.
		rep2 := s.Request(map[string]any{"type": "post", "req": "k2", "room": "r", "text": "once only", "key": "retry-1"})
		if rep2.Status != 201 || messageID(t, rep2.Data) != id {
			t.Fatalf("the socket retry answered %+v, want message %d", rep2, id)
		}
		n := 0
		for _, m := range testhub.AsList(admin.Must(200, "GET", "/api/v1/rooms/r/messages?limit=100", nil).Body["messages"]) {
			if m["text"] == "once only" {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("%d messages for one post and its retries", n)
		}
	})

	t.Run("BurstEveryRequestAnswered", func(t *testing.T) {
		// More requests at once than a socket may have under way: each gets
		// exactly one reply, a message for each 201 and none for the rest.
		const n = 40
		for i := range n {
			s.Send(map[string]any{"type": "post", "req": fmt.Sprintf("b%d", i), "room": "r", "text": fmt.Sprintf("burst %d", i)})
		}
		ok := map[string]bool{}
		for i := range n {
			rep := s.Reply(fmt.Sprintf("b%d", i))
			switch {
			case rep.Status == 201:
				ok[fmt.Sprintf("burst %d", i)] = true
			case rep.Error != nil && rep.Error.Code == "rate_limited":
			default:
				t.Fatalf("b%d: reply %+v", i, rep)
			}
		}
		stored := map[string]int{}
		for _, m := range testhub.AsList(admin.Must(200, "GET", "/api/v1/rooms/r/messages?limit=100", nil).Body["messages"]) {
			if txt, _ := m["text"].(string); strings.HasPrefix(txt, "burst ") {
				stored[txt]++
			}
		}
		for txt, k := range stored {
			if k != 1 || !ok[txt] {
				t.Fatalf("%q stored %d times; answered 201: %v", txt, k, ok[txt])
			}
		}
		if len(stored) != len(ok) {
			t.Fatalf("%d stored, %d answered 201", len(stored), len(ok))
		}
		replies := 0
		for _, e := range s.Events() {
			if e.Type == "reply" && strings.HasPrefix(e.Req, "b") {
				replies++
			}
		}
		if replies != n {
			t.Fatalf("%d replies to %d requests", replies, n)
		}
	})

	t.Run("OversizedFrameClosesWith1009", func(t *testing.T) {
		big := bob.Events(0, false)
		big.Ready()
		big.Send(map[string]any{"type": "post", "req": "big", "room": "r", "text": strings.Repeat("x", 70<<10)})
		testhub.WaitFor(t, 10*time.Second, "the socket closed", func() bool { return big.Closed() != nil })
		var ce websocket.CloseError
		if !errors.As(big.Closed(), &ce) || ce.Code != websocket.StatusMessageTooBig {
			t.Fatalf("closed with %v, want 1009", big.Closed())
		}
	})

}

// FuzzSocketRequest sends arbitrary frames on a real hub's events socket:
// every frame gets exactly one reply, a post that was refused stores
// nothing, and the socket stays open. Explore with
//
//	go test ./hub -run '^$' -fuzz FuzzSocketRequest -fuzztime 30s -parallel 1
func FuzzSocketRequest(f *testing.F) {
	for _, seed := range []string{
		`{"type":"post","req":"a","room":"r","text":"hello"}`,
		`{"type":"post","req":"b","room":"r","text":"@root/nobody hi","turns":{"root/nobody":"t1"},"thread":1,"files":["f1"],"key":"k1"}`,
		`{"type":"post","req":"c","room":"r","text":"x","thread":9223372036854775807}`,
		`{"type":"post","req":"d","room":"r","text":"x","files":[""],"key":"\u0000"}`,
		`{"type":"post","room":"dm:root:root","text":"x"}`,
		`{"type":"ping"}`, `[]`, `null`, `{"type":"post","req":{}}`, "\xff\xfe", ``,
	} {
		f.Add([]byte(seed))
	}
	h := testhub.Start(f, testhub.Options{})
	admin := h.Setup("root", "correct horse")
	admin.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "r"})
	s := admin.Events(0, false)
	s.Ready()
	count := func(typ string) (n int, last testhub.Event) {
		for _, e := range s.Events() {
			if e.Type == typ {
				n, last = n+1, e
			}
		}
		return n, last
	}
	replies := 0
	f.Fuzz(func(t *testing.T, frame []byte) {
		messages, _ := count("message")
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		if err := s.Raw().Write(ctx, websocket.MessageText, frame); err != nil {
			t.Fatalf("send: %v", err)
		}
		replies++
		var rep testhub.Event
		testhub.WaitFor(t, 10*time.Second, "the reply", func() bool {
			var n int
			n, rep = count("reply")
			return n >= replies
		})
		if n, _ := count("reply"); n != replies {
			t.Fatalf("%d replies to %d frames", n, replies)
		}
		if s.Closed() != nil {
			t.Fatalf("the frame %q closed the socket: %v", frame, s.Closed())
		}
		// A post's message arrives before its reply: a refused one added
		// none.
		if after, _ := count("message"); rep.Status != 201 && after != messages {
			t.Fatalf("a refused post (%+v) stored a message", rep)
		}
	})
}

// TestSocketOpenedCrossSiteOnlyReads: a page of another site of the same
// host (Sec-Fetch-Site: same-site; the socket's own origin check compares
// hosts only) opens the events socket with the user's cookie. It may read,
// as before; its posts are refused as the same POST over HTTP is.
func TestSocketOpenedCrossSiteOnlyReads(t *testing.T) {
	h := testhub.Start(t, testhub.Options{})
	admin := h.Setup("root", "correct horse")
	admin.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "r"})
	hd := http.Header{}
	hd.Set("Origin", h.URL())
	hd.Set("Sec-Fetch-Site", "same-site")
	if r := admin.DoWith("POST", "/api/v1/rooms/r/messages", map[string]string{"text": "over HTTP"}, map[string]string{"Origin": h.URL(), "Sec-Fetch-Site": "same-site"}); r.Status != 403 {
		t.Fatalf("the same post over HTTP answered %d, want 403", r.Status)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, strings.Replace(h.URL(), "http", "ws", 1)+"/api/v1/events", &websocket.DialOptions{HTTPClient: admin.HTTP, HTTPHeader: hd})
	if err != nil {
		t.Fatalf("the socket itself is refused: %v", err)
	}
	defer ws.CloseNow()
	ws.SetReadLimit(1 << 20)
	if err := ws.Write(ctx, websocket.MessageText, []byte(`{"type":"post","req":"x","room":"r","text":"over the socket"}`)); err != nil {
		t.Fatal(err)
	}
	for {
		_, b, err := ws.Read(ctx)
		if err != nil {
			t.Fatalf("no reply: %v", err)
		}
		var e testhub.Event
		json.Unmarshal(b, &e)
		if e.Type == "message" {
			t.Fatalf("a cross-site socket posted: %s", b)
		}
		if e.Type != "reply" {
			continue
		}
		if e.Status != 403 || e.Error == nil || e.Error.Code != "forbidden" || !strings.Contains(e.Error.Message, "cross-origin") {
			t.Fatalf("reply %s, want 403 forbidden: cross-origin", b)
		}
		break
	}
	if ms := testhub.AsList(admin.Must(200, "GET", "/api/v1/rooms/r/messages", nil).Body["messages"]); len(ms) != 0 {
		t.Fatalf("stored %v", ms)
	}
}
