package testhub

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/authz"
	"github.com/wheelhouse-dev/wheelhouse/bridge"
	"github.com/wheelhouse-dev/wheelhouse/chat"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// Device is an owner device held by a test: a P-256 key that signs exactly
// as a browser's non-extractable WebCrypto key does (ECDSA, SHA-256, r‖s
// over the statement's canonical JSON).
type Device struct {
	Name string
	ID   string
	Key  *ecdsa.PrivateKey
	SPKI []byte
}

// NewDevice makes a fresh device.
func NewDevice(t testing.TB, name string) *Device {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	spki, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return &Device{Name: name, ID: authz.DeviceID(spki), Key: k, SPKI: spki}
}

// Statement completes s (version, decision word, an expiry five minutes
// ahead and a fresh nonce, where unset).
func Statement(s authz.Statement) authz.Statement {
	s.V = authz.StatementVersion
	if s.Decision == "" {
		s.Decision = authz.StatementDecision(s.Kind)
	}
	if s.Expires == "" {
		s.Expires = time.Now().Add(5 * time.Minute).UTC().Format(time.RFC3339)
	}
	if s.Nonce == "" {
		b := make([]byte, 12)
		rand.Read(b)
		s.Nonce = hex.EncodeToString(b)
	}
	return s
}

// bridges maps a hub's base URL and an agent handle to the id of the
// bridge that runs the agent (StartBridge records it): every statement a
// test signs names the bridge it is for, as the browser's do.
var bridges sync.Map

func recordBridge(base, handle, id string) { bridges.Store(base+"|"+handle, id) }

// BridgeOf is the id of the bridge that runs handle on c's hub ("" if no
// test bridge of this process runs it).
func (c *Client) BridgeOf(handle string) string {
	id, _ := bridges.Load(c.Base + "|" + handle)
	s, _ := id.(string)
	return s
}

// Sign signs s for the bridge of its agent (s.Bridge, when unset).
func (c *Client) Sign(s authz.Statement) *wire.Signed {
	c.t.Helper()
	if s.Bridge == "" {
		s.Bridge = c.BridgeOf(s.Agent)
	}
	return c.Device.Sign(c.t, s)
}

// Sign signs statement s (completed by Statement).
func (d *Device) Sign(t testing.TB, s authz.Statement) *wire.Signed {
	t.Helper()
	raw, err := authz.CanonicalStatement(Statement(s))
	if err != nil {
		t.Fatal(err)
	}
	return d.SignRaw(t, raw)
}

// SignRaw signs the given statement bytes as they are.
func (d *Device) SignRaw(t testing.TB, raw []byte) *wire.Signed {
	t.Helper()
	h := sha256.Sum256(raw)
	r, s, err := ecdsa.Sign(rand.Reader, d.Key, h[:])
	if err != nil {
		t.Fatal(err)
	}
	sig := make([]byte, 64)
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return &wire.Signed{Statement: string(raw), Device: d.ID, Sig: base64.RawURLEncoding.EncodeToString(sig)}
}

// Enrollment is d's enrollment, MAC'd with code for bridge bridgeID.
func (d *Device) Enrollment(code, bridgeID string) map[string]any {
	e := authz.Enrollment{Bridge: bridgeID, Name: d.Name, Kind: authz.DeviceWebCrypto, PublicKey: base64.StdEncoding.EncodeToString(d.SPKI)}
	proof := authz.EnrollProof(authz.EnrollKey(code, bridgeID), e)
	return map[string]any{"bridge": bridgeID, "name": d.Name, "kind": e.Kind, "publicKey": e.PublicKey,
		"proof": base64.RawURLEncoding.EncodeToString(proof)}
}

// EnrollCode asks the running bridge for an enrollment code, as the owner
// does on the bridge machine (wheelhouse bridge devices add).
func (b *Bridge) EnrollCode(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rep, err := bridge.Control(ctx, b.Socket, bridge.ControlRequest{Op: "devices-add"})
	if err != nil {
		t.Fatalf("devices add: %v", err)
	}
	return rep.Code
}

// Enroll enrolls d with the bridge through the real out-of-band flow: the
// bridge shows a code, the owner types it on the device, and the device's
// key travels through the hub with the MAC of it under the code.
func (h *Hub) Enroll(owner *Client, br *Bridge, d *Device) {
	h.t.Helper()
	code := br.EnrollCode(h.t)
	owner.Must(201, "POST", "/api/v1/devices", d.Enrollment(code, br.Creds.BridgeID))
}

// AddAgent has the owner add their agent to a room, signing the consent
// with the owner's device (or has anyone else invite it).
func (c *Client) AddAgent(room, handle string) Response {
	c.t.Helper()
	body := map[string]any{"agent": handle}
	if c.Device != nil && ownerOf(handle) == c.Name {
		body["signed"] = c.Sign(authz.Statement{Kind: authz.StatementConsent, Agent: handle, Room: room})
	}
	return c.Must(200, "POST", "/api/v1/rooms/"+room+"/agents", body)
}

