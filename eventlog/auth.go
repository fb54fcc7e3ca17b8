package eventlog

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"

	wh "github.com/wheelhouse-dev/wheelhouse"
)

// MACHeader carries an event's MAC: HMAC-SHA256 under the hub's event key
// over its subject, message id (Nats-Msg-Id) and body. Anyone who may
// publish on a log subject can set any header; only a holder of the key
// can set this one right. The key is kept outside the log (the hub's data
// directory, or the cluster's hub-auth.json).
const MACHeader = "Wh-Event-Mac"

// KeySize is the length of an event key in bytes.
const KeySize = 32

// Auth authenticates the hub's events. Events the stream held before the
// hub kept a key (an earlier version, upgraded in place) carry no MAC:
// those at or below LegacyHorizon, the stream's last sequence when the key
// was made, are taken without one. Every later event needs a MAC that
// verifies, and a MAC present on any event must verify.
type Auth struct {
	Key           []byte
	LegacyHorizon uint64
}

// MAC is the MAC of an event published on subject with message id msgID.
func (a *Auth) MAC(subject, msgID string, data []byte) string {
	m := hmac.New(sha256.New, a.Key)
	m.Write([]byte("wheelhouse event v1\x00"))
	var n [binary.MaxVarintLen64]byte
	for _, f := range [][]byte{[]byte(subject), []byte(msgID), data} {
		m.Write(n[:binary.PutUvarint(n[:], uint64(len(f)))])
		m.Write(f)
	}
	return hex.EncodeToString(m.Sum(nil))
}

// Check says whether an entry is the hub's own event: nil, or why not (a
// refusal the projector records; the same on every node that holds the
// key). mac is the entry's MACHeader ("" when it has none).
func (a *Auth) Check(e Entry, mac string) error {
	if mac == "" {
		if e.Seq <= a.LegacyHorizon {
			return nil
		}
		return &wh.Error{Code: wh.EForbidden, Reason: ReasonUnauthentic,
			Message: "refused an event without the hub's MAC: it was not appended by a hub of this deployment"}
	}
	if e.MsgID == "" || !hmac.Equal([]byte(mac), []byte(a.MAC(e.Subject, e.MsgID, e.Data))) {
		return &wh.Error{Code: wh.EForbidden, Reason: ReasonUnauthentic,
			Message: "refused an event whose MAC does not verify: it was not appended by a hub of this deployment"}
	}
	return nil
}

// ReasonUnauthentic is the refusal reason of an event that is not the
// hub's own.
const ReasonUnauthentic = "unauthentic-event"
