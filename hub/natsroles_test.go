package hub_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/wheelhouse-dev/wheelhouse/bridge"
	"github.com/wheelhouse-dev/wheelhouse/chat"
	"github.com/wheelhouse-dev/wheelhouse/eventlog"
	"github.com/wheelhouse-dev/wheelhouse/hub"
	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
	"github.com/wheelhouse-dev/wheelhouse/room"
	"github.com/wheelhouse-dev/wheelhouse/store"
)

// TestHubNATSRoles: on the embedded server and on one configured from
// deploy/nats.conf, the hub's bridge-serving user can reach neither the
// event log nor the JetStream, KV and object store APIs; the log-writer
// cannot delete, purge, update or snapshot a stream; ops cannot publish on
// the log. An event published on a log subject with the log-writer's own
// credentials but without the hub's MAC (none, a bogus one, one under
// another key) is refused by the projector, counted, never applied — also
// when the projection is rebuilt from the stream.
func TestHubNATSRoles(t *testing.T) {
	for _, c := range []struct {
		name string
		nats func(t *testing.T) *testhub.NATS
	}{
		{"Embedded", func(*testing.T) *testhub.NATS { return nil }},
		{"DeployConf", func(t *testing.T) *testhub.NATS { return testhub.StartNATS(t) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			ns := c.nats(t)
			h := testhub.Start(t, testhub.Options{NATS: ns, MetricsAddr: "127.0.0.1:0"})
			admin := h.Setup("root", "correct horse")
			h.AddUser(admin, "alice")
			forged, _ := chat.NewEvent(chat.EvUserAdmin, time.Now(), chat.UserAdmin{User: "alice", Admin: true, By: "root"})
			forgedBytes, _ := json.Marshal(forged)

			var bv testhub.Violations
			bs := h.ConnectAs(t, hub.RoleBridgeServing, nats.ErrorHandler(bv.Handler))
			for _, s := range []string{
				eventlog.SubjectPrefix + chat.EvUserAdmin, "wh.log.forged",
				"$JS.API.STREAM.DELETE." + eventlog.StreamName, "$JS.API.INFO", "$JS.API.STREAM.INFO." + eventlog.StreamName,
				"$JS.API.CONSUMER.DELETE." + eventlog.StreamName + ".wheelhouse-router",
				"$KV." + room.LoginBucket + ".x", "$O." + room.FilesBucket + ".M.x", "$JS.API.STREAM.DELETE.OBJ_" + room.FilesBucket,
			} {
				bv.Refused(t, bs, "bridge-serving publishing on "+s, func() error { return bs.Publish(s, forgedBytes) })
			}
			bv.Refused(t, bs, "bridge-serving subscribing to the log", func() error { _, err := bs.SubscribeSync("wh.log.>"); return err })

			var lv testhub.Violations
			lw := h.ConnectAs(t, hub.RoleLogWriter, nats.ErrorHandler(lv.Handler))
			for _, s := range []string{
				"$JS.API.STREAM.DELETE." + eventlog.StreamName, "$JS.API.STREAM.PURGE." + eventlog.StreamName,
				"$JS.API.STREAM.UPDATE." + eventlog.StreamName, "$JS.API.STREAM.SNAPSHOT." + eventlog.StreamName,
				"$JS.API.STREAM.MSG.DELETE." + eventlog.StreamName, "$JS.API.STREAM.DELETE.KV_" + room.LoginBucket,
				"$JS.API.STREAM.CREATE.EVIL", "$JS.API.STREAM.RESTORE." + eventlog.StreamName,
			} {
				lv.Refused(t, lw, "log-writer publishing on "+s, func() error { return lw.Publish(s, []byte("{}")) })
			}
			lv.Refused(t, lw, "log-writer publishing to a bridge", func() error { return lw.Publish("wh.bridge.b0123456789ab.steer", []byte("{}")) })
			var ov testhub.Violations
			ops := h.ConnectAs(t, hub.RoleOps, nats.ErrorHandler(ov.Handler))
			ov.Refused(t, ops, "ops publishing on the log", func() error { return ops.Publish("wh.log.user.admin", forgedBytes) })

			// Forged events with the log-writer's credentials.
			js, err := jetstream.New(lw)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			before := metricValue(t, h.Metrics(), "wheelhouse_projection_unauthentic_events_total")
			var last uint64
			other := &eventlog.Auth{Key: make([]byte, eventlog.KeySize)}
			subject := eventlog.SubjectPrefix + chat.EvUserAdmin
			for i, mac := range []string{"", "00ff", other.MAC(subject, forged.ID+"x", forgedBytes)} {
				m := &nats.Msg{Subject: subject, Data: forgedBytes, Header: nats.Header{}}
				if mac != "" {
					m.Header.Set(eventlog.MACHeader, mac)
				}
				ack, err := js.PublishMsg(ctx, m, jetstream.WithMsgID(forged.ID+string(rune('x'+i))))
				if err != nil {
					t.Fatalf("publish as the log-writer: %v", err)
				}
				last = ack.Sequence
			}
			if err := h.Rooms().Log.WaitApplied(ctx, last); err != nil {
				t.Fatal(err)
			}
			if isAdmin(t, admin, "alice") {
				t.Fatal("a forged user.admin event was applied")
			}
			if got := metricValue(t, h.Metrics(), "wheelhouse_projection_unauthentic_events_total") - before; got != 3 {
				t.Fatalf("wheelhouse_projection_unauthentic_events_total moved by %v, want 3", got)
			}
			if r, ok := h.Rooms().Refusal(ctx, ""); !ok || r == nil {
				t.Fatalf("the forged events are not recorded as refused: %v %v", r, ok)
			}
			// The hub's own writes still go through, and a deleted message's
			// file bytes are removed (a purge, through ops).
			h.AddUser(admin, "carol")
			admin.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "dev"})
			fid := uploadFile(t, admin, "dev", "notes.txt", []byte("some notes\n"))
			r := admin.Must(201, "POST", "/api/v1/rooms/dev/messages", map[string]any{"text": "see the notes", "files": []string{fid}})
			mid := int64(r.Body["message"].(map[string]any)["id"].(float64))
			obs, err := js.ObjectStore(ctx, room.FilesBucket)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := obs.GetInfo(ctx, fid); err != nil {
				t.Fatalf("the uploaded file: %v", err)
			}
			admin.Must(204, "DELETE", fmt.Sprintf("/api/v1/rooms/dev/messages/%d", mid), nil)
			if _, err := obs.GetInfo(ctx, fid); !errors.Is(err, jetstream.ErrObjectNotFound) {
				t.Fatalf("a deleted message's file is still stored: %v", err)
			}

			// Rebuilt from the stream: the same refusals.
			dir := h.DataDir
			h.Stop()
			if err := os.Rename(filepath.Join(dir, store.DBFile), filepath.Join(dir, store.DBFile+".old")); err != nil {
				t.Fatal(err)
			}
			os.Remove(filepath.Join(dir, store.DBFile+"-wal"))
			os.Remove(filepath.Join(dir, store.DBFile+"-shm"))
			h2 := testhub.Start(t, testhub.Options{DataDir: dir, NATS: ns})
			root := h2.Login("root", "correct horse")
			if isAdmin(t, root, "alice") {
				t.Fatal("a forged user.admin event was applied by the rebuild")
			}
			if !isAdminKnown(t, root, "carol") {
				t.Fatal("the rebuild lost a genuine event")
			}
		})
	}
}

