package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/hub"
)

type hubFlags struct {
	data, http, nats, natsURL, publicURL, origins, logLevel string
	metrics, trustedProxies                                 string
	replicas                                                int
	logJSON                                                 bool
	steerTimeout                                            time.Duration
}

func (f *hubFlags) register(fs *flag.FlagSet, defaultData, defaultHTTP string) {
	fs.StringVar(&f.data, "data", defaultData, "data directory (SQLite database and JetStream store)")
	fs.StringVar(&f.http, "http", defaultHTTP, "HTTP listen address host:port")
	fs.StringVar(&f.nats, "nats", hub.DefaultNATSAddr, "embedded NATS listen address for bridges (host:port)")
	fs.StringVar(&f.natsURL, "nats-url", "", "use an external NATS server (JetStream enabled) instead of the embedded one")
	fs.IntVar(&f.replicas, "replicas", 1, "event stream replicas (3 on a NATS cluster)")
	fs.StringVar(&f.publicURL, "public-url", "", "URL people use to reach this hub (default http://<http addr>)")
	fs.StringVar(&f.origins, "origins", "", "extra allowed WebSocket origins, comma-separated host patterns")
	fs.BoolVar(&f.logJSON, "log-json", false, "log JSON lines instead of text")
	fs.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.DurationVar(&f.steerTimeout, "steer-timeout", hub.DefaultSteerTimeout, "how long a bridge has to begin acting on a message (its deadline)")
	fs.StringVar(&f.metrics, "metrics", "", "serve Prometheus /metrics on this separate listen `address` host:port (default: off)")
	fs.StringVar(&f.trustedProxies, "trusted-proxy", "", "reverse proxies whose X-Forwarded-For/-Proto count, comma-separated `addresses or CIDRs`")
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
		Replicas: f.replicas, PublicURL: f.publicURL, OriginPatterns: origins, SteerTimeout: f.steerTimeout,
		MetricsAddr: f.metrics, TrustedProxies: strings.Split(f.trustedProxies, ","),
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
