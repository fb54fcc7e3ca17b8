package bridge

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// DefaultControlSocket is where the bridge listens for the owner's local
// commands (wheelhouse approvals / approve / deny / say).
func DefaultControlSocket() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "wheelhouse", "bridge.sock")
	}
	return filepath.Join(configDir(), "wheelhouse", "bridge.sock")
}

// ControlRequest is one line a local client sends.
type ControlRequest struct {
	// Op: list, decide (approvals), watch (the list now and at every
	// change, until the client hangs up); devices, devices-add,
	// devices-revoke; invitation (accept or decline one); rooms; say (the
	// owner's words to Agent: Text, in Room and Thread).
	Op         string `json:"op"`
	ID         string `json:"id,omitempty"`
	Decision   string `json:"decision,omitempty"` // approve, deny; accept, decline
	Hash       string `json:"hash,omitempty"`
	Invitation int64  `json:"invitation,omitempty"`
	Agent      string `json:"agent,omitempty"`
	Text       string `json:"text,omitempty"`
	Room       string `json:"room,omitempty"`
	Thread     int64  `json:"thread,omitempty"`
}

// ControlReply answers a ControlRequest.
type ControlReply struct {
	OK        bool                   `json:"ok"`
	Error     string                 `json:"error,omitempty"`
	Approvals []wire.ApprovalRequest `json:"approvals,omitempty"`
	Devices   []wire.Device          `json:"devices,omitempty"`
	// Code is a new enrollment code (devices-add), good until Expires.
	Code    string    `json:"code,omitempty"`
	Expires time.Time `json:"expires,omitzero"`
	// Rooms lists, per agent, the rooms it may act in (rooms).
	Rooms map[string][]wire.RoomGrant `json:"rooms,omitempty"`
	// Receipt is what became of the words (say).
	Receipt *wire.Receipt `json:"receipt,omitempty"`
}

// controlServer is the owner's local door to the bridge: a unix socket
// (0600, in a 0700 folder) that only the owner's own user may use.
type controlServer struct {
	b    *Bridge
	ln   net.Listener
	path string
	wg   sync.WaitGroup
}

func startControl(b *Bridge, path string) (*controlServer, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, wh.Wrap(err, "create %s", filepath.Dir(path))
	}
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		c.Close()
		return nil, wh.Errorf(wh.EConflict, "another bridge is already listening on %s", path)
	}
	os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, wh.Wrap(err, "listen on %s", path)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, wh.Wrap(err, "restrict %s", path)
	}
	s := &controlServer{b: b, ln: ln, path: path}
	s.wg.Add(1)
	go s.serve()
	return s, nil
}

func (s *controlServer) Close() error {
	err := s.ln.Close()
	s.wg.Wait()
	os.Remove(s.path)
	return err
}

func (s *controlServer) serve() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer c.Close()
			if err := checkPeer(c); err != nil {
				s.b.log.Warn("refused a control connection", "err", err)
				json.NewEncoder(c).Encode(ControlReply{Error: err.Error()})
				return
			}
			c.SetDeadline(time.Now().Add(30 * time.Second))
			sc := bufio.NewScanner(c)
			sc.Buffer(make([]byte, 4096), 64<<10)
			enc := json.NewEncoder(c)
			for sc.Scan() {
				var req ControlRequest
				if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
					enc.Encode(ControlReply{Error: "malformed request"})
					continue
				}
				if req.Op == "watch" {
					s.watchApprovals(c, sc, enc)
					return
				}
				enc.Encode(s.handle(req))
			}
		}()
	}
}

// pendingApprovals lists every agent's waiting requests, the soonest to
// expire first.
func (b *Bridge) pendingApprovals() []wire.ApprovalRequest {
	var out []wire.ApprovalRequest
	for _, r := range b.agents {
		out = append(out, r.gate.list()...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Expires.Before(out[j].Expires) })
	return out
}

