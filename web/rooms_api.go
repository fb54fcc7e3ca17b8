package web

import (
	"net/http"
	"strconv"
	"strings"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/chat"
	"github.com/wheelhouse-dev/wheelhouse/room"
	"github.com/wheelhouse-dev/wheelhouse/store"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

func (s *Server) getRooms(w http.ResponseWriter, r *http.Request, u *chat.User) error {
	var rooms []chat.Room
	var err error
	if r.URL.Query().Get("public") != "" {
		rooms, err = s.rooms.PublicRooms(r.Context(), u)
	} else {
		rooms, err = s.rooms.MyRooms(r.Context(), u)
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"rooms": rooms})
	return nil
}

func (s *Server) postRoom(w http.ResponseWriter, r *http.Request, u *chat.User) error {
	var in struct {
		Name    string `json:"name"`
		Private bool   `json:"private"`
		Topic   string `json:"topic"`
	}
	if err := decode(w, r, &in); err != nil {
		return err
	}
	rm, err := s.rooms.CreateRoom(r.Context(), u, in.Name, in.Private, in.Topic)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, map[string]any{"room": rm})
	return nil
}

// getRoom answers members with the room and their read state, and anyone
// with a public room they are not in (role "": the UI offers to join).
func (s *Server) getRoom(w http.ResponseWriter, r *http.Request, u *chat.User) error {
	rm, err := s.rooms.RoomInfo(r.Context(), u, r.PathValue("room"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"room": rm})
	return nil
}

func (s *Server) getMembers(w http.ResponseWriter, r *http.Request, u *chat.User) error {
	ms, err := s.rooms.Members(r.Context(), u, r.PathValue("room"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"members": ms})
	return nil
}

// postMember joins a public room (no user, or yourself) or adds someone.
func (s *Server) postMember(w http.ResponseWriter, r *http.Request, u *chat.User) error {
	var in struct {
		User string `json:"user"`
	}
	if r.ContentLength != 0 {
		if err := decode(w, r, &in); err != nil {
			return err
		}
	}
	name := r.PathValue("room")
	if in.User == "" || in.User == u.Name || in.User == "@"+u.Name {
		rm, err := s.rooms.Join(r.Context(), u, name)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, map[string]any{"room": rm})
		return nil
	}
	if err := s.rooms.AddMember(r.Context(), u, name, in.User); err != nil {
		return err
	}
	ms, err := s.rooms.Members(r.Context(), u, name)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"members": ms})
	return nil
}

func (s *Server) deleteMember(w http.ResponseWriter, r *http.Request, u *chat.User) error {
	roomName, user := r.PathValue("room"), r.PathValue("user")
	if err := s.rooms.RemoveMember(r.Context(), u, roomName, user); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) postDM(w http.ResponseWriter, r *http.Request, u *chat.User) error {
	var in struct {
		With string `json:"with"`
	}
	if err := decode(w, r, &in); err != nil {
		return err
	}
	if in.With == "" {
		return wh.Errorf(wh.EInvalid, `name who the DM is with: {"with":"alice"} or {"with":"owner/agent"}`)
	}
	var rm *chat.Room
	var err error
	if strings.Contains(in.With, "/") { // owner/agent
		rm, err = s.rooms.OpenAgentDM(r.Context(), u, in.With)
	} else {
		rm, err = s.rooms.OpenDM(r.Context(), u, in.With)
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"room": rm})
	return nil
}

func queryInt(r *http.Request, key string) (int64, error) {
	v := r.URL.Query().Get(key)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, wh.Errorf(wh.EInvalid, "%s must be a non-negative integer, not %q", key, v)
	}
	return n, nil
}

func (s *Server) getMessages(w http.ResponseWriter, r *http.Request, u *chat.User) error {
	q := r.URL.Query()
	var page store.Page
	for _, p := range []struct {
		key string
		v   *int64
	}{{"after", &page.After}, {"before", &page.Before}, {"around", &page.Around}, {"thread", &page.Thread}} {
		n, err := queryInt(r, p.key)
		if err != nil {
			return err
		}
		*p.v = n
	}
	limit, err := queryInt(r, "limit")
	if err != nil {
		return err
	}
	if limit > chat.MaxPage {
		return wh.Errorf(wh.EInvalid, "limit must be at most %d", chat.MaxPage)
	}
	page.Limit, page.HasAfter = int(limit), q.Has("after")
	switch q.Get("include") {
	case "":
	case "replies":
		page.Replies = true
	default:
		return wh.Errorf(wh.EInvalid, `include is "replies" (thread replies inline) or absent (the channel)`)
	}
	if page.Around > 0 && (page.HasAfter || page.Before > 0) {
		return wh.Errorf(wh.EInvalid, "around takes no after or before")
	}
	out := map[string]any{}
	var ms []chat.Message
	if page.Thread > 0 {
		root, replies, err := s.rooms.Thread(r.Context(), u, r.PathValue("room"), page)
		if err != nil {
			return err
		}
		out["root"] = root
		ms = replies
	} else if q.Has("thread") {
		return wh.Errorf(wh.EInvalid, "thread must be a message id")
	} else if ms, err = s.rooms.History(r.Context(), u, r.PathValue("room"), page); err != nil {
		return err
	}
	ids := make([]int64, 0, len(ms)+1)
	if root, ok := out["root"].(*chat.Message); ok {
		ids = append(ids, root.ID)
	}
	for _, m := range ms {
		ids = append(ids, m.ID)
	}
	rs, err := s.rooms.ReceiptsFor(r.Context(), ids)
	if err != nil {
		return err
	}
	out["messages"], out["receipts"] = ms, rs
	writeJSON(w, http.StatusOK, out)
	return nil
}

// postBody is a post's body: of POST /rooms/{room}/messages, and of a
// "post" frame on the events socket.
type postBody struct {
	Text string `json:"text"`
	// Turns names, per agent handle, the turn the sender saw running: a
	// steer meant for it never lands in another turn.
	Turns map[string]string `json:"turns"`
	// Thread: reply under this message.
	Thread int64 `json:"thread"`
	// Files: ids of files the sender uploaded to the room.
	Files []string `json:"files"`
	// Signed: the owner's signed message statements, one per addressed
	// agent of their own (room.checkWords).
	Signed []wire.Signed `json:"signed"`
}

func (b *postBody) input() room.PostInput {
	return room.PostInput{Text: b.Text, Turns: b.Turns, Thread: b.Thread, Files: b.Files, Signed: b.Signed}
}

func (s *Server) postMessage(w http.ResponseWriter, r *http.Request, u *chat.User) error {
	var in postBody
	if err := decode(w, r, &in); err != nil {
		return err
	}
	out, err := s.post(r.Context(), u, r.PathValue("room"), in.input())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, out)
	return nil
}

func hasAgentMention(m *chat.Message) bool {
	for _, mn := range m.Mentions {
		if mn.Kind == "agent" {
			return true
		}
	}
	return false
}
