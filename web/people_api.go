package web

import (
	"net/http"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/chat"
)

// People: admins deactivate, reactivate, make admin and issue reset codes;
// everyone changes their own password and sees and ends their sessions.

func (s *Server) peopleRoutes(mux *http.ServeMux) {
	mux.Handle("PATCH /api/v1/users/{name}", s.authed(s.patchUser))
	mux.Handle("POST /api/v1/users/{name}/password-reset", s.authed(s.postPasswordReset))
	mux.Handle("POST /api/v1/password-reset", s.wrap(noRetryKey(s.redeemPasswordReset)))
	mux.Handle("PUT /api/v1/me/password", s.authed(s.putPassword))
	mux.Handle("GET /api/v1/sessions", s.authed(s.getSessions))
	mux.Handle("DELETE /api/v1/sessions/{id}", s.authed(s.deleteSessionByID))
}

func (s *Server) patchUser(w http.ResponseWriter, r *http.Request, u *chat.User) error {
	var in struct {
		Active *bool `json:"active"`
		Admin  *bool `json:"admin"`
	}
	if err := decode(w, r, &in); err != nil {
		return err
	}
	if in.Active == nil && in.Admin == nil {
		return wh.Errorf(wh.EInvalid, `send "active" (false deactivates, true reactivates) and/or "admin" (true or false)`)
	}
	name := r.PathValue("name")
	var out *chat.User
	var err error
	// Reactivate before granting; revoke before deactivating.
	if in.Active != nil && *in.Active {
		if out, err = s.rooms.Reactivate(r.Context(), u, name); err != nil {
			return err
		}
	}
	if in.Admin != nil {
		if out, err = s.rooms.SetAdmin(r.Context(), u, name, *in.Admin); err != nil {
			return err
		}
	}
	if in.Active != nil && !*in.Active {
		if out, err = s.rooms.Deactivate(r.Context(), u, name); err != nil {
			return err
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"user": out})
	return nil
}

func (s *Server) postPasswordReset(w http.ResponseWriter, r *http.Request, u *chat.User) error {
	code, exp, err := s.rooms.IssuePasswordReset(r.Context(), u, r.PathValue("name"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, map[string]any{"code": code, "expiresAt": exp})
	return nil
}

func (s *Server) redeemPasswordReset(w http.ResponseWriter, r *http.Request) error {
	var in struct {
		Code     string `json:"code"`
		Password string `json:"password"`
	}
	if err := decode(w, r, &in); err != nil {
		return err
	}
	secret, u, err := s.rooms.RedeemPasswordReset(r.Context(), in.Code, in.Password, s.client(r))
	if err != nil {
		return err
	}
	s.setSession(w, r, secret, chat.SessionTTL)
	writeJSON(w, http.StatusCreated, map[string]any{"user": u})
	return nil
}

func (s *Server) putPassword(w http.ResponseWriter, r *http.Request, u *chat.User) error {
	var in struct {
		Current  string `json:"current"`
		Password string `json:"password"`
	}
	if err := decode(w, r, &in); err != nil {
		return err
	}
	if err := s.rooms.ChangePassword(r.Context(), u, credential(r), in.Current, in.Password, s.client(r)); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) getSessions(w http.ResponseWriter, r *http.Request, u *chat.User) error {
	ss, err := s.rooms.Sessions(r.Context(), u, credential(r))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"sessions": ss})
	return nil
}

func (s *Server) deleteSessionByID(w http.ResponseWriter, r *http.Request, u *chat.User) error {
	if err := s.rooms.EndSession(r.Context(), u, r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
