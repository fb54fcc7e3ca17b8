package web

import (
	"context"
	"net/http"

	"github.com/wheelhouse-dev/wheelhouse/room"
)

// AgentAPI is the steering surface the hub provides to the web server:
// delivering mentions, receipts, agents, consent and approvals.
type AgentAPI interface {
	// Deliver routes every agent mention of m and returns the receipts known
	// within a short wait (final ones where possible).
	Deliver(ctx context.Context, sender *room.User, m *room.Message) []any
	// ReceiptsFor returns the receipts of the given messages the user sent.
	ReceiptsFor(ctx context.Context, u *room.User, ms []room.Message) []any
	// MemberLeft reacts to a member leaving a room (voids approvals).
	MemberLeft(ctx context.Context, roomName, user string)
	// OpenAgentDM opens a DM with an agent (owner consent applies).
	OpenAgentDM(ctx context.Context, u *room.User, handle string) (*room.Room, error)
	// Routes registers the agent endpoints.
	Routes(mux *http.ServeMux, authed func(func(http.ResponseWriter, *http.Request, *room.User) error) http.Handler)
}

func (s *Server) agentRoutes(mux *http.ServeMux) {
	if s.agents == nil {
		return
	}
	s.agents.Routes(mux, func(h func(http.ResponseWriter, *http.Request, *room.User) error) http.Handler {
		return s.authed(h)
	})
}
