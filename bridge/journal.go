package bridge

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/authz"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// Journal entry kinds.
const (
	JournalSteer    = "steer"    // a steer the hub sent, and the receipt the bridge gave
	JournalApproval = "approval" // an approval request the hub acknowledged
	JournalDecision = "decision" // an owner decision (or a void) the gate accepted
	JournalTool     = "tool"     // a tool call the harness reported, with its outcome
	JournalTurn     = "turn"     // a turn started or ended
	JournalOwner    = "owner"    // an owner decision the bridge took: consent, a ceiling, a policy
	JournalForgery  = "forgery"  // a decision the bridge refused: unsigned, wrongly signed, replayed
	JournalHub      = "hub"      // a refusal or an ending the hub told the bridge of: a refused approval request, a resync
)

// JournalEntry is one line of an agent's journal: what the bridge received
// and did, in its own words, hash-chained like the hub's timeline. HubHead
// is the hub's timeline head as the hub stated it with a steer or decision.
type JournalEntry struct {
	N    uint64    `json:"n"` // 1-based position in the file
	At   time.Time `json:"at"`
	Kind string    `json:"kind"`

	SteerID   string `json:"steerId,omitempty"`
	Sender    string `json:"sender,omitempty"`
	Room      string `json:"room,omitempty"`
	MessageID int64  `json:"messageId,omitempty"`
	TextHash  string `json:"textHash,omitempty"` // SHA-256 of the message text
	Status    string `json:"status,omitempty"`   // receipt status, decision, turn event

	ApprovalID  string `json:"approvalId,omitempty"`
	Tool        string `json:"tool,omitempty"`
	PayloadHash string `json:"payloadHash,omitempty"`
	By          string `json:"by,omitempty"`
	Sandbox     string `json:"sandbox,omitempty"`

	TurnID string `json:"turnId,omitempty"`
	Text   string `json:"text,omitempty"` // a tool event's summary

	HubHead *wire.ChainHead `json:"hubHead,omitempty"`

	// Key names the key of MAC (JournalKeyID); both are empty in entries
	// written before journals were keyed.
	Key  string `json:"key,omitempty"`
	Prev string `json:"prev"`
	Hash string `json:"hash"`
	// MAC is HMAC-SHA256 of Hash under the bridge's journal key: without
	// the key (the bridge's nkey seed) no one can write an entry that
	// verifies, nor recompute the chain over an edit.
	MAC string `json:"mac,omitempty"`
}

// body is what the chain hashes: the entry without its hashes and MAC.
func (e JournalEntry) body() []byte {
	e.Prev, e.Hash, e.MAC = "", "", ""
	b, _ := json.Marshal(e)
	return b
}

// JournalKey derives the key that binds a bridge's journal entries from its
// nkey seed (Credentials.Seed): HMAC-SHA256 keyed with the seed over a fixed
// label, so the journal key is never the identity key itself.
func JournalKey(seed string) []byte {
	m := hmac.New(sha256.New, []byte(seed))
	m.Write([]byte("wheelhouse bridge journal key v1"))
	return m.Sum(nil)
}

// JournalKeyID names a journal key without revealing it: an entry written
// under an earlier pairing's key says so, instead of looking forged.
func JournalKeyID(key []byte) string {
	if len(key) == 0 {
		return ""
	}
	return hex.EncodeToString(journalMAC(key, "key id")[:8])
}

// JournalMAC is the MAC of an entry (or a head) with hash under key.
func JournalMAC(key []byte, hash string) string {
	return hex.EncodeToString(journalMAC(key, "entry "+hash))
}

func journalMAC(key []byte, msg string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}

// TextHash is the journal's digest of a message text.
func TextHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// DefaultJournalDir is where a bridge keeps its agents' journals: the
// user's state directory ($XDG_STATE_HOME, else ~/.local/state), never a
// project directory.
func DefaultJournalDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "wheelhouse", "journal")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "state", "wheelhouse", "journal")
	}
	return filepath.Join(configDir(), "wheelhouse", "journal")
}

// JournalPath is the journal file of owner's agent under dir.
func JournalPath(dir, owner, agent string) string {
	return filepath.Join(dir, owner, agent+".jsonl")
}

// journal appends to one agent's journal file (0600, folder 0700). Writes
// are serialized; a failed write is logged by the caller and the next entry
// still chains onto the last one that was written.
type journal struct {
	mu    sync.Mutex
	f     *os.File
	n     uint64
	last  string
	mac   string // the last entry's MAC
	key   []byte // nil: entries are written unkeyed
	keyID string
	now   func() time.Time
}

// openJournal opens (creating) the journal at path and continues its chain
// from its last readable entry; new entries are bound to key (JournalKey).
func openJournal(path string, key []byte, now func() time.Time) (*journal, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, wh.Wrap(err, "create the journal folder %s", filepath.Dir(path))
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, wh.Wrap(err, "open the journal %s", path)
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return nil, wh.Wrap(err, "set the journal's mode")
	}
	j := &journal{f: f, now: now, key: key, keyID: JournalKeyID(key)}
	entries, _ := readJournal(f) // a torn last line is skipped; the chain continues from the last entry
	if fi, err := f.Stat(); err == nil && fi.Size() > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, fi.Size()-1); err == nil && last[0] != '\n' {
			f.Write([]byte("\n")) // end the torn line, so the next entry starts a line of its own
		}
	}
	if n := len(entries); n > 0 {
		j.n, j.last, j.mac = entries[n-1].N, entries[n-1].Hash, entries[n-1].MAC
	}
	return j, nil
}

