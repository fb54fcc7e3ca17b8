package main

import (
	"strings"
	"testing"

	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
)

// TestUp runs `wheelhouse up` as a newcomer would and mentions the demo
// agent it set up.
func TestUp(t *testing.T) {
	data := t.TempDir()
	p := startProc(t, nil, "up", "--data", data, "--http", "127.0.0.1:0")
	url := p.expect(t, `^Wheelhouse is running: (\S+)`)[1]
	pw := p.expect(t, `^Log in as "admin" with password (\S+)`)[1]
	admin := testhub.NewClient(t, url)
	admin.Must(201, "POST", "/api/v1/sessions", map[string]string{"name": "admin", "password": pw})
	r := admin.Must(201, "POST", "/api/v1/rooms/general/messages", map[string]string{"text": "@admin/demo list the files"})
	rs := testhub.AsList(r.Body["receipts"])
	if len(rs) != 1 || (rs[0]["status"] != "started" && rs[0]["status"] != "pending") {
		t.Fatalf("receipts %v", rs)
	}
	page := admin.Must(200, "GET", "/", nil)
	if !strings.Contains(string(page.Raw), "<title>") {
		t.Fatal("no UI at /")
	}
}
