package web_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
)

// team is a hub with root (the admin), alice and bob, each a client whose
// answers are checked against the OpenAPI description; #dev is public with
// all three, #secret is root's private room.
type team struct {
	h                *testhub.Hub
	root, alice, bob *testhub.Client
}

func newTeam(t *testing.T, o testhub.Options) *team {
	t.Helper()
	h := testhub.Start(t, o)
	root := apiClient(t, h.Setup("root", "correct horse"))
	tm := &team{h: h, root: root, alice: apiClient(t, h.AddUser(root, "alice")), bob: apiClient(t, h.AddUser(root, "bob"))}
	root.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "dev"})
	tm.alice.Must(200, "POST", "/api/v1/rooms/dev/members", nil)
	tm.bob.Must(200, "POST", "/api/v1/rooms/dev/members", nil)
	root.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "secret", "private": true})
	return tm
}

func post(t *testing.T, c *testhub.Client, room string, body map[string]any) map[string]any {
	t.Helper()
	return c.Must(201, "POST", "/api/v1/rooms/"+room+"/messages", body).Body["message"].(map[string]any)
}

func id(m map[string]any) int64 { return int64(m["id"].(float64)) }

func messages(t *testing.T, c *testhub.Client, room, query string) []map[string]any {
	t.Helper()
	return testhub.AsList(c.Must(200, "GET", "/api/v1/rooms/"+room+"/messages?"+query, nil).Body["messages"])
}

func ids(ms []map[string]any) []int64 {
	var out []int64
	for _, m := range ms {
		out = append(out, id(m))
	}
	return out
}

func TestThreads(t *testing.T) {
	tm := newTeam(t, testhub.Options{})
	live := tm.bob.Events(0, false)
	live.Ready()
	root := post(t, tm.alice, "dev", map[string]any{"text": "shall we ship?"})
	reply := post(t, tm.bob, "dev", map[string]any{"text": "yes", "thread": id(root)})
	if reply["thread"] != root["id"] {
		t.Fatalf("reply thread = %v, want %v", reply["thread"], root["id"])
	}
	t.Run("ReplyToAReplyJoinsItsThread", func(t *testing.T) {
		r := post(t, tm.alice, "dev", map[string]any{"text": "ok", "thread": id(reply)})
		if r["thread"] != root["id"] {
			t.Fatalf("thread = %v", r["thread"])
		}
	})
	t.Run("ChannelHasRootsWithSummary", func(t *testing.T) {
		ms := messages(t, tm.bob, "dev", "")
		if len(ms) != 1 || id(ms[0]) != id(root) {
			t.Fatalf("channel = %v", ids(ms))
		}
		rs := ms[0]["replies"].(map[string]any)
		if rs["count"] != 2.0 || rs["lastAuthor"] != "alice" {
			t.Fatalf("summary = %v", rs)
		}
	})
	t.Run("Thread", func(t *testing.T) {
		r := tm.bob.Must(200, "GET", fmt.Sprintf("/api/v1/rooms/dev/messages?thread=%d", id(root)), nil)
		if id(r.Body["root"].(map[string]any)) != id(root) || len(testhub.AsList(r.Body["messages"])) != 2 {
			t.Fatalf("thread = %s", r.Raw)
		}
	})
	t.Run("IncludeReplies", func(t *testing.T) {
		if ms := messages(t, tm.bob, "dev", "include=replies"); len(ms) != 3 {
			t.Fatalf("everything = %v", ids(ms))
		}
	})
	t.Run("Around", func(t *testing.T) {
		ms := messages(t, tm.bob, "dev", fmt.Sprintf("include=replies&around=%d&limit=2", id(reply)))
		if len(ms) != 2 || id(ms[1]) != id(reply) {
			t.Fatalf("around = %v", ids(ms))
		}
	})
	t.Run("LiveThreadSummary", func(t *testing.T) {
		evs := live.WaitType("thread", 2, 10*time.Second)
		var d struct {
			Root    int64 `json:"root"`
			Replies struct {
				Count int `json:"count"`
			} `json:"replies"`
		}
		json.Unmarshal(evs[len(evs)-1].Data, &d)
		if d.Root != id(root) || d.Replies.Count != 2 {
			t.Fatalf("thread event %s", evs[len(evs)-1].Data)
		}
	})
	t.Run("ErrNoSuchRoot", func(t *testing.T) {
		tm.bob.Must(404, "POST", "/api/v1/rooms/dev/messages", map[string]any{"text": "x", "thread": 999999})
	})
	t.Run("ErrRootInAnotherRoom", func(t *testing.T) {
		tm.root.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "ops"})
		tm.root.Must(404, "POST", "/api/v1/rooms/ops/messages", map[string]any{"text": "x", "thread": id(root)})
	})
	t.Run("ErrBadQuery", func(t *testing.T) {
		tm.bob.Must(400, "GET", "/api/v1/rooms/dev/messages?thread=-1", nil)
		tm.bob.Must(400, "GET", "/api/v1/rooms/dev/messages?include=all", nil)
		tm.bob.Must(400, "GET", fmt.Sprintf("/api/v1/rooms/dev/messages?thread=%d", id(reply)), nil) // a reply is not a root
	})
	t.Run("ReplyOverTheSocket", func(t *testing.T) {
		// The same post over the events socket: its reply frames, a
		// success and an error, are checked against the description below.
		rep := live.Request(map[string]any{"type": "post", "req": "s1", "room": "dev", "text": "from the socket", "thread": id(root)})
		if rep.Status != 201 {
			t.Fatalf("reply %+v", rep)
		}
		if rep = live.Request(map[string]any{"type": "post", "req": "s2", "room": "dev", "text": "x", "thread": -1}); rep.Status != 400 || rep.Error == nil {
			t.Fatalf("reply %+v", rep)
		}
	})
	t.Run("ErrNonMembers", func(t *testing.T) {
		tm.alice.Must(404, "GET", "/api/v1/rooms/secret/messages?thread=1", nil)
		tm.root.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "closed"})
		r := tm.alice.Must(403, "GET", fmt.Sprintf("/api/v1/rooms/closed/messages?thread=%d", id(root)), nil)
		if r.ErrReason() != "not-a-member" {
			t.Fatal(r.ErrReason())
		}
	})
	checkEvents(t, live)
}

