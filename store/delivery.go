package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/authz"
	"github.com/wheelhouse-dev/wheelhouse/chat"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// decideSteersTx records a steer for every agent mention of a user's
// message, with the hub's decision on it: pending (the router delivers
// it) or rejected with why. Deciding here, in the projection, makes the
// decision part of the log's order and the same on every node; what only
// a live node knows (is the bridge online, rate limits) the router adds.
//
// A reply in a thread reaches only that thread's turns: it steers the
// agent's turn running there (the stale-turn guard holds it to that turn),
// and otherwise it must start a turn of its own in the thread (NewTurn;
// the owner's startOnEnded decides when it follows a turn that ended).
// Outside threads (and in a person's DM with an agent, one conversation) a
// mention steers the turn the agent runs, as the sender saw it.
//
// It only decides and records: the steer rows and the agents' timeline
// entries, then hands the pending steers to the router (decidedTx). The
// receipts reach the room's feed with steerReceiptsFeedTx, once the message
// itself is written.
func decideSteersTx(ctx context.Context, tx *sql.Tx, seq uint64, roomID int64, d chat.MessagePosted, files []chat.File, at time.Time) ([]decidedSteer, error) {
	thread := d.Thread
	if _, _, _, dm := chat.AgentDMParts(d.Room); dm {
		thread = 0
	}
	sum := sha256.Sum256([]byte(d.Text))
	textHash := hex.EncodeToString(sum[:])
	var receipts []decidedSteer
	i := 0
	for _, mn := range d.Mentions {
		if mn.Kind != chat.MentionAgent {
			continue
		}
		handle := mn.Owner + "/" + mn.Agent
		id := chat.SteerID(seq, i)
		i++
		st := steerRow{id: id, messageID: int64(seq), roomID: roomID, sender: d.Author, status: chat.StatusPending}
		var words *wire.Signed
		if w, ok := d.Words[handle]; ok {
			words = &w
			b, _ := json.Marshal(w)
			st.words = string(b)
		}
		agentHandle := "" // as the database spells it
		a, err := steerAgentTx(ctx, tx, handle, roomID)
		switch {
		case err == nil:
			st.agentID, agentHandle = a.ID, a.Owner+"/"+a.Name
			st.stop = chat.IsStopCommand(d.Text, a.Owner, a.Name)
			pol := a.Policy
			dec := authz.MayAddress(authz.AddressCheck{Sender: d.Author, SenderIsMember: true, AgentInRoom: a.InRoom,
				Owner: a.Owner, Address: pol.Address, Allowed: pol.Allowed, Stop: st.stop})
			switch {
			case dec.Reason == authz.ReasonModerated:
				// The owner reads it first: it waits, and the owner is told.
				exp := at.Add(HeldTTL)
				st.status, st.reason, st.detail, st.expires = wire.StatusHeld, wire.ReasonModerated, "waiting for @"+a.Owner, &exp
				noteHeldMention(ctx)
			case !dec.Allow:
				st.status, st.reason, st.detail = wire.StatusRejected, dec.Reason, dec.Message
			case a.Bridge == "":
				st.status, st.reason, st.detail = wire.StatusRejected, wire.ReasonAgentOffline, "@"+handle+" is not run by any bridge now; its owner's machine must announce it"
			default:
				st.thread = thread
				st.expectedTurn = d.Turns[handle]
				switch {
				case st.expectedTurn != "":
				case thread > 0:
					turn, status, err := threadTurnTx(ctx, tx, a.ID, thread)
					if err != nil {
						return nil, err
					}
					switch {
					case turn == "":
						st.newTurn = true
					case status == chat.TurnRunning:
						st.expectedTurn = turn
					default:
						st.newTurn, st.follows = true, turn
					}
				case a.Status == wire.AgentWorking || a.Status == wire.AgentNeedsApproval:
					st.expectedTurn = a.TurnID
				}
			}
		case wh.ErrorCode(err) == wh.ENotFound || wh.ErrorCode(err) == wh.EInvalid:
			st.status, st.reason, st.detail = wire.StatusRejected, wire.ReasonUnknownAgent, "there is no agent @"+handle
		default:
			return nil, err
		}
		if err := st.insertTx(ctx, tx, at); err != nil {
			return nil, err
		}
		if st.agentID != 0 {
			// The timeline keeps what the agent was sent: the text's digest
			// (as the bridge's journal has it); an edit never changes it.
			detail := map[string]any{"steerId": id, "room": d.Room, "messageId": seq, "status": st.status, "reason": st.reason, "textHash": textHash}
			if st.thread > 0 {
				detail["thread"] = st.thread
			}
			if len(d.Files) > 0 {
				detail["files"] = d.Files
			}
			tidx, hash, err := timelineEntryTx(ctx, tx, seq, st.agentID, "steer", st.expectedTurn, d.Author, detail, at)
			if err != nil {
				return nil, err
			}
			if st.status == chat.StatusPending {
				// What PendingSteersOf would read back, and the agent as it is now.
				notePending(ctx, Outbound{
					Receipt:      chat.Receipt{SteerID: id, MessageID: int64(seq), Room: d.Room, Agent: a.Owner + "/" + a.Name, Sender: d.Author, Status: st.status, At: at},
					ExpectedTurn: st.expectedTurn, Stop: st.stop, Text: d.Text, Parts: chat.NonNilParts(d.Parts), SentAt: at,
					Thread: st.thread, NewTurn: st.newTurn, Follows: st.follows, Files: files, Words: words,
					Target: &SteerTarget{AgentID: a.ID, Name: a.Name, Owner: a.Owner, Bridge: a.Bridge, HeadSeq: seq, HeadIdx: tidx, HeadHash: hash},
				})
			}
		}
		// The receipt as receiptFeedTx would read it back from the row just
		// written (TestNewSteerReceiptAsStored).
		r := chat.Receipt{SteerID: id, MessageID: int64(seq), Room: d.Room, Sender: d.Author, Status: st.status, Reason: st.reason, Detail: st.detail,
			At: storedTime(at)}
		r.Agent = agentHandle
		if st.expires != nil {
			exp := storedTime(*st.expires)
			r.Expires = &exp
		}
		receipts = append(receipts, decidedSteer{r: r, held: st.status == wire.StatusHeld})
	}
	// Decided: the router may deliver them while the rest is written.
	decidedTx(ctx)
	return receipts, nil
}

