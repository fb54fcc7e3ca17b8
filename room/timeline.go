package room

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/authz"
)

// TimelineEntry is one audited event of an agent. Each entry's Hash chains
// over the previous entry's hash for the same agent.
type TimelineEntry struct {
	Seq    uint64          `json:"seq"`
	Kind   string          `json:"kind"`
	TurnID string          `json:"turnId,omitempty"`
	Actor  string          `json:"actor,omitempty"`
	Detail json.RawMessage `json:"detail"`
	At     time.Time       `json:"at"`
	Prev   string          `json:"prevHash"`
	Hash   string          `json:"hash"`
}

// entryBody is what the chain hashes: everything but the hashes.
func entryBody(e TimelineEntry) []byte {
	b, _ := json.Marshal(struct {
		Seq    uint64          `json:"seq"`
		Kind   string          `json:"kind"`
		TurnID string          `json:"turnId"`
		Actor  string          `json:"actor"`
		Detail json.RawMessage `json:"detail"`
		At     string          `json:"at"`
	}{e.Seq, e.Kind, e.TurnID, e.Actor, e.Detail, ts(e.At)})
	return b
}

func timelineTx(ctx context.Context, tx *sql.Tx, seq uint64, agentID int64, kind, turnID, actor string, detail any, at time.Time) error {
	d, err := json.Marshal(detail)
	if err != nil {
		return err
	}
	var prev string
	err = tx.QueryRowContext(ctx, `SELECT hash FROM timeline WHERE agent_id = ? ORDER BY seq DESC LIMIT 1`, agentID).Scan(&prev)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	e := TimelineEntry{Seq: seq, Kind: kind, TurnID: turnID, Actor: actor, Detail: d, At: at.UTC()}
	hash := authz.ChainHash(prev, entryBody(e))
	_, err = tx.ExecContext(ctx, `INSERT INTO timeline (seq, agent_id, kind, turn_id, actor, body, at, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		seq, agentID, kind, turnID, actor, string(d), ts(at), prev, hash)
	return err
}

// Timeline returns an agent's audited events in order (optionally of one
// turn). The owner and members of the agent's rooms may read it.
func (s *Service) Timeline(ctx context.Context, viewer *User, handle, turnID string) ([]TimelineEntry, error) {
	a, err := s.AgentByHandle(ctx, handle)
	if err != nil {
		return nil, err
	}
	if viewer.Name != a.Owner {
		ok := false
		for _, r := range a.Rooms {
			if m, _ := s.IsMember(ctx, r, viewer.Name); m {
				ok = true
				break
			}
		}
		if !ok {
			return nil, wh.Errorf(wh.EForbidden, "only the owner and members of @%s's rooms can read its timeline", a.Handle)
		}
	}
	q := `SELECT seq, kind, turn_id, actor, body, at, prev_hash, hash FROM timeline WHERE agent_id = ?`
	args := []any{a.ID}
	if turnID != "" {
		q += ` AND turn_id = ?`
		args = append(args, turnID)
	}
	rows, err := s.db.r.QueryContext(ctx, q+` ORDER BY seq`, args...)
	if err != nil {
		return nil, wh.Wrap(err, "read timeline")
	}
	defer rows.Close()
	out := []TimelineEntry{}
	for rows.Next() {
		var e TimelineEntry
		var body, at string
		if err := rows.Scan(&e.Seq, &e.Kind, &e.TurnID, &e.Actor, &body, &at, &e.Prev, &e.Hash); err != nil {
			return nil, wh.Wrap(err, "read timeline")
		}
		e.Detail = json.RawMessage(body)
		e.At, _ = time.Parse(time.RFC3339Nano, at)
		out = append(out, e)
	}
	return out, rows.Err()
}

// TimelineHead is the newest entry of an agent's timeline as this node has
// applied it (zero before the first). The hub sends it to the bridge with
// each steer and decision; the bridge journals it, so that a later rewrite
// of the timeline up to there, or the loss of its tail, shows.
func (s *Service) TimelineHead(ctx context.Context, agentID int64) (seq uint64, hash string, err error) {
	err = s.db.r.QueryRowContext(ctx, `SELECT seq, hash FROM timeline WHERE agent_id = ? ORDER BY seq DESC LIMIT 1`, agentID).Scan(&seq, &hash)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, "", nil
	}
	return seq, hash, err
}

// VerifyTimeline checks a full timeline's hash chain; it returns the index
// of the first bad entry, or -1.
func VerifyTimeline(entries []TimelineEntry) int {
	ch := make([]authz.ChainEntry, len(entries))
	for i, e := range entries {
		ch[i] = authz.ChainEntry{Prev: e.Prev, Hash: e.Hash, Body: entryBody(e)}
	}
	if len(entries) > 0 && entries[0].Prev != authz.ChainGenesis {
		return 0
	}
	bad, ok := authz.VerifyChain(ch)
	if ok {
		return -1
	}
	return bad
}