// upload posts a multipart upload and returns the answer.
func upload(t *testing.T, c *testhub.Client, room, name string, data []byte, clientType string) testhub.Response {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	hdr := make(map[string][]string)
	hdr["Content-Disposition"] = []string{fmt.Sprintf(`form-data; name="file"; filename=%q`, name)}
	hdr["Content-Type"] = []string{clientType}
	w, _ := mw.CreatePart(hdr)
	w.Write(data)
	mw.Close()
	return c.DoWith("POST", "/api/v1/rooms/"+room+"/files", buf.Bytes(), map[string]string{"Content-Type": mw.FormDataContentType()})
}

// download fetches a file's URL.
func download(t *testing.T, c *testhub.Client, u string) (*http.Response, []byte) {
	t.Helper()
	resp, err := c.HTTP.Get(c.Base + u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

var pngBytes = append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), bytes.Repeat([]byte{0}, 64)...)

func TestUploads(t *testing.T) {
	tm := newTeam(t, testhub.Options{FileMaxBytes: 4 << 10, FileQuota: 10 << 10})
	t.Run("MultipartTypeIsSniffed", func(t *testing.T) {
		r := upload(t, tm.alice, "dev", "../../shot.png", pngBytes, "text/html")
		if r.Status != 201 {
			t.Fatalf("%d %s", r.Status, r.Raw)
		}
		f := r.Body["file"].(map[string]any)
		if f["type"] != "image/png" || f["name"] != "shot.png" || f["size"] != float64(len(pngBytes)) {
			t.Fatalf("file %v", f)
		}
		resp, b := download(t, tm.alice, f["url"].(string))
		if resp.StatusCode != 200 || !bytes.Equal(b, pngBytes) || resp.Header.Get("Content-Type") != "image/png" ||
			resp.Header.Get("X-Content-Type-Options") != "nosniff" || !strings.HasPrefix(resp.Header.Get("Content-Disposition"), "inline") {
			t.Fatalf("download %d %v", resp.StatusCode, resp.Header)
		}
	})
	var text map[string]any
	t.Run("RawBodyWithName", func(t *testing.T) {
		r := tm.alice.DoWith("POST", "/api/v1/rooms/dev/files?name="+url.QueryEscape("notes ü.html"), []byte("<html><script>alert(1)</script>"), map[string]string{"Content-Type": "image/png"})
		if r.Status != 201 {
			t.Fatalf("%d %s", r.Status, r.Raw)
		}
		text = r.Body["file"].(map[string]any)
		if !strings.HasPrefix(text["type"].(string), "text/html") {
			t.Fatalf("type %v", text["type"])
		}
		resp, _ := download(t, tm.alice, text["url"].(string))
		if cd := resp.Header.Get("Content-Disposition"); !strings.HasPrefix(cd, "attachment;") || !strings.Contains(cd, "filename*=utf-8''notes%20%C3%BC.html") {
			t.Fatalf("disposition %q", cd)
		}
		if !strings.Contains(resp.Header.Get("Content-Security-Policy"), "sandbox") {
			t.Fatalf("csp %q", resp.Header.Get("Content-Security-Policy"))
		}
	})
	t.Run("UnpostedIsTheUploadersOnly", func(t *testing.T) {
		if resp, _ := download(t, tm.bob, text["url"].(string)); resp.StatusCode != 404 {
			t.Fatalf("bob got an unposted upload: %d", resp.StatusCode)
		}
	})
	var msg map[string]any
	t.Run("PostedFileReachesMembers", func(t *testing.T) {
		msg = post(t, tm.alice, "dev", map[string]any{"text": "", "files": []string{text["id"].(string)}})
		fs := testhub.AsList(msg["files"])
		if len(fs) != 1 || fs[0]["id"] != text["id"] || fs[0]["name"] != "notes ü.html" {
			t.Fatalf("files %v", msg["files"])
		}
		if resp, _ := download(t, tm.bob, text["url"].(string)); resp.StatusCode != 200 {
			t.Fatalf("bob: %d", resp.StatusCode)
		}
	})
	t.Run("ErrPostedTwice", func(t *testing.T) {
		tm.alice.Must(409, "POST", "/api/v1/rooms/dev/messages", map[string]any{"text": "again", "files": []string{text["id"].(string)}})
	})
	t.Run("ErrSomeoneElsesFile", func(t *testing.T) {
		f := upload(t, tm.alice, "dev", "a.txt", []byte("hello"), "text/plain").Body["file"].(map[string]any)
		tm.bob.Must(403, "POST", "/api/v1/rooms/dev/messages", map[string]any{"text": "mine", "files": []string{f["id"].(string)}})
		tm.alice.Must(400, "POST", "/api/v1/rooms/dev/messages", map[string]any{"text": "x", "files": []string{"nope"}})
	})
	t.Run("ErrFileOfAnotherRoom", func(t *testing.T) {
		f := upload(t, tm.root, "secret", "s.txt", []byte("secret"), "text/plain").Body["file"].(map[string]any)
		tm.root.Must(400, "POST", "/api/v1/rooms/dev/messages", map[string]any{"text": "x", "files": []string{f["id"].(string)}})
		post(t, tm.root, "secret", map[string]any{"text": "s", "files": []string{f["id"].(string)}})
		if resp, _ := download(t, tm.alice, f["url"].(string)); resp.StatusCode != 404 {
			t.Fatalf("a private room's file reached a non-member: %d", resp.StatusCode)
		}
		if resp, _ := download(t, tm.alice, strings.Replace(f["url"].(string), "/secret/", "/dev/", 1)); resp.StatusCode != 404 {
			t.Fatalf("a private room's file read through another room: %d", resp.StatusCode)
		}
	})
	t.Run("ErrNonMember", func(t *testing.T) {
		tm.root.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "closed"})
		if r := upload(t, tm.alice, "closed", "x.txt", []byte("x"), "text/plain"); r.Status != 403 {
			t.Fatalf("%d", r.Status)
		}
		if r := upload(t, tm.alice, "secret", "x.txt", []byte("x"), "text/plain"); r.Status != 404 {
			t.Fatalf("%d", r.Status)
		}
	})
	t.Run("ErrNoName", func(t *testing.T) {
		tm.alice.Must(400, "POST", "/api/v1/rooms/dev/files", []byte("x"))
	})
	t.Run("ErrTooLarge", func(t *testing.T) {
		for _, r := range []testhub.Response{
			upload(t, tm.alice, "dev", "big.bin", bytes.Repeat([]byte("x"), 5<<10), "application/octet-stream"),
			tm.alice.DoWith("POST", "/api/v1/rooms/dev/files?name=big.bin", bytes.Repeat([]byte("x"), 5<<10), nil),
		} {
			if r.Status != 413 || r.ErrReason() != "file-too-large" || !strings.Contains(r.Body["error"].(map[string]any)["message"].(string), "4 KiB") {
				t.Fatalf("%d %s", r.Status, r.Raw)
			}
		}
	})
	t.Run("ErrQuota", func(t *testing.T) {
		var r testhub.Response
		for i := 0; i < 5; i++ {
			if r = upload(t, tm.bob, "dev", "q.bin", bytes.Repeat([]byte("q"), 3<<10), "application/octet-stream"); r.Status != 201 {
				break
			}
		}
		if r.Status != 413 || r.ErrReason() != "quota" {
			t.Fatalf("%d %s", r.Status, r.Raw)
		}
	})
	t.Run("DeletedMessagesFilesAreGone", func(t *testing.T) {
		tm.alice.Must(204, "DELETE", fmt.Sprintf("/api/v1/rooms/dev/messages/%d", id(msg)), nil)
		if resp, _ := download(t, tm.bob, text["url"].(string)); resp.StatusCode != 404 {
			t.Fatalf("%d", resp.StatusCode)
		}
	})
}

