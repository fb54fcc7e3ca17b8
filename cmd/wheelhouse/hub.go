package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/authz"
	"github.com/wheelhouse-dev/wheelhouse/hub"
	"github.com/wheelhouse-dev/wheelhouse/room"
	"github.com/wheelhouse-dev/wheelhouse/web"
)

type hubFlags struct {
	data, http, tlsCert, tlsKey, publicURL, origins, logLevel, sync string
	nats, natsURL, natsSecrets, natsWebsocket                       string
	metrics, trustedProxies                                         string
	replicas                                                        int
	natsMaxStore, walLimit, retainBytes                             byteSize
	logJSON                                                         bool
	steerTimeout, writeTimeout, snapshotEvery, retainAge            time.Duration
	limits                                                          authz.Budgets
}

func (f *hubFlags) register(fs *flag.FlagSet, defaultData, defaultHTTP string) {
	fs.StringVar(&f.data, "data", defaultData, "data `directory` (SQLite database and JetStream store)")
	fs.StringVar(&f.http, "http", defaultHTTP, "HTTP(S) listen `address` host:port: the one port people and bridges use")
	fs.StringVar(&f.tlsCert, "tls-cert", "", "serve HTTPS with this certificate (chain), a PEM `file`; with --tls-key")
	fs.StringVar(&f.tlsKey, "tls-key", "", "the certificate's private key, a PEM `file`")
	fs.StringVar(&f.publicURL, "public-url", "", "the `URL` people and bridges reach this hub at, e.g. https://chat.example.com (default: from --http)")
	fs.StringVar(&f.nats, "nats", hub.DefaultNATSAddr, "the embedded NATS server's plain listener `address` host:port; bridges do not need it: keep it on loopback")
	fs.StringVar(&f.natsURL, "nats-url", "", "use an external NATS cluster configured from deploy/nats.conf instead of the embedded server (`URLs`, comma-separated)")
	fs.StringVar(&f.natsSecrets, "nats-secrets", "", "with --nats-url: the hub-auth.json `file` written by wheelhouse nats-secrets")
	fs.StringVar(&f.natsWebsocket, "nats-websocket", "", "with --nats-url: the NATS servers' websocket listeners that /nats forwards bridges to (ws://host:port `URLs`, comma-separated)")
	fs.IntVar(&f.replicas, "replicas", 1, "event stream replicas (3 on a NATS cluster)")
	fs.Var(&f.natsMaxStore, "nats-max-store", "cap on the embedded JetStream store, a `size` such as 20GB or 512MiB (default: nats-server's, 75% of the disk space free at start)")
	fs.Var(&f.walLimit, "sqlite-wal-limit", "the `size` past which a checkpoint empties the SQLite write-ahead log (default 64MiB)")
	enumVar(fs, &f.sync, "sync", hub.SyncInterval, []string{hub.SyncInterval, hub.SyncAlways}, "when the embedded NATS server syncs acknowledged events to disk: every two minutes, or before every acknowledgement (see docs/operations.md)")
	fs.StringVar(&f.origins, "origins", "", "extra allowed WebSocket origins, comma-separated host `patterns`")
	fs.BoolVar(&f.logJSON, "log-json", false, "log JSON lines instead of text")
	enumVar(fs, &f.logLevel, "log-level", "info", logLevels, "log `level`")
	fs.DurationVar(&f.steerTimeout, "steer-timeout", hub.DefaultSteerTimeout, "how long a bridge has to begin acting on a message (its deadline)")
	fs.DurationVar(&f.writeTimeout, "write-timeout", web.DefaultWriteTimeout, "the longest a change (a post, a decision) waits for the event log before the client gets 503")
	fs.StringVar(&f.metrics, "metrics", "", "serve Prometheus /metrics on this separate listen `address` host:port (default: off)")
	f.limits = room.DefaultBudgets
	for _, l := range []struct {
		name string
		r    *authz.Rate
		what string
	}{
		{"limit-posts", &f.limits.Posts, "messages, edits, deletions and reactions"},
		{"limit-rooms", &f.limits.Rooms, "rooms created"},
		{"limit-uploads", &f.limits.Uploads, "files uploaded"},
	} {
		fs.Var((*rateFlag)(l.r), l.name, "per-person limit on "+l.what+": N/`period` such as 300/5m, or off (admins change it with PUT /settings)")
	}
	fs.Var((*rateFlag)(&f.limits.Bridge), "limit-bridge", "per-bridge pace of its agents' output, N/`period` or off (paced, never refused)")
	fs.IntVar(&f.limits.Sockets, "limit-sockets", f.limits.Sockets, "per-person limit on open live-event sockets (0: none)")
	fs.StringVar(&f.trustedProxies, "trusted-proxy", "", "reverse proxies whose X-Forwarded-For/-Proto count, comma-separated `addresses or CIDRs`")
	fs.DurationVar(&f.snapshotEvery, "snapshot-every", hub.DefaultSnapshotEvery, "how often the hub writes a snapshot of its database into the snapshots bucket (when it changed)")
	fs.DurationVar(&f.retainAge, "retain-age", 0, "purge room content older than this `duration` from the event log, up to the newest verified snapshot (default: keep everything; see docs/operations.md)")
	fs.Var(&f.retainBytes, "retain-bytes", "purge the oldest room content from the event log past this `size`, up to the newest verified snapshot (default: no limit)")
}