// decidedSteer is a steer decideSteersTx recorded: its receipt, and whether
// its owner is asked first.
type decidedSteer struct {
	r    chat.Receipt
	held bool
}

// steerReceiptsFeedTx sends the room the receipts of the steers a message
// made, and the owners the mentions held for them.
func steerReceiptsFeedTx(ctx context.Context, tx *sql.Tx, seq uint64, roomID int64, room string, members []int64, receipts []decidedSteer, at time.Time) ([]chat.FeedItem, error) {
	if len(receipts) == 0 {
		return nil, nil
	}
	var feed []chat.FeedItem
	for _, dc := range receipts {
		items, err := feedTx(ctx, tx, seq, roomID, 0, members, map[string]any{"id": seq, "type": "receipt", "room": room, "at": at, "data": dc.r})
		if err != nil {
			return nil, err
		}
		feed = append(feed, items...)
		if dc.held {
			if items, err = heldFeedTx(ctx, tx, seq, dc.r.SteerID, at); err != nil {
				return nil, err
			}
			feed = append(feed, items...)
		}
	}
	return feed, nil
}

// steerAgent is what deciding a mention needs of its agent.
type steerAgent struct {
	ID                                  int64
	Owner, Name, Bridge, Status, TurnID string
	Policy                              wire.Policy
	InRoom                              bool // the agent is in the message's room
}

// steerAgentTx reads the agent a mention names (handle as written, which
// SplitHandle normalizes) and whether it is in the room: one prepared
// query, without the rooms list and the rest agentByHandleTx reads.
func steerAgentTx(ctx context.Context, tx *sql.Tx, handle string, roomID int64) (*steerAgent, error) {
	owner, name, ok := chat.SplitHandle(handle)
	if !ok {
		return nil, wh.Errorf(wh.EInvalid, "bad agent handle %q", handle)
	}
	var a steerAgent
	var policy string
	err := queryRowTx(ctx, tx, `SELECT a.id, u.name, a.name, CASE WHEN a.released = 1 THEN '' ELSE a.bridge_id END, a.policy, a.status, a.turn_id,
		EXISTS (SELECT 1 FROM room_agents ra WHERE ra.agent_id = a.id AND ra.room_id = ?)
		FROM agents a JOIN users u ON u.id = a.owner_id WHERE u.name = ? AND a.name = ?`, roomID, owner, name).
		Scan(&a.ID, &a.Owner, &a.Name, &a.Bridge, &policy, &a.Status, &a.TurnID, &a.InRoom)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, &wh.Error{Code: wh.ENotFound, Message: "no agent @" + handle, Reason: wire.ReasonUnknownAgent}
	}
	if err != nil {
		return nil, err
	}
	json.Unmarshal([]byte(policy), &a.Policy) // as scanAgent
	return &a, nil
}

