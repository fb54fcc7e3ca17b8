package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/authz"
	"github.com/wheelhouse-dev/wheelhouse/chat"
)

func timelineTx(ctx context.Context, tx *sql.Tx, seq uint64, agentID int64, kind, turnID, actor string, detail any, at time.Time) error {
	_, _, err := timelineEntryTx(ctx, tx, seq, agentID, kind, turnID, actor, detail, at)
	return err
}

// timelineEntryTx appends an entry to the agent's timeline and returns
// its place in the event and its hash (the chain's new head).
func timelineEntryTx(ctx context.Context, tx *sql.Tx, seq uint64, agentID int64, kind, turnID, actor string, detail any, at time.Time) (idx int, hash string, err error) {
	d, err := json.Marshal(detail)
	if err != nil {
		return 0, "", err
	}
	var prev string
	err = queryRowTx(ctx, tx, `SELECT hash FROM timeline WHERE agent_id = ? ORDER BY seq DESC, idx DESC LIMIT 1`, agentID).Scan(&prev)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, "", err
	}
	if err := queryRowTx(ctx, tx, `SELECT COALESCE(MAX(idx) + 1, 0) FROM timeline WHERE seq = ?`, seq).Scan(&idx); err != nil {
		return 0, "", err
	}
	e := chat.TimelineEntry{Seq: seq, Idx: idx, Kind: kind, TurnID: turnID, Actor: actor, Detail: d, At: at.UTC()}
	hash = authz.ChainHash(prev, chat.EntryBody(e))
	room, err := entryRoomTx(ctx, tx, agentID, turnID, d)
	if err != nil {
		return 0, "", err
	}
	_, err = execTx(ctx, tx, `INSERT INTO timeline (seq, idx, agent_id, kind, turn_id, actor, body, at, prev_hash, hash, room) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		seq, idx, agentID, kind, turnID, actor, string(d), ts(at), prev, hash, room)
	return idx, hash, err
}

// entryRoomTx is the room where a timeline entry happened: the one its
// detail names, else its turn's; "" for what concerns the agent itself.
func entryRoomTx(ctx context.Context, tx *sql.Tx, agentID int64, turnID string, detail []byte) (string, error) {
	var d struct {
		Room string `json:"room"`
	}
	if json.Unmarshal(detail, &d) == nil && d.Room != "" {
		return d.Room, nil
	}
	if turnID == "" {
		return "", nil
	}
	var room string
	err := queryRowTx(ctx, tx, `SELECT room FROM turns WHERE agent_id = ? AND turn_id = ?`, agentID, turnID).Scan(&room)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return room, err
}

// TimelineOf returns an agent's audited events in order (optionally of one turn).
func (s *Store) TimelineOf(ctx context.Context, agentID int64, turnID string) ([]chat.TimelineEntry, error) {
	q := `SELECT seq, idx, kind, turn_id, actor, body, at, prev_hash, hash, room FROM timeline WHERE agent_id = ?`
	args := []any{agentID}
	if turnID != "" {
		q += ` AND turn_id = ?`
		args = append(args, turnID)
	}
	rows, err := s.db.r.QueryContext(ctx, q+` ORDER BY seq, idx`, args...)
	if err != nil {
		return nil, wh.Wrap(err, "read timeline")
	}
	defer rows.Close()
	out := []chat.TimelineEntry{}
	for rows.Next() {
		var e chat.TimelineEntry
		var body, at string
		if err := rows.Scan(&e.Seq, &e.Idx, &e.Kind, &e.TurnID, &e.Actor, &body, &at, &e.Prev, &e.Hash, &e.Room); err != nil {
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
func (s *Store) TimelineHead(ctx context.Context, agentID int64) (seq uint64, idx int, hash string, err error) {
	err = s.db.r.QueryRowContext(ctx, `SELECT seq, idx, hash FROM timeline WHERE agent_id = ? ORDER BY seq DESC, idx DESC LIMIT 1`, agentID).Scan(&seq, &idx, &hash)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, 0, "", nil
	}
	return seq, idx, hash, err
}

// applyAgentJournal adds a bridge's report of its journal's head to the
// agent's timeline ("journal.head"): the anchor inspect --verify holds the
// bridge's journal against. A report from a bridge that does not serve the
// agent, or the same head again, adds nothing.
func applyAgentJournal(ctx context.Context, tx *sql.Tx, seq uint64, ev chat.Event) ([]chat.FeedItem, error) {
	var d chat.AgentJournal
	if err := decode(ev, &d); err != nil {
		return nil, err
	}
	a, err := agentByHandleTx(ctx, tx, d.Handle)
	if err != nil {
		return nil, err
	}
	if a.Bridge != d.Bridge {
		return nil, wh.Errorf(wh.EForbidden, "bridge %s does not serve @%s: its journal head is not recorded", d.Bridge, d.Handle)
	}
	var last string
	err = queryRowTx(ctx, tx, `SELECT body FROM timeline WHERE agent_id = ? AND kind = 'journal.head' ORDER BY seq DESC, idx DESC LIMIT 1`, a.ID).Scan(&last)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}
	detail := map[string]any{"n": d.Head.N, "hash": d.Head.Hash, "mac": d.Head.MAC, "bridge": d.Bridge}
	if b, _ := json.Marshal(detail); string(b) == last {
		return nil, nil
	}
	return nil, timelineTx(ctx, tx, seq, a.ID, "journal.head", "", "", detail, ev.At)
}
