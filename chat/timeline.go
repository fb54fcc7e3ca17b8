package chat

import (
	"encoding/json"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/authz"
)

// TimelineEntry is one audited event of an agent. Each entry's Hash chains
// over the previous entry's hash for the same agent.
type TimelineEntry struct {
	Seq    uint64          `json:"seq"`
	Idx    int             `json:"idx,omitempty"` // its place among the entries of event Seq
	Kind   string          `json:"kind"`
	TurnID string          `json:"turnId,omitempty"`
	Actor  string          `json:"actor,omitempty"`
	Detail json.RawMessage `json:"detail"`
	At     time.Time       `json:"at"`
	Prev   string          `json:"prevHash"`
	Hash   string          `json:"hash"`
	// Room is where it happened ("" for the agent itself); not hashed: it
	// follows from the detail or the turn.
	Room string `json:"room,omitempty"`
}

// Timestamp formats times for storage and hashing: fixed width, so SQL
// compares them in order.
func Timestamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000000Z07:00") }

// EntryBody is what the chain hashes: everything but the hashes. (An
// entry's place within its event is hashed when it is not the first, so
// entries written before there could be several hash as they did.)
func EntryBody(e TimelineEntry) []byte {
	if e.Idx > 0 {
		b, _ := json.Marshal(struct {
			Seq    uint64          `json:"seq"`
			Idx    int             `json:"idx"`
			Kind   string          `json:"kind"`
			TurnID string          `json:"turnId"`
			Actor  string          `json:"actor"`
			Detail json.RawMessage `json:"detail"`
			At     string          `json:"at"`
		}{e.Seq, e.Idx, e.Kind, e.TurnID, e.Actor, e.Detail, Timestamp(e.At)})
		return b
	}
	b, _ := json.Marshal(struct {
		Seq    uint64          `json:"seq"`
		Kind   string          `json:"kind"`
		TurnID string          `json:"turnId"`
		Actor  string          `json:"actor"`
		Detail json.RawMessage `json:"detail"`
		At     string          `json:"at"`
	}{e.Seq, e.Kind, e.TurnID, e.Actor, e.Detail, Timestamp(e.At)})
	return b
}

// VerifyTimeline checks a full timeline's hash chain; it returns the index
// of the first bad entry, or -1.
func VerifyTimeline(entries []TimelineEntry) int {
	ch := make([]authz.ChainEntry, len(entries))
	for i, e := range entries {
		ch[i] = authz.ChainEntry{Prev: e.Prev, Hash: e.Hash, Body: EntryBody(e)}
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
