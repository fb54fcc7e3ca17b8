package hub

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// The hub is the NATS auth callout service, embedded or on a cluster: every
// client that is not one of the hub's own users is a bridge, which presents
// its nkey and signs the server's nonce. The hub checks the signature and
// the pairing record and answers with a user JWT that allows only that
// bridge's subjects, or with a refusal.
const (
	// calloutSubject is where servers ask (in the callout's account).
	calloutSubject = "$SYS.REQ.USER.AUTH"
	calloutQueue   = "wheelhouse-callout"
	// BridgeLoginTTL bounds a bridge's login: the server disconnects it
	// then and it logs in again through the callout. Revoking a bridge
	// disconnects it at once, and the hubs' sweep (Config.BridgeSweep)
	// catches a missed disconnect; this is the last resort. It is long
	// because every expiry drops the connection for a moment, and with it
	// any mention in flight (measured: about a second of "offline").
	BridgeLoginTTL = 24 * time.Hour
	// bridgeMaxSubs bounds a bridge's subscriptions (it needs a handful).
	bridgeMaxSubs = 256
)

// bridgeUser is a bridge's NATS user name (in connz and the server's logs).
func bridgeUser(bridgeID string) string { return "bridge-" + bridgeID }

// bridgePermissions is what one bridge may do on NATS: publish only its own
// hub-bound subjects (and one reply to each request it received), subscribe
// only to its own bridge-bound subjects and inbox.
func bridgePermissions(bridgeID string) jwt.Permissions {
	var p jwt.Permissions
	p.Pub.Allow.Add("wh.hub." + bridgeID + ".>")
	p.Sub.Allow.Add("wh.bridge."+bridgeID+".>", wire.InboxPrefix(bridgeID)+".>")
	p.Resp = &jwt.ResponsePermission{MaxMsgs: 1, Expires: time.Minute}
	return p
}

// callout answers the servers' authorization requests.
type callout struct {
	issuer  nkeys.KeyPair // signs responses and user JWTs (auth_callout.issuer)
	account string        // the account bridges join: the hub's own
	// lookup returns the id of the unrevoked bridge paired with key.
	lookup func(ctx context.Context, publicKey string) (string, error)
	log    *slog.Logger
	now    func() time.Time
}

func (co *callout) handle(m *nats.Msg) {
	rc, err := jwt.DecodeAuthorizationRequestClaims(string(m.Data))
	if err != nil {
		co.log.Warn("auth callout: undecodable request", "err", err)
		return // no answer: the server refuses the client when it times out
	}
	req := &rc.AuthorizationRequest
	if rc.Issuer != req.Server.ID {
		co.log.Warn("auth callout: a request not signed by the server it names", "server", req.Server.Name)
		return
	}
	resp := jwt.NewAuthorizationResponseClaims(req.UserNkey)
	resp.Audience = req.Server.ID
	id, err := co.authorize(req)
	if err == nil {
		resp.Jwt, err = co.userJWT(req.UserNkey, id)
	}
	if err != nil {
		resp.Error = err.Error()
		co.log.Warn("refused a NATS login", "reason", err.Error(), "key", req.ConnectOptions.Nkey,
			"type", req.ClientInformation.Type, "server", req.Server.Name)
	} else {
		co.log.Debug("bridge logged in to NATS", "bridge", id, "type", req.ClientInformation.Type,
			"server", req.Server.Name, "cid", req.ClientInformation.ID)
	}
	tok, err := resp.Encode(co.issuer)
	if err != nil {
		co.log.Error("auth callout: sign the response", "err", err)
		return
	}
	m.Respond([]byte(tok))
}

