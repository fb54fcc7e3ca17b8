package hub_test

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/wheelhouse-dev/wheelhouse/authz"
	"github.com/wheelhouse-dev/wheelhouse/bridge"
	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
	"github.com/wheelhouse-dev/wheelhouse/room"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// wordsHub is a hub with alice's demo agent in room dev, her enrolled
// device, and a second connection with her bridge's identity that sees
// every steer the hub sends the bridge (the real bridge answers them).
type wordsHub struct {
	h      *testhub.Hub
	alice  *testhub.Client
	bob    *testhub.Client
	bridge string
	steers *nats.Subscription
}

func startWordsHub(t *testing.T) *wordsHub {
	t.Helper()
	h := testhub.Start(t, testhub.Options{})
	root := h.Setup("root", "correct horse")
	alice := h.AddUser(root, "alice")
	bob := h.AddUser(root, "bob")
	br := h.StartBridge(alice, nil, bridge.AgentConfig{Name: "demo", Harness: "demo", Options: map[string]string{"steps": "1", "step": "10ms"}})
	alice.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "dev"})
	bob.Must(200, "POST", "/api/v1/rooms/dev/members", nil)
	alice.AddAgent("dev", "alice/demo")
	nc, err := br.Creds.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	sub, err := nc.SubscribeSync(wire.ToBridge(br.Creds.BridgeID, wire.KindSteer))
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return &wordsHub{h: h, alice: alice, bob: bob, bridge: br.Creds.BridgeID, steers: sub}
}

// say is the message statement for alice/demo over text in room dev.
func (w *wordsHub) say(text string, mut func(*authz.Statement)) authz.Statement {
	st := authz.Statement{Kind: authz.StatementMessage, Bridge: w.bridge, Agent: "alice/demo", Room: "dev", TextHash: authz.TextHash(text)}
	if mut != nil {
		mut(&st)
	}
	return st
}

// steerOf waits for the steer the hub sends the bridge for message id.
func (w *wordsHub) steerOf(t *testing.T, id int64) wire.Steer {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		m, err := w.steers.NextMsg(time.Until(deadline))
		if err != nil {
			break
		}
		var st wire.Steer
		if err := json.Unmarshal(m.Data, &st); err != nil {
			t.Fatalf("a steer that does not decode: %v: %s", err, m.Data)
		}
		if st.MessageID == id {
			return st
		}
	}
	t.Fatalf("no steer for message %d reached the bridge", id)
	return wire.Steer{}
}

func postedID(t *testing.T, r testhub.Response) int64 {
	t.Helper()
	m, _ := r.Body["message"].(map[string]any)
	id, _ := m["id"].(float64)
	if id == 0 {
		t.Fatalf("no message in %s", r.Raw)
	}
	return int64(id)
}

