package web_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/wheelhouse-dev/wheelhouse/authz"
	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
)

// stopped is a hub clock that stands still: a bucket never refills during
// a test, however slow the machine.
type stopped struct {
	mu sync.Mutex
	t  time.Time
}

func (c *stopped) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func want429(t *testing.T, r testhub.Response, reason, what string) {
	t.Helper()
	if r.Status != http.StatusTooManyRequests || r.ErrReason() != reason {
		t.Fatalf("%s: status %d reason %q, want 429 %s: %s", what, r.Status, r.ErrReason(), reason, r.Raw)
	}
	sec, err := strconv.Atoi(r.Header.Get("Retry-After"))
	if err != nil || sec < 1 {
		t.Fatalf("%s: Retry-After %q", what, r.Header.Get("Retry-After"))
	}
	if e := r.Body["error"].(map[string]any); e["retryAfter"] != float64(sec) {
		t.Fatalf("%s: body retryAfter %v, header %d", what, e["retryAfter"], sec)
	}
}

// dialEvents opens the events socket with c's session; it returns the
// upgrade's HTTP answer when the hub refuses.
func dialEvents(t *testing.T, c *testhub.Client) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	ws, resp, err := websocket.Dial(context.Background(), strings.Replace(c.Base, "http", "ws", 1)+"/api/v1/events", &websocket.DialOptions{HTTPClient: c.HTTP})
	if err == nil {
		t.Cleanup(func() { ws.CloseNow() })
	}
	return ws, resp, err
}