// Accept accepts an invitation for the owner's agent, signed.
func (c *Client) Accept(id int64) Response {
	c.t.Helper()
	inv := c.Must(200, "GET", "/api/v1/invitations", nil)
	for _, x := range asList(inv.Body["invitations"]) {
		if int64(x["id"].(float64)) == id {
			signed := c.Sign(authz.Statement{Kind: authz.StatementConsent, Agent: x["agent"].(string), Room: x["room"].(string)})
			return c.Must(200, "POST", fmt.Sprintf("/api/v1/invitations/%d", id), map[string]any{"decision": "accept", "signed": signed})
		}
	}
	c.t.Fatalf("no invitation %d", id)
	return Response{}
}

// Decide decides approval id as its owner (an approval signed with the
// owner's device) and fails the test unless the status is want.
func (c *Client) Decide(want int, id, decision, hash string) Response {
	c.t.Helper()
	body := map[string]any{"decision": decision, "payloadHash": hash}
	if decision == "approve" && c.Device != nil {
		a := c.Must(200, "GET", "/api/v1/approvals/"+id, nil).Body["approval"].(map[string]any)
		body["signed"] = c.Sign(authz.Statement{Kind: authz.StatementApproval, Agent: a["agent"].(string), Approval: id, PayloadHash: hash})
	}
	return c.Must(want, "POST", "/api/v1/approvals/"+id, body)
}

// SetPolicy sets an agent's policy as its owner, signed with the owner's
// device, and fails the test unless the status is want.
func (c *Client) SetPolicy(want int, handle string, policy any) Response {
	c.t.Helper()
	raw, err := json.Marshal(policy)
	if err != nil {
		c.t.Fatal(err)
	}
	body := map[string]any{"policy": json.RawMessage(raw)}
	if c.Device != nil {
		body["signed"] = c.Sign(authz.Statement{Kind: authz.StatementPolicy, Agent: handle, Policy: raw})
	}
	return c.Must(want, "PATCH", "/api/v1/agents/"+handle, body)
}

// Forward forwards a held (moderated) mention as its owner, signed.
func (c *Client) Forward(steerID string) Response {
	c.t.Helper()
	rs := c.Must(200, "GET", "/api/v1/requests", nil)
	for _, q := range asList(rs.Body["requests"]) {
		if q["steerId"] == steerID {
			// The words and files shown, hashed here (as the browser does).
			var files []authz.StatementFile
			for _, f := range asList(q["files"]) {
				files = append(files, authz.StatementFile{Name: f["name"].(string), SHA256: authz.FileHash(c.Must(200, "GET", f["url"].(string), nil).Raw)})
			}
			signed := c.Sign(authz.Statement{Kind: authz.StatementForward, Agent: q["agent"].(string), Steer: steerID,
				Room: q["room"].(string), Sender: q["sender"].(string), TextHash: authz.TextHash(q["text"].(string)), Files: files})
			return c.Must(200, "POST", "/api/v1/requests/"+steerID, map[string]any{"decision": "forward", "signed": signed})
		}
	}
	c.t.Fatalf("no request %s for @%s", steerID, c.Name)
	return Response{}
}

func ownerOf(handle string) string {
	for i := range len(handle) {
		if handle[i] == '/' {
			return handle[:i]
		}
	}
	return ""
}

// Words are the owner's signed message statements for a post of text in
// room (thread 0: the channel): one for each of c's own agents the text
// addresses (or the agent of c's own DM with it), for the turn the post
// names in turns (the stale-turn guard), else the turn the agent runs now
// as the hub shows it ("" when idle) — what the owner's browser signs.
// None when c has no device.
func (c *Client) Words(room string, thread int64, text string, turns map[string]string) []*wire.Signed {
	c.t.Helper()
	if c.Device == nil {
		return nil
	}
	var handles []string
	for _, m := range chat.ParseMentions(text) {
		if m.Kind == chat.MentionAgent && m.Owner == c.Name && !slices.Contains(handles, m.Owner+"/"+m.Agent) {
			handles = append(handles, m.Owner+"/"+m.Agent)
		}
	}
	if owner, agent, ok := strings.Cut(strings.TrimPrefix(room, "dm:"+c.Name+":"), "+"); ok && strings.HasPrefix(room, "dm:") && owner == c.Name {
		if h := owner + "/" + agent; !slices.Contains(handles, h) {
			handles = append(handles, h)
		}
	}
	var out []*wire.Signed
	for _, h := range handles {
		if c.BridgeOf(h) == "" {
			continue
		}
		th := ""
		if thread != 0 && !strings.HasPrefix(room, "dm:") {
			th = strconv.FormatInt(thread, 10)
		}
		turn, ok := turns[h]
		if !ok {
			turn = c.turnOf(h)
		}
		out = append(out, c.Sign(authz.Statement{Kind: authz.StatementMessage, Agent: h, Room: room, Thread: th,
			TextHash: authz.TextHash(text), Turn: turn}))
	}
	return out
}

// turnOf is the turn handle runs as the hub shows it ("" when idle).
func (c *Client) turnOf(handle string) string {
	r := c.Do("GET", "/api/v1/agents", nil)
	for _, a := range asList(r.Body["agents"]) {
		if a["handle"] == handle {
			t, _ := a["turnId"].(string)
			return t
		}
	}
	return ""
}
