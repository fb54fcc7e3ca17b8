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

	"github.com/wheelhouse-dev/wheelhouse/hub"
)

type hubFlags struct {
	data, http, nats, natsURL, publicURL, origins, logLevel string
	replicas                                                int
	natsMaxStore                                            byteSize
	logJSON                                                 bool
	steerTimeout                                            time.Duration
}

func (f *hubFlags) register(fs *flag.FlagSet, defaultData, defaultHTTP string) {
	fs.StringVar(&f.data, "data", defaultData, "data directory (SQLite database and JetStream store)")
	fs.StringVar(&f.http, "http", defaultHTTP, "HTTP listen address host:port")
	fs.StringVar(&f.nats, "nats", hub.DefaultNATSAddr, "embedded NATS listen address for bridges (host:port)")
	fs.StringVar(&f.natsURL, "nats-url", "", "use an external NATS server (JetStream enabled) instead of the embedded one")
	fs.IntVar(&f.replicas, "replicas", 1, "event stream replicas (3 on a NATS cluster)")
	fs.Var(&f.natsMaxStore, "nats-max-store", "cap on the embedded JetStream store, e.g. 20GB (default: the server's, most of the free disk)")
	fs.StringVar(&f.publicURL, "public-url", "", "URL people use to reach this hub (default http://<http addr>)")
	fs.StringVar(&f.origins, "origins", "", "extra allowed WebSocket origins, comma-separated host patterns")
	fs.BoolVar(&f.logJSON, "log-json", false, "log JSON lines instead of text")
	fs.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.DurationVar(&f.steerTimeout, "steer-timeout", hub.DefaultSteerTimeout, "how long a bridge has to begin acting on a message (its deadline)")
}

func (f *hubFlags) config(stderr io.Writer) hub.Config {
	var origins []string
	for _, o := range strings.Split(f.origins, ",") {
		if o = strings.TrimSpace(o); o != "" {
			origins = append(origins, o)
		}
	}
	return hub.Config{
		DataDir: f.data, HTTPAddr: f.http, NATSAddr: f.nats, NATSURL: f.natsURL,
		Replicas: f.replicas, NATSMaxStore: int64(f.natsMaxStore), PublicURL: f.publicURL, OriginPatterns: origins, SteerTimeout: f.steerTimeout,
		Logger: newLogger(stderr, f.logJSON, f.logLevel),
	}
}

func hubFlagSet(stderr io.Writer) (*flag.FlagSet, *hubFlags) {
	fs := newFlags("hub", "hub --data DIR [--http ADDR] [--nats ADDR | --nats-url URL] [--replicas N]", stderr)
	var f hubFlags
	f.register(fs, "", hub.DefaultHTTPAddr)
	return fs, &f
}

func runHub(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, f := hubFlagSet(stderr)
	if err := parse(fs, args); err != nil {
		return err
	}
	h, err := hub.New(f.config(stderr))
	if err != nil {
		return err
	}
	if err := h.Open(ctx); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Wheelhouse hub at %s (bridges connect to %s)\n", h.URL(), h.NATSURL())
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