func isAdminKnown(t *testing.T, admin *testhub.Client, name string) bool {
	r := admin.Must(200, "GET", "/api/v1/users", nil)
	for _, u := range testhub.AsList(r.Body["users"]) {
		if u["name"] == name {
			return true
		}
	}
	return false
}

// TestLegacyEventsBeforeTheKey: a hub upgraded in place finds a stream an
// earlier version wrote, whose events carry no MAC. It makes its event key
// with the stream's last sequence as the legacy horizon and applies those
// events (also when rebuilding); a MAC-less event after the horizon is
// refused.
func TestLegacyEventsBeforeTheKey(t *testing.T) {
	dir := t.TempDir()
	// The earlier version's stream: in the data directory's JetStream
	// store, in the global account, events without a MAC.
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: filepath.Join(dir, "jetstream"), NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats not ready")
	}
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: eventlog.StreamName, Subjects: []string{eventlog.SubjectPrefix + ">"}, Storage: jetstream.FileStorage,
		Duplicates: eventlog.DedupWindow, MaxMsgSize: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	hash, err := room.HashPassword("correct horse")
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []chat.UserCreated{{Name: "root", PasswordHash: hash, Admin: true, Setup: true}, {Name: "legacy", PasswordHash: hash}} {
		ev, _ := chat.NewEvent(chat.EvUserCreated, time.Now(), u)
		b, _ := json.Marshal(ev)
		if _, err := js.Publish(ctx, eventlog.SubjectPrefix+ev.Type, b, jetstream.WithMsgID(ev.ID)); err != nil {
			t.Fatal(err)
		}
	}
	nc.Close()
	ns.Shutdown()
	ns.WaitForShutdown()

	h := testhub.Start(t, testhub.Options{DataDir: dir, MetricsAddr: "127.0.0.1:0"})
	var key struct {
		Key           string `json:"key"`
		LegacyHorizon uint64 `json:"legacyHorizon"`
	}
	b, err := os.ReadFile(filepath.Join(dir, hub.LogKeyFile))
	if err != nil || json.Unmarshal(b, &key) != nil || key.LegacyHorizon != 2 || len(key.Key) != 2*eventlog.KeySize {
		t.Fatalf("event key file %s: %v", b, err)
	}
	if fi, err := os.Stat(filepath.Join(dir, hub.LogKeyFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("event key file mode: %v %v", fi.Mode(), err)
	}
	root := h.Login("root", "correct horse")
	if !isAdminKnown(t, root, "legacy") {
		t.Fatal("the earlier version's events were not applied")
	}
	// After the horizon, an event needs the MAC.
	lw, _ := jetstream.New(h.ConnectAs(t, hub.RoleLogWriter))
	forged, _ := chat.NewEvent(chat.EvUserAdmin, time.Now(), chat.UserAdmin{User: "legacy", Admin: true, By: "root"})
	fb, _ := json.Marshal(forged)
	ack, err := lw.Publish(ctx, eventlog.SubjectPrefix+forged.Type, fb, jetstream.WithMsgID(forged.ID))
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Rooms().Log.WaitApplied(ctx, ack.Sequence); err != nil {
		t.Fatal(err)
	}
	if isAdmin(t, root, "legacy") {
		t.Fatal("a MAC-less event after the legacy horizon was applied")
	}
	h.AddUser(root, "fresh")

	// A lost key file is refused once the stream's events carry MACs.
	h.Stop()
	kf := filepath.Join(dir, hub.LogKeyFile)
	if err := os.Rename(kf, kf+".bak"); err != nil {
		t.Fatal(err)
	}
	hc, err := hub.New(hub.Config{DataDir: dir, HTTPAddr: "127.0.0.1:0", NATSAddr: "127.0.0.1:0", Logger: testhub.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := hc.Open(ctx); err == nil || !strings.Contains(err.Error(), "restore it from the data directory's backup") {
		hc.Close(ctx)
		t.Fatalf("a hub without its event key started: %v", err)
	}
	if err := os.Rename(kf+".bak", kf); err != nil {
		t.Fatal(err)
	}

	// A rebuild takes the legacy events again and refuses the forged one.
	h.Stop()
	if err := os.Rename(filepath.Join(dir, store.DBFile), filepath.Join(dir, store.DBFile+".old")); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, store.DBFile+"-wal"))
	os.Remove(filepath.Join(dir, store.DBFile+"-shm"))
	h2 := testhub.Start(t, testhub.Options{DataDir: dir})
	root = h2.Login("root", "correct horse")
	if !isAdminKnown(t, root, "legacy") || !isAdminKnown(t, root, "fresh") || isAdmin(t, root, "legacy") {
		t.Fatal("the rebuild differs: legacy events, genuine events, the forged event")
	}
}

