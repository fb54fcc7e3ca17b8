package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/chat"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

const agentCols = `a.id, u.name, a.owner_id, a.name, CASE WHEN a.released = 1 THEN '' ELSE a.bridge_id END, a.harness, a.can_steer, a.policy, a.status, a.turn_id, a.turn_room, a.steered_by,
	COALESCE((SELECT json_group_array(r.name) FROM room_agents ra JOIN rooms r ON r.id = ra.room_id WHERE ra.agent_id = a.id), '[]')`

type scanner interface{ Scan(...any) error }

func scanAgent(sc scanner) (*chat.Agent, error) {
	var a chat.Agent
	var policy, steered, rooms string
	if err := sc.Scan(&a.ID, &a.Owner, &a.OwnerID, &a.Name, &a.Bridge, &a.Harness, &a.CanSteer, &policy, &a.Status, &a.TurnID, &a.TurnRoom, &steered, &rooms); err != nil {
		return nil, err
	}
	a.Handle = a.Owner + "/" + a.Name
	json.Unmarshal([]byte(policy), &a.Effective)
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
func (s *Store) AgentByHandle(ctx context.Context, handle string) (*chat.Agent, error) {
	owner, name, ok := chat.SplitHandle(handle)
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

func (s *Store) queryAgents(ctx context.Context, where string, args ...any) ([]*chat.Agent, error) {
	rows, err := s.db.r.QueryContext(ctx, `SELECT `+agentCols+` FROM agents a JOIN users u ON u.id = a.owner_id `+where+` ORDER BY u.name, a.name`, args...)
	if err != nil {
		return nil, wh.Wrap(err, "list agents")
	}
	defer rows.Close()
	var out []*chat.Agent
	for rows.Next() {
		a, err := scanAgent(rows)
		if err != nil {
			return nil, wh.Wrap(err, "list agents")
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// AgentsOfBridge lists a bridge's agents.
func (s *Store) AgentsOfBridge(ctx context.Context, bridgeID string) ([]*chat.Agent, error) {
	return s.queryAgents(ctx, "WHERE a.bridge_id = ?", bridgeID)
}

// AgentInRoom reports whether the agent is in the room.
func (s *Store) AgentInRoom(ctx context.Context, agentID int64, roomName string) (bool, error) {
	var n int
	err := s.db.stmt(ctx, `SELECT COUNT(*) FROM room_agents ra JOIN rooms r ON r.id = ra.room_id WHERE ra.agent_id = ? AND r.name = ?`).QueryRowContext(ctx, agentID, roomName).Scan(&n)
	if err != nil {
		return false, wh.Wrap(err, "check agent membership")
	}
	return n > 0, nil
}

func agentByHandleTx(ctx context.Context, tx *sql.Tx, handle string) (*chat.Agent, error) {
	owner, name, ok := chat.SplitHandle(handle)
	if !ok {
		return nil, wh.Errorf(wh.EInvalid, "bad agent handle %q", handle)
	}
	a, err := scanAgent(queryRowTx(ctx, tx, `SELECT `+agentCols+` FROM agents a JOIN users u ON u.id = a.owner_id WHERE u.name = ? AND a.name = ?`, owner, name))
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

// AllAgents lists every agent.
func (s *Store) AllAgents(ctx context.Context) ([]*chat.Agent, error) { return s.queryAgents(ctx, "") }

// AgentsInRoom lists the agents in a room.
func (s *Store) AgentsInRoom(ctx context.Context, roomID int64) ([]*chat.Agent, error) {
	return s.queryAgents(ctx, "WHERE a.id IN (SELECT agent_id FROM room_agents WHERE room_id = ?)", roomID)
}

// scanString reads a row of one text column.
func scanString(sc scanner) (string, error) {
	var v string
	err := sc.Scan(&v)
	return v, err
}

// collect reads every row of a query with scan (what names the rows in
// errors); an empty result is an empty list.
func collect[T any](what string, rows *sql.Rows, err error, scan func(scanner) (T, error)) ([]T, error) {
	if err != nil {
		return nil, wh.Wrap(err, "read %s", what)
	}
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, wh.Wrap(err, "read %s", what)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, wh.Wrap(err, "read %s", what)
	}
	return out, nil
}
