package web

import (
	"context"
	"net/http"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/chat"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// OwnerAPI relays the owner's decisions to the agent's bridge, which
// verifies the owner's device signature on those that widen what the agent
// may do, and records them once the bridge took them.
type OwnerAPI interface {
	// SetPolicy changes an agent's policy (signed when it widens).
	SetPolicy(ctx context.Context, actor *chat.User, handle string, p wire.Policy, signed *wire.Signed) (*chat.Agent, error)
	// AddAgent adds the owner's agent to a room (signed consent, unless its
	// bridge already lets it act there), or invites someone else's.
	AddAgent(ctx context.Context, actor *chat.User, room, handle, ceiling string, signed *wire.Signed) (string, *chat.Invitation, error)
	// RemoveAgent takes the owner's agent out of a room.
	RemoveAgent(ctx context.Context, actor *chat.User, room, handle string) error
	// AnswerInvitation accepts (signed) or declines an invitation.
	AnswerInvitation(ctx context.Context, actor *chat.User, id int64, accept bool, signed *wire.Signed) (*chat.Invitation, error)
	// SetCeiling sets what turns from a room may do (signed when looser).
	SetCeiling(ctx context.Context, actor *chat.User, room, handle, ceiling string, signed *wire.Signed) error
	// Enroll has one of the owner's bridges trust a device.
	Enroll(ctx context.Context, actor *chat.User, bridgeID string, e wire.Enrollment) (*wire.Device, error)
	// RevokeDevice revokes a device on every bridge of the owner.
	RevokeDevice(ctx context.Context, actor *chat.User, id string) error
}

func (s *Server) ownerRoutes(mux *http.ServeMux) {
	mux.Handle("GET /api/v1/devices", s.authed(s.getDevices))
	mux.Handle("POST /api/v1/devices", s.authed(s.postDevice))
	mux.Handle("DELETE /api/v1/devices/{id}", s.authed(s.deleteDevice))
	mux.Handle("PATCH /api/v1/rooms/{room}/agents/{owner}/{name}", s.authed(s.patchRoomAgent))
	mux.Handle("GET /api/v1/requests", s.authed(s.getRequests))
	mux.Handle("POST /api/v1/requests/{id}", s.authed(s.postRequest))
	mux.Handle("GET /api/v1/requests/{id}/files/{file}", s.authed(s.getRequestFile))
}

func (s *Server) getDevices(w http.ResponseWriter, r *http.Request, u *chat.User) error {
	ds, err := s.rooms.Devices(r.Context(), u)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"devices": ds})
	return nil
}

func (s *Server) postDevice(w http.ResponseWriter, r *http.Request, u *chat.User) error {
	if err := s.needAgents(); err != nil {
		return err
	}
	var in struct {
		Bridge string `json:"bridge"`
		wire.Enrollment
	}
	if err := decode(w, r, &in); err != nil {
		return err
	}
	if in.Bridge == "" {
		// The owner's only bridge, if there is one.
		bs, err := s.rooms.Bridges(r.Context(), u)
		if err != nil {
			return err
		}
		var active []chat.Bridge
		for _, b := range bs {
			if !b.Revoked {
				active = append(active, b)
			}
		}
		if len(active) != 1 {
			return wh.Errorf(wh.EInvalid, "name the bridge whose code you enter (you have %d)", len(active))
		}
		in.Bridge = active[0].ID
	}
	d, err := s.agents.Enroll(r.Context(), u, in.Bridge, in.Enrollment)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, map[string]any{"device": d, "bridge": in.Bridge})
	return nil
}

func (s *Server) deleteDevice(w http.ResponseWriter, r *http.Request, u *chat.User) error {
	if err := s.needAgents(); err != nil {
		return err
	}
	if !wire.ValidDeviceID(r.PathValue("id")) {
		return wh.Errorf(wh.EInvalid, "device ids look like d0123456789abcdef")
	}
	if err := s.agents.RevokeDevice(r.Context(), u, r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) patchRoomAgent(w http.ResponseWriter, r *http.Request, u *chat.User) error {
	if err := s.needAgents(); err != nil {
		return err
	}
	var in struct {
		Ceiling string       `json:"ceiling"`
		Signed  *wire.Signed `json:"signed"`
	}
	if err := decode(w, r, &in); err != nil {
		return err
	}
	if err := in.Signed.Validate(); err != nil {
		return err
	}
	if err := s.agents.SetCeiling(r.Context(), u, r.PathValue("room"), handleOf(r), in.Ceiling, in.Signed); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"ceiling": in.Ceiling})
	return nil
}

func (s *Server) getRequests(w http.ResponseWriter, r *http.Request, u *chat.User) error {
	qs, err := s.rooms.Requests(r.Context(), u)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"requests": qs})
	return nil
}

func (s *Server) postRequest(w http.ResponseWriter, r *http.Request, u *chat.User) error {
	var in struct {
		Decision string       `json:"decision"` // forward, decline
		Signed   *wire.Signed `json:"signed"`
	}
	if err := decode(w, r, &in); err != nil {
		return err
	}
	if in.Decision != "forward" && in.Decision != "decline" {
		return wh.Errorf(wh.EInvalid, `decision must be "forward" or "decline"`)
	}
	if err := in.Signed.Validate(); err != nil {
		return err
	}
	q, err := s.rooms.AnswerRequest(r.Context(), u, r.PathValue("id"), in.Decision == "forward", in.Signed)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"request": q})
	return nil
}