func TestEditAndDelete(t *testing.T) {
	tm := newTeam(t, testhub.Options{})
	live := tm.bob.Events(0, false)
	live.Ready()
	m := post(t, tm.alice, "dev", map[string]any{"text": "helo @bob"})
	path := fmt.Sprintf("/api/v1/rooms/dev/messages/%d", id(m))
	t.Run("OK", func(t *testing.T) {
		e := tm.alice.Must(200, "PATCH", path, map[string]any{"text": "hello @bob"}).Body["message"].(map[string]any)
		if e["text"] != "hello @bob" || e["editedAt"] == nil {
			t.Fatalf("edited %v", e)
		}
		ev := live.WaitType("message.updated", 1, 10*time.Second)[0]
		if !strings.Contains(string(ev.Data), `"editedAt"`) {
			t.Fatalf("live %s", ev.Data)
		}
	})
	t.Run("ErrNotTheAuthor", func(t *testing.T) {
		tm.bob.Must(403, "PATCH", path, map[string]any{"text": "mine now"})
		tm.root.Must(403, "PATCH", path, map[string]any{"text": "admins do not edit"})
	})
	t.Run("ErrBadInput", func(t *testing.T) {
		tm.alice.Must(400, "PATCH", path, map[string]any{"text": "  "})
		tm.alice.Must(400, "PATCH", path, map[string]any{})
		tm.alice.Must(413, "PATCH", path, map[string]any{"text": strings.Repeat("x", 17<<10)})
		tm.alice.Must(404, "PATCH", "/api/v1/rooms/dev/messages/abc", map[string]any{"text": "x"})
		tm.alice.Must(404, "PATCH", "/api/v1/rooms/dev/messages/99999", map[string]any{"text": "x"})
	})
	t.Run("ErrMemberDeletesOthers", func(t *testing.T) {
		tm.bob.Must(403, "DELETE", path, nil)
	})
	t.Run("AuthorDeletes", func(t *testing.T) {
		tm.alice.Must(204, "DELETE", path, nil)
		tm.alice.Must(204, "DELETE", path, nil) // again: nothing to do
		d := tm.bob.Must(200, "GET", path, nil).Body["message"].(map[string]any)
		if d["deleted"] != true || d["text"] != "" || d["deletedBy"] != "alice" || len(d["mentions"].([]any)) != 0 {
			t.Fatalf("tombstone %v", d)
		}
		tm.alice.Must(409, "PATCH", path, map[string]any{"text": "back"})
	})
	t.Run("RoomAdminDeletesAny", func(t *testing.T) {
		b := post(t, tm.bob, "dev", map[string]any{"text": "spam"})
		tm.root.Must(204, "DELETE", fmt.Sprintf("/api/v1/rooms/dev/messages/%d", id(b)), nil)
	})
	t.Run("DeletedReplyLeavesTheCount", func(t *testing.T) {
		root := post(t, tm.alice, "dev", map[string]any{"text": "root"})
		r := post(t, tm.bob, "dev", map[string]any{"text": "reply", "thread": id(root)})
		tm.bob.Must(204, "DELETE", fmt.Sprintf("/api/v1/rooms/dev/messages/%d", id(r)), nil)
		got := tm.bob.Must(200, "GET", fmt.Sprintf("/api/v1/rooms/dev/messages/%d", id(root)), nil).Body["message"].(map[string]any)
		if got["replies"] != nil {
			t.Fatalf("replies %v", got["replies"])
		}
	})
	checkEvents(t, live)
}

