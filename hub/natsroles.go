package hub

import (
	"github.com/nats-io/nats-server/v2/server"

	"github.com/wheelhouse-dev/wheelhouse/eventlog"
	"github.com/wheelhouse-dev/wheelhouse/room"
)

// The hub's side of NATS has one user per role, each with only the rights
// it needs (the embedded server's users here; deploy/nats.conf gives a
// cluster's the same, which TestDeployPermissions checks):
//
//   - bridge-serving (the Link): hears bridges (wh.hub.>) and answers
//     them on bridge subjects and bridge inboxes only. It cannot publish on
//     the event log nor reach the JetStream, KV or object store APIs, so a
//     bridge that names a reply subject cannot use it to (the Link also
//     refuses such a subject first: replyAllowed).
//   - log-writer: the only user that may publish on wh.log.>; appends,
//     reads, consumers, the login KV and the files' object store, but no
//     stream or bucket create, update, delete, purge, snapshot or restore.
//   - ops: creates and updates the stream and the buckets at start-up,
//     removes deleted files' bytes (the retention of files), writes and
//     reads the projection's snapshots (their bucket is its alone) and
//     purges the log up to a snapshot; no log subject. wheelhouse bench's raw JetStream baseline uses it too.
//
// Each user has an inbox prefix of its own, so one cannot answer in
// another's name (the bridge-serving user may publish to _INBOX.>, bridges'
// inboxes, which these are not under).
const (
	HubInbox = "_WH_HUB_INBOX" // bridge-serving
	LogInbox = "_WH_LOG_INBOX" // log-writer
	OpsInbox = "_WH_OPS_INBOX" // ops
)

// BenchSubjects are the raw JetStream baseline's of wheelhouse bench
// (ops publishes there; no hub does).
const BenchSubjects = "wh.bench.>"

// natsRole names a user of the hub.
type natsRole string

const (
	roleBridgeServing natsRole = "bridge-serving"
	roleLogWriter     natsRole = "log-writer"
	roleOps           natsRole = "ops"
)

// inboxOf is a role's inbox prefix (nats.CustomInboxPrefix).
func inboxOf(r natsRole) string {
	switch r {
	case roleLogWriter:
		return LogInbox
	case roleOps:
		return OpsInbox
	}
	return HubInbox
}

// jsAdminDenied are the JetStream API requests that change or remove a
// stream (a KV bucket and an object store are streams too): ops only.
var jsAdminDenied = []string{
	"$JS.API.STREAM.CREATE.>",
	"$JS.API.STREAM.UPDATE.>",
	"$JS.API.STREAM.DELETE.>",
	"$JS.API.STREAM.PURGE.>",
	"$JS.API.STREAM.SNAPSHOT.>",
	"$JS.API.STREAM.RESTORE.>",
	"$JS.API.STREAM.MSG.DELETE.>",
	"$JS.API.STREAM.PEER.REMOVE.>",
	"$JS.API.ACCOUNT.PURGE.>",
}

// natsPermissions is what each role may do.
func natsPermissions(r natsRole) *server.Permissions {
	switch r {
	case roleLogWriter:
		return &server.Permissions{
			Publish: &server.SubjectPermission{
				Allow: []string{eventlog.SubjectPrefix + ">", "$JS.API.>", "$JS.ACK.>", "$JS.FC.>",
					"$KV." + room.LoginBucket + ".>", "$KV." + room.LimitsBucket + ".>", "$KV." + room.DeviceBucket + ".>",
					"$O." + room.FilesBucket + ".>"},
				Deny: jsAdminDenied,
			},
			Subscribe: &server.SubjectPermission{Allow: []string{LogInbox + ".>"}},
		}
	case roleOps:
		return &server.Permissions{
			Publish: &server.SubjectPermission{Allow: []string{"$JS.API.>", "$O." + room.FilesBucket + ".>", "$O." + SnapshotsBucket + ".>",
				"$JS.SNAPSHOT.ACK.>", "$JS.SNAPSHOT.RESTORE.>", "$SYS.REQ.USER.INFO", BenchSubjects}},
			Subscribe: &server.SubjectPermission{Allow: []string{OpsInbox + ".>"}},
		}
	}
	return &server.Permissions{
		Publish:   &server.SubjectPermission{Allow: []string{"wh.bridge.>", "_INBOX.>"}},
		Subscribe: &server.SubjectPermission{Allow: []string{"wh.hub.>", HubInbox + ".>"}},
	}
}