// One member's posts, reactions, rooms, uploads and sockets are bounded
// per person, cluster-wide, with 429 and Retry-After; others are not
// touched; an admin changes the limits; /metrics counts the refusals.
func TestPersonLimits(t *testing.T) {
	ns := testhub.StartNATS(t)
	clk := &stopped{t: time.Now()}
	lim := authz.Budgets{Posts: authz.Rate{N: 6, Per: time.Hour}, Rooms: authz.Rate{N: 2, Per: time.Hour},
		Uploads: authz.Rate{N: 2, Per: time.Hour}, Sockets: 3}
	opts := testhub.Options{NATS: ns, Now: clk.now, Budgets: &lim, MetricsAddr: "127.0.0.1:0"}
	tm := newTeam(t, opts)
	b := testhub.Start(t, testhub.Options{NATS: ns, Now: clk.now, Budgets: &lim})
	mallory := apiClient(t, tm.h.AddUser(tm.root, "mallory"))
	mallory.Must(200, "POST", "/api/v1/rooms/dev/members", nil)

	t.Run("PostsAndReactionsShareABucket", func(t *testing.T) {
		var first int64
		for i := range 5 {
			m := post(t, mallory, "dev", map[string]any{"text": fmt.Sprintf("flood %d", i)})
			if i == 0 {
				first = id(m)
			}
		}
		mallory.Must(200, "PUT", fmt.Sprintf("/api/v1/rooms/dev/messages/%d/reactions/+1", first), nil)
		want429(t, mallory.Do("POST", "/api/v1/rooms/dev/messages", map[string]any{"text": "one too many"}), "limit-posts", "the 7th post")
		want429(t, mallory.Do("DELETE", fmt.Sprintf("/api/v1/rooms/dev/messages/%d/reactions/+1", first), nil), "limit-posts", "a reaction over the limit")
		want429(t, mallory.Do("PATCH", fmt.Sprintf("/api/v1/rooms/dev/messages/%d", first), map[string]any{"text": "edited"}), "limit-posts", "an edit over the limit")
		ms := messages(t, mallory, "dev", "")
		if n := len(ms); n != 5 {
			t.Fatalf("%d messages in #dev, want mallory's 5: a refused post was stored", n)
		}
	})
	t.Run("OverTheEventsSocketToo", func(t *testing.T) {
		st := mallory.Events(0, false)
		st.Ready()
		r := st.Request(map[string]any{"type": "post", "req": "p1", "room": "dev", "text": "over the socket"})
		if r.Status != 429 || r.Error == nil || r.Error.Reason != "limit-posts" || r.Error.RetryAfter < 1 {
			t.Fatalf("socket post: %+v %+v", r, r.Error)
		}
		st.Close()
	})
	t.Run("OthersPostAsUsual", func(t *testing.T) {
		post(t, tm.bob, "dev", map[string]any{"text": "bob is not throttled"})
	})
	t.Run("SharedByEveryNode", func(t *testing.T) {
		mb := onNode(t, b, mallory)
		want429(t, mb.Do("POST", "/api/v1/rooms/dev/messages", map[string]any{"text": "on node B"}), "limit-posts", "mallory on the other node")
	})
	t.Run("Rooms", func(t *testing.T) {
		for i := range 2 {
			mallory.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": fmt.Sprintf("m%d", i)})
		}
		want429(t, mallory.Do("POST", "/api/v1/rooms", map[string]any{"name": "m2"}), "limit-rooms", "the 3rd room")
		tm.bob.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "bobs"})
	})
	t.Run("Uploads", func(t *testing.T) {
		for range 2 {
			if r := upload(t, mallory, "dev", "a.txt", []byte("hello"), "text/plain"); r.Status != 201 {
				t.Fatalf("upload: %d %s", r.Status, r.Raw)
			}
		}
		want429(t, upload(t, mallory, "dev", "a.txt", []byte("hello"), "text/plain"), "limit-uploads", "the 3rd upload")
	})
	t.Run("Sockets", func(t *testing.T) {
		var open []*websocket.Conn
		for range 3 {
			ws, _, err := dialEvents(t, mallory)
			if err != nil {
				t.Fatal(err)
			}
			open = append(open, ws)
		}
		_, resp, err := dialEvents(t, mallory)
		if err == nil || resp == nil || resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("a 4th socket: err %v resp %+v", err, resp)
		}
		mb := onNode(t, b, mallory)
		if _, resp, err := dialEvents(t, mb); err == nil || resp.StatusCode != 429 {
			t.Fatalf("a 4th socket on node B: err %v", err)
		}
		if _, _, err := dialEvents(t, tm.bob); err != nil {
			t.Fatalf("bob's socket: %v", err)
		}
		open[0].Close(websocket.StatusNormalClosure, "")
		testhub.CheckFor(t, 20*time.Second, "a socket once one is closed", func() error {
			ws, _, err := dialEvents(t, mallory)
			if err == nil {
				ws.CloseNow()
			}
			return err
		})
	})
	t.Run("AdminsChangeThem", func(t *testing.T) {
		mallory.Must(403, "PUT", "/api/v1/settings", map[string]any{"limits": map[string]any{"posts": "off"}})
		tm.root.Must(400, "PUT", "/api/v1/settings", map[string]any{"limits": map[string]any{"posts": "lots"}})
		tm.root.Must(400, "PUT", "/api/v1/settings", map[string]any{"limits": map[string]any{"sockets": 5000}})
		set := tm.root.Must(200, "PUT", "/api/v1/settings", map[string]any{"limits": map[string]any{"posts": "100/1h"}}).Body["settings"].(map[string]any)
		if set["limits"].(map[string]any)["posts"] != "100/1h" {
			t.Fatalf("settings %v", set)
		}
		got := tm.root.Must(200, "GET", "/api/v1/settings", nil).Body
		pl := got["personLimits"].(map[string]any)
		if pl["posts"] != "100/1h" || pl["rooms"] != "2/1h" || pl["sockets"] != float64(3) {
			t.Fatalf("personLimits %v", pl)
		}
		testhub.CheckFor(t, 20*time.Second, "mallory posting under the new limit", func() error {
			if r := mallory.Do("POST", "/api/v1/rooms/dev/messages", map[string]any{"text": "allowed again"}); r.Status != 201 {
				return fmt.Errorf("%d %s", r.Status, r.Raw)
			}
			return nil
		})
		// Default rooms left out keep theirs; limits left out keep theirs.
		tm.root.Must(200, "PUT", "/api/v1/settings", map[string]any{"defaultRooms": []string{"dev"}})
		if pl := tm.root.Must(200, "GET", "/api/v1/settings", nil).Body["personLimits"].(map[string]any); pl["posts"] != "100/1h" {
			t.Fatalf("a default-rooms change reset the limits: %v", pl)
		}
	})
	t.Run("MetricsCountRefusals", func(t *testing.T) {
		m := tm.h.Metrics()
		for _, k := range []string{"posts", "rooms", "uploads", "sockets"} {
			line := fmt.Sprintf(`wheelhouse_limit_refusals_total{limit=%q} `, k)
			i := strings.Index(m, line)
			if i < 0 || strings.HasPrefix(m[i+len(line):], "0\n") {
				t.Errorf("no refusals of %s counted:\n%s", k, grepLines(m, "limit_refusals"))
			}
		}
	})
}