func TestReactions(t *testing.T) {
	tm := newTeam(t, testhub.Options{})
	live := tm.alice.Events(0, false)
	live.Ready()
	m := post(t, tm.alice, "dev", map[string]any{"text": "shipped"})
	base := fmt.Sprintf("/api/v1/rooms/dev/messages/%d/reactions/", id(m))
	thumbs := url.PathEscape("👍🏽")
	t.Run("OK", func(t *testing.T) {
		tm.bob.Must(200, "PUT", base+thumbs, nil)
		tm.bob.Must(200, "PUT", base+thumbs, nil) // idempotent
		rs := testhub.AsList(tm.alice.Must(200, "PUT", base+thumbs, nil).Body["reactions"])
		if len(rs) != 1 || rs[0]["count"] != 2.0 || rs[0]["emoji"] != "👍🏽" {
			t.Fatalf("reactions %v", rs)
		}
		tm.alice.Must(200, "PUT", base+url.PathEscape(":shipit:"), nil)
		rs = testhub.AsList(tm.bob.Must(200, "DELETE", base+thumbs, nil).Body["reactions"])
		if len(rs) != 2 || rs[0]["count"] != 1.0 {
			t.Fatalf("after delete %v", rs)
		}
		live.WaitType("reactions", 4, 10*time.Second)
	})
	t.Run("ErrBadEmoji", func(t *testing.T) {
		for _, e := range []string{"a b", "x\u0007", strings.Repeat("x", 17), "\u202e", "a\u200bb"} {
			r := tm.bob.Do("PUT", base+url.PathEscape(e), nil)
			if r.Status != 400 && r.Status != 404 {
				t.Fatalf("%q: %d", e, r.Status)
			}
		}
	})
	t.Run("ErrNonMember", func(t *testing.T) {
		tm.root.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "closed"})
		s := post(t, tm.root, "closed", map[string]any{"text": "hi"})
		tm.alice.Must(403, "PUT", fmt.Sprintf("/api/v1/rooms/closed/messages/%d/reactions/x", id(s)), nil)
		tm.alice.Must(404, "PUT", fmt.Sprintf("/api/v1/rooms/dev/messages/%d/reactions/x", id(s)), nil) // not in that room
	})
	t.Run("ErrDeleted", func(t *testing.T) {
		tm.alice.Must(204, "DELETE", fmt.Sprintf("/api/v1/rooms/dev/messages/%d", id(m)), nil)
		tm.bob.Must(409, "PUT", base+"x", nil)
	})
	checkEvents(t, live)
}

