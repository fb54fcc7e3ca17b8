package bridge

import (
	"crypto/hmac"
	"fmt"
	"time"
)

// The journal against its own key and against the heads the bridge
// reported to the hub: what shows a journal edited or cut on the bridge's
// machine.

// checkJournalKey checks each entry's MAC under key. Entries written before
// journals were keyed, and those of an earlier pairing's key, are noted, not
// failed — but only before the first entry of the current key: after it an
// unkeyed or foreign entry was written by someone without the key. It
// returns how many leading entries it vouches for.
func checkJournalKey(jr []JournalEntry, key []byte) (int, []Finding) {
	var out []Finding
	if len(jr) == 0 {
		return 0, nil
	}
	if key == nil {
		return len(jr), []Finding{{FindingNote, "this machine has no bridge credentials (pass --credentials): the journal's MACs were not checked, only its chain"}}
	}
	id := JournalKeyID(key)
	unkeyed, foreign, current := 0, 0, false
	for i, e := range jr {
		switch {
		case e.Key == "" && e.MAC == "" && !current && foreign == 0:
			unkeyed++
		case e.Key == "" || (e.Key != id && current):
			return i, append(out, Finding{FindingJournal, fmt.Sprintf("entry %d (%s) is not bound to the bridge's key although entries before it are: it was written by someone without the key, so the journal proves nothing from there", e.N, e.Kind)})
		case e.Key != id:
			foreign++
		case !hmac.Equal([]byte(e.MAC), []byte(JournalMAC(key, e.Hash))):
			return i, append(out, Finding{FindingJournal, fmt.Sprintf("entry %d (%s at %s) does not carry the bridge's MAC: it was written or changed by someone without the bridge's key, so the journal proves nothing from there", e.N, e.Kind, e.At.Format(time.RFC3339))})
		default:
			current = true
		}
	}
	if unkeyed > 0 {
		out = append(out, Finding{FindingNote, fmt.Sprintf("entries 1-%d were written before the journal was keyed: only their chain was checked", unkeyed)})
	}
	if foreign > 0 {
		out = append(out, Finding{FindingNote, fmt.Sprintf("%d entries after them were written under another key (an earlier pairing of the bridge): their MACs were not checked", foreign)})
	}
	return len(jr), out
}

// checkAnchors holds the journal, as read, against the heads the bridge
// reported to the hub ("journal.head" entries): a head the journal no
// longer reaches means entries were cut from its end; one it reaches with
// another hash means it was rewritten up to there.
func checkAnchors(hub []HubEntry, jr []JournalEntry, key []byte) []Finding {
	var out []Finding
	byN := map[uint64]JournalEntry{}
	var lastN uint64
	for _, e := range jr {
		if _, dup := byN[e.N]; !dup {
			byN[e.N] = e
		}
		lastN = max(lastN, e.N)
	}
	var top *HubEntry
	var topN uint64
	foreign := 0
	for i, h := range hub {
		if h.Kind != "journal.head" {
			continue
		}
		n, hash, mac := uint64(detailInt(h.Detail, "n")), detailString(h.Detail, "hash"), detailString(h.Detail, "mac")
		if key != nil && !hmac.Equal([]byte(mac), []byte(JournalMAC(key, hash))) {
			foreign++ // an earlier pairing's, or made up by the hub: it proves nothing about this journal
			continue
		}
		e, ok := byN[n]
		switch {
		case ok && e.Hash != hash:
			out = append(out, Finding{FindingJournal, fmt.Sprintf("entry %d of the journal has hash %s, but the bridge reported entry %d with hash %s to the hub (timeline seq %d, %s): the journal was rewritten up to there", n, short(e.Hash), n, short(hash), h.Seq, h.At.Format(time.RFC3339))})
		case !ok && n <= lastN:
			out = append(out, Finding{FindingCut, fmt.Sprintf("entry %d, which the bridge reported to the hub as its journal's head (timeline seq %d, %s), is gone from the journal", n, h.Seq, h.At.Format(time.RFC3339))})
		case !ok && n > topN:
			top, topN = &hub[i], n
		}
	}
	if top != nil {
		gone := fmt.Sprintf("entries %d-%d were", lastN+1, topN)
		if topN == lastN+1 {
			gone = fmt.Sprintf("entry %d was", topN)
		}
		out = append(out, Finding{FindingCut, fmt.Sprintf("the journal ends at entry %d, but the bridge reported entry %d (hash %s) to the hub as its head (timeline seq %d, %s): %s cut from the journal's end",
			lastN, topN, short(detailString(top.Detail, "hash")), top.Seq, top.At.Format(time.RFC3339), gone)})
	}
	if foreign > 0 {
		out = append(out, Finding{FindingNote, fmt.Sprintf("%d journal heads in the timeline do not carry this bridge's MAC (an earlier pairing, or not the bridge's): they were not used", foreign)})
	}
	return out
}
