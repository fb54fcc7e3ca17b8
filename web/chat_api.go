package web

import (
	"context"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/authz"
	"github.com/wheelhouse-dev/wheelhouse/chat"
	"github.com/wheelhouse-dev/wheelhouse/room"
	"github.com/wheelhouse-dev/wheelhouse/store"
)

// uploadTimeout bounds an upload once its bytes are arriving.
const uploadTimeout = 10 * time.Minute

func (s *Server) chatRoutes(mux *http.ServeMux) {
	mux.Handle("GET /api/v1/rooms/{room}/messages/{id}", s.authed(s.getMessage))
	mux.Handle("PATCH /api/v1/rooms/{room}/messages/{id}", s.authed(s.patchMessage))
	mux.Handle("DELETE /api/v1/rooms/{room}/messages/{id}", s.authed(s.deleteMessage))
	mux.Handle("PUT /api/v1/rooms/{room}/messages/{id}/reactions/{emoji}", s.authed(s.putReaction))
	mux.Handle("DELETE /api/v1/rooms/{room}/messages/{id}/reactions/{emoji}", s.authed(s.deleteReaction))
	mux.Handle("PUT /api/v1/rooms/{room}/read", s.authed(s.putRead))
	mux.Handle("PUT /api/v1/rooms/{room}/notifications", s.authed(s.putNotifications))
	mux.Handle("POST /api/v1/rooms/{room}/files", s.wrap(s.postFile))
	mux.Handle("GET /api/v1/rooms/{room}/files/{id}", s.authed(s.getFile))
	mux.Handle("GET /api/v1/search", s.authed(s.getSearch))
	mux.Handle("GET /api/v1/settings", s.authed(s.getSettings))
	mux.Handle("PUT /api/v1/settings", s.authed(s.putSettings))
	mux.Handle("GET /api/v1/openapi.json", s.wrap(s.getOpenAPI))
}

// messageID reads the {id} path value.
func messageID(r *http.Request) (int64, error) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, wh.Errorf(wh.ENotFound, "%q is not a message id", r.PathValue("id"))
	}
	return id, nil
}

func (s *Server) getMessage(w http.ResponseWriter, r *http.Request, u *chat.User) error {
	id, err := messageID(r)
	if err != nil {
		return err
	}
	m, err := s.rooms.Message(r.Context(), u, r.PathValue("room"), id)
	if err != nil {
		return err
	}
	rs, err := s.rooms.ReceiptsFor(r.Context(), []int64{id})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"message": m, "receipts": rs})
	return nil
}

func (s *Server) patchMessage(w http.ResponseWriter, r *http.Request, u *chat.User) error {
	id, err := messageID(r)
	if err != nil {
		return err
	}
	var in struct {
		Text *string `json:"text"`
	}
	if err := decode(w, r, &in); err != nil {
		return err
	}
	if in.Text == nil {
		return wh.Errorf(wh.EInvalid, `send {"text":"the new text"}`)
	}
	m, err := s.rooms.Edit(r.Context(), u, r.PathValue("room"), id, *in.Text)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"message": m})
	return nil
}

func (s *Server) deleteMessage(w http.ResponseWriter, r *http.Request, u *chat.User) error {
	id, err := messageID(r)
	if err != nil {
		return err
	}
	if err := s.rooms.Delete(r.Context(), u, r.PathValue("room"), id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) putReaction(w http.ResponseWriter, r *http.Request, u *chat.User) error {
	return s.react(w, r, u, true)
}

func (s *Server) deleteReaction(w http.ResponseWriter, r *http.Request, u *chat.User) error {
	return s.react(w, r, u, false)
}

func (s *Server) react(w http.ResponseWriter, r *http.Request, u *chat.User, add bool) error {
	id, err := messageID(r)
	if err != nil {
		return err
	}
	rs, err := s.rooms.React(r.Context(), u, r.PathValue("room"), id, r.PathValue("emoji"), add)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"messageId": id, "reactions": rs})
	return nil
}

func (s *Server) putRead(w http.ResponseWriter, r *http.Request, u *chat.User) error {
	var in struct {
		ID *int64 `json:"id"`
	}
	if err := decode(w, r, &in); err != nil {
		return err
	}
	if in.ID == nil {
		return wh.Errorf(wh.EInvalid, `send {"id":N}: the last message id you read`)
	}
	st, err := s.rooms.MarkRead(r.Context(), u, r.PathValue("room"), *in.ID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"read": st})
	return nil
}

func (s *Server) putNotifications(w http.ResponseWriter, r *http.Request, u *chat.User) error {
	var in struct {
		Level string `json:"level"`
	}
	if err := decode(w, r, &in); err != nil {
		return err
	}
	level, err := s.rooms.SetNotify(r.Context(), u, r.PathValue("room"), in.Level)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"room": r.PathValue("room"), "level": level})
	return nil
}