func roomOf(t *testing.T, c *testhub.Client, name string) map[string]any {
	t.Helper()
	for _, r := range testhub.AsList(c.Must(200, "GET", "/api/v1/rooms", nil).Body["rooms"]) {
		if r["name"] == name {
			return r
		}
	}
	t.Fatalf("no room %s", name)
	return nil
}

func TestReadMarkers(t *testing.T) {
	tm := newTeam(t, testhub.Options{})
	phone := apiClient(t, tm.h.Login("alice", "pw-alice-secret"))
	laptop, other := tm.alice.Events(0, false), tm.bob.Events(0, false)
	laptop.Ready()
	other.Ready()
	a := post(t, tm.bob, "dev", map[string]any{"text": "one"})
	post(t, tm.bob, "dev", map[string]any{"text": "two @alice"})
	post(t, tm.alice, "dev", map[string]any{"text": "mine does not count"})
	c := post(t, tm.bob, "dev", map[string]any{"text": "three"})
	post(t, tm.bob, "dev", map[string]any{"text": "in a thread @alice", "thread": id(c)})
	r := roomOf(t, phone, "dev")
	if r["unread"] != 3.0 || r["mentions"] != 2.0 || r["notify"] != "mentions" {
		t.Fatalf("before reading %v", r)
	}
	t.Run("OK", func(t *testing.T) {
		st := tm.alice.Must(200, "PUT", "/api/v1/rooms/dev/read", map[string]any{"id": id(a) + 1}).Body["read"].(map[string]any)
		if st["unread"] != 1.0 || st["mentions"] != 1.0 {
			t.Fatalf("read %v", st)
		}
		if r := roomOf(t, phone, "dev"); r["unread"] != 1.0 || r["lastRead"] != float64(id(a)+1) {
			t.Fatalf("the phone sees %v", r)
		}
		ev := laptop.WaitType("read", 1, 10*time.Second)[0]
		if !strings.Contains(string(ev.Data), `"unread":1`) {
			t.Fatalf("read event %s", ev.Data)
		}
	})
	t.Run("NeverBack", func(t *testing.T) {
		st := tm.alice.Must(200, "PUT", "/api/v1/rooms/dev/read", map[string]any{"id": 1}).Body["read"].(map[string]any)
		if st["lastRead"] != float64(id(a)+1) {
			t.Fatalf("moved back: %v", st)
		}
	})
	t.Run("PastTheEndMeansAll", func(t *testing.T) {
		st := tm.alice.Must(200, "PUT", "/api/v1/rooms/dev/read", map[string]any{"id": 1 << 40}).Body["read"].(map[string]any)
		if st["unread"] != 0.0 || st["mentions"] != 0.0 {
			t.Fatalf("read all %v", st)
		}
	})
	t.Run("OnlyTheReaderHearsIt", func(t *testing.T) {
		for _, e := range other.Events() {
			if e.Type == "read" {
				t.Fatalf("bob got alice's read marker: %s", e.Data)
			}
		}
		late := tm.bob.Events(0, false) // the backlog too
		late.Ready()
		for _, e := range late.Events() {
			if e.Type == "read" {
				t.Fatalf("bob's backlog has alice's read marker: %s", e.Data)
			}
		}
	})
	t.Run("ErrBadInput", func(t *testing.T) {
		tm.alice.Must(400, "PUT", "/api/v1/rooms/dev/read", map[string]any{})
		tm.alice.Must(400, "PUT", "/api/v1/rooms/dev/read", map[string]any{"id": -1})
		tm.alice.Must(400, "PUT", "/api/v1/rooms/dev/read", map[string]any{"id": "x"})
		tm.alice.Must(404, "PUT", "/api/v1/rooms/secret/read", map[string]any{"id": 1})
	})
	t.Run("DMCountsAsMentions", func(t *testing.T) {
		dm := tm.bob.Must(200, "POST", "/api/v1/dms", map[string]any{"with": "alice"}).Body["room"].(map[string]any)["name"].(string)
		post(t, tm.bob, dm, map[string]any{"text": "psst"})
		if r := roomOf(t, tm.alice, dm); r["unread"] != 1.0 || r["mentions"] != 1.0 || r["notify"] != "all" {
			t.Fatalf("dm %v", r)
		}
	})
	checkEvents(t, laptop)
}

