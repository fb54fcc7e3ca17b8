package hub

import (
	"github.com/nats-io/nats.go"

	"github.com/wheelhouse-dev/wheelhouse/internal/termsafe"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// A bridge names the reply subject of every request it sends, and the hub
// answers it with the hub's own rights. So the hub answers a bridge only on
// that bridge's own inbox (wire.IsBridgeInbox): a message whose reply
// subject is anywhere else — the event log, another bridge's subjects, the
// JetStream API — is dropped unhandled, counted
// (wheelhouse_bridge_replies_refused_total) and logged once per bridge.
// The link's NATS user may not publish there either (natsPermissions);
// this check comes first and says who tried.

// maxReplyLogged bounds the bridges remembered as logged (the counter
// goes on counting past it).
const maxReplyLogged = 10_000

// replyAllowed reports whether the hub may answer bridge id's message m:
// it names no reply subject, or its own inbox. Otherwise the refusal is
// counted and logged (once per bridge).
func (l *Link) replyAllowed(id string, m *nats.Msg) bool {
	if m.Reply == "" || wire.IsBridgeInbox(id, m.Reply) {
		return true
	}
	l.m.repliesRefused.Inc()
	l.mu.Lock()
	first := !l.replyLogged[id] && len(l.replyLogged) < maxReplyLogged
	if first {
		l.replyLogged[id] = true
	}
	l.mu.Unlock()
	if first {
		l.log.Warn("dropped a bridge message whose reply subject is not the bridge's inbox (logged once per bridge; wheelhouse_bridge_replies_refused_total counts them)",
			"bridge", id, "subject", m.Subject, "reply", termsafe.LineN(m.Reply, 120), "inbox", wire.InboxPrefix(id)+".>")
	}
	return false
}

// replyTo is the subject to answer bridge id's message m on: its reply
// subject when that is the bridge's own inbox, "" when there is nothing
// to answer or the subject is refused. Every answer to a bridge goes
// through it.
func (l *Link) replyTo(id string, m *nats.Msg) string {
	if m.Reply == "" || !l.replyAllowed(id, m) {
		return ""
	}
	return m.Reply
}