// watchApprovals sends the waiting requests now and after every change
// (and every watchKeepAlive), until the client hangs up or the bridge
// stops. While it runs the owner is watching: a request the hub cannot
// take waits here for the owner instead of being denied at once.
func (s *controlServer) watchApprovals(c net.Conn, sc *bufio.Scanner, enc *json.Encoder) {
	done := s.b.watch.add()
	defer done()
	gone := make(chan struct{})
	go func() {
		for sc.Scan() { // anything more the client sends is ignored
		}
		close(gone)
	}()
	for {
		wake := s.b.watch.wait()
		c.SetDeadline(time.Now().Add(watchKeepAlive + 10*time.Second))
		if err := enc.Encode(ControlReply{OK: true, Approvals: s.b.pendingApprovals()}); err != nil {
			return
		}
		select {
		case <-wake:
		case <-time.After(watchKeepAlive):
		case <-gone:
			return
		case <-s.b.stop:
			return
		}
	}
}

// watchKeepAlive is how often a watcher hears from the bridge with no
// change (so a dead client is noticed).
const watchKeepAlive = 15 * time.Second

// approvalWatch counts the owner's watching clients and wakes them when
// the waiting requests change.
type approvalWatch struct {
	mu   sync.Mutex
	n    int
	ch   chan struct{}
	gone chan struct{} // closed when the last watcher leaves
}

func (w *approvalWatch) add() (done func()) {
	w.mu.Lock()
	if w.n == 0 {
		w.gone = make(chan struct{})
	}
	w.n++
	w.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			w.mu.Lock()
			w.n--
			if w.n == 0 {
				close(w.gone)
			}
			w.mu.Unlock()
		})
	}
}

// left returns a channel closed once no one watches any more (already
// closed if no one does now).
func (w *approvalWatch) left() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.n == 0 {
		c := make(chan struct{})
		close(c)
		return c
	}
	return w.gone
}

func (w *approvalWatch) watched() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n > 0
}

// wait returns a channel closed at the next change.
func (w *approvalWatch) wait() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ch == nil {
		w.ch = make(chan struct{})
	}
	return w.ch
}

func (w *approvalWatch) changed() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ch != nil {
		close(w.ch)
		w.ch = nil
	}
}

func (s *controlServer) handle(req ControlRequest) ControlReply {
	switch req.Op {
	case "list":
		return ControlReply{OK: true, Approvals: s.b.pendingApprovals()}
	case "decide":
		if req.Decision != "approve" && req.Decision != "deny" {
			return ControlReply{Error: "decision must be approve or deny"}
		}
		for _, r := range s.b.agents {
			for _, p := range r.gate.list() {
				if p.ID != req.ID {
					continue
				}
				hash := req.Hash
				if req.Decision == "deny" && hash == "" {
					hash = p.PayloadHash // denying runs nothing: no hash needed
				}
				d := wire.Decision{ApprovalID: req.ID, Agent: r.cfg.Name, Decision: req.Decision, PayloadHash: hash, By: s.b.cfg.Creds.Owner}
				if err := r.gate.decide(d, true); err != nil {
					return ControlReply{Error: wh.ErrorMessage(err)}
				}
				return ControlReply{OK: true}
			}
		}
		return ControlReply{Error: "no pending approval " + req.ID + " on this bridge (see wheelhouse approvals)"}
	case "devices":
		return ControlReply{OK: true, Devices: s.b.Devices()}
	case "devices-add":
		code, exp := s.b.NewEnrollCode()
		return ControlReply{OK: true, Code: code, Expires: exp, Devices: s.b.Devices()}
	case "devices-revoke":
		if _, err := s.b.RevokeDevice(req.ID); err != nil {
			return ControlReply{Error: wh.ErrorMessage(err)}
		}
		return ControlReply{OK: true, Devices: s.b.Devices()}
	case "rooms":
		out := map[string][]wire.RoomGrant{}
		for name := range s.b.agents {
			out[name] = s.b.trust.grants(name)
		}
		return ControlReply{OK: true, Rooms: out}
	case "say":
		ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
		defer cancel()
		rc, err := s.b.Say(ctx, SayRequest{Agent: req.Agent, Text: req.Text, Room: req.Room, Thread: req.Thread})
		if err != nil {
			return ControlReply{Error: wh.ErrorMessage(err)}
		}
		return ControlReply{OK: true, Receipt: &rc}
	case "invitation":
		if err := s.b.answerInvitation(req.Invitation, req.Decision); err != nil {
			return ControlReply{Error: wh.ErrorMessage(err)}
		}
		return ControlReply{OK: true}
	default:
		return ControlReply{Error: "unknown op " + req.Op}
	}
}

