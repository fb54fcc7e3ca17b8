package hub_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
)

func TestWebSocketFanout(t *testing.T) {
	h := testhub.Start(t, testhub.Options{})
	admin := h.Setup("root", "correct horse")
	admin.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "busy"})

	const clients, posters, perPoster = 20, 4, 10
	var cs []*testhub.Client
	var streams []*testhub.Stream
	for i := 0; i < clients; i++ {
		c := h.AddUser(admin, fmt.Sprintf("u%02d", i))
		c.Must(200, "POST", "/api/v1/rooms/busy/members", nil)
		cs = append(cs, c)
	}
	for _, c := range cs {
		s := c.Events(0, false)
		s.Ready()
		streams = append(streams, s)
	}
	var wg sync.WaitGroup
	for p := 0; p < posters; p++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			for i := 0; i < perPoster; i++ {
				cs[p].Post("busy", fmt.Sprintf("p%d-%d", p, i))
			}
		}(p)
	}
	wg.Wait()
	want := posters * perPoster
	var first string
	for i, s := range streams {
		got := s.WaitType("message", want, 20*time.Second)
		if len(got) != want {
			t.Fatalf("client %d: %d messages, want exactly %d", i, len(got), want)
		}
		var ids []string
		seen := map[uint64]bool{}
		for _, e := range got {
			if seen[e.ID] {
				t.Fatalf("client %d: duplicate %d", i, e.ID)
			}
			seen[e.ID] = true
			ids = append(ids, fmt.Sprint(e.ID))
		}
		order := strings.Join(ids, ",")
		if i == 0 {
			first = order
		} else if order != first {
			t.Fatalf("client %d saw another order:\n%s\nvs\n%s", i, order, first)
		}
	}
}

func TestWebSocketResume(t *testing.T) {
	h := testhub.Start(t, testhub.Options{})
	admin := h.Setup("root", "correct horse")
	admin.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "r"})
	bob := h.AddUser(admin, "bob")
	bob.Must(200, "POST", "/api/v1/rooms/r/members", nil)

	s := bob.Events(0, false)
	s.Ready()
	for i := 0; i < 5; i++ {
		admin.Post("r", fmt.Sprintf("before %d", i))
	}
	got := s.WaitType("message", 5, 10*time.Second)
	last := got[len(got)-1].ID
	s.Close() // forced disconnect
	for i := 0; i < 5; i++ {
		admin.Post("r", fmt.Sprintf("while away %d", i))
	}
	s2 := bob.Events(last, false)
	s2.Ready()
	admin.Post("r", "after")
	msgs := s2.WaitType("message", 6, 10*time.Second)
	seen := map[uint64]bool{}
	prev := last
	for _, e := range msgs {
		if e.ID <= last || seen[e.ID] || e.ID <= prev {
			t.Fatalf("gap/duplicate/order problem at %d (last %d, prev %d)", e.ID, last, prev)
		}
		seen[e.ID] = true
		prev = e.ID
	}
	if len(msgs) != 6 {
		t.Fatalf("got %d messages after resume, want 6", len(msgs))
	}
}

func TestWebSocketMembershipScope(t *testing.T) {
	h := testhub.Start(t, testhub.Options{})
	admin := h.Setup("root", "correct horse")
	admin.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "inner", "private": true})
	eve := h.AddUser(admin, "eve")
	s := eve.Events(0, false)
	s.Ready()
	admin.Post("inner", "not for eve")
	admin.Must(200, "POST", "/api/v1/rooms/inner/members", map[string]string{"user": "eve"})
	admin.Post("inner", "for eve")
	got := s.WaitType("message", 1, 10*time.Second)
	if len(got) != 1 || !strings.Contains(string(got[0].Data), "for eve") || strings.Contains(string(got[0].Data), "not for eve") {
		t.Fatalf("eve got %v", got)
	}
	s.WaitType("member.added", 1, 5*time.Second)
	admin.Must(204, "DELETE", "/api/v1/rooms/inner/members/eve", nil)
	s.WaitType("member.removed", 1, 5*time.Second)
	admin.Post("inner", "after eve left")
	admin.Must(200, "POST", "/api/v1/dms", map[string]string{"with": "eve"})
	admin.Post("dm:eve:root", "dm marker")
	testhub.WaitFor(t, 10*time.Second, "dm marker", func() bool {
		for _, e := range s.Events() {
			if strings.Contains(string(e.Data), "dm marker") {
				return true
			}
		}
		return false
	})
	for _, e := range s.Events() {
		if strings.Contains(string(e.Data), "after eve left") {
			t.Fatal("a removed member still receives the room's messages")
		}
	}
}

func TestWebSocketSlowClientDropped(t *testing.T) {
	h := testhub.Start(t, testhub.Options{WSQueue: 16, MetricsAddr: "127.0.0.1:0"})
	admin := h.Setup("root", "correct horse")
	admin.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "flood"})
	slowUser := h.AddUser(admin, "slow")
	slowUser.Must(200, "POST", "/api/v1/rooms/flood/members", nil)
	fast := h.AddUser(admin, "fast")
	fast.Must(200, "POST", "/api/v1/rooms/flood/members", nil)

	slow := slowUser.Events(0, true) // never reads
	fs := fast.Events(0, false)
	fs.Ready()
	// Enough bytes to fill the socket buffers and the 16-item queue.
	big := strings.Repeat("y", 15<<10)
	const n = 600
	var wg sync.WaitGroup
	for p := 0; p < 4; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < n/4; i++ {
				admin.Post("flood", big)
			}
		}()
	}
	wg.Wait()
	if got := fs.WaitType("message", n, 30*time.Second); len(got) != n {
		t.Fatalf("fast client got %d of %d", len(got), n)
	}
	// The slow client was closed with a policy-violation status.
	m := h.Metrics()
	if !strings.Contains(m, "wheelhouse_websocket_slow_disconnects_total 1") {
		t.Fatalf("slow client not dropped; metrics:\n%s", grep(m, "websocket"))
	}
	_ = slow
}

func TestWebSocketOriginRefused(t *testing.T) {
	h := testhub.Start(t, testhub.Options{})
	admin := h.Setup("root", "correct horse")
	hd := http.Header{}
	hd.Set("Origin", "https://evil.example")
	ctx := t.Context()
	_, resp, err := websocket.Dial(ctx, strings.Replace(h.URL(), "http", "ws", 1)+"/api/v1/events", &websocket.DialOptions{HTTPClient: admin.HTTP, HTTPHeader: hd})
	if err == nil {
		t.Fatal("a foreign origin was accepted")
	}
	if resp == nil || resp.StatusCode != 403 {
		t.Fatalf("want 403, got %v", resp)
	}
}

func grep(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
