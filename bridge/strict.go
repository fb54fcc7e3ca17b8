package bridge

import (
	"slices"

	"github.com/wheelhouse-dev/wheelhouse/authz"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// The gate rule in the runner: words that are not the owner's own typed
// words go only into turns in which every side effect reaches the gate
// (see Gating and authz.StrictPlacement).

// messageData is what a steer carries besides its sender's own words: the
// parts read from its text (never the hub's list of them), another agent's
// output, files.
func messageData(st wire.Steer) []string {
	return authz.WithFiles(authz.MessageData(st.Text, st.SenderIsAgent, authz.QuotedParts(st.Text)), len(st.Files))
}

// strictMode applies the gate rule to SteerMode's answer.
func (r *runner) strictMode(mode authz.Mode, needsStrict bool, turn string) authz.Mode {
	if !needsStrict {
		return mode
	}
	c := authz.StrictCheck{Mode: mode, NeedsStrict: true, Owner: r.b.cfg.Creds.Owner, TurnStrict: turnStrict(r.h, turn)}
	if err := strictTurns(r.h); err != nil {
		c.WhyNot = err.Error()
	} else {
		c.CanStrict = true
	}
	return authz.StrictPlacement(c)
}

// noteData records data kinds that reached the running turn.
func (r *runner) noteData(data []string) {
	if len(data) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, d := range data {
		if !slices.Contains(r.data, d) {
			r.data = append(r.data, d)
		}
	}
}

// turnInputs is what reached the running turn, for the gate.
func (r *runner) turnInputs() authz.TurnInputs {
	r.mu.Lock()
	defer r.mu.Unlock()
	return authz.TurnInputs{Owner: r.b.cfg.Creds.Owner, SteeredBy: slices.Clone(r.steeredBy), Data: slices.Clone(r.data), Unverified: r.unverified}
}

// GatingNotes explains, for the owner, how the gate rule applies to an
// agent: nothing when only the owner may address it or every side effect
// of every turn reaches the gate; otherwise what happens to teammates'
// words, and, for a harness that cannot run a strict turn, that the
// owner's own words need her signature there. bridge run prints these at
// start; doctor shows them.
func GatingNotes(h Harness, pol wire.Policy) []string {
	if err := strictTurns(h); err != nil {
		// Even the owner's words are a teammate's here unless verified.
		unsigned := "your own words reach it only when one of your enrolled devices signed them (your browser, once enrolled) or you say them on this machine (wheelhouse say); unsigned, they count as a teammate's and are refused"
		if pol.Address == wire.AddressOwner || pol.Address == "" {
			return []string{unsigned}
		}
		return []string{"messages from teammates (address = " + pol.Address + ") are refused: " + err.Error() + "; only your own words reach this agent", unsigned}
	}
	if pol.Address == wire.AddressOwner || pol.Address == "" {
		return nil
	}
	who := "teammates (address = " + pol.Address + ")"
	g := h.(Gating) // strictTurns answered nil, so h implements Gating
	if what := g.OwnerTurns(); what != "" {
		return []string{"your own turns " + what + ", so messages from " + who +
			" (and your own pasted text) start their own turns that ask you before every command; a teammate's message while your turn runs waits for it to end instead of steering it"}
	}
	return nil
}
