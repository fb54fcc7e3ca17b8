package room

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// Agent is an agent as the hub knows it.
type Agent struct {
	ID        int64        `json:"-"`
	Handle    string       `json:"handle"`
	Owner     string       `json:"owner"`
	OwnerID   int64        `json:"-"`
	Name      string       `json:"name"`
	Bridge    string       `json:"bridge,omitempty"`
	Harness   string       `json:"harness"`
	CanSteer  bool         `json:"canSteer"`
	Status    string       `json:"status"`
	TurnID    string       `json:"turnId,omitempty"`
	TurnRoom  string       `json:"turnRoom,omitempty"`
	SteeredBy []string     `json:"steeredBy"`
	Rooms     []string     `json:"rooms"`
	Policy    *wire.Policy `json:"policy,omitempty"` // shown to the owner only
	policy    wire.Policy
	Mode      string `json:"mode,omitempty"`
	ModeText  string `json:"modeText,omitempty"`
}

// EffectivePolicy is the agent's policy (also when hidden from the caller).
func (a *Agent) EffectivePolicy() wire.Policy { return a.policy }

// SplitHandle splits "owner/name" (a leading @ is allowed).
func SplitHandle(h string) (owner, name string, ok bool) {
	h = strings.TrimPrefix(strings.ToLower(strings.TrimSpace(h)), "@")
	owner, name, ok = strings.Cut(h, "/")
	return owner, name, ok && ValidUserName(owner) && ValidUserName(name)
}

const agentCols = `a.id, u.name, a.owner_id, a.name, a.bridge_id, a.harness, a.can_steer, a.policy, a.status, a.turn_id, a.turn_room, a.steered_by,
	COALESCE((SELECT json_group_array(r.name) FROM room_agents ra JOIN rooms r ON r.id = ra.room_id WHERE ra.agent_id = a.id), '[]')`

type scanner interface{ Scan(...any) error }

func scanAgent(sc scanner) (*Agent, error) {
	var a Agent
	var policy, steered, rooms string
	if err := sc.Scan(&a.ID, &a.Owner, &a.OwnerID, &a.Name, &a.Bridge, &a.Harness, &a.CanSteer, &policy, &a.Status, &a.TurnID, &a.TurnRoom, &steered, &rooms); err != nil {
		return nil, err
	}
	a.Handle = a.Owner + "/" + a.Name
	json.Unmarshal([]byte(policy), &a.policy)
	json.Unmarshal([]byte(steered), &a.SteeredBy)
	json.Unmarshal([]byte(rooms), &a.Rooms)
	if a.SteeredBy == nil {
		a.SteeredBy = []string{}
	}
	if a.Rooms == nil {
		a.Rooms = []string{}
	}
	return &a, nil
}

// AgentByHandle looks an agent up by owner/name.
func (s *Service) AgentByHandle(ctx context.Context, handle string) (*Agent, error) {
	owner, name, ok := SplitHandle(handle)
	if !ok {
		return nil, wh.Errorf(wh.EInvalid, "agent handles look like owner/name, not %q", handle)
	}
	a, err := scanAgent(s.db.stmt(ctx, `SELECT `+agentCols+` FROM agents a JOIN users u ON u.id = a.owner_id WHERE u.name = ? AND a.name = ?`).QueryRowContext(ctx, owner, name))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, &wh.Error{Code: wh.ENotFound, Message: "no agent @" + owner + "/" + name, Reason: wire.ReasonUnknownAgent}
	}
	if err != nil {
		return nil, wh.Wrap(err, "look up agent")
	}
	return a, nil
}

func (s *Service) queryAgents(ctx context.Context, where string, args ...any) ([]*Agent, error) {
	rows, err := s.db.r.QueryContext(ctx, `SELECT `+agentCols+` FROM agents a JOIN users u ON u.id = a.owner_id `+where+` ORDER BY u.name, a.name`, args...)
	if err != nil {
		return nil, wh.Wrap(err, "list agents")
	}
	defer rows.Close()
	var out []*Agent
	for rows.Next() {
		a, err := scanAgent(rows)
		if err != nil {
			return nil, wh.Wrap(err, "list agents")
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// Agents lists every agent, with the policy shown to its owner only.
func (s *Service) Agents(ctx context.Context, viewer *User) ([]*Agent, error) {
	as, err := s.queryAgents(ctx, "")
	for _, a := range as {
		a.show(viewer)
	}
	return as, err
}

// AgentsOfBridge lists a bridge's agents.
func (s *Service) AgentsOfBridge(ctx context.Context, bridgeID string) ([]*Agent, error) {
	return s.queryAgents(ctx, "WHERE a.bridge_id = ?", bridgeID)
}

// RoomAgents lists the agents in a room the viewer is a member of.
func (s *Service) RoomAgents(ctx context.Context, viewer *User, roomName string) ([]*Agent, error) {
	r, err := s.RoomFor(ctx, viewer, roomName)
	if err != nil {
		return nil, err
	}
	as, err := s.queryAgents(ctx, "WHERE a.id IN (SELECT agent_id FROM room_agents WHERE room_id = ?)", r.ID)
	for _, a := range as {
		a.show(viewer)
	}
	return as, err
}

func (a *Agent) show(viewer *User) {
	if viewer != nil && viewer.Name == a.Owner {
		p := a.policy
		a.Policy = &p
	}
}

// AgentInRoom reports whether the agent is in the room.
func (s *Service) AgentInRoom(ctx context.Context, agentID int64, roomName string) (bool, error) {
	var n int
	err := s.db.stmt(ctx, `SELECT COUNT(*) FROM room_agents ra JOIN rooms r ON r.id = ra.room_id WHERE ra.agent_id = ? AND r.name = ?`).QueryRowContext(ctx, agentID, roomName).Scan(&n)
	if err != nil {
		return false, wh.Wrap(err, "check agent membership")
	}
	return n > 0, nil
}

func agentByHandleTx(ctx context.Context, tx *sql.Tx, handle string) (*Agent, error) {
	owner, name, ok := SplitHandle(handle)
	if !ok {
		return nil, wh.Errorf(wh.EInvalid, "bad agent handle %q", handle)
	}
	a, err := scanAgent(tx.QueryRowContext(ctx, `SELECT `+agentCols+` FROM agents a JOIN users u ON u.id = a.owner_id WHERE u.name = ? AND a.name = ?`, owner, name))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, &wh.Error{Code: wh.ENotFound, Message: "no agent @" + handle, Reason: wire.ReasonUnknownAgent}
	}
	return a, err
}

// agentAudienceTx is who hears about an agent: its owner and the members of
// every room it is in.
func agentAudienceTx(ctx context.Context, tx *sql.Tx, agentID, ownerID int64) ([]int64, error) {
	return queryIDsTx(ctx, tx, `SELECT DISTINCT user_id FROM members WHERE room_id IN (SELECT room_id FROM room_agents WHERE agent_id = ?)
		UNION SELECT ?`, agentID, ownerID)
}