// A revocation published on the log with the log-writer's credentials but
// without the hub's MAC revokes nothing: the projector refuses it and the
// router, which acts on revocations, terminates it without disconnecting
// the bridge.
func TestForgedRevocationIgnored(t *testing.T) {
	h := testhub.Start(t, testhub.Options{MetricsAddr: "127.0.0.1:0"})
	admin := h.Setup("root", "correct horse")
	bob := h.AddUser(admin, "bob")
	br := h.StartBridge(bob, nil, bridge.AgentConfig{Name: "helper", Harness: "demo", PolicyFile: bridge.PolicyConfig{Address: "members"},
		Options: map[string]string{"steps": "1", "step": "10ms"}})
	ev, _ := chat.NewEvent(chat.EvBridgeRevoked, time.Now(), chat.BridgeRevoked{ID: br.Creds.BridgeID, By: "root"})
	data, _ := json.Marshal(ev)
	js, err := jetstream.New(h.ConnectAs(t, hub.RoleLogWriter))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ack, err := js.Publish(ctx, eventlog.SubjectPrefix+ev.Type, data, jetstream.WithMsgID(ev.ID))
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Rooms().Log.WaitApplied(ctx, ack.Sequence); err != nil {
		t.Fatal(err)
	}
	// The router is done with it once its ack floor passes it.
	testhub.CheckFor(t, 20*time.Second, "the router done with the forged revocation", func() error {
		c, err := js.Consumer(ctx, eventlog.StreamName, "wheelhouse-router")
		if err != nil {
			return err
		}
		info, err := c.Info(ctx)
		if err != nil {
			return err
		}
		if info.AckFloor.Stream < ack.Sequence {
			return fmt.Errorf("ack floor %d, forged revocation at %d", info.AckFloor.Stream, ack.Sequence)
		}
		return nil
	})
	if strings.Contains(br.Out(), "lost the hub connection") {
		t.Fatalf("a forged revocation disconnected the bridge:\n%s", br.Out())
	}
	b, err := h.Rooms().BridgeByID(ctx, br.Creds.BridgeID)
	if err != nil || b.Revoked {
		t.Fatalf("the bridge after a forged revocation: %+v %v", b, err)
	}
	if got := metricValue(t, h.Metrics(), "wheelhouse_projection_unauthentic_events_total"); got != 1 {
		t.Fatalf("wheelhouse_projection_unauthentic_events_total = %v, want 1", got)
	}
}
