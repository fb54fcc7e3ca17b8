package bridge

import (
	"fmt"
	"strconv"

	"github.com/wheelhouse-dev/wheelhouse/authz"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// The owner's own words. A hub labels a message as the owner's (sender,
// senderIsOwner), but a hub can write any label: the bridge gives owner
// authority — a clean turn, the owner's auto-approve list, the harness's
// non-strict modes, the owner's DM grant — only to words whose signed
// message statement (wire.Steer.Words, signed by one of the owner's devices
// enrolled here) verifies against exactly the bytes received, for the turn
// they reach, or to words typed on this machine (wheelhouse say). The
// answer is decided once, when the steer arrives; a queued entry keeps it.

// ownerWords is the bridge's verdict on a steer's words.
type ownerWords struct {
	// verified: the words are the owner's own (signed, or typed here).
	verified bool
	// why says, when the hub labelled the words as the owner's but they are
	// not verified, why (for the receipt and the terminal).
	why string
	// said: the owner typed them on this machine (wheelhouse say).
	said bool
}

// labelledOwner: the hub says the owner wrote these words.
func (r *runner) labelledOwner(st wire.Steer) bool {
	return st.SenderIsOwner && !st.SenderIsAgent && st.Sender == r.b.cfg.Creds.Owner
}

// checkWords decides whether st's words are the owner's own. running is the
// turn that runs now ("" when idle), lastEnded the turn that ended last.
// It is called once per steer, before the steer is placed; a statement that
// verifies has its nonce recorded in the trust store first.
func (r *runner) checkWords(st wire.Steer, running, lastEnded string) ownerWords {
	if !r.labelledOwner(st) {
		return ownerWords{} // a teammate's words: strict, and nothing to explain
	}
	owner := r.b.cfg.Creds.Owner
	if st.Words == nil {
		return ownerWords{why: fmt.Sprintf("the message carries no signature from one of @%s's devices enrolled on the agent's machine (a browser without an enrolled device, or an API token, posts unsigned words); enroll this browser under your name → Devices for your words to count as yours", owner)}
	}
	var files []authz.StatementFile
	for _, f := range st.Files {
		if f.SHA256 == "" {
			return ownerWords{why: "the hub sent no SHA-256 for the file " + f.Name + ", so the bridge cannot tell that it is the file you signed"}
		}
		files = append(files, authz.StatementFile{Name: f.Name, SHA256: f.SHA256})
	}
	// The words reach the running turn, or a new one (NewTurn, or the agent
	// is idle): the statement must name that turn, "" for a new turn — or,
	// for a new turn, the ended turn it continues (one this bridge saw end,
	// or the one the steer follows, if that is not the running turn).
	target := running
	if st.NewTurn {
		target = ""
	}
	want := authz.Statement{Kind: authz.StatementMessage, Agent: r.handleName(), Room: st.Room, Thread: threadID(st.Thread),
		TextHash: authz.TextHash(st.Text), Files: files, Turn: target}
	if signed, err := authz.ParseStatement([]byte(st.Words.Statement)); err == nil && signed.Turn != target {
		continues := target == "" && signed.Turn != "" &&
			((running == "" && signed.Turn == lastEnded) || (st.NewTurn && signed.Turn == st.Follows && signed.Turn != running))
		if !continues {
			// Not a forgery: the turn changed between the owner's view and
			// the bridge's. Nothing is used up.
			return ownerWords{why: fmt.Sprintf("you signed it for %s, but here it reaches %s", turnPhrase(signed.Turn), turnPhrase(target))}
		}
		want.Turn = signed.Turn
	}
	_, d := r.b.trust.checkSigned(st.Words, want)
	if !d.Allow {
		r.b.refuse(r, authz.StatementMessage, st.ID, signedDevice(st.Words), d)
		return ownerWords{why: "its signature did not verify: " + d.Message}
	}
	return ownerWords{verified: true}
}

func turnPhrase(turn string) string {
	if turn == "" {
		return "a new turn"
	}
	return "turn " + turn
}

// threadID is a thread root as a statement names it ("" for the channel).
func threadID(t int64) string {
	if t == 0 {
		return ""
	}
	return strconv.FormatInt(t, 10)
}

// unverifiedNote is the sentence a receipt starts with when words labelled
// as the owner's are placed as a teammate's.
func unverifiedNote(owner, why string) string {
	return fmt.Sprintf("Treated as a teammate's words (every command asks @%s first, and the owner's own settings do not apply): %s.", owner, why)
}

// roomCeiling is the ceiling st's words get in their room: the room's grant,
// except that only the owner's verified words get the owner's DM grant; other
// words said to come from that DM get UnverifiedDMCeiling of the agent's
// rooms. ok is false when the agent may not act there at all.
func (r *runner) roomCeiling(room string, verified bool) (string, bool) {
	if room == r.ownerDM() && !verified {
		var cs []string
		for _, g := range r.b.trust.grants(r.cfg.Name) {
			cs = append(cs, g.Ceiling)
		}
		return authz.UnverifiedDMCeiling(cs), true
	}
	return r.roomGrant(room)
}
