package authz

import (
	"slices"
	"strings"
)

// Data kinds: text in a turn's input that is not its sender's own typed
// words. The part kinds come from the message (see Part); DataPeerAgent is a
// whole message written by another agent.
const (
	DataCode      = "code"
	DataQuote     = "quote"
	DataForwarded = "forwarded"
	DataPasted    = "pasted" // a part of any other kind
	DataPeerAgent = fencePeer
	DataFile      = "file" // a file posted with the message
)

// MessageData lists the kinds of data in one message, in a fixed order,
// each once: another agent's message is data as a whole; a person's
// message carries the kinds of its quoted, pasted and forwarded parts that
// cover any text. Nil means the message is entirely its sender's own words.
func MessageData(text string, senderIsAgent bool, parts []Part) []string {
	if senderIsAgent {
		return []string{DataPeerAgent}
	}
	var kinds []string
	for _, p := range normalizeParts(text, parts) {
		kinds = append(kinds, p.Kind)
	}
	return sortData(kinds)
}

var dataOrder = []string{DataPasted, DataCode, DataQuote, DataForwarded, DataPeerAgent, DataFile}

// sortData dedupes kinds into dataOrder; unknown kinds count as pasted.
func sortData(kinds []string) []string {
	var out []string
	for _, k := range dataOrder {
		if slices.ContainsFunc(kinds, func(x string) bool { return x == k || (k == DataPasted && !slices.Contains(dataOrder, x)) }) {
			out = append(out, k)
		}
	}
	return out
}

// WithFiles adds DataFile to a message's data kinds when files came with it.
func WithFiles(kinds []string, files int) []string {
	if files == 0 {
		return kinds
	}
	return sortData(append(kinds, DataFile))
}

// TurnInputs is what reached one turn, as far as approvals care: who
// steered it and what kinds of data came with the words.
type TurnInputs struct {
	Owner     string
	SteeredBy []string
	Data      []string
	// Unverified: words reached the turn that the hub labelled as the
	// owner's but the bridge could not verify as theirs (no valid signed
	// message statement): they count as a teammate's.
	Unverified bool
}

// Add records one more message that reached the turn.
func (t *TurnInputs) Add(sender string, data []string) {
	if !slices.Contains(t.SteeredBy, sender) {
		t.SteeredBy = append(t.SteeredBy, sender)
	}
	t.Data = sortData(append(slices.Clone(t.Data), data...))
}

// Tainted: someone other than the owner steered the turn, or words the
// bridge could not verify as the owner's reached it.
func (t TurnInputs) Tainted() bool { return t.Unverified || Tainted(t.Owner, t.SteeredBy) }

// DataTainted: text that is not a person's own typed words (pasted,
// quoted, forwarded, another agent's output) reached the turn.
func (t TurnInputs) DataTainted() bool { return len(t.Data) > 0 }

// Clean: every input of the turn is the owner's own typed words. Only a
// clean turn may use the owner's auto-approve list.
func (t TurnInputs) Clean() bool { return !t.Tainted() && !t.DataTainted() }

// NeedsOwnerDecision reports whether a tool call in this turn needs an
// explicit owner decision: always unless the turn is clean and the tool is
// on the owner's auto-approve list (matched exactly).
func (t TurnInputs) NeedsOwnerDecision(tool string, autoApprove []string) bool {
	return NeedsOwnerDecision(!t.Clean(), tool, autoApprove)
}

// AutoApprovable reports whether the owner's auto-approve list may decide
// a call: only in a clean turn, only for a listed tool, and never for a
// call that leaves the sandbox the turn otherwise runs in (that is more
// than the owner's configuration grants, so the owner sees it).
func (t TurnInputs) AutoApprovable(tool string, autoApprove []string, leavesSandbox bool) bool {
	return !leavesSandbox && !t.NeedsOwnerDecision(tool, autoApprove)
}

// MessageNeedsStrict reports whether a message may only go into a turn in
// which every side effect reaches the owner's approval gate: any message
// that is not the owner's own typed words (a teammate's, an agent's, the
// owner's with pasted, quoted or forwarded data in it, or words labelled as
// the owner's that the bridge did not verify). verified: the bridge checked
// the owner's signed message statement over exactly these words (or they
// were typed on the bridge machine); a hub's label alone is not enough.
func MessageNeedsStrict(owner, sender string, verified, senderIsAgent bool, data []string) bool {
	return !verified || senderIsAgent || !isOwner(sender, owner) || len(data) > 0
}

// DataPhrase says in words what data reached a turn, for the approval card
// and the terminal: "pasted code and a quote". Empty for none.
func DataPhrase(kinds []string) string {
	words := map[string]string{DataPasted: "pasted text", DataCode: "pasted code", DataQuote: "a quote",
		DataForwarded: "a forwarded message", DataPeerAgent: "another agent's output", DataFile: "an attached file"}
	var out []string
	for _, k := range sortData(kinds) {
		out = append(out, words[k])
	}
	switch len(out) {
	case 0:
		return ""
	case 1:
		return out[0]
	}
	return strings.Join(out[:len(out)-1], ", ") + " and " + out[len(out)-1]
}

// MessageDataKinds keeps the known data kinds of a list that came over the
// wire, in order, each once (unknown kinds count as pasted).
func MessageDataKinds(kinds []string) []string { return sortData(kinds) }
