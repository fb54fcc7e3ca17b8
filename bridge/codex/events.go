package codex

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/wheelhouse-dev/wheelhouse/bridge"
)

// Bounds on what we keep per session.
const (
	maxItems       = 4096    // live items tracked at once
	maxMessageText = 1 << 20 // accumulated deltas per agent message
	toolOutputMax  = 400     // command output kept in a tool summary
)

// liveItem is an item codex started and has not completed.
type liveItem struct {
	threadID, turnID string
	seq              int
	item             threadItem
	text             strings.Builder // agentMessage deltas so far
}

func itemKey(threadID, itemID string) string { return threadID + "/" + itemID }

// onNotify turns codex notifications into bridge events. It runs on the
// reader goroutine; events are emitted outside the session lock.
func (s *session) onNotify(method string, params json.RawMessage) {
	var evs []bridge.Event
	var err error
	switch method {
	case noteTurnStarted:
		var n turnNote
		if err = json.Unmarshal(params, &n); err == nil {
			evs = s.turnStarted(n)
		}
	case noteTurnCompleted:
		var n turnNote
		if err = json.Unmarshal(params, &n); err == nil {
			evs = s.turnCompleted(n)
		}
	case noteItemStarted:
		var n itemNote
		if err = json.Unmarshal(params, &n); err == nil {
			s.itemStarted(n)
		}
	case noteAgentDelta:
		var n deltaNote
		if err = json.Unmarshal(params, &n); err == nil {
			s.agentDelta(n)
		}
	case noteItemCompleted:
		var n itemNote
		if err = json.Unmarshal(params, &n); err == nil {
			evs = s.itemCompleted(n)
		}
	case noteError:
		var n errorNote
		if err = json.Unmarshal(params, &n); err == nil {
			evs = s.turnError(n)
		}
	case noteRequestResolved:
		var n resolvedNote
		if err = json.Unmarshal(params, &n); err == nil {
			s.resolved(n.RequestID)
		}
	case noteSettingsUpdated:
		var n settingsNote
		if err = json.Unmarshal(params, &n); err == nil {
			s.settingsUpdated(n)
		}
	case noteRawItem:
		var n rawItemNote
		if err = json.Unmarshal(params, &n); err == nil {
			evs = s.rawItem(n)
		}
	default:
		return // the protocol has many more; we need none of them
	}
	if err != nil {
		s.log.Warn("codex: undecodable notification", "method", method, "err", err)
		return
	}
	for _, e := range evs {
		s.h.emit(e)
	}
}

func (s *session) turnStarted(n turnNote) []bridge.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n.ThreadID != s.threadID || n.Turn.ID == "" {
		return nil
	}
	if !s.isEnded(n.Turn.ID) {
		s.turn = n.Turn.ID
	}
	return []bridge.Event{{Kind: bridge.EventTurnStarted, TurnID: n.Turn.ID}}
}

func (s *session) turnCompleted(n turnNote) []bridge.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	ours := n.ThreadID == s.threadID
	evs := s.finishTurnItems(n.ThreadID, n.Turn.ID, ours)
	if !ours {
		return nil
	}
	text := s.turnErr[n.Turn.ID]
	if n.Turn.Error != nil && n.Turn.Error.Message != "" {
		text = n.Turn.Error.Message
	}
	s.markEnded(n.Turn.ID)
	s.forgetCalls(n.Turn.ID)
	return append(evs, bridge.Event{Kind: bridge.EventTurnEnded, TurnID: n.Turn.ID, Status: n.Turn.Status, Text: text})
}

// finishTurnItems forgets the items of a finished turn. Agent messages that
// started but never completed (a steer aborts the model stream mid-message)
// become messages with the text streamed so far, when asked to and when
// there is any. Callers hold s.mu.
func (s *session) finishTurnItems(threadID, turnID string, emit bool) []bridge.Event {
	var orphans []*liveItem
	for k, it := range s.items {
		if it.threadID != threadID || it.turnID != turnID {
			continue
		}
		delete(s.items, k)
		if emit && it.item.Type == "agentMessage" && strings.TrimSpace(it.text.String()) != "" {
			orphans = append(orphans, it)
		}
	}
	sort.Slice(orphans, func(i, j int) bool { return orphans[i].seq < orphans[j].seq })
	var evs []bridge.Event
	for _, it := range orphans {
		evs = append(evs, bridge.Event{Kind: bridge.EventMessage, TurnID: turnID, Text: it.text.String()})
	}
	return evs
}

// failTurn ends the running turn because the process died.
func (s *session) failTurn(reason string) []bridge.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	turn := s.turn
	if turn == "" {
		return nil
	}
	evs := s.finishTurnItems(s.threadID, turn, true)
	s.markEnded(turn)
	return append(evs, bridge.Event{Kind: bridge.EventTurnEnded, TurnID: turn, Status: "failed", Text: reason})
}

func (s *session) itemStarted(n itemNote) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch n.Item.Type {
	case "agentMessage", "commandExecution", "fileChange":
	default:
		return
	}
	if len(s.items) >= maxItems {
		s.log.Warn("codex: too many live items; not tracking another", "item", n.Item.ID)
		return
	}
	s.callStarted(n.ThreadID, n.TurnID, n.Item.ID) // a command, or a patch codex intercepted from one
	s.itemSeq++
	it := &liveItem{threadID: n.ThreadID, turnID: n.TurnID, seq: s.itemSeq, item: n.Item}
	it.text.WriteString(n.Item.Text)
	s.items[itemKey(n.ThreadID, n.Item.ID)] = it
}

