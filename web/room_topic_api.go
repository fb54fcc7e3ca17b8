package web

import (
	"net/http"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/chat"
)

// patchRoom changes what a member may change about a room: its topic.
func (s *Server) patchRoom(w http.ResponseWriter, r *http.Request, u *chat.User) error {
	var in struct {
		Topic *string `json:"topic"`
	}
	if err := decode(w, r, &in); err != nil {
		return err
	}
	if in.Topic == nil {
		return wh.Errorf(wh.EInvalid, `send {"topic":"…"} (an empty topic clears it)`)
	}
	rm, err := s.rooms.SetTopic(r.Context(), u, r.PathValue("room"), *in.Topic)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"room": rm})
	return nil
}