func TestNotificationLevels(t *testing.T) {
	tm := newTeam(t, testhub.Options{})
	live := tm.alice.Events(0, false)
	live.Ready()
	tm.alice.Must(200, "PUT", "/api/v1/rooms/dev/notifications", map[string]any{"level": "none"})
	if r := roomOf(t, tm.alice, "dev"); r["notify"] != "none" {
		t.Fatalf("notify %v", r["notify"])
	}
	if r := roomOf(t, tm.bob, "dev"); r["notify"] != "mentions" {
		t.Fatalf("bob's level changed: %v", r["notify"])
	}
	live.WaitType("notify", 1, 10*time.Second)
	tm.alice.Must(400, "PUT", "/api/v1/rooms/dev/notifications", map[string]any{"level": "loud"})
	tm.alice.Must(404, "PUT", "/api/v1/rooms/secret/notifications", map[string]any{"level": "all"})
	checkEvents(t, live)
}

func TestDefaultRoomsAndJoining(t *testing.T) {
	tm := newTeam(t, testhub.Options{})
	tm.root.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "general", "topic": "Everyone"})
	t.Run("ErrNotAdmin", func(t *testing.T) {
		tm.alice.Must(403, "PUT", "/api/v1/settings", map[string]any{"defaultRooms": []string{"general"}})
	})
	t.Run("ErrNotAPublicRoom", func(t *testing.T) {
		tm.root.Must(400, "PUT", "/api/v1/settings", map[string]any{"defaultRooms": []string{"secret"}})
		tm.root.Must(400, "PUT", "/api/v1/settings", map[string]any{"defaultRooms": []string{"nowhere"}})
		tm.root.Must(400, "PUT", "/api/v1/settings", map[string]any{})
	})
	t.Run("NewUsersJoin", func(t *testing.T) {
		set := tm.root.Must(200, "PUT", "/api/v1/settings", map[string]any{"defaultRooms": []string{"#general"}}).Body["settings"].(map[string]any)
		if fmt.Sprint(set["defaultRooms"]) != "[general]" {
			t.Fatalf("settings %v", set)
		}
		carol := apiClient(t, tm.h.AddUser(tm.root, "carol"))
		if r := roomOf(t, carol, "general"); r["role"] != "member" {
			t.Fatalf("carol in general: %v", r)
		}
		r := tm.alice.Must(200, "GET", "/api/v1/settings", nil)
		if r.Body["limits"].(map[string]any)["fileBytes"] == nil {
			t.Fatalf("limits %s", r.Raw)
		}
	})
	t.Run("PublicRoomOffersJoin", func(t *testing.T) {
		r := tm.alice.Must(200, "GET", "/api/v1/rooms/general", nil).Body["room"].(map[string]any)
		if r["role"] != nil || r["topic"] != "Everyone" {
			t.Fatalf("room %v", r)
		}
		if r := tm.alice.Must(403, "GET", "/api/v1/rooms/general/messages", nil); !strings.Contains(r.Body["error"].(map[string]any)["message"].(string), "join it first") {
			t.Fatalf("%s", r.Raw)
		}
		tm.alice.Must(404, "GET", "/api/v1/rooms/secret", nil)
		tm.alice.Must(200, "POST", "/api/v1/rooms/general/members", nil)
		if r := tm.alice.Must(200, "GET", "/api/v1/rooms/general", nil).Body["room"].(map[string]any); r["role"] != "member" {
			t.Fatalf("joined %v", r)
		}
	})
}

