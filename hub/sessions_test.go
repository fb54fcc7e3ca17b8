package hub_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
)

// on returns a client of hub h that shares c's credentials (cookie jar and
// bearer token): the same session on another node.
func on(t *testing.T, h *testhub.Hub, c *testhub.Client) *testhub.Client {
	o := testhub.NewClient(t, h.URL())
	o.HTTP.Jar = c.HTTP.Jar
	o.Token = c.Token
	o.Name = c.Name
	return o
}

// endedWithin waits for the server to close s with 4001 within the given
// time of start (when the change's event was in the log) and reports how
// long it took.
func endedWithin(t *testing.T, s *testhub.Stream, start time.Time, within time.Duration, what string) {
	t.Helper()
	testhub.CheckFor(t, within, what+" closed", func() error {
		err := s.Closed()
		if err == nil {
			return errorString("still open")
		}
		if st := websocket.CloseStatus(err); st != 4001 {
			t.Fatalf("%s closed with %v (status %d), want 4001", what, err, st)
		}
		return nil
	})
	t.Logf("%s closed %v after the change", what, time.Since(start).Round(time.Millisecond))
}

type errorString string

func (e errorString) Error() string { return string(e) }

// stillOpen checks that s is open and still delivers.
func stillOpen(t *testing.T, s *testhub.Stream, poster *testhub.Client, room, what string) {
	t.Helper()
	if err := s.Closed(); err != nil {
		t.Fatalf("%s was closed: %v", what, err)
	}
	n := len(s.Events())
	poster.Post(room, "still here? "+what)
	testhub.WaitFor(t, 10*time.Second, what+" to get a new message", func() bool { return len(s.Events()) > n })
}

// Sessions end when they are ended: a logout, a revoked token, an ended
// session, a password change and a deactivation close the sockets opened
// with those credentials within a second, on the node that made the change
// and on another node, and leave every other socket alone.
func TestSessionsEndOnEveryNode(t *testing.T) {
	ns := testhub.StartNATS(t)
	a := testhub.Start(t, testhub.Options{NATS: ns})
	admin := a.Setup("root", "correct horse")
	admin.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "lobby"})
	b := testhub.Start(t, testhub.Options{NATS: ns})

	user := func(name string) *testhub.Client {
		c := a.AddUser(admin, name)
		c.Must(200, "POST", "/api/v1/rooms/lobby/members", nil)
		return c
	}
	// streams opens the credential's socket on both nodes, once node B
	// knows it: a credential made on A reaches B through the log moments
	// later (read-your-writes holds per node).
	streams := func(c *testhub.Client) (*testhub.Stream, *testhub.Stream) {
		cb := on(t, b, c)
		testhub.WaitFor(t, 10*time.Second, "node B knows the credential", func() bool { return cb.Do("GET", "/api/v1/me", nil).Status == 200 })
		sa, sb := c.Events(0, false), cb.Events(0, false)
		sa.Ready()
		sb.Ready()
		return sa, sb
	}
	const within = time.Second

	t.Run("Logout", func(t *testing.T) {
		bob := user("bob")
		other := a.Login("bob", "pw-bob-secret") // a second session
		sa, sb := streams(bob)
		oa, ob := streams(other)
		bob.Must(204, "DELETE", "/api/v1/sessions", nil)
		start := time.Now() // the event is in the log once the request returns
		endedWithin(t, sa, start, within, "the session's socket on node A")
		endedWithin(t, sb, start, within, "the session's socket on node B")
		stillOpen(t, oa, admin, "lobby", "the other session on A")
		stillOpen(t, ob, admin, "lobby", "the other session on B")
		bob.Must(401, "GET", "/api/v1/me", nil)
		on(t, b, bob).Must(401, "GET", "/api/v1/me", nil)
	})

	t.Run("RevokedToken", func(t *testing.T) {
		carol := user("carol")
		tok := carol.Must(201, "POST", "/api/v1/tokens", map[string]string{"label": "script"}).Body["token"].(string)
		script := testhub.NewClient(t, a.URL())
		script.Token = tok
		sa, sb := streams(script)
		ca, cb := streams(carol)
		id := testhub.AsList(carol.Must(200, "GET", "/api/v1/tokens", nil).Body["tokens"])[0]["id"].(string)
		on(t, b, carol).Must(204, "DELETE", "/api/v1/tokens/"+id, nil) // revoked on node B
		start := time.Now()                                            // the event is in the log once the request returns
		endedWithin(t, sa, start, within, "the token's socket on node A")
		endedWithin(t, sb, start, within, "the token's socket on node B")
		stillOpen(t, ca, admin, "lobby", "carol's browser on A")
		stillOpen(t, cb, admin, "lobby", "carol's browser on B")
		script.Must(401, "GET", "/api/v1/me", nil)
	})

	t.Run("EndedSession", func(t *testing.T) {
		dave := user("dave")
		laptop := a.Login("dave", "pw-dave-secret")
		la, lb := streams(laptop)
		list := testhub.AsList(dave.Must(200, "GET", "/api/v1/sessions", nil).Body["sessions"])
		if len(list) != 2 {
			t.Fatalf("sessions %v", list)
		}
		var id string
		for _, s := range list {
			if s["current"] != true {
				id = s["id"].(string)
			}
		}
		dave.Must(204, "DELETE", "/api/v1/sessions/"+id, nil)
		start := time.Now() // the event is in the log once the request returns
		endedWithin(t, la, start, within, "the ended session's socket on node A")
		endedWithin(t, lb, start, within, "the ended session's socket on node B")
		laptop.Must(401, "GET", "/api/v1/me", nil)
		dave.Must(200, "GET", "/api/v1/me", nil)
	})

	t.Run("PasswordChange", func(t *testing.T) {
		erin := user("erin")
		phone := a.Login("erin", "pw-erin-secret")
		tok := erin.Must(201, "POST", "/api/v1/tokens", map[string]string{"label": "ci"}).Body["token"].(string)
		script := testhub.NewClient(t, a.URL())
		script.Token = tok
		ea, eb := streams(erin)
		pa, pb := streams(phone)
		erin.Must(204, "PUT", "/api/v1/me/password", map[string]string{"current": "pw-erin-secret", "password": "a brand new secret"})
		start := time.Now() // the event is in the log once the request returns
		endedWithin(t, pa, start, within, "the other session's socket on node A")
		endedWithin(t, pb, start, within, "the other session's socket on node B")
		stillOpen(t, ea, admin, "lobby", "the session that changed it, on A")
		stillOpen(t, eb, admin, "lobby", "the session that changed it, on B")
		phone.Must(401, "GET", "/api/v1/me", nil)
		script.Must(200, "GET", "/api/v1/me", nil) // tokens are listed and revoked on their own
		testhub.NewClient(t, b.URL()).Must(401, "POST", "/api/v1/sessions", map[string]string{"name": "erin", "password": "pw-erin-secret"})
		b.Login("erin", "a brand new secret")
	})

	t.Run("Deactivated", func(t *testing.T) {
		finn := user("finn")
		second := a.Login("finn", "pw-finn-secret")
		tok := finn.Must(201, "POST", "/api/v1/tokens", map[string]string{"label": "ci"}).Body["token"].(string)
		script := testhub.NewClient(t, a.URL())
		script.Token = tok
		fa, fb := streams(finn)
		sa, sb := streams(second)
		ta, tb := streams(script)
		on(t, b, admin).Must(200, "PATCH", "/api/v1/users/finn", map[string]any{"active": false})
		start := time.Now() // the event is in the log once the request returns
		for _, s := range []struct {
			s    *testhub.Stream
			what string
		}{{fa, "session 1 on A"}, {fb, "session 1 on B"}, {sa, "session 2 on A"}, {sb, "session 2 on B"}, {ta, "the token on A"}, {tb, "the token on B"}} {
			endedWithin(t, s.s, start, within, s.what)
		}
		for _, c := range []*testhub.Client{finn, second, script, on(t, b, finn)} {
			c.Must(401, "GET", "/api/v1/me", nil)
		}
		r := testhub.NewClient(t, b.URL()).Must(403, "POST", "/api/v1/sessions", map[string]string{"name": "finn", "password": "pw-finn-secret"})
		if r.ErrReason() != "deactivated" || !strings.Contains(string(r.Raw), "deactivated") {
			t.Fatalf("login of a deactivated user: %s", r.Raw)
		}
	})
}