// add appends e, filling N, At and the chain.
func (j *journal) add(e JournalEntry) error {
	if j == nil {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.n++
	e.N, e.At, e.Prev, e.Key, e.MAC = j.n, j.now().UTC(), j.last, j.keyID, ""
	e.Hash = authz.ChainHash(e.Prev, e.body())
	if j.key != nil {
		e.MAC = JournalMAC(j.key, e.Hash)
	}
	line, err := json.Marshal(e)
	if err != nil {
		j.n--
		return err
	}
	if _, err := j.f.Write(append(line, '\n')); err != nil {
		j.n--
		return wh.Wrap(err, "write the journal")
	}
	j.last, j.mac = e.Hash, e.MAC
	return nil
}

// head is the journal's newest entry as the bridge reports it to the hub
// (nil before the first entry), which records it in the agent's timeline:
// a journal later cut below it, or changed up to it, no longer matches.
func (j *journal) head() *wire.JournalHead {
	if j == nil {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.n == 0 || j.mac == "" {
		return nil
	}
	return &wire.JournalHead{N: j.n, Hash: j.last, MAC: j.mac}
}

func (j *journal) close() {
	if j != nil {
		j.f.Close()
	}
}

// ReadJournal reads a journal file. Lines that are not entries (a torn
// last write) are skipped; VerifyJournal says whether the rest chains.
func ReadJournal(path string) ([]JournalEntry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readJournal(f)
}

func readJournal(r io.Reader) ([]JournalEntry, error) {
	var out []JournalEntry
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var e JournalEntry
			if json.Unmarshal(line, &e) == nil && e.Hash != "" {
				out = append(out, e)
			}
		}
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
}

// VerifyJournal checks the journal's own chain: it returns the index of the
// first entry that was changed, removed or reordered, or -1.
func VerifyJournal(entries []JournalEntry) int {
	for i, e := range entries {
		prev := authz.ChainGenesis
		if i > 0 {
			prev = entries[i-1].Hash
		}
		if e.N != uint64(i+1) || e.Prev != prev || e.Hash != authz.ChainHash(e.Prev, e.body()) {
			return i
		}
	}
	return -1
}

// String is one line for the terminal.
func (e JournalEntry) String() string {
	return fmt.Sprintf("#%d %s %s", e.N, e.At.Format(time.RFC3339), e.Kind)
}

// The runner's journal records. Each logs and carries on when the journal
// cannot be written: the bridge keeps working, the gap shows at --verify.

func (r *runner) journalAdd(e JournalEntry) {
	if err := r.jr.add(e); err != nil {
		r.b.log.Error("cannot write the agent's journal", "agent", r.cfg.Name, "err", err)
	}
}

func (r *runner) journalSteer(st wire.Steer, rc wire.Receipt) {
	r.journalAdd(JournalEntry{Kind: JournalSteer, SteerID: st.ID, Sender: st.Sender, Room: st.Room, MessageID: st.MessageID,
		TextHash: TextHash(st.Text), Status: rc.Status, TurnID: rc.TurnID, HubHead: st.TimelineHead})
}

func (r *runner) journalApproval(req wire.ApprovalRequest) {
	r.journalAdd(JournalEntry{Kind: JournalApproval, ApprovalID: req.ID, Tool: req.Tool, PayloadHash: req.PayloadHash,
		Sandbox: req.Sandbox, TurnID: req.TurnID})
}

func (r *runner) journalDecision(d wire.Decision, void bool) {
	status := d.Decision
	if void {
		status = "void"
	}
	r.journalAdd(JournalEntry{Kind: JournalDecision, ApprovalID: d.ApprovalID, Status: status, By: d.By, PayloadHash: d.PayloadHash,
		Text: d.Reason, HubHead: d.TimelineHead})
}

func (r *runner) journalTurn(turn, status string) {
	r.journalAdd(JournalEntry{Kind: JournalTurn, TurnID: turn, Status: status})
}

func (r *runner) journalTool(turn, text string) {
	r.journalAdd(JournalEntry{Kind: JournalTool, TurnID: turn, Text: text})
}

// journalRefused records an approval request the hub refused (why) or did
// not answer (err): the bridge asked for it, so a timeline entry of it is
// not the hub's invention.
func (r *runner) journalRefused(req wire.ApprovalRequest, err error, why string) {
	status := "approval refused"
	if err != nil {
		status, why = "approval unanswered", err.Error()
	}
	r.journalAdd(JournalEntry{Kind: JournalHub, Status: status, ApprovalID: req.ID, Tool: req.Tool, PayloadHash: req.PayloadHash,
		TurnID: req.TurnID, Text: oneLine(why)})
}

// journalResync records what the hub said it ended while the bridge was
// away (wire.ControlResync) and the bridge still held: the queued steers it
// expired, the approvals it voided, the turn it failed. Each has its entry in
// the timeline. It runs before resync ends them, so a repeated resync about
// what is already over records nothing.
func (r *runner) journalResync(c wire.Control) {
	r.mu.Lock()
	var steers []string
	for _, q := range r.queue {
		if slices.Contains(c.Steers, q.st.ID) {
			steers = append(steers, q.st.ID)
		}
	}
	turn := r.turnID
	r.mu.Unlock()
	for _, id := range steers {
		r.journalAdd(JournalEntry{Kind: JournalHub, Status: "steer expired", SteerID: id})
	}
	pending := r.gate.pendingIDs()
	for _, id := range c.Approvals {
		if slices.Contains(pending, id) {
			r.journalAdd(JournalEntry{Kind: JournalHub, Status: "approval voided", ApprovalID: id})
		}
	}
	if c.TurnID != "" && c.TurnID == turn {
		r.journalAdd(JournalEntry{Kind: JournalHub, Status: "turn ended", TurnID: c.TurnID})
	}
}