// The owner's signed words reach the bridge on the steer of the agent they
// name, byte for byte, with the text exactly as typed: no Unicode
// normalization, no line-ending change, no trimming.
func TestOwnerWordsReachTheSteer(t *testing.T) {
	w := startWordsHub(t)
	texts := map[string]string{
		"NFD":             "@alice/demo cafe\u0301 re\u0301sume\u0301",
		"NFC":             "@alice/demo caf\u00e9 r\u00e9sum\u00e9",
		"CRLF":            "@alice/demo line one\r\nline two\r\n",
		"TrailingSpaces":  "@alice/demo look at this   \t ",
		"LeadingNewlines": "\n\n@alice/demo hi\n\n",
		"LoneCR":          "@alice/demo a\rb",
	}
	for name, text := range texts {
		t.Run(name, func(t *testing.T) {
			signed := w.alice.Device.Sign(t, w.say(text, nil))
			r := w.alice.Must(201, "POST", "/api/v1/rooms/dev/messages", map[string]any{"text": text, "signed": []any{signed}})
			id := postedID(t, r)
			st := w.steerOf(t, id)
			if st.Text != text {
				t.Fatalf("the steer's text is %q, want %q byte for byte", st.Text, text)
			}
			if st.Words == nil || *st.Words != *signed {
				t.Fatalf("the steer's words are %+v, want %+v unchanged", st.Words, signed)
			}
			if got := authz.TextHash(st.Text); got != authz.TextHash(text) {
				t.Fatalf("hash %s", got)
			}
			m := w.alice.Must(200, "GET", "/api/v1/rooms/dev/messages/"+strconv.FormatInt(id, 10), nil)
			if got := m.Body["message"].(map[string]any)["text"]; got != text {
				t.Fatalf("the stored text is %q, want %q", got, text)
			}
		})
	}

	t.Run("Unsigned", func(t *testing.T) {
		id := postedID(t, w.alice.Must(201, "POST", "/api/v1/rooms/dev/messages", map[string]any{"text": "@alice/demo unsigned"}))
		if st := w.steerOf(t, id); st.Words != nil {
			t.Fatalf("an unsigned post's steer carries words %+v", st.Words)
		}
	})

	t.Run("WithFilesInThread", func(t *testing.T) {
		root := postedID(t, w.alice.Must(201, "POST", "/api/v1/rooms/dev/messages", map[string]any{"text": "a thread"}))
		var ids []string
		var files []authz.StatementFile
		for i, body := range []string{"first file\n", "second file\n"} {
			name := fmt.Sprintf("notes-%d.txt", i)
			f := w.alice.DoWith("POST", "/api/v1/rooms/dev/files?name="+name, []byte(body), map[string]string{"Content-Type": "text/plain"})
			if f.Status != 201 {
				t.Fatalf("upload: %d %s", f.Status, f.Raw)
			}
			file := f.Body["file"].(map[string]any)
			ids = append(ids, file["id"].(string))
			files = append(files, authz.StatementFile{Name: file["name"].(string), SHA256: authz.FileHash([]byte(body))})
		}
		text := "@alice/demo read these"
		signed := w.alice.Device.Sign(t, w.say(text, func(s *authz.Statement) { s.Thread = strconv.FormatInt(root, 10); s.Files = files }))
		id := postedID(t, w.alice.Must(201, "POST", "/api/v1/rooms/dev/messages", map[string]any{"text": text, "thread": root, "files": ids, "signed": []any{signed}}))
		st := w.steerOf(t, id)
		if st.Words == nil || *st.Words != *signed || st.Thread != root || len(st.Files) != 2 {
			t.Fatalf("steer %+v: want alice's words unchanged, thread %d, two files", st, root)
		}
	})

	t.Run("RetriedWithTheSameKey", func(t *testing.T) {
		text := "@alice/demo once only"
		body := map[string]any{"text": text, "signed": []any{w.alice.Device.Sign(t, w.say(text, nil))}}
		key := map[string]string{"Idempotency-Key": "words-retry-1"}
		first := w.alice.DoWith("POST", "/api/v1/rooms/dev/messages", body, key)
		again := w.alice.DoWith("POST", "/api/v1/rooms/dev/messages", body, key)
		if first.Status != 201 || again.Status != 201 || postedID(t, first) != postedID(t, again) {
			t.Fatalf("a retry answered %d %s after %d %s, want the same message", again.Status, again.Raw, first.Status, first.Raw)
		}
		if st := w.steerOf(t, postedID(t, first)); st.Words == nil {
			t.Fatal("the retried post's steer lost its words")
		}
	})

	t.Run("OverTheEventsSocket", func(t *testing.T) {
		s := w.alice.Events(0, false)
		defer s.Close()
		s.Ready()
		text := "@alice/demo over the socket\r\n"
		signed := w.alice.Device.Sign(t, w.say(text, nil))
		rep := s.Request(map[string]any{"type": "post", "req": "w1", "room": "dev", "text": text, "signed": []any{signed}})
		if rep.Status != 201 {
			t.Fatalf("reply %+v", rep)
		}
		st := w.steerOf(t, messageID(t, rep.Data))
		if st.Text != text || st.Words == nil || *st.Words != *signed {
			t.Fatalf("steer %+v", st)
		}
		bad := w.alice.Device.Sign(t, w.say("other words", nil))
		rep = s.Request(map[string]any{"type": "post", "req": "w2", "room": "dev", "text": text, "signed": []any{bad}})
		if rep.Status != 400 || rep.Error == nil || rep.Error.Reason != room.ReasonWordsMismatch {
			t.Fatalf("a statement over other words answered %+v", rep)
		}
	})
}