// answerInvitation answers an invitation for one of the owner's agents on
// this machine: accepting records the owner's consent here first (the
// owner at the bridge needs no device), then tells the hub.
func (b *Bridge) answerInvitation(id int64, decision string) error {
	if decision != "accept" && decision != "decline" {
		return wh.Errorf(wh.EInvalid, "decide accept or decline")
	}
	if b.nc == nil {
		return wh.Errorf(wh.EUnavailable, "the bridge is not connected to the hub yet")
	}
	ask := func(req wire.InvitationsRequest) ([]wire.Invitation, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return askInvitations(ctx, b.nc, b.cfg.Creds.BridgeID, req)
	}
	invs, err := ask(wire.InvitationsRequest{})
	if err != nil {
		return err
	}
	var inv *wire.Invitation
	for i := range invs {
		if invs[i].ID == id {
			inv = &invs[i]
		}
	}
	if inv == nil {
		return wh.Errorf(wh.ENotFound, "no invitation %d for your agents (see wheelhouse bridge invitations)", id)
	}
	if inv.Status != "pending" {
		return wh.Errorf(wh.EConflict, "invitation %d was already %s", id, inv.Status)
	}
	if decision == "accept" {
		_, name, _ := strings.Cut(inv.Agent, "/")
		if err := b.AllowRoom(name, inv.Room, ""); err != nil {
			return err
		}
		b.printf("@%s may act in %s (accepted on this machine)", inv.Agent, inv.Room)
	}
	_, err = ask(wire.InvitationsRequest{Decide: decision, ID: id})
	return err
}

// WatchApprovals asks a running bridge for its waiting approval requests
// and calls f with the list now and after every change, until ctx ends,
// the bridge goes away (an error) or f returns false. While it runs, the
// bridge counts the owner as watching (see ErrHubUnreachable).
func WatchApprovals(ctx context.Context, path string, f func([]wire.ApprovalRequest) bool) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return wh.Errorf(wh.EUnavailable, "no bridge is running here (nothing listens on %s): start it with wheelhouse bridge run, or pass --socket", path)
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Now()) })
	defer stop()
	if err := json.NewEncoder(c).Encode(ControlRequest{Op: "watch"}); err != nil {
		return wh.Wrap(err, "send to the bridge")
	}
	dec := json.NewDecoder(bufio.NewReader(c))
	for {
		var rep ControlReply
		if err := dec.Decode(&rep); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return wh.Errorf(wh.EUnavailable, "the bridge went away: %v", err)
		}
		if !rep.OK {
			return errors.New(rep.Error)
		}
		if !f(rep.Approvals) {
			return nil
		}
	}
}

// Control sends one request to a running bridge's control socket.
func Control(ctx context.Context, path string, req ControlRequest) (*ControlReply, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, wh.Errorf(wh.EUnavailable, "no bridge is running here (nothing listens on %s): start it with wheelhouse bridge run, or pass --socket", path)
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	if err := json.NewEncoder(c).Encode(req); err != nil {
		return nil, wh.Wrap(err, "send to the bridge")
	}
	var rep ControlReply
	if err := json.NewDecoder(bufio.NewReader(c)).Decode(&rep); err != nil {
		return nil, wh.Wrap(err, "read the bridge's answer")
	}
	if !rep.OK {
		return &rep, errors.New(rep.Error)
	}
	return &rep, nil
}
