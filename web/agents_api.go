package web

import (
	"context"
	"net/http"
	"strconv"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/chat"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// AgentAPI is what the hub's bridge link provides to the web server: the
// parts of steering that talk to bridges or know their presence.
type AgentAPI interface {
	// AwaitReceipts returns the receipts of m's agent mentions, waiting
	// briefly for the bridges' answers. Delivery itself does not depend on
	// it: it follows from the message being in the log.
	AwaitReceipts(ctx context.Context, m *chat.Message) []chat.Receipt
	// Annotate sets each agent's live status and, for the viewer in roomName,
	// what a mention would do now (Mode, ModeText).
	Annotate(ctx context.Context, viewer *chat.User, roomName string, agents []*chat.Agent)
	// Interrupt stops the agent's running turn (owner only).
	Interrupt(ctx context.Context, actor *chat.User, handle string) error
	// Decide relays the owner's decision to the bridge and records it; an
	// approval carries the owner's signed statement.
	Decide(ctx context.Context, actor *chat.User, id, decision, hash string, signed *wire.Signed) (*chat.Approval, error)
	// OwnerAPI relays the owner's other decisions (see owner_api.go).
	OwnerAPI
	// PairCommand is the exact command an owner runs to pair a bridge.
	PairCommand(token string) string
	// NATSURL is where bridges connect.
	NATSURL() string
}

func (s *Server) agentRoutes(mux *http.ServeMux) {
	mux.Handle("GET /api/v1/agents", s.authed(s.getAgents))
	mux.Handle("PATCH /api/v1/agents/{owner}/{name}", s.authed(s.patchAgent))
	mux.Handle("POST /api/v1/agents/{owner}/{name}/interrupt", s.authed(s.postInterrupt))
	mux.Handle("GET /api/v1/agents/{owner}/{name}/timeline", s.authed(s.getTimeline))
	mux.Handle("GET /api/v1/rooms/{room}/agents", s.authed(s.getRoomAgents))
	mux.Handle("POST /api/v1/rooms/{room}/agents", s.authed(s.postRoomAgent))
	mux.Handle("DELETE /api/v1/rooms/{room}/agents/{owner}/{name}", s.authed(s.deleteRoomAgent))
	mux.Handle("GET /api/v1/invitations", s.authed(s.getInvitations))
	mux.Handle("POST /api/v1/invitations/{id}", s.authed(s.postInvitation))
	mux.Handle("GET /api/v1/approvals", s.authed(s.getApprovals))
	mux.Handle("GET /api/v1/approvals/{id}", s.authed(s.getApproval))
	mux.Handle("POST /api/v1/approvals/{id}", s.authed(s.postApproval))
	mux.Handle("POST /api/v1/bridges/pairing-tokens", s.authed(s.postPairingToken))
	mux.Handle("POST /api/v1/bridges/pair", s.wrap(noRetryKey(s.postPair)))
	mux.Handle("GET /api/v1/bridges", s.authed(s.getBridges))
	mux.Handle("DELETE /api/v1/bridges/{id}", s.authed(s.deleteBridge))
	s.ownerRoutes(mux)
}

func handleOf(r *http.Request) string { return r.PathValue("owner") + "/" + r.PathValue("name") }

func (s *Server) needAgents() error {
	if s.agents == nil {
		return wh.Errorf(wh.EUnavailable, "this hub does not route to bridges")
	}
	return nil
}

func (s *Server) getAgents(w http.ResponseWriter, r *http.Request, u *chat.User) error {
	as, err := s.rooms.Agents(r.Context(), u)
	if err != nil {
		return err
	}
	if s.agents != nil {
		s.agents.Annotate(r.Context(), u, "", as)
	}
	if as == nil {
		as = []*chat.Agent{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"agents": as})
	return nil
}

func (s *Server) getRoomAgents(w http.ResponseWriter, r *http.Request, u *chat.User) error {
	as, err := s.rooms.RoomAgents(r.Context(), u, r.PathValue("room"))
	if err != nil {
		return err
	}
	if s.agents != nil {
		s.agents.Annotate(r.Context(), u, r.PathValue("room"), as)
	}
	if as == nil {
		as = []*chat.Agent{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"agents": as})
	return nil
}

func (s *Server) patchAgent(w http.ResponseWriter, r *http.Request, u *chat.User) error {
	var in struct {
		Policy *wire.Policy `json:"policy"`
		Signed *wire.Signed `json:"signed"`
	}
	if err := decode(w, r, &in); err != nil {
		return err
	}
	if in.Policy == nil {
		return wh.Errorf(wh.EInvalid, `send {"policy":{...}}`)
	}
	if err := s.needAgents(); err != nil {
		return err
	}
	a, err := s.agents.SetPolicy(r.Context(), u, handleOf(r), *in.Policy, in.Signed)
	if err != nil {
		return err
	}
	a.Policy = ptr(a.EffectivePolicy())
	writeJSON(w, http.StatusOK, map[string]any{"agent": a})
	return nil
}

func ptr[T any](v T) *T { return &v }

func (s *Server) postInterrupt(w http.ResponseWriter, r *http.Request, u *chat.User) error {
	if err := s.needAgents(); err != nil {
		return err
	}
	if err := s.agents.Interrupt(r.Context(), u, handleOf(r)); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "interrupted"})
	return nil
}

