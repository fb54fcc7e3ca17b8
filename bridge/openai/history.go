package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// stateVersion is the format of the conversation file.
const stateVersion = 1

// stateFileName is the conversation file in the agent's state directory.
const stateFileName = "conversation.json"

// histMessage is one message of the conversation, with what trimming needs.
type histMessage struct {
	chatMessage
	Turn    string `json:"turn,omitempty"`    // the turn that added it
	Tool    string `json:"tool,omitempty"`    // for a tool result: the tool's name
	Trimmed bool   `json:"trimmed,omitempty"` // a tool result replaced by a note
}

// stateFile is what the state directory keeps between turns and restarts.
type stateFile struct {
	Version  int           `json:"version"`
	Model    string        `json:"model,omitempty"`
	Messages []histMessage `json:"messages"`
	// Scale is measured prompt tokens per estimated token (0: not yet).
	Scale float64 `json:"scale,omitempty"`
}

// store keeps the conversation in dir (0700) as a 0600 JSON file.
type store struct {
	dir string
}

func (s store) path() string { return filepath.Join(s.dir, stateFileName) }

// load reads the conversation; a missing file is an empty one. A file that
// cannot be read as a conversation is moved aside (the name is returned,
// for the log) and the agent starts afresh.
func (s store) load() (st stateFile, movedAside string, err error) {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return st, "", fmt.Errorf("state directory %s: %w", s.dir, err)
	}
	if err := os.Chmod(s.dir, 0o700); err != nil {
		return st, "", fmt.Errorf("state directory %s: %w", s.dir, err)
	}
	b, err := os.ReadFile(s.path())
	if errors.Is(err, fs.ErrNotExist) {
		return stateFile{Version: stateVersion}, "", nil
	}
	if err != nil {
		return st, "", fmt.Errorf("read %s: %w", s.path(), err)
	}
	if err := json.Unmarshal(b, &st); err != nil || st.Version != stateVersion || !validHistory(st.Messages) {
		aside := fmt.Sprintf("%s.unreadable-%d", s.path(), time.Now().Unix())
		if rerr := os.Rename(s.path(), aside); rerr != nil {
			return st, "", fmt.Errorf("%s is not a conversation this version can read, and cannot be moved aside: %w", s.path(), rerr)
		}
		return stateFile{Version: stateVersion}, aside, nil
	}
	st.Messages = repairHistory(st.Messages)
	return st, "", nil
}

// save writes the conversation atomically: a temporary file, synced, then
// renamed over the old one.
func (s store) save(st stateFile) error {
	st.Version = stateVersion
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(s.dir, stateFileName+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, werr := f.Write(b)
	if werr == nil {
		werr = f.Chmod(0o600)
	}
	if werr == nil {
		werr = f.Sync()
	}
	if err := f.Close(); werr == nil {
		werr = err
	}
	if werr == nil {
		werr = os.Rename(tmp, s.path())
	}
	if werr != nil {
		os.Remove(tmp)
		return werr
	}
	return nil
}

// validHistory checks roles and that tool results answer a call.
func validHistory(ms []histMessage) bool {
	for _, m := range ms {
		switch m.Role {
		case "user", "assistant", "tool":
		default:
			return false
		}
		if m.Role == "tool" && m.ToolCallID == "" {
			return false
		}
	}
	return true
}

// repairHistory makes the conversation one the API accepts: every tool
// call of an assistant message is answered by a tool message right after it
// (a bridge that stopped mid-turn may have left some unanswered), and no
// tool message answers nothing.
func repairHistory(ms []histMessage) []histMessage {
	var out []histMessage
	for i := 0; i < len(ms); i++ {
		m := ms[i]
		if m.Role == "tool" {
			continue // orphan: its assistant message is gone
		}
		out = append(out, m)
		if m.Role != "assistant" || len(m.ToolCalls) == 0 {
			continue
		}
		answered := map[string]histMessage{}
		j := i + 1
		for ; j < len(ms) && ms[j].Role == "tool"; j++ {
			answered[ms[j].ToolCallID] = ms[j]
		}
		for _, c := range m.ToolCalls {
			r, ok := answered[c.ID]
			if !ok {
				r = histMessage{chatMessage: chatMessage{Role: "tool", ToolCallID: c.ID,
					Content: "error: not run: the agent stopped before running it"}, Turn: m.Turn, Tool: c.Function.Name}
			}
			out = append(out, r)
		}
		i = j - 1
	}
	return out
}

// Token estimates. A token is about four bytes of English or code; the
// endpoint's reported prompt tokens correct the guess (scale).
const (
	bytesPerToken      = 4
	tokensPerMessage   = 4
	minScale, maxScale = 0.25, 4.0
)

func estimateMessage(m chatMessage) int {
	n := len(m.Content) + len(m.Role)
	for _, c := range m.ToolCalls {
		n += len(c.ID) + len(c.Function.Name) + len(c.Function.Arguments) + 8
	}
	return n/bytesPerToken + tokensPerMessage
}

// trimmer cuts a conversation to fit the context window.
type trimmer struct {
	budget int     // tokens the messages may take (after system prompt, tools and the answer's reserve)
	scale  float64 // measured/estimated, 1 if unknown
}

func (t trimmer) cost(m histMessage) int {
	return int(float64(estimateMessage(m.chatMessage)) * t.scale)
}

func (t trimmer) total(ms []histMessage) int {
	n := 0
	for _, m := range ms {
		n += t.cost(m)
	}
	return n
}

// trim returns ms cut to the budget, and whether it changed anything.
// keepFrom is the index of the first message of the running turn. In
// order, until it fits: older tool results are replaced by a one-line note
// (oldest first), then whole earlier exchanges are dropped (oldest first,
// each from a user message to the next), then the running turn's tool
// results are noted too, all but the last step's. What remains may still
// not fit: the endpoint then says so.
func (t trimmer) trim(ms []histMessage, keepFrom int) ([]histMessage, bool) {
	total := t.total(ms)
	if total <= t.budget {
		return ms, false
	}
	ms = append([]histMessage(nil), ms...)
	changed := false
	note := func(i int) {
		m := &ms[i]
		before := t.cost(*m)
		m.Content = trimNote(m.Tool, m.Content)
		m.Trimmed = true
		total += t.cost(*m) - before
		changed = true
	}
	for i := 0; i < keepFrom && total > t.budget; i++ {
		if ms[i].Role == "tool" && !ms[i].Trimmed && len(ms[i].Content) > 400 {
			note(i)
		}
	}
	for total > t.budget && keepFrom > 0 {
		// Drop the oldest exchange: up to the next user message.
		end := 1
		for end < keepFrom && ms[end].Role != "user" {
			end++
		}
		total -= t.total(ms[:end])
		ms = ms[end:]
		keepFrom -= end
		changed = true
	}
	// The running turn, but for its last step's results.
	last := len(ms)
	for last > 0 && ms[last-1].Role == "tool" {
		last--
	}
	for i := keepFrom; i < last && total > t.budget; i++ {
		if ms[i].Role == "tool" && !ms[i].Trimmed && len(ms[i].Content) > 400 {
			note(i)
		}
	}
	return ms, changed
}

// trimNote stands in for a tool result that was trimmed.
func trimNote(tool, content string) string {
	first, _, _ := strings.Cut(strings.TrimSpace(content), "\n")
	if tool == "" {
		tool = "a tool"
	}
	return fmt.Sprintf("[output of %s left out to fit the context window (%d bytes); it began: %s]", tool, len(content), clip([]byte(first), 120))
}