// postFile takes an upload: a multipart form with a "file" part, or the
// raw bytes as the body with ?name=. The body streams into the object store
// (never held in memory); the type is sniffed from the bytes.
func (s *Server) postFile(w http.ResponseWriter, r *http.Request) error {
	u, err := s.user(r)
	if err != nil {
		return err
	}
	// The bytes may take a while to arrive; once they have, storing them
	// and recording the file finish even if the client hangs up.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), uploadTimeout)
	defer cancel()
	perFile, _ := s.rooms.FileLimits()
	r.Body = http.MaxBytesReader(w, r.Body, perFile+1<<20)
	roomName := r.PathValue("room")
	var f *chat.File
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt == "multipart/form-data" {
		mr, err := r.MultipartReader()
		if err != nil {
			return wh.Errorf(wh.EInvalid, "the multipart body cannot be read: %v", err)
		}
		for {
			p, err := mr.NextPart()
			if errors.Is(err, io.EOF) {
				return wh.Errorf(wh.EInvalid, `the form has no "file" part`)
			}
			var mb *http.MaxBytesError
			if errors.As(err, &mb) {
				return &wh.Error{Code: wh.ETooLarge, Reason: "file-too-large", Message: "the upload is larger than the most this hub takes in one file"}
			}
			if err != nil {
				return wh.Errorf(wh.EInvalid, "the multipart body cannot be read: %v", err)
			}
			if p.FormName() != "file" {
				io.Copy(io.Discard, io.LimitReader(p, 64<<10))
				continue
			}
			name := p.FileName()
			if q := r.URL.Query().Get("name"); q != "" {
				name = q
			}
			f, err = s.rooms.Upload(ctx, u, roomName, name, p, -1)
			if err != nil {
				return err
			}
			break
		}
	} else {
		name := r.URL.Query().Get("name")
		if strings.TrimSpace(name) == "" {
			return wh.Errorf(wh.EInvalid, "name the file: POST …/files?name=report.pdf with the bytes as the body, or send a multipart form with a \"file\" part")
		}
		if f, err = s.rooms.Upload(ctx, u, roomName, name, r.Body, r.ContentLength); err != nil {
			return err
		}
	}
	writeJSON(w, http.StatusCreated, map[string]any{"file": f})
	return nil
}

// getFile serves a file to the room's members: the sniffed type, never
// sniffed again by the browser; inline only for images browsers show
// safely, as an attachment otherwise; sandboxed should anything render it.
func (s *Server) getFile(w http.ResponseWriter, r *http.Request, u *chat.User) error {
	f, rc, err := s.rooms.OpenFile(r.Context(), u, r.PathValue("room"), r.PathValue("id"))
	if err != nil {
		return err
	}
	return s.serveFile(w, r, f, rc)
}

// getRequestFile serves a file of a moderated mention to the owner asked
// (who may not be in the room) and to its sender, as getFile does.
func (s *Server) getRequestFile(w http.ResponseWriter, r *http.Request, u *chat.User) error {
	f, rc, err := s.rooms.OpenRequestFile(r.Context(), u, r.PathValue("id"), r.PathValue("file"))
	if err != nil {
		return err
	}
	return s.serveFile(w, r, f, rc)
}

func (s *Server) serveFile(w http.ResponseWriter, r *http.Request, f *store.StoredFile, rc io.ReadCloser) error {
	defer rc.Close()
	disp := "attachment"
	if room.SafeImage(f.Type) {
		disp = "inline"
	}
	cd := mime.FormatMediaType(disp, map[string]string{"filename": f.Name})
	if cd == "" {
		cd = disp + `; filename="file"`
	}
	h := w.Header()
	h.Set("Content-Type", f.Type)
	h.Set("Content-Length", strconv.FormatInt(f.Size, 10))
	h.Set("Content-Disposition", cd)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	h.Set("Cache-Control", "private, max-age=3600")
	h.Set("ETag", `"`+f.SHA256+`"`)
	if match := r.Header.Get("If-None-Match"); match == `"`+f.SHA256+`"` {
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return nil
	}
	if _, err := io.Copy(w, rc); err != nil {
		s.log.Debug("serving a file ended early", "file", f.ID, "err", err)
	}
	return nil
}

func (s *Server) getSearch(w http.ResponseWriter, r *http.Request, u *chat.User) error {
	q := r.URL.Query()
	before, err := queryInt(r, "before")
	if err != nil {
		return err
	}
	limit, err := queryInt(r, "limit")
	if err != nil {
		return err
	}
	rs, err := s.rooms.Search(r.Context(), u, room.SearchInput{Q: q.Get("q"), Room: q.Get("room"), From: q.Get("from"), Before: before, Limit: int(limit)})
	if err != nil {
		return err
	}
	out := map[string]any{"results": rs}
	if limit == 0 {
		limit = store.DefaultSearch
	}
	if n := len(rs); n > 0 && int64(n) == limit {
		out["next"] = rs[n-1].Message.ID // pass as before= for the next page
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) getSettings(w http.ResponseWriter, r *http.Request, u *chat.User) error {
	set, err := s.rooms.Settings(r.Context())
	if err != nil {
		return err
	}
	perFile, quota := s.rooms.FileLimits()
	budgets, err := s.rooms.Budgets(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"settings": set, "limits": map[string]int64{"fileBytes": perFile, "userFileBytes": quota, "messageBytes": chat.MaxMessageBytes},
		"personLimits": budgets})
	return nil
}

func (s *Server) putSettings(w http.ResponseWriter, r *http.Request, u *chat.User) error {
	var in struct {
		DefaultRooms *[]string              `json:"defaultRooms"`
		Limits       *authz.BudgetOverrides `json:"limits"`
	}
	if err := decode(w, r, &in); err != nil {
		return err
	}
	if in.DefaultRooms == nil && in.Limits == nil {
		return wh.Errorf(wh.EInvalid, `send {"defaultRooms":["general"]} or {"limits":{"posts":"300/5m"}}; a field left out keeps its value`)
	}
	set, err := s.rooms.Settings(r.Context())
	if err != nil {
		return err
	}
	if in.DefaultRooms != nil {
		set.DefaultRooms = *in.DefaultRooms
	}
	if in.Limits != nil {
		set.Limits = in.Limits
	}
	set, err = s.rooms.SetSettings(r.Context(), u, set)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"settings": set})
	return nil
}