// A post's statements are checked before anything is stored: each bad one
// is refused with its own 400 and nothing is posted.
func TestOwnerWordsBadInput(t *testing.T) {
	w := startWordsHub(t)
	text := "@alice/demo hi"
	dev := w.alice.Device
	good := func() *wire.Signed { return dev.Sign(t, w.say(text, nil)) }
	canon, _ := authz.CanonicalStatement(testhub.Statement(w.say(text, nil)))
	cases := []struct {
		name   string
		client *testhub.Client
		body   any
		reason string // the error's reason ("" when the decoder refuses: invalid)
		says   string // words the message must hold
	}{
		{"NotAList", w.alice, `{"text":"@alice/demo hi","signed":{"statement":"x"}}`, "", "signed"},
		{"UnknownField", w.alice, `{"text":"@alice/demo hi","signed":[{"statement":"x","device":"d0123456789abcdef","sig":"c2ln","extra":1}]}`, "", "extra"},
		{"NoSignature", w.alice, map[string]any{"text": text, "signed": []any{map[string]any{"statement": string(canon), "device": dev.ID}}}, room.ReasonWordsMalformed, "signed[0]"},
		{"NotCanonical", w.alice, map[string]any{"text": text, "signed": []any{dev.SignRaw(t, []byte(" "+string(canon)))}}, room.ReasonWordsMalformed, "canonical"},
		{"TooLarge", w.alice, map[string]any{"text": text, "signed": []any{&wire.Signed{Statement: strings.Repeat("x", authz.MaxStatementBytes+1), Device: dev.ID, Sig: "c2ln"}}}, room.ReasonWordsMalformed, "larger than"},
		{"NotAMessageStatement", w.alice, map[string]any{"text": text, "signed": []any{dev.Sign(t, authz.Statement{Kind: authz.StatementConsent, Bridge: w.bridge, Agent: "alice/demo", Room: "dev"})}}, room.ReasonWordsMalformed, `"consent"`},
		{"TwoForOneAgent", w.alice, map[string]any{"text": text, "signed": []any{good(), good()}}, room.ReasonWordsTooMany, "addresses 1 agent"},
		{"NoAgentAddressed", w.alice, map[string]any{"text": "just words", "signed": []any{dev.Sign(t, w.say("just words", nil))}}, room.ReasonWordsTooMany, "addresses 0 agents"},
		{"AgentNotAddressed", w.alice, map[string]any{"text": "@alice/demo and @alice/other hi", "signed": []any{dev.Sign(t, w.say("@alice/demo and @alice/other hi", func(s *authz.Statement) { s.Agent = "alice/ghost" }))}}, room.ReasonWordsNotAddressed, "@alice/ghost"},
		{"QuotedMentionNotAddressed", w.alice, map[string]any{"text": "> @alice/demo hi\nno one", "signed": []any{dev.Sign(t, w.say("> @alice/demo hi\nno one", nil))}}, room.ReasonWordsTooMany, "addresses 0 agents"},
		{"AgentNotLowerCase", w.alice, map[string]any{"text": text, "signed": []any{dev.Sign(t, w.say(text, func(s *authz.Statement) { s.Agent = "Alice/Demo" }))}}, room.ReasonWordsMalformed, "lower-case"},
		{"SomeoneElsesAgent", w.bob, map[string]any{"text": text, "signed": []any{good()}}, room.ReasonWordsMismatch, "your own agents"},
		{"OtherText", w.alice, map[string]any{"text": text + " ", "signed": []any{good()}}, room.ReasonWordsMismatch, "byte for byte"},
		{"OtherRoom", w.alice, map[string]any{"text": text, "signed": []any{dev.Sign(t, w.say(text, func(s *authz.Statement) { s.Room = "general" }))}}, room.ReasonWordsMismatch, `"general"`},
		{"OtherThread", w.alice, map[string]any{"text": text, "signed": []any{dev.Sign(t, w.say(text, func(s *authz.Statement) { s.Thread = "7" }))}}, room.ReasonWordsMismatch, "thread"},
		{"FilesNotPosted", w.alice, map[string]any{"text": text, "signed": []any{dev.Sign(t, w.say(text, func(s *authz.Statement) {
			s.Files = []authz.StatementFile{{Name: "a.txt", SHA256: authz.FileHash([]byte("a"))}}
		}))}}, room.ReasonWordsMismatch, "names 1 file but the message carries 0"},
		{"Expired", w.alice, map[string]any{"text": text, "signed": []any{dev.Sign(t, w.say(text, func(s *authz.Statement) {
			s.Expires = time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
		}))}}, room.ReasonWordsMismatch, "expired"},
		{"TooFarAhead", w.alice, map[string]any{"text": text, "signed": []any{dev.Sign(t, w.say(text, func(s *authz.Statement) {
			s.Expires = time.Now().Add(2 * time.Hour).UTC().Format(time.RFC3339)
		}))}}, room.ReasonWordsMismatch, "more than 30m0s after the hub's clock"},
	}
	before := len(testhub.AsList(w.alice.Must(200, "GET", "/api/v1/rooms/dev/messages", nil).Body["messages"]))
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := c.client.Do("POST", "/api/v1/rooms/dev/messages", c.body)
			msg, _ := r.Body["error"].(map[string]any)["message"].(string)
			if r.Status != 400 || r.ErrCode() != "invalid" || r.ErrReason() != c.reason || !strings.Contains(msg, c.says) {
				t.Fatalf("answered %d %s, want 400 invalid %q saying %q", r.Status, r.Raw, c.reason, c.says)
			}
		})
	}
	if after := len(testhub.AsList(w.alice.Must(200, "GET", "/api/v1/rooms/dev/messages", nil).Body["messages"])); after != before {
		t.Fatalf("%d messages were stored by refused posts", after-before)
	}
}
