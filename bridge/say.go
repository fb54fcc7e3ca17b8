package bridge

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"time"
	"unicode/utf8"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// The owner speaks on the bridge machine: wheelhouse say @owner/agent TEXT
// reaches the agent through the local control socket with the owner's full
// authority (no device signature: being on this machine, as this user, is
// the proof, as for wheelhouse approve). The words are shown to the team as
// the agent's activity in the room and thread they went to ("@alice, on
// the agent's machine: …"); the hub never carries them as a message, so it
// has nothing to echo. The steer id is recorded here: a hub that sends a
// steer with that id later gets it refused.

// MaxSay bounds the words of one wheelhouse say (a hub message's bound).
const MaxSay = 16 << 10

// SayRequest is what the owner said on this machine, and where.
type SayRequest struct {
	Agent string // the agent's name on this bridge
	Text  string
	// Room is the room the words count as coming from ("" = the room of
	// the agent's running turn, else the owner's DM with the agent);
	// Thread the thread root in it (0 = the running turn's thread when
	// Room is its room, else the channel).
	Room   string
	Thread int64
}

// Say delivers the owner's words typed on this machine to one of its agents.
func (b *Bridge) Say(ctx context.Context, req SayRequest) (wire.Receipt, error) {
	r := b.agents[req.Agent]
	if r == nil {
		return wire.Receipt{}, wh.Errorf(wh.ENotFound, "this bridge runs no agent %q (its agents: %s)", req.Agent, strings.Join(keys(b.agents), ", "))
	}
	switch {
	case strings.TrimSpace(req.Text) == "":
		return wire.Receipt{}, wh.Errorf(wh.EInvalid, "say what: the text is empty")
	case len(req.Text) > MaxSay:
		return wire.Receipt{}, wh.Errorf(wh.EInvalid, "the text is %d bytes, more than %d", len(req.Text), MaxSay)
	case !utf8.ValidString(req.Text):
		return wire.Receipt{}, wh.Errorf(wh.EInvalid, "the text is not valid UTF-8")
	case req.Thread < 0:
		return wire.Receipt{}, wh.Errorf(wh.EInvalid, "a thread is a message id")
	}
	room, thread := req.Room, req.Thread
	r.mu.Lock()
	turnRoom, turnThread := "", int64(0)
	if r.turnID != "" { // the running turn's room (turnRoom outlives it)
		turnRoom, turnThread = r.turnRoom, r.thread
	}
	r.mu.Unlock()
	switch {
	case room == "" && turnRoom != "":
		room = turnRoom
		if thread == 0 {
			thread = turnThread
		}
	case room == "":
		room = r.ownerDM()
	case room == turnRoom && thread == 0:
		thread = turnThread
	}
	kind := "room"
	if strings.HasPrefix(room, "dm:") {
		kind, thread = "dm", 0 // a DM has no threads
	}
	id := make([]byte, 8)
	rand.Read(id)
	now := b.hubNow()
	owner := b.cfg.Creds.Owner
	st := wire.Steer{ID: "sl-" + hex.EncodeToString(id), Agent: r.cfg.Name, Owner: owner, Room: room, RoomKind: kind, Sender: owner,
		SenderIsOwner: true, SentAt: now.UTC(), Text: req.Text, Thread: thread, Deadline: now.Add(time.Minute).UTC()}
	if err := st.Validate(); err != nil {
		return wire.Receipt{}, err
	}
	r.markSaid(st.ID)
	done := make(chan wire.Receipt, 1)
	if !r.submit(func() {
		rc := r.decide(st, true)
		rc.SteerID, rc.Agent, rc.At = st.ID, st.Agent, b.cfg.Now().UTC()
		r.remember(st.ID, rc)
		r.journalAdd(JournalEntry{Kind: JournalOwner, Room: room, Status: "said " + rc.Status, TurnID: rc.TurnID, TextHash: TextHash(req.Text), By: "bridge"})
		b.heartbeat()
		done <- rc
	}) {
		return wire.Receipt{}, wh.Errorf(wh.EUnavailable, "@%s has %d messages waiting to be handed to it; say it again later", r.cfg.Name, workQueue)
	}
	select {
	case rc := <-done:
		b.printf("@%s said on this machine to %s in %s: %s", owner, r.handle(), room, rc.Status)
		return rc, nil
	case <-ctx.Done():
		return wire.Receipt{}, wh.Errorf(wh.EUnavailable, "the agent did not take the words in time (they may still be delivered)")
	}
}

// markSaid records a steer id the owner used on this machine; isSaid
// reports one.
func (r *runner) markSaid(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.said == nil {
		r.said = map[string]bool{}
	}
	r.said[id] = true
}

func (r *runner) isSaid(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.said[id]
}

// showSaid shows the team the owner's words said on this machine, as the
// agent's activity in the turn they reached.
func (r *runner) showSaid(st wire.Steer, in Input, turn string, thread int64) {
	if !in.words.said {
		return
	}
	text := "@" + st.Sender + ", on the agent's machine: " + st.Text
	r.b.publish(wire.KindTurn, wire.TurnEvent{Agent: r.cfg.Name, TurnID: turn, Kind: wire.TurnProgress, Text: clipText(text, wire.MaxText),
		Room: st.Room, Thread: thread, At: r.b.cfg.Now().UTC()})
}