// onNode is c's session on another hub node (cookies go by host, not port).
func onNode(t *testing.T, h *testhub.Hub, c *testhub.Client) *testhub.Client {
	o := testhub.NewClient(t, h.URL())
	o.HTTP.Jar = c.HTTP.Jar
	return o
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// One member floods with posts (at the default limits) while another
// reads: the reader's latency during the flood, against idle, is the
// figure docs/operations.md reports. No bound is asserted: the machine may
// be loaded.
func TestFloodLeavesOthersResponsive(t *testing.T) {
	tm := newTeam(t, testhub.Options{})
	mallory := tm.h.AddUser(tm.root, "mallory")
	mallory.Must(200, "POST", "/api/v1/rooms/dev/members", nil)
	tm.bob.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "quiet"})
	for i := range 20 {
		post(t, tm.bob, "quiet", map[string]any{"text": fmt.Sprintf("history %d", i)})
	}
	read := func(n int) []time.Duration {
		var ds []time.Duration
		for range n {
			t0 := time.Now()
			tm.bob.Must(200, "GET", "/api/v1/rooms/quiet/messages?limit=50", nil)
			ds = append(ds, time.Since(t0))
		}
		slices.Sort(ds)
		return ds
	}
	idle := read(40)
	text := strings.Repeat("x", 16<<10-64)
	var ok, refused atomic.Int64
	stop := make(chan struct{})
	start := time.Now()
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				switch r := mallory.Do("POST", "/api/v1/rooms/dev/messages", map[string]any{"text": text}); r.Status {
				case 201:
					ok.Add(1)
				case 429:
					refused.Add(1)
				default:
					t.Errorf("flood post: %d %s", r.Status, r.Raw)
					return
				}
			}
		}()
	}
	accepting := read(40) // while the flood's first posts are being stored
	testhub.WaitFor(t, 60*time.Second, "the flood to meet the limit", func() bool { return refused.Load() > 0 })
	during := read(40) // while it is refused
	close(stop)
	wg.Wait()
	elapsed := time.Since(start)
	med := func(ds []time.Duration) time.Duration { return ds[len(ds)/2] }
	t.Logf("FIGURE others' read latency during one member's flood: median %v idle; %v while the flood's posts were stored (ratio %.1f, max %v); %v once it was refused (ratio %.1f, max %v); flood: %d posts stored, %d refused with 429",
		med(idle), med(accepting), float64(med(accepting))/float64(med(idle)), accepting[len(accepting)-1],
		med(during), float64(med(during))/float64(med(idle)), during[len(during)-1], ok.Load(), refused.Load())
	// 1000 at once, then one every 3.6 s.
	if n, most := ok.Load(), int64(1000+elapsed/(3600*time.Millisecond)+1); n > most {
		t.Fatalf("%d flood posts stored in %v, more than the default 1000 an hour allow (%d)", n, elapsed, most)
	}
}