// A socket opened with a credential that ended is refused at once.
func TestSocketOfEndedSessionRefused(t *testing.T) {
	h := testhub.Start(t, testhub.Options{})
	admin := h.Setup("root", "correct horse")
	bob := h.AddUser(admin, "bob")
	jar := bob.HTTP.Jar
	var cookie *http.Cookie
	for _, c := range jar.Cookies(mustURL(t, h.URL())) {
		cookie = c
	}
	bob.Must(204, "DELETE", "/api/v1/sessions", nil)
	// The browser still sends the old cookie.
	hd := http.Header{}
	hd.Set("Cookie", cookie.Name+"="+cookie.Value)
	_, resp, err := websocket.Dial(t.Context(), strings.Replace(h.URL(), "http", "ws", 1)+"/api/v1/events", &websocket.DialOptions{HTTPHeader: hd})
	if err == nil || resp == nil || resp.StatusCode != 401 {
		t.Fatalf("dial with an ended session: %v %v", resp, err)
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// Logging out with a made-up cookie appends nothing: anyone can send one,
// and it must not grow the log.
func TestLogoutOfUnknownSessionAppendsNothing(t *testing.T) {
	h := testhub.Start(t, testhub.Options{})
	h.Setup("root", "correct horse")
	before := h.Rooms().Log.Applied()
	for i := range 5 {
		c := testhub.NewClient(t, h.URL())
		r := c.DoWith("DELETE", "/api/v1/sessions", nil, map[string]string{"Cookie": "wh_session=whs_made-up-" + string(rune('a'+i))})
		if r.Status != 204 {
			t.Fatalf("status %d: %s", r.Status, r.Raw)
		}
	}
	if after := h.Rooms().Log.Applied(); after != before {
		t.Fatalf("the log grew from %d to %d", before, after)
	}
}