// storedTime is t as it reads back from the database (ts, then parsed).
func storedTime(t time.Time) time.Time {
	back, _ := time.Parse(time.RFC3339Nano, ts(t))
	return back
}

type steerRow struct {
	id                             string
	messageID, roomID, agentID     int64
	sender, status, reason, detail string
	expectedTurn                   string
	stop                           bool
	thread                         int64
	newTurn                        bool
	follows                        string
	expires                        *time.Time
	words                          string // the owner's signed statement (JSON), or ""
}

func (st steerRow) insertTx(ctx context.Context, tx *sql.Tx, at time.Time) error {
	var exp any
	if st.expires != nil {
		exp = ts(*st.expires)
	}
	_, err := execTx(ctx, tx, `INSERT INTO steers (id, message_id, room_id, agent_id, sender, status, reason, detail, expected_turn, stop, updated_at, thread_id, new_turn, follows, expires_at, words)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, st.id, st.messageID, st.roomID, st.agentID, st.sender, st.status, st.reason, st.detail, st.expectedTurn, st.stop, ts(at),
		st.thread, st.newTurn, st.follows, exp, st.words)
	return err
}

// threadTurnTx returns the agent's newest turn in a thread and its status
// ("" if it has none there).
func threadTurnTx(ctx context.Context, tx *sql.Tx, agentID, thread int64) (turn, status string, err error) {
	err = tx.QueryRowContext(ctx, `SELECT turn_id, status FROM turns WHERE agent_id = ? AND thread_id = ? ORDER BY started_at DESC, rowid DESC LIMIT 1`,
		agentID, thread).Scan(&turn, &status)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", nil
	}
	return turn, status, err
}

// turnStartedTx records a turn as running, in the thread it lives in.
func turnStartedTx(ctx context.Context, tx *sql.Tx, agentID int64, turn, room string, thread int64, at time.Time) error {
	_, err := execTx(ctx, tx, `INSERT INTO turns (agent_id, turn_id, room, started_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING`, agentID, turn, room, ts(at))
	if err != nil {
		return err
	}
	_, err = setTurnThreadTx(ctx, tx, agentID, turn, thread)
	return err
}

// turnEndedTx records how a turn ended and finishes the receipts of the
// steers that reached it: the sender learns the outcome. It reports
// whether the turn was still running (a turn ends once).
func turnEndedTx(ctx context.Context, tx *sql.Tx, seq uint64, agentID int64, turn, status, by, detail string, at time.Time) (bool, []chat.FeedItem, error) {
	res, err := execTx(ctx, tx, `INSERT INTO turns (agent_id, turn_id, started_at, ended_at, status, stopped_by) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (agent_id, turn_id) DO UPDATE SET ended_at = excluded.ended_at, status = excluded.status, stopped_by = excluded.stopped_by
		WHERE turns.status = 'running'`, agentID, turn, ts(at), ts(at), status, by)
	if err != nil {
		return false, nil, err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return false, nil, nil // it had ended already
	}
	var feed []chat.FeedItem
	if thread, err := turnThreadTx(ctx, tx, agentID, turn); err != nil {
		return false, nil, err
	} else if thread > 0 {
		if feed, err = threadFeedTx(ctx, tx, seq, thread, at); err != nil {
			return false, nil, err
		}
	}
	final, words := receiptOutcome(status, by, detail)
	ids, err := queryStrings(ctx, tx, `SELECT id FROM steers WHERE agent_id = ? AND turn_id = ? AND status IN ('started', 'steered', 'delivered')`, agentID, turn)
	if err != nil {
		return false, nil, err
	}
	for _, id := range ids {
		if _, err := execTx(ctx, tx, `UPDATE steers SET via = status, status = ?, detail = ?, updated_at = ? WHERE id = ?`, final, words, ts(at), id); err != nil {
			return false, nil, err
		}
		items, err := receiptFeedTx(ctx, tx, seq, id, at)
		if err != nil {
			return false, nil, err
		}
		feed = append(feed, items...)
	}
	return true, feed, nil
}

// receiptOutcome is the final receipt status for a turn's end.
func receiptOutcome(turnStatus, by, detail string) (status, words string) {
	switch turnStatus {
	case wire.TurnCompleted:
		return wire.StatusDone, "the turn is done"
	case wire.TurnInterrupted:
		if by != "" {
			return wire.StatusInterrupted, "stopped by @" + by
		}
		return wire.StatusInterrupted, "the turn was stopped"
	default:
		if detail == "" {
			detail = "the turn failed"
		}
		return wire.StatusFailed, detail
	}
}

// turnOutcomeTx returns how a turn ended, if it did.
func turnOutcomeTx(ctx context.Context, tx *sql.Tx, agentID int64, turn string) (status, by string, ended bool, err error) {
	err = queryRowTx(ctx, tx, `SELECT status, stopped_by FROM turns WHERE agent_id = ? AND turn_id = ?`, agentID, turn).Scan(&status, &by)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", false, nil
	}
	if err != nil {
		return "", "", false, err
	}
	return status, by, status != "running", nil
}

// agentGoneTx ends everything an agent had going when its bridge is gone
// (offline, revoked): the running turn fails, its pending approvals are
// voided (the harness that asked is gone), its queued steers expire. The
// hub's router tells the bridge, should it come back (closed_seq).
func agentGoneTx(ctx context.Context, tx *sql.Tx, seq uint64, a *chat.Agent, why string, at time.Time) ([]chat.FeedItem, error) {
	var feed []chat.FeedItem
	if a.TurnID != "" {
		ended, items, err := turnEndedTx(ctx, tx, seq, a.ID, a.TurnID, wire.TurnFailed, "", why, at)
		if err != nil {
			return nil, err
		}
		if ended {
			if err := timelineTx(ctx, tx, seq, a.ID, "turn.ended", a.TurnID, "", map[string]any{"room": a.TurnRoom, "status": wire.TurnFailed, "reason": why}, at); err != nil {
				return nil, err
			}
		}
		feed = append(feed, items...)
	}
	items, err := voidApprovalsTx(ctx, tx, seq, `agent_id = ?`, []any{a.ID}, why, at)
	if err != nil {
		return nil, err
	}
	feed = append(feed, items...)
	// Queued steers expire (the bridge, should it come back, is told to
	// drop them). Pending ones are still in the router's hands: it ends
	// them at their deadline, after which the bridge never acts on them.
	items, err = expireSteersTx(ctx, tx, seq, `agent_id = ? AND status = 'queued'`, []any{a.ID}, wire.StatusExpired, wire.ReasonAgentOffline, why, at)
	if err != nil {
		return nil, err
	}
	return append(feed, items...), nil
}

// voidApprovalsTx voids the pending approvals that match where.
func voidApprovalsTx(ctx context.Context, tx *sql.Tx, seq uint64, where string, args []any, why string, at time.Time) ([]chat.FeedItem, error) {
	rows, err := queryTx(ctx, tx, `SELECT id, agent_id, turn_id, steered_by FROM approvals WHERE status = 'pending' AND `+where, args...)
	if err != nil {
		return nil, err
	}
	type ap struct {
		id, turn, steered string
		agent             int64
	}
	var aps []ap
	for rows.Next() {
		var x ap
		if err := rows.Scan(&x.id, &x.agent, &x.turn, &x.steered); err != nil {
			rows.Close()
			return nil, err
		}
		aps = append(aps, x)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var feed []chat.FeedItem
	for _, x := range aps {
		if _, err := execTx(ctx, tx, `UPDATE approvals SET status = 'voided', reason = ?, closed_seq = ? WHERE id = ?`, why, seq, x.id); err != nil {
			return nil, err
		}
		if err := timelineTx(ctx, tx, seq, x.agent, "approval.voided", x.turn, "", map[string]any{"approvalId": x.id, "reason": why}, at); err != nil {
			return nil, err
		}
		items, err := approvalFeedTx(ctx, tx, seq, x.id, at)
		if err != nil {
			return nil, err
		}
		feed = append(feed, items...)
	}
	return feed, nil
}

// voidApprovalsSteeredByTx voids the pending approvals of turns in a room
// that a departed member steered.
func voidApprovalsSteeredByTx(ctx context.Context, tx *sql.Tx, seq uint64, roomName, user, why string, at time.Time) ([]chat.FeedItem, error) {
	rows, err := queryTx(ctx, tx, `SELECT id, steered_by FROM approvals WHERE status = 'pending' AND room = ?`, roomName)
	if err != nil {
		return nil, err
	}
	var ids []any
	for rows.Next() {
		var id, steered string
		if err := rows.Scan(&id, &steered); err != nil {
			rows.Close()
			return nil, err
		}
		var by []string
		json.Unmarshal([]byte(steered), &by)
		if authz.VoidOnDeparture(by, user, false) {
			ids = append(ids, id)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var feed []chat.FeedItem
	for _, id := range ids {
		items, err := voidApprovalsTx(ctx, tx, seq, `id = ?`, []any{id}, why, at)
		if err != nil {
			return nil, err
		}
		feed = append(feed, items...)
	}
	return feed, nil
}

// expireSteersTx ends the waiting steers that match where with a final
// status, recording which event ended them.
func expireSteersTx(ctx context.Context, tx *sql.Tx, seq uint64, where string, args []any, status, reason, detail string, at time.Time) ([]chat.FeedItem, error) {
	ids, err := queryStrings(ctx, tx, `SELECT id FROM steers WHERE `+where, args...)
	if err != nil {
		return nil, err
	}
	var feed []chat.FeedItem
	for _, id := range ids {
		if _, err := execTx(ctx, tx, `UPDATE steers SET status = ?, reason = ?, detail = ?, closed_seq = ?, updated_at = ? WHERE id = ?`,
			status, reason, detail, seq, ts(at), id); err != nil {
			return nil, err
		}
		items, err := receiptFeedTx(ctx, tx, seq, id, at)
		if err != nil {
			return nil, err
		}
		feed = append(feed, items...)
	}
	return feed, nil
}

func queryStrings(ctx context.Context, tx *sql.Tx, q string, args ...any) ([]string, error) {
	rows, err := queryTx(ctx, tx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// Outbound is a steer the router is to deliver, with what the bridge needs:
// the message as it was posted (an edit never changes what an agent is
// sent), its thread and files.
type Outbound struct {
	chat.Receipt
	ExpectedTurn string
	Stop         bool
	Text         string
	Parts        []chat.Part
	SentAt       time.Time
	Thread       int64
	NewTurn      bool
	Follows      string
	Files        []chat.File
	// Forward is the owner's signed forward of a moderated mention.
	Forward *wire.Signed
	// Words is the owner's signed message statement for this steer's
	// agent (their own words, signed by a device), relayed unchanged.
	Words *wire.Signed
	// Target is the agent as the projection saw it when it recorded the
	// steer, and the head of its timeline then; nil when the steer was
	// read back from the database (the router looks the agent up).
	Target *SteerTarget
}

// SteerTarget is the agent a steer goes to.
type SteerTarget struct {
	AgentID             int64
	Name, Owner, Bridge string
	HeadSeq             uint64
	HeadIdx             int
	HeadHash            string
}

// outboundQuery reads steers with the message as it was posted.
const outboundQuery = `SELECT s.id, s.message_id, r.name, COALESCE(u.name || '/' || a.name, ''), s.sender, s.status, s.via, s.reason,
		s.detail, s.turn_id, s.expires_at, s.updated_at, s.expected_turn, s.stop,
		` + postedText + `, COALESCE((SELECT e.old_parts FROM message_edits e WHERE e.message_id = m.id ORDER BY e.seq LIMIT 1), m.parts), m.created_at,
		s.thread_id, s.new_turn, s.follows, m.files, s.forwarded_by, s.forward, s.words
		FROM steers s JOIN rooms r ON r.id = s.room_id JOIN messages m ON m.id = s.message_id
		LEFT JOIN agents a ON a.id = s.agent_id LEFT JOIN users u ON u.id = a.owner_id`

// postedText is a message's text as it was posted: an edit never changes
// what an agent is sent (nor what its owner forwards).
const postedText = `COALESCE((SELECT e.old_text FROM message_edits e WHERE e.message_id = m.id ORDER BY e.seq LIMIT 1), m.text)`

// PendingSteersOf lists the steers of a message still waiting for the
// router, with the message they carry. Those of a message applied moments
// ago come from the projector's memory, the rest from the database.
func (s *Store) PendingSteersOf(ctx context.Context, messageID int64) ([]Outbound, error) {
	if e, ok := s.recent.take(messageID, time.Now()); ok {
		return e.out, nil
	}
	rows, err := s.db.stmt(ctx, outboundQuery+` WHERE s.message_id = ? AND s.status = 'pending' ORDER BY s.id`).QueryContext(ctx, messageID)
	return collect("steers", rows, err, scanOutbound)
}

func scanOutbound(sc scanner) (Outbound, error) {
	var o Outbound
	var exp sql.NullString
	var at, parts, sent, files, forward, words string
	if err := sc.Scan(&o.SteerID, &o.MessageID, &o.Room, &o.Agent, &o.Sender, &o.Status, &o.Via, &o.Reason, &o.Detail, &o.TurnID, &exp, &at,
		&o.ExpectedTurn, &o.Stop, &o.Text, &parts, &sent, &o.Thread, &o.NewTurn, &o.Follows, &files, &o.ForwardedBy, &forward, &words); err != nil {
		return o, err
	}
	if words != "" {
		var sig wire.Signed
		if json.Unmarshal([]byte(words), &sig) == nil {
			o.Words = &sig
		}
	}
	json.Unmarshal([]byte(parts), &o.Parts)
	json.Unmarshal([]byte(files), &o.Files)
	o.SentAt, _ = time.Parse(time.RFC3339Nano, sent)
	if forward != "" {
		var sig wire.Signed
		if json.Unmarshal([]byte(forward), &sig) == nil {
			o.Forward = &sig
		}
	}
	o.At, _ = time.Parse(time.RFC3339Nano, at)
	return o, nil
}

// ExpiredQueuedSteers lists queued steers whose expiry passed before cutoff.
func (s *Store) ExpiredQueuedSteers(ctx context.Context, cutoff time.Time) ([]chat.Receipt, error) {
	return s.queryReceipts(ctx, `WHERE s.status = 'queued' AND s.expires_at IS NOT NULL AND s.expires_at < ? LIMIT 100`, ts(cutoff))
}

// ExpiredApprovals lists pending approvals whose expiry passed before cutoff.
func (s *Store) ExpiredApprovals(ctx context.Context, cutoff time.Time) ([]string, error) {
	rows, err := s.db.r.QueryContext(ctx, `SELECT id FROM approvals WHERE status = 'pending' AND expires_at < ? LIMIT 100`, ts(cutoff))
	return collect("approvals", rows, err, scanString)
}

// Reconcile compares what a bridge holds for an agent with the record: it
// reports whether the bridge's running turn has ended here, and which of
// its waiting approvals and queued steers have.
func (s *Store) Reconcile(ctx context.Context, agentID int64, turn string, approvals, steers []string) (turnEnded bool, doneApprovals, doneSteers []string, err error) {
	if turn != "" {
		var status string
		err := s.db.r.QueryRowContext(ctx, `SELECT status FROM turns WHERE agent_id = ? AND turn_id = ?`, agentID, turn).Scan(&status)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return false, nil, nil, wh.Wrap(err, "read turn")
		}
		turnEnded = err == nil && status != "running"
	}
	for _, id := range approvals {
		var status string
		err := s.db.r.QueryRowContext(ctx, `SELECT status FROM approvals WHERE id = ? AND agent_id = ?`, id, agentID).Scan(&status)
		// One not recorded yet (its request is on the way) is not done.
		if err == nil && status != wire.ApprovalPending {
			doneApprovals = append(doneApprovals, id)
		} else if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return false, nil, nil, wh.Wrap(err, "read approval")
		}
	}
	for _, id := range steers {
		var status string
		err := s.db.r.QueryRowContext(ctx, `SELECT status FROM steers WHERE id = ? AND agent_id = ?`, id, agentID).Scan(&status)
		if err == nil && wire.Final(status) {
			doneSteers = append(doneSteers, id)
		} else if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return false, nil, nil, wh.Wrap(err, "read steer")
		}
	}
	return turnEnded, doneApprovals, doneSteers, nil
}

// TurnKnown reports whether the hub has a record of an agent's turn.
func (s *Store) TurnKnown(ctx context.Context, agentID int64, turn string) (bool, error) {
	var n int
	err := s.db.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM turns WHERE agent_id = ? AND turn_id = ?`, agentID, turn).Scan(&n)
	if err != nil {
		return false, wh.Wrap(err, "read turn")
	}
	return n > 0, nil
}
