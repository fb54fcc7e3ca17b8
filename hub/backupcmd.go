package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	wh "github.com/wheelhouse-dev/wheelhouse"
)

// OpsAccessFile is where a running hub with the embedded NATS server
// leaves, for `wheelhouse backup` on the same machine, the URL of its
// NATS listener and its ops user's seed (0600, in the data directory,
// beside the event key; a new seed at every start, removed at a clean
// stop). A hub on a NATS cluster has its ops seed in hub-auth.json.
const OpsAccessFile = "ops-access.json"

type opsAccess struct {
	URL     string `json:"url"`
	OpsSeed string `json:"opsSeed"`
}

// writeOpsAccess writes OpsAccessFile for the embedded server.
func (h *Hub) writeOpsAccess() error {
	b, _ := json.MarshalIndent(opsAccess{URL: h.ns.ns.ClientURL(), OpsSeed: h.natsSecrets.OpsSeed}, "", "  ")
	return writeFileAtomic(filepath.Join(h.cfg.DataDir, OpsAccessFile), append(b, '\n'))
}

// connectOps connects as the hub's ops user: to a cluster with the seeds
// of secretsFile, or to the running embedded hub of dataDir.
func connectOps(dataDir, natsURL, secretsFile string) (*nats.Conn, error) {
	url, seed := natsURL, ""
	if natsURL != "" {
		s, err := LoadNATSSecrets(secretsFile)
		if err != nil {
			return nil, err
		}
		seed = s.OpsSeed
	} else {
		path := filepath.Join(dataDir, OpsAccessFile)
		b, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			return nil, wh.Errorf(wh.EInvalid, "%s is missing: is the hub of %s running? A backup is taken from a running hub (with --nats-url and --nats-secrets for one on a NATS cluster)", path, dataDir)
		}
		var a opsAccess
		if err == nil {
			err = json.Unmarshal(b, &a)
		}
		if err != nil {
			return nil, wh.Errorf(wh.EInvalid, "read %s: %v", path, err)
		}
		url, seed = a.URL, a.OpsSeed
	}
	kp, err := nkeys.FromSeed([]byte(seed))
	if err != nil {
		return nil, wh.Errorf(wh.EInvalid, "the ops user's seed: %v", err)
	}
	nc, err := nats.Connect(url, nats.Nkey(pubKey(kp), kp.Sign), nats.CustomInboxPrefix(inboxOf(roleOps)), nats.Name("wheelhouse-backup"))
	if err != nil {
		return nil, wh.Errorf(wh.EUnavailable, "connect to the hub's NATS at %s as its ops user: %v (is the hub running?)", url, err)
	}
	return nc, nil
}

// BackupMain is `wheelhouse backup` and `wheelhouse restore`.
type BackupMain struct {
	DataDir, Dir         string
	NATSURL, NATSSecrets string // a hub on a NATS cluster
	Out                  io.Writer
}

// Backup backs up the running hub of DataDir into Dir.
func (b BackupMain) Backup(ctx context.Context) error {
	nc, err := connectOps(b.DataDir, b.NATSURL, b.NATSSecrets)
	if err != nil {
		return err
	}
	defer nc.Close()
	m, err := Backup(ctx, nc, b.DataDir, b.Dir)
	if err != nil {
		return err
	}
	fmt.Fprintf(b.Out, "backed up into %s: the database at event %d, the event stream to %d\n", b.Dir, m.Database, m.Streams["WHEELHOUSE"])
	return nil
}

// Restore restores Dir into the empty data directory DataDir (the hub not
// running): its embedded NATS store, or the cluster of NATSURL, which
// must not hold the hub's streams.
func (b BackupMain) Restore(ctx context.Context) error {
	var m BackupManifest
	var err error
	if b.NATSURL == "" {
		m, err = RestoreEmbedded(ctx, b.Dir, b.DataDir)
	} else {
		var nc *nats.Conn
		if nc, err = connectOps(b.DataDir, b.NATSURL, b.NATSSecrets); err != nil {
			return err
		}
		defer nc.Close()
		m, err = Restore(ctx, nc, b.Dir, b.DataDir)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(b.Out, "restored %s into %s: the database at event %d, the event stream to %d; start the hub on it\n", b.Dir, b.DataDir, m.Database, m.Streams["WHEELHOUSE"])
	return nil
}
