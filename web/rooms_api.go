package web

import (
	"net/http"
	"strconv"
	"strings"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/chat"
	"github.com/wheelhouse-dev/wheelhouse/store"
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

func (s *Server) getRoom(w http.ResponseWriter, r *http.Request, u *chat.User) error {
	rm, err := s.rooms.RoomFor(r.Context(), u, r.PathValue("room"))
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
	after, err := queryInt(r, "after")
	if err != nil {
		return err
	}
	before, err := queryInt(r, "before")
	if err != nil {
		return err
	}
	limit, err := queryInt(r, "limit")
	if err != nil {
		return err
	}
	if limit > chat.MaxPage {
		return wh.Errorf(wh.EInvalid, "limit must be at most %d", chat.MaxPage)
	}
	page := store.Page{After: after, HasAfter: r.URL.Query().Has("after"), Before: before, Limit: int(limit)}
	ms, err := s.rooms.History(r.Context(), u, r.PathValue("room"), page)
	if err != nil {
		return err
	}
	ids := make([]int64, len(ms))
	for i, m := range ms {
		ids[i] = m.ID
	}
	rs, err := s.rooms.ReceiptsFor(r.Context(), ids)
	if err != nil {
		return err
	}
	out := map[string]any{"messages": ms, "receipts": rs}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) postMessage(w http.ResponseWriter, r *http.Request, u *chat.User) error {
	var in struct {
		Text string `json:"text"`
		// Turns names, per agent handle, the turn the sender saw running: a
		// steer meant for it never lands in another turn.
		Turns map[string]string `json:"turns"`
	}
	if err := decode(w, r, &in); err != nil {
		return err
	}
	m, err := s.rooms.Post(r.Context(), u, r.PathValue("room"), in.Text, in.Turns)
	if err != nil {
		return err
	}
	s.metrics.posts.Inc()
	out := map[string]any{"message": m}
	if s.agents != nil && hasAgentMention(m) {
		out["receipts"] = s.agents.AwaitReceipts(r.Context(), m)
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
