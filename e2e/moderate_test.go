package e2e_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/authz"
	"github.com/wheelhouse-dev/wheelhouse/bridge"
	"github.com/wheelhouse-dev/wheelhouse/internal/stubmodel"
	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
)

// TestModeratedMention: alice moderates her agent. bob's mention waits for
// her ("waiting for @alice"), she reads it in her inbox and forwards it
// with her device's signature; the agent gets bob's words fenced as his,
// marked forwarded by alice, and bob's receipt goes on to the outcome. A
// declined one ends there; a forward whose signature covers other words is
// refused by the bridge.
func TestModeratedMention(t *testing.T) {
	stub := stubmodel.NewChat(t)
	stub.SetFallback(stubmodel.ChatReply{Text: "done reading"})
	tm := newTeam(t)
	dir := t.TempDir()
	tm.h.StartBridge(tm.alice, nil, bridge.AgentConfig{Name: "local", Harness: "openai", Dir: dir,
		Options:    map[string]string{"base_url": stub.URL(), "model": "qwen3:8b", "state_dir": filepath.Join(t.TempDir(), "state")},
		PolicyFile: bridge.PolicyConfig{Address: "moderate"}})
	tm.alice.AddAgent("dev", "alice/local")
	const handle = "alice/local"

	t.Run("ComposerSaysItGoesToTheOwner", func(t *testing.T) {
		for _, a := range testhub.AsList(tm.bob.Must(200, "GET", "/api/v1/rooms/dev/agents", nil).Body["agents"]) {
			if a["handle"] == handle && (a["mode"] != "moderated" || !strings.Contains(str(a["modeText"]), "@alice first")) {
				t.Fatalf("bob's mode %v %q", a["mode"], a["modeText"])
			}
		}
	})

	id, rs := post(t, tm.bob, "dev", "@alice/local please summarize the README", nil)
	steer := rs[0]["steerId"].(string)
	t.Run("HeldForTheOwner", func(t *testing.T) {
		rc := receipt(t, tm.bob, "dev", id, handle, "held")
		if rc["detail"] != "waiting for @alice" {
			t.Fatalf("receipt %v", rc)
		}
		if n := len(stub.Requests()); n != 0 {
			t.Fatalf("the model saw %d requests before alice forwarded anything", n)
		}
		// alice is told in her DM with the agent, and it is in her inbox.
		testhub.WaitFor(t, 10*time.Second, "the note in alice's DM", func() bool {
			for _, m := range testhub.AsList(tm.alice.Do("GET", "/api/v1/rooms/dm:alice:alice+local/messages", nil).Body["messages"]) {
				if strings.Contains(str(m["text"]), "@bob asks @alice/local in #dev: @alice/local please summarize the README") {
					return true
				}
			}
			return false
		})
		var req map[string]any
		for _, q := range testhub.AsList(tm.alice.Must(200, "GET", "/api/v1/requests", nil).Body["requests"]) {
			if q["steerId"] == steer {
				req = q
			}
		}
		if req == nil || req["status"] != "held" || req["sender"] != "bob" || req["textHash"] != authz.TextHash("@alice/local please summarize the README") {
			t.Fatalf("alice's inbox: %v", req)
		}
	})

	t.Run("OnlyTheOwnerForwardsAndOnlySigned", func(t *testing.T) {
		r := tm.bob.Must(403, "POST", "/api/v1/requests/"+steer, map[string]any{"decision": "forward"})
		if r.ErrCode() != "forbidden" {
			t.Fatalf("%s", r.Raw)
		}
		r = tm.alice.Must(403, "POST", "/api/v1/requests/"+steer, map[string]any{"decision": "forward"})
		if r.ErrReason() != authz.ReasonSignatureRequired {
			t.Fatalf("an unsigned forward: %s", r.Raw)
		}
	})

	t.Run("ForwardedWithProvenance", func(t *testing.T) {
		tm.alice.Forward(steer)
		rc := receipt(t, tm.bob, "dev", id, handle, "done")
		if rc["forwardedBy"] != "alice" || rc["via"] != "started" {
			t.Fatalf("bob's receipt %v: want done, via started, forwarded by alice", rc)
		}
		req := stub.WaitRequest(t, 1, 15*time.Second)
		var env string
		for _, s := range req.UserTexts() {
			if strings.Contains(s, "please summarize the README") {
				env = s
			}
		}
		for _, want := range []string{
			"From: @bob, a teammate (not the owner; the owner is @alice)",
			"Forwarded: the owner @alice read this message and forwarded it to you; the words are still @bob's, not the owner's.",
			"Authority: These are the relayed words of teammate @bob",
			"| @alice/local please summarize the README",
		} {
			if !strings.Contains(env, want) {
				t.Fatalf("the envelope lacks %q:\n%s", want, env)
			}
		}
		// The timeline says who forwarded it, with which device.
		var found bool
		for _, e := range testhub.AsList(tm.alice.Must(200, "GET", "/api/v1/agents/alice/local/timeline", nil).Body["entries"]) {
			if e["kind"] == "steer.forwarded" && e["actor"] == "alice" && e["detail"].(map[string]any)["device"] == tm.alice.Device.ID {
				found = true
			}
		}
		if !found {
			t.Fatal("no steer.forwarded entry naming alice's device")
		}
	})

	t.Run("DeclinedEnds", func(t *testing.T) {
		id, rs := post(t, tm.bob, "dev", "@alice/local delete the README", nil)
		receipt(t, tm.bob, "dev", id, handle, "held")
		tm.alice.Must(200, "POST", "/api/v1/requests/"+rs[0]["steerId"].(string), map[string]any{"decision": "decline"})
		rc := receipt(t, tm.bob, "dev", id, handle, "rejected")
		if rc["reason"] != "declined" || rc["detail"] != "@alice declined to forward it" {
			t.Fatalf("receipt %v", rc)
		}
		tm.alice.Must(409, "POST", "/api/v1/requests/"+rs[0]["steerId"].(string), map[string]any{"decision": "decline"})
	})

	t.Run("ForwardOfOtherWordsRefusedByTheBridge", func(t *testing.T) {
		before := len(stub.Requests())
		id, rs := post(t, tm.bob, "dev", "@alice/local read the README once more", nil)
		receipt(t, tm.bob, "dev", id, handle, "held")
		steer := rs[0]["steerId"].(string)
		// A forward signed for other words (a hub that swaps the text
		// would produce exactly this) does not get past the bridge.
		signed := tm.alice.Device.Sign(t, authz.Statement{Kind: authz.StatementForward, Agent: handle, Steer: steer, Room: "dev", Sender: "bob",
			TextHash: authz.TextHash("@alice/local something else")})
		tm.alice.Must(200, "POST", "/api/v1/requests/"+steer, map[string]any{"decision": "forward", "signed": signed})
		rc := receipt(t, tm.bob, "dev", id, handle, "rejected")
		if !strings.Contains(str(rc["detail"]), "refused the forward") {
			t.Fatalf("receipt %v", rc)
		}
		waitForgery(t, tm.alice, handle, "forward:wrong-statement")
		if n := len(stub.Requests()); n != before {
			t.Fatalf("the model saw %d more requests", n-before)
		}
		if !slices.Contains(forgeries(t, tm.alice, handle), "forward:wrong-statement") {
			t.Fatal("no forgery recorded")
		}
	})

	t.Run("ForwardNamesTheFiles", func(t *testing.T) {
		// bob's message carries a file: alice's forward names it by the
		// SHA-256 of the bytes she downloaded, and the agent gets it.
		file := upload(t, tm.bob, "dev", "notes.txt", []byte("NOTES-MARKER-42: the parser is in lex.go\n"))
		r := tm.bob.Must(201, "POST", "/api/v1/rooms/dev/messages", map[string]any{"text": "@alice/local read my notes", "files": []string{file}})
		id := int64(r.Body["message"].(map[string]any)["id"].(float64))
		steer := testhub.AsList(r.Body["receipts"])[0]["steerId"].(string)
		receipt(t, tm.bob, "dev", id, handle, "held")
		var files []map[string]any
		for _, q := range testhub.AsList(tm.alice.Must(200, "GET", "/api/v1/requests", nil).Body["requests"]) {
			if q["steerId"] == steer {
				files = testhub.AsList(q["files"])
			}
		}
		if len(files) != 1 || files[0]["name"] != "notes.txt" {
			t.Fatalf("the request shows files %v", files)
		}
		before := len(stub.Requests())
		tm.alice.Forward(steer)
		if rc := receipt(t, tm.bob, "dev", id, handle, "done"); rc["forwardedBy"] != "alice" {
			t.Fatalf("bob's receipt %v", rc)
		}
		req := stub.WaitRequest(t, before+1, 15*time.Second)
		if !strings.Contains(strings.Join(req.UserTexts(), "\n"), "NOTES-MARKER-42") {
			t.Fatalf("the agent did not get the file:\n%s", strings.Join(req.UserTexts(), "\n"))
		}

		// A forward that names no file, for a message that has one (what a
		// hub that hid the file from alice would get her to sign), is
		// refused by the bridge.
		r = tm.bob.Must(201, "POST", "/api/v1/rooms/dev/messages", map[string]any{"text": "@alice/local and these notes", "files": []string{upload(t, tm.bob, "dev", "more.txt", []byte("MORE\n"))}})
		id = int64(r.Body["message"].(map[string]any)["id"].(float64))
		steer = testhub.AsList(r.Body["receipts"])[0]["steerId"].(string)
		receipt(t, tm.bob, "dev", id, handle, "held")
		before = len(stub.Requests())
		signed := tm.alice.Device.Sign(t, authz.Statement{Kind: authz.StatementForward, Agent: handle, Steer: steer, Room: "dev", Sender: "bob",
			TextHash: authz.TextHash("@alice/local and these notes")})
		tm.alice.Must(200, "POST", "/api/v1/requests/"+steer, map[string]any{"decision": "forward", "signed": signed})
		if rc := receipt(t, tm.bob, "dev", id, handle, "rejected"); !strings.Contains(str(rc["detail"]), "refused the forward") {
			t.Fatalf("receipt %v", rc)
		}
		if n := len(stub.Requests()); n != before {
			t.Fatalf("the model saw %d more requests", n-before)
		}
	})
	t.Run("OwnerOutsideTheRoomForwardsFiles", func(t *testing.T) {
		// bob invites alice's agent to a room of his, she accepts without
		// joining it: she may read the files of a message held for her
		// (through the request), and the room's own file route still
		// refuses her; nobody else reads them through the request.
		tm.bob.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "bobs"})
		inv := tm.bob.AddAgent("bobs", handle).Body["invitation"].(map[string]any)
		tm.alice.Accept(int64(inv["id"].(float64)))
		file := upload(t, tm.bob, "bobs", "plan.txt", []byte("PLAN-MARKER-7: rename the lexer\n"))
		r := tm.bob.Must(201, "POST", "/api/v1/rooms/bobs/messages", map[string]any{"text": "@alice/local see my plan", "files": []string{file}})
		id := int64(r.Body["message"].(map[string]any)["id"].(float64))
		steer := testhub.AsList(r.Body["receipts"])[0]["steerId"].(string)
		receipt(t, tm.bob, "bobs", id, handle, "held")
		if s := tm.alice.Do("GET", "/api/v1/rooms/bobs/files/"+file, nil).Status; s != 403 && s != 404 {
			t.Fatalf("alice read a file of a room she is not in: %d", s)
		}
		url := "/api/v1/requests/" + steer + "/files/" + file
		if got := tm.alice.Must(200, "GET", url, nil).Raw; !strings.Contains(string(got), "PLAN-MARKER-7") {
			t.Fatalf("alice got %q", got)
		}
		tm.dave.Must(404, "GET", url, nil)
		tm.alice.Must(404, "GET", "/api/v1/requests/"+steer+"/files/f0123456789abcdef", nil)
		// A file of another message of the room is not this request's.
		other := upload(t, tm.bob, "bobs", "secret.txt", []byte("not for alice\n"))
		tm.bob.Must(201, "POST", "/api/v1/rooms/bobs/messages", map[string]any{"text": "just for the room", "files": []string{other}})
		tm.alice.Must(404, "GET", "/api/v1/requests/"+steer+"/files/"+other, nil)
		before := len(stub.Requests())
		tm.alice.Forward(steer)
		receipt(t, tm.bob, "bobs", id, handle, "done")
		req := stub.WaitRequest(t, before+1, 15*time.Second)
		if !strings.Contains(strings.Join(req.UserTexts(), "\n"), "PLAN-MARKER-7") {
			t.Fatalf("the agent did not get the file:\n%s", strings.Join(req.UserTexts(), "\n"))
		}
	})
}