func (s *session) agentDelta(n deltaNote) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if it := s.items[itemKey(n.ThreadID, n.ItemID)]; it != nil && it.text.Len()+len(n.Delta) <= maxMessageText {
		it.text.WriteString(n.Delta)
	}
}

// item returns what item/started said about an item (nil if unknown).
func (s *session) item(threadID, itemID string) *threadItem {
	s.mu.Lock()
	defer s.mu.Unlock()
	if it := s.items[itemKey(threadID, itemID)]; it != nil {
		cp := it.item
		return &cp
	}
	return nil
}

func (s *session) itemCompleted(n itemNote) []bridge.Event {
	s.mu.Lock()
	key := itemKey(n.ThreadID, n.Item.ID)
	live := s.items[key]
	delete(s.items, key)
	ours := n.ThreadID == s.threadID
	s.callDone(n.ThreadID, n.TurnID, n.Item.ID)
	unasked := n.Item.Type == "commandExecution" && s.turnPolicyOf(n.TurnID).asksFirst() && s.asked[key] == 0 && n.Item.Status != "declined"
	s.mu.Unlock()
	if !ours {
		return nil
	}
	if unasked {
		return s.ranUnasked(n)
	}
	it := n.Item
	switch it.Type {
	case "agentMessage":
		text := it.Text
		if text == "" && live != nil {
			text = live.text.String()
		}
		if strings.TrimSpace(text) == "" {
			return nil
		}
		return []bridge.Event{{Kind: bridge.EventMessage, TurnID: n.TurnID, Text: text}}
	case "commandExecution":
		return []bridge.Event{{Kind: bridge.EventTool, TurnID: n.TurnID, Text: commandSummary(it)}}
	case "fileChange":
		if len(it.Changes) == 0 && live != nil {
			it.Changes = live.item.Changes
		}
		return []bridge.Event{{Kind: bridge.EventTool, TurnID: n.TurnID, Text: s.fileChangeSummary(it)}}
	}
	return nil
}

func (s *session) turnError(n errorNote) []bridge.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n.ThreadID != s.threadID {
		return nil
	}
	if n.WillRetry {
		return []bridge.Event{{Kind: bridge.EventProgress, TurnID: n.TurnID, Text: "codex: " + n.Error.Message + " (retrying)"}}
	}
	if len(s.turnErr) < 64 {
		s.turnErr[n.TurnID] = n.Error.Message
	}
	return nil
}

// commandSummary is "$ cmd → exit N" plus the tail of the output.
func commandSummary(it threadItem) string {
	var b strings.Builder
	fmt.Fprintf(&b, "$ %s", it.Command)
	switch {
	case it.Status == "declined":
		b.WriteString(" → declined")
	case it.ExitCode != nil:
		fmt.Fprintf(&b, " → exit %d", *it.ExitCode)
	case it.Status != "":
		fmt.Fprintf(&b, " → %s", it.Status)
	}
	if it.AggregatedOutput != nil {
		if out := strings.TrimSpace(*it.AggregatedOutput); out != "" {
			if len(out) > toolOutputMax {
				cut := len(out) - toolOutputMax
				for cut < len(out) && !utf8.RuneStart(out[cut]) {
					cut++
				}
				out = "…" + out[cut:]
			}
			b.WriteString("\n")
			b.WriteString(out)
		}
	}
	return b.String()
}

// fileChangeSummary is "apply_patch: add a.txt, update b.go → completed".
func (s *session) fileChangeSummary(it threadItem) string {
	parts := make([]string, 0, len(it.Changes))
	for _, c := range it.Changes {
		parts = append(parts, c.Kind.Type+" "+s.relPath(c.Path))
	}
	sum := "apply_patch: " + strings.Join(parts, ", ")
	if it.Status != "" {
		sum += " → " + it.Status
	}
	return sum
}

// relPath shows p relative to the agent's directory when it is inside it.
func (s *session) relPath(p string) string {
	if rel, err := filepath.Rel(s.h.cfg.dir, p); err == nil && !strings.HasPrefix(rel, "..") && !filepath.IsAbs(rel) {
		return rel
	}
	return p
}

// ranUnasked reports a command codex ran without asking in a turn whose
// policy asks before every command (a rule allowed it, or codex changed),
// and stops the turn: no further side effect of it is covered by the gate.
func (s *session) ranUnasked(n itemNote) []bridge.Event {
	s.log.Error("codex ran a command without asking in a turn that must ask before every command; stopping the turn",
		"turn", n.TurnID, "command", n.Item.Command)
	turn := n.TurnID
	s.h.goTracked(func() {
		ctx, cancel := context.WithTimeout(s.h.life, 10*time.Second)
		defer cancel()
		if err := s.interrupt(ctx, turn); err != nil {
			s.log.Warn("codex: could not stop the turn", "turn", turn, "err", err)
		}
	})
	return []bridge.Event{{Kind: bridge.EventTool, TurnID: n.TurnID, Text: commandSummary(n.Item) +
		"\n⚠ codex ran this without asking, in a turn that must ask before every command; the turn was stopped"}}
}