func TestSearch(t *testing.T) {
	tm := newTeam(t, testhub.Options{})
	search := func(c *testhub.Client, q string) []map[string]any {
		t.Helper()
		return testhub.AsList(c.Must(200, "GET", "/api/v1/search?"+q, nil).Body["results"])
	}
	first := post(t, tm.alice, "dev", map[string]any{"text": "the deploy of feature/owner-device failed"})
	post(t, tm.bob, "dev", map[string]any{"text": "deployment retried <script>alert(1)</script> deploy"})
	post(t, tm.root, "secret", map[string]any{"text": "secret deploy plan"})
	post(t, tm.bob, "dev", map[string]any{"text": "unrelated"})
	t.Run("NewestFirstWithEscapedSnippets", func(t *testing.T) {
		rs := search(tm.alice, "q=deploy")
		if len(rs) != 2 || id(rs[0]["message"].(map[string]any)) < id(rs[1]["message"].(map[string]any)) {
			t.Fatalf("results %v", rs)
		}
		snip := rs[0]["snippet"].(string)
		if !strings.Contains(snip, "<mark>deploy</mark>") || strings.Contains(snip, "<script>") || !strings.Contains(snip, "&lt;script&gt;") {
			t.Fatalf("snippet %q", snip)
		}
	})
	t.Run("ControlCharactersSeparateWords", func(t *testing.T) {
		// A NUL once ended the FTS5 string: a 500.
		if rs := search(tm.alice, "q=feature%00failed"); len(rs) != 1 {
			t.Fatalf("%d results", len(rs))
		}
	})
	t.Run("AMessageCannotMarkItsOwnSnippet", func(t *testing.T) {
		post(t, tm.alice, "dev", map[string]any{"text": "\x02<b>injected</b>\x03 snippetword"})
		rs := search(tm.alice, "q=snippetword")
		if len(rs) != 1 {
			t.Fatalf("%d results", len(rs))
		}
		if snip := rs[0]["snippet"].(string); strings.Count(snip, "<mark>") != 1 || !strings.Contains(snip, "<mark>snippetword</mark>") {
			t.Fatalf("snippet %q", snip)
		}
	})
	t.Run("Prefix", func(t *testing.T) {
		if rs := search(tm.alice, "q=deploy*"); len(rs) != 2 {
			t.Fatalf("%d results", len(rs))
		}
		if rs := search(tm.alice, "q=deploym*"); len(rs) != 1 {
			t.Fatalf("%d results", len(rs))
		}
		// Short prefixes go through FTS5's prefix indexes (2, 3 and 4
		// characters): the same answers.
		for _, q := range []string{"de*", "dep*", "depl*"} {
			if rs := search(tm.alice, "q="+url.QueryEscape(q)); len(rs) != 2 {
				t.Fatalf("%s: %d results", q, len(rs))
			}
		}
	})
	t.Run("Phrase", func(t *testing.T) {
		if rs := search(tm.alice, "q="+url.QueryEscape(`"deploy of feature"`)); len(rs) != 1 || id(rs[0]["message"].(map[string]any)) != id(first) {
			t.Fatalf("%v", rs)
		}
		if rs := search(tm.alice, "q="+url.QueryEscape(`"feature deploy"`)); len(rs) != 0 {
			t.Fatalf("%v", rs)
		}
	})
	t.Run("UserTermsAreNotSyntax", func(t *testing.T) {
		if rs := search(tm.alice, "q="+url.QueryEscape("feature/owner-device")); len(rs) != 1 {
			t.Fatalf("%v", rs)
		}
		for _, q := range []string{`NEAR(deploy failed)`, `deploy OR x`, `"unbalanced`, `body:deploy`, `a AND`} {
			tm.alice.Must(200, "GET", "/api/v1/search?q="+url.QueryEscape(q), nil)
		}
	})
	t.Run("Filters", func(t *testing.T) {
		if rs := search(tm.alice, "q=deploy&from=bob"); len(rs) != 1 {
			t.Fatalf("%v", rs)
		}
		if rs := search(tm.alice, "q=deploy&room=dev&limit=1"); len(rs) != 1 {
			t.Fatalf("%v", rs)
		}
	})
	t.Run("PrivateRoomsNeverLeak", func(t *testing.T) {
		for _, rs := range [][]map[string]any{search(tm.alice, "q=secret"), search(tm.alice, "q=plan")} {
			if len(rs) != 0 {
				t.Fatalf("alice found %v", rs)
			}
		}
		tm.alice.Must(404, "GET", "/api/v1/search?q=plan&room=secret", nil)
		if rs := search(tm.root, "q=plan"); len(rs) != 1 {
			t.Fatalf("root: %v", rs)
		}
	})
	t.Run("LeavingARoomLeavesItsResults", func(t *testing.T) {
		tm.bob.Must(204, "DELETE", "/api/v1/rooms/dev/members/bob", nil)
		if rs := search(tm.bob, "q=deploy"); len(rs) != 0 {
			t.Fatalf("bob still finds %v", rs)
		}
		tm.bob.Must(403, "GET", "/api/v1/search?q=deploy&room=dev", nil)
	})
	t.Run("EditsAndDeletions", func(t *testing.T) {
		m := post(t, tm.alice, "dev", map[string]any{"text": "wrnog spelling"})
		tm.alice.Must(200, "PATCH", fmt.Sprintf("/api/v1/rooms/dev/messages/%d", id(m)), map[string]any{"text": "right spelling"})
		if rs := search(tm.alice, "q=wrnog"); len(rs) != 0 {
			t.Fatalf("old text found: %v", rs)
		}
		if rs := search(tm.alice, "q=right"); len(rs) != 1 {
			t.Fatalf("new text not found: %v", rs)
		}
		tm.alice.Must(204, "DELETE", fmt.Sprintf("/api/v1/rooms/dev/messages/%d", id(m)), nil)
		if rs := search(tm.alice, "q=spelling"); len(rs) != 0 {
			t.Fatalf("deleted found: %v", rs)
		}
	})
	t.Run("ErrBadInput", func(t *testing.T) {
		tm.alice.Must(400, "GET", "/api/v1/search?q=", nil)
		tm.alice.Must(400, "GET", "/api/v1/search?q=*%20%22%22", nil)
		tm.alice.Must(400, "GET", "/api/v1/search?q="+strings.Repeat("a", 300), nil)
		tm.alice.Must(400, "GET", "/api/v1/search?q=x&from="+url.QueryEscape("bad name!"), nil)
		tm.alice.Must(400, "GET", "/api/v1/search?q=x&limit=1000", nil)
		testhub.NewClient(t, tm.h.URL()).Must(401, "GET", "/api/v1/search?q=x", nil)
	})
}