func splitList(s string) []string {
	var out []string
	for _, o := range strings.Split(s, ",") {
		if o = strings.TrimSpace(o); o != "" {
			out = append(out, o)
		}
	}
	return out
}

func (f *hubFlags) config(stderr io.Writer) hub.Config {
	return hub.Config{
		DataDir: f.data, HTTPAddr: f.http, TLSCert: f.tlsCert, TLSKey: f.tlsKey, PublicURL: f.publicURL,
		NATSAddr: f.nats, NATSURL: f.natsURL, NATSSecrets: f.natsSecrets, NATSWebsocket: splitList(f.natsWebsocket),
		Replicas: f.replicas, Sync: f.sync, NATSMaxStore: int64(f.natsMaxStore), SQLiteWALLimit: int64(f.walLimit), OriginPatterns: splitList(f.origins), SteerTimeout: f.steerTimeout, WriteTimeout: f.writeTimeout,
		MetricsAddr: f.metrics, TrustedProxies: splitList(f.trustedProxies), Budgets: &f.limits,
		SnapshotEvery: f.snapshotEvery, Retention: hub.Retention{Age: f.retainAge, Bytes: int64(f.retainBytes)},
		Logger: newLogger(stderr, f.logJSON, f.logLevel),
	}
}

func hubFlagSet(help io.Writer) (*flag.FlagSet, *hubFlags) {
	fs := newFlags("hub", "hub --data DIR [--http ADDR] [--tls-cert FILE --tls-key FILE] [--public-url URL] [--nats ADDR | --nats-url URLS --nats-secrets FILE --nats-websocket URLS] [--replicas N]", help)
	var f hubFlags
	f.register(fs, "", hub.DefaultHTTPAddr)
	return fs, &f
}

func runHub(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, f := hubFlagSet(stdout)
	if err := parse(fs, args); err != nil {
		return err
	}
	if f.data == "" {
		return usageError{"--data is required: the folder that holds the hub's database and event log"}
	}
	h, err := hub.New(f.config(stderr))
	if err != nil {
		return err
	}
	if err := h.Open(ctx); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Wheelhouse hub at %s (bridges connect through %s)\n", h.URL(), h.NATSURL())
	if w := h.URLWarning(); w != "" {
		fmt.Fprintf(stdout, "Note: %s\n", w)
	}
	if tok := h.SetupToken(); tok != "" {
		fmt.Fprintf(stdout, "First start: create the admin at %s with setup token %s\n", h.URL(), tok)
		fmt.Fprintf(stdout, "  or: curl -X POST %s/api/v1/setup -H 'Content-Type: application/json' -d '{\"token\":\"%s\",\"name\":\"admin\",\"password\":\"...\"}'\n", h.URL(), tok)
	}
	<-ctx.Done()
	fmt.Fprintln(stdout, "shutting down…")
	cctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	return h.Close(cctx)
}

