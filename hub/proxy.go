package hub

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// natsProxy is the hub's /nats endpoint: bridges' NATS-over-WebSocket
// connections, forwarded to a NATS server's websocket listener (the
// embedded one on loopback, or a cluster's). Bridges need nothing but the
// hub's URL, and TLS is the hub's (or its front proxy's).
type natsProxy struct {
	rp      *httputil.ReverseProxy
	targets []string // host:port of each websocket listener, tried in order
	next    atomic.Uint32
	log     *slog.Logger
}

// parseWebsocketTargets checks ws://host:port URLs of NATS websocket
// listeners.
func parseWebsocketTargets(urls []string) ([]string, error) {
	var out []string
	for _, s := range urls {
		u, err := url.Parse(strings.TrimSpace(s))
		if err != nil || (u.Scheme != "ws" && u.Scheme != "http") || u.Host == "" || u.Port() == "" {
			return nil, fmt.Errorf("--nats-websocket %q: want ws://host:port, the NATS server's websocket listener", s)
		}
		out = append(out, u.Host)
	}
	if len(out) == 0 {
		return nil, errors.New("--nats-websocket is required with --nats-url: the NATS servers' websocket listeners (ws://host:port), where /nats forwards bridges")
	}
	return out, nil
}

func newNATSProxy(targets []string, log *slog.Logger) *natsProxy {
	p := &natsProxy{targets: targets, log: log.With("component", "nats-proxy")}
	dialer := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	transport := &http.Transport{
		// Any listener will do: start with the next one in turn and fall
		// over to the others.
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			start := int(p.next.Add(1))
			var errs []error
			for i := range p.targets {
				t := p.targets[(start+i)%len(p.targets)]
				c, err := dialer.DialContext(ctx, network, t)
				if err == nil {
					return c, nil
				}
				errs = append(errs, err)
			}
			return nil, errors.Join(errs...)
		},
		DisableKeepAlives:     true, // every request is an upgrade
		ResponseHeaderTimeout: 10 * time.Second,
	}
	target := &url.URL{Scheme: "http", Host: targets[0], Path: "/"}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			// Nothing of the client's path or query reaches the server,
			// which would treat a path ending in "leafnode" or "mqtt" as
			// another protocol.
			r.Out.URL.Path, r.Out.URL.RawPath, r.Out.URL.RawQuery = "/", "", ""
			r.SetXForwarded() // replaces, never appends to, what the client sent
		},
		Transport: transport,
		ErrorLog:  slog.NewLogLogger(p.log.Handler(), slog.LevelWarn),
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			p.log.Warn("NATS is not reachable for a bridge", "remote", r.RemoteAddr, "err", err)
			http.Error(w, "the hub cannot reach NATS right now; the bridge will retry", http.StatusBadGateway)
		},
	}
	return p
}

func (p *natsProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet || !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		http.Error(w, "this is the hub's NATS endpoint for bridges (wheelhouse bridge run); people use the hub at /", http.StatusBadRequest)
		return
	}
	// Bridges are not browsers and send no Origin; a web page must not
	// open NATS connections with a visitor's network position.
	if r.Header.Get("Origin") != "" {
		http.Error(w, "browsers may not connect to the NATS endpoint", http.StatusForbidden)
		return
	}
	p.log.Debug("bridge connection", "remote", r.RemoteAddr)
	p.rp.ServeHTTP(w, r)
}

// publicURL is the hub's base URL for people and bridges: the configured
// one, or built from the listener. A wildcard listen address becomes this
// machine's name, since no one can connect to 0.0.0.0 or [::].
func publicURL(configured string, ln net.Addr, tls bool, hostname string) string {
	if configured != "" {
		return strings.TrimRight(configured, "/")
	}
	if ln == nil {
		return ""
	}
	scheme := "http"
	if tls {
		scheme = "https"
	}
	host, port, err := net.SplitHostPort(ln.String())
	if err != nil {
		return scheme + "://" + ln.String()
	}
	if isWildcard(host) {
		host = hostname
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}

func isWildcard(host string) bool {
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return host == "" || (ip != nil && ip.IsUnspecified())
}

// checkPublicURL validates --public-url.
func checkPublicURL(s string) error {
	if s == "" {
		return nil
	}
	u, err := wire.ParseHubURL(s)
	if err != nil {
		return fmt.Errorf("--public-url: %w", err)
	}
	if isWildcard(u.Hostname()) {
		return fmt.Errorf("--public-url %q: name the host people reach, not a wildcard address", s)
	}
	return nil
}