func (s *Server) getTimeline(w http.ResponseWriter, r *http.Request, u *chat.User) error {
	v, err := s.rooms.Timeline(r.Context(), u, handleOf(r), r.URL.Query().Get("turn"))
	if err != nil {
		return err
	}
	firstBad := v.FirstBad
	if !v.Owner && !v.ChainIntact {
		firstBad = 0 // broken somewhere the viewer may not see
	}
	writeJSON(w, http.StatusOK, map[string]any{"agent": handleOf(r), "entries": v.Entries, "firstBad": firstBad,
		"chainIntact": v.ChainIntact, "complete": v.Owner})
	return nil
}

func (s *Server) postRoomAgent(w http.ResponseWriter, r *http.Request, u *chat.User) error {
	var in struct {
		Agent   string       `json:"agent"`
		Ceiling string       `json:"ceiling"`
		Signed  *wire.Signed `json:"signed"`
	}
	if err := decode(w, r, &in); err != nil {
		return err
	}
	if err := s.needAgents(); err != nil {
		return err
	}
	if err := in.Signed.Validate(); err != nil {
		return err
	}
	status, inv, err := s.agents.AddAgent(r.Context(), u, r.PathValue("room"), in.Agent, in.Ceiling, in.Signed)
	if err != nil {
		return err
	}
	out := map[string]any{"status": status}
	if inv != nil {
		out["invitation"] = inv
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) deleteRoomAgent(w http.ResponseWriter, r *http.Request, u *chat.User) error {
	roomName, handle := r.PathValue("room"), handleOf(r)
	if err := s.needAgents(); err != nil {
		return err
	}
	if err := s.agents.RemoveAgent(r.Context(), u, roomName, handle); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) getInvitations(w http.ResponseWriter, r *http.Request, u *chat.User) error {
	invs, err := s.rooms.Invitations(r.Context(), u)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"invitations": invs})
	return nil
}

func (s *Server) postInvitation(w http.ResponseWriter, r *http.Request, u *chat.User) error {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		return wh.Errorf(wh.EInvalid, "invitation ids are numbers")
	}
	var in struct {
		Decision string       `json:"decision"`
		Signed   *wire.Signed `json:"signed"`
	}
	if err := decode(w, r, &in); err != nil {
		return err
	}
	if in.Decision != "accept" && in.Decision != "decline" {
		return wh.Errorf(wh.EInvalid, `decision must be "accept" or "decline"`)
	}
	if err := s.needAgents(); err != nil {
		return err
	}
	if err := in.Signed.Validate(); err != nil {
		return err
	}
	inv, err := s.agents.AnswerInvitation(r.Context(), u, id, in.Decision == "accept", in.Signed)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"invitation": inv})
	return nil
}

func (s *Server) getApprovals(w http.ResponseWriter, r *http.Request, u *chat.User) error {
	ps, err := s.rooms.Approvals(r.Context(), u, r.URL.Query().Get("state"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"approvals": ps})
	return nil
}

func (s *Server) getApproval(w http.ResponseWriter, r *http.Request, u *chat.User) error {
	ps, err := s.rooms.Approvals(r.Context(), u, "")
	if err != nil {
		return err
	}
	for _, p := range ps {
		if p.ID == r.PathValue("id") {
			writeJSON(w, http.StatusOK, map[string]any{"approval": p})
			return nil
		}
	}
	return wh.Errorf(wh.ENotFound, "no approval request %s that you can see", r.PathValue("id"))
}

func (s *Server) postApproval(w http.ResponseWriter, r *http.Request, u *chat.User) error {
	if err := s.needAgents(); err != nil {
		return err
	}
	var in struct {
		Decision    string       `json:"decision"`
		PayloadHash string       `json:"payloadHash"`
		Signed      *wire.Signed `json:"signed"`
	}
	if err := decode(w, r, &in); err != nil {
		return err
	}
	if in.Decision != "approve" && in.Decision != "deny" {
		return wh.Errorf(wh.EInvalid, `decision must be "approve" or "deny"`)
	}
	if err := in.Signed.Validate(); err != nil {
		return err
	}
	p, err := s.agents.Decide(r.Context(), u, r.PathValue("id"), in.Decision, in.PayloadHash, in.Signed)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"approval": p})
	return nil
}

func (s *Server) postPairingToken(w http.ResponseWriter, r *http.Request, u *chat.User) error {
	if err := s.needAgents(); err != nil {
		return err
	}
	tok, exp, err := s.rooms.CreatePairingToken(r.Context(), u)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, map[string]any{"token": tok, "expiresAt": exp, "command": s.agents.PairCommand(tok)})
	return nil
}

func (s *Server) postPair(w http.ResponseWriter, r *http.Request) error {
	if err := s.needAgents(); err != nil {
		return err
	}
	var in struct {
		Token     string `json:"token"`
		PublicKey string `json:"publicKey"`
		Name      string `json:"name"`
	}
	if err := decode(w, r, &in); err != nil {
		return err
	}
	if in.Token == "" || in.PublicKey == "" {
		return wh.Errorf(wh.EInvalid, "send the pairing token and the bridge's public key")
	}
	b, err := s.rooms.Pair(r.Context(), in.Token, in.PublicKey, in.Name)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, map[string]any{"bridgeId": b.ID, "owner": b.Owner, "natsUrl": s.agents.NATSURL()})
	return nil
}

func (s *Server) getBridges(w http.ResponseWriter, r *http.Request, u *chat.User) error {
	bs, err := s.rooms.Bridges(r.Context(), u)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"bridges": bs})
	return nil
}

func (s *Server) deleteBridge(w http.ResponseWriter, r *http.Request, u *chat.User) error {
	if err := s.rooms.RevokeBridge(r.Context(), u, r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