// natsSecretsFlagSet is nats-secrets' flags.
func natsSecretsFlagSet(stdout io.Writer) (*flag.FlagSet, *bool, *int64) {
	fs := newFlags("nats-secrets", "nats-secrets [--upgrade --legacy-horizon N] DIR", stdout)
	upgrade := fs.Bool("upgrade", false, "add what this version needs (the log-writer's and ops' keys, the events' key) to the secrets an earlier version wrote into DIR, keeping its keys")
	horizon := fs.Int64("legacy-horizon", -1, "with --upgrade: the event stream's last sequence `N` (its events, appended by the earlier version, carry no MAC; never lower)")
	return fs, upgrade, horizon
}

// runNATSSecrets writes the secrets a NATS cluster and its hubs share.
func runNATSSecrets(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, upgrade, horizon := natsSecretsFlagSet(stdout)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageError{"name the folder to write the secrets to: wheelhouse nats-secrets DIR"}
	}
	dir := fs.Arg(0)
	if *upgrade {
		if *horizon < 0 {
			return usageError{"--upgrade needs --legacy-horizon N: the event stream's last sequence (nats stream info WHEELHOUSE, or wheelhouse_projection_applied_seq of a caught-up hub), with every hub stopped"}
		}
		upgraded, err := hub.UpgradeNATSSecrets(dir, uint64(*horizon))
		if err != nil {
			return err
		}
		if !upgraded {
			fmt.Fprintf(stdout, "The secrets in %s are already this version's.\n", dir)
			return nil
		}
		fmt.Fprintf(stdout, "Upgraded %s and %s (kept their keys, added the log-writer's and ops' NATS users and the events' key, legacy horizon %d).\n"+
			"Restart the NATS servers with deploy/nats.conf of this version, then copy %s to every hub and start them.\n",
			filepath.Join(dir, hub.NATSAuthFile), filepath.Join(dir, hub.HubAuthFile), *horizon, hub.HubAuthFile)
		return nil
	}
	if *horizon >= 0 {
		return usageError{"--legacy-horizon goes with --upgrade"}
	}
	created, err := hub.GenerateNATSSecrets(dir)
	if err != nil {
		return err
	}
	if !created {
		fmt.Fprintf(stdout, "Kept the secrets already in %s.\n", dir)
		return nil
	}
	fmt.Fprintf(stdout, "Wrote %s (for the NATS servers: deploy/nats.conf includes it as secrets/%s)\nand %s (for the hubs: --nats-secrets), both 0600.\n",
		filepath.Join(dir, hub.NATSAuthFile), hub.NATSAuthFile, filepath.Join(dir, hub.HubAuthFile))
	return nil
}

// defaultDataDir is where `wheelhouse up` keeps its state.
func defaultDataDir() string {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "wheelhouse")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "wheelhouse-data"
	}
	return filepath.Join(home, ".local", "share", "wheelhouse")
}

// rateFlag is a flag holding a per-person rate (authz.ParseRate).
type rateFlag authz.Rate

func (r *rateFlag) String() string { return authz.Rate(*r).String() }

func (r *rateFlag) Set(s string) error {
	v, err := authz.ParseRate(s)
	if err != nil {
		return err
	}
	*r = rateFlag(v)
	return nil
}

// byteSize is a flag holding a number of bytes, written as 1048576, 512MB,
// 512MiB, 20GB or 1TB (decimal units, and binary with "i").
type byteSize int64

func (b *byteSize) String() string {
	if *b == 0 {
		return ""
	}
	return strconv.FormatInt(int64(*b), 10)
}

func (b *byteSize) Set(s string) error {
	t := strings.ToUpper(strings.TrimSpace(s))
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KIB", 1 << 10}, {"MIB", 1 << 20}, {"GIB", 1 << 30}, {"TIB", 1 << 40}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"K", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}, {"B", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/mult {
		return fmt.Errorf("%q is not a size: write it as bytes or with a unit, for example 20GB or 512MiB", s)
	}
	*b = byteSize(n * mult)
	return nil
}