// authorize checks the bridge's signature over the server's nonce and its
// pairing; it returns the bridge's id.
func (co *callout) authorize(req *jwt.AuthorizationRequest) (string, error) {
	o := req.ConnectOptions
	if req.ClientInformation.Kind != "" && req.ClientInformation.Kind != "Client" {
		return "", fmt.Errorf("%s connections are not accepted", req.ClientInformation.Kind)
	}
	if o.Nkey == "" || o.SignedNonce == "" {
		return "", errors.New("not a bridge: bridges sign in with their nkey")
	}
	if !nkeys.IsValidPublicUserKey(o.Nkey) {
		return "", errors.New("not an nkey user key")
	}
	kp, err := nkeys.FromPublicKey(o.Nkey)
	if err != nil {
		return "", errors.New("not an nkey user key")
	}
	sig, err := base64.RawURLEncoding.DecodeString(o.SignedNonce)
	if err != nil {
		if sig, err = base64.StdEncoding.DecodeString(o.SignedNonce); err != nil {
			return "", errors.New("undecodable signature")
		}
	}
	if req.ClientInformation.Nonce == "" || kp.Verify([]byte(req.ClientInformation.Nonce), sig) != nil {
		return "", errors.New("the signature does not match the key")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	id, err := co.lookup(ctx, o.Nkey)
	if err != nil {
		return "", errors.New("unknown or revoked bridge key")
	}
	return id, nil
}

// userJWT is the login the server gives the bridge: its own subjects, in
// the hub's account, for BridgeLoginTTL.
func (co *callout) userJWT(userKey, bridgeID string) (string, error) {
	uc := jwt.NewUserClaims(userKey)
	uc.Name = bridgeUser(bridgeID)
	uc.Audience = co.account
	uc.Permissions = bridgePermissions(bridgeID)
	uc.Limits.Subs = bridgeMaxSubs
	uc.Expires = co.now().Add(BridgeLoginTTL).Unix()
	return uc.Encode(co.issuer)
}

// startCallout subscribes the callout service on nc (a user of the callout
// account), in a queue group so that any hub of a cluster may answer.
func startCallout(nc *nats.Conn, co *callout) (*nats.Subscription, error) {
	sub, err := nc.QueueSubscribe(calloutSubject, calloutQueue, co.handle)
	if err != nil {
		return nil, wh.Wrap(err, "subscribe the auth callout service")
	}
	if err := nc.Flush(); err != nil {
		return nil, wh.Wrap(err, "subscribe the auth callout service")
	}
	return sub, nil
}

// accountOf asks the server which account nc's user is in.
func accountOf(nc *nats.Conn) (string, error) {
	m, err := nc.Request("$SYS.REQ.USER.INFO", nil, 5*time.Second)
	if err != nil {
		return "", err
	}
	var r struct {
		Data struct {
			Account string `json:"account"`
		} `json:"data"`
		Error *struct {
			Description string `json:"description"`
		} `json:"error"`
	}
	if err := json.Unmarshal(m.Data, &r); err != nil {
		return "", err
	}
	if r.Error != nil || r.Data.Account == "" {
		return "", fmt.Errorf("no account in the server's answer: %s", m.Data)
	}
	return r.Data.Account, nil
}

// bridgeConn is one NATS connection of a bridge, on one server.
type bridgeConn struct {
	bridgeID, serverID, serverName string
	cid                            uint64
}

// bridgeConns lists the bridges' connections on every server, through
// the system account (PING.CONNZ; every server answers). user filters by
// NATS user name ("" for all). It waits a second for the first answer and
// then until the servers have gone quiet, or until ctx ends.
func bridgeConns(ctx context.Context, sys *nats.Conn, user string) ([]bridgeConn, error) {
	inbox := nats.NewInbox()
	sub, err := sys.SubscribeSync(inbox)
	if err != nil {
		return nil, err
	}
	defer sub.Unsubscribe()
	q, _ := json.Marshal(server.ConnzEventOptions{ConnzOptions: server.ConnzOptions{User: user, Username: true, Limit: 100000}})
	if err := sys.PublishRequest("$SYS.REQ.SERVER.PING.CONNZ", inbox, q); err != nil {
		return nil, err
	}
	var out []bridgeConn
	for wait := time.Second; ; wait = 250 * time.Millisecond {
		wctx, cancel := context.WithTimeout(ctx, wait)
		m, err := sub.NextMsgWithContext(wctx)
		cancel()
		if err != nil {
			return out, ctx.Err()
		}
		var r struct {
			Server struct {
				ID   string `json:"id"`
				Name string `json:"name"`
			} `json:"server"`
			Data struct {
				Conns []struct {
					Cid  uint64 `json:"cid"`
					User string `json:"authorized_user"`
				} `json:"connections"`
			} `json:"data"`
		}
		if err := json.Unmarshal(m.Data, &r); err != nil || r.Server.ID == "" {
			continue
		}
		for _, c := range r.Data.Conns {
			if id, ok := strings.CutPrefix(c.User, "bridge-"); ok {
				out = append(out, bridgeConn{bridgeID: id, serverID: r.Server.ID, serverName: r.Server.Name, cid: c.Cid})
			}
		}
	}
}

// kick closes connections (KICK to their server) and returns how many.
func kick(sys *nats.Conn, conns []bridgeConn, log *slog.Logger) int {
	n := 0
	for _, c := range conns {
		body, _ := json.Marshal(server.KickClientReq{CID: c.cid})
		if _, err := sys.Request("$SYS.REQ.SERVER."+c.serverID+".KICK", body, 2*time.Second); err != nil {
			log.Warn("disconnect a bridge: kick", "bridge", c.bridgeID, "server", c.serverName, "cid", c.cid, "err", err)
			continue
		}
		n++
	}
	return n
}
