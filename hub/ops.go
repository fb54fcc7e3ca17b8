package hub

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// Operations: the metrics listener (its own address, off by default: the
// figures say who is online and how busy the hub is, which is nobody's
// business on the public port) and the trusted proxies.

// ParseTrustedProxies reads --trusted-proxy values: addresses or CIDR
// prefixes (127.0.0.1, 10.0.0.0/8, ::1).
func ParseTrustedProxies(values []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, v := range values {
		v = strings.TrimSpace(v)
		if v == "" {
			continue
		}
		if p, err := netip.ParsePrefix(v); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(v)
		if err != nil {
			return nil, wh.Errorf(wh.EInvalid, "--trusted-proxy %q: want an IP address or a CIDR prefix such as 10.0.0.0/8", v)
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// httpsPublicURL reports whether people reach the hub over https (then the
// session cookie is always Secure).
func httpsPublicURL(u string) bool {
	return strings.HasPrefix(strings.ToLower(strings.TrimSpace(u)), "https://")
}

// startOps registers the hub-level gauges and starts the metrics listener
// when one is configured.
func (h *Hub) startOps() error {
	h.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "wheelhouse_bridges_connected",
		Help: "Bridges this node has heard from within the offline limit."}, func() float64 { return float64(h.link.onlineBridges()) }))
	if h.cfg.MetricsAddr == "" {
		return nil
	}
	if _, _, err := net.SplitHostPort(h.cfg.MetricsAddr); err != nil {
		return wh.Errorf(wh.EInvalid, "--metrics %q: want host:port, for example 127.0.0.1:9090", h.cfg.MetricsAddr)
	}
	ln, err := net.Listen("tcp", h.cfg.MetricsAddr)
	if err != nil {
		return wh.Wrap(err, "listen on %s for metrics", h.cfg.MetricsAddr)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h.web.MetricsHandler())
	h.metricsLn = ln
	h.metricsSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(h.log.Handler(), slog.LevelWarn)}
	go func() {
		if err := h.metricsSrv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			h.log.Error("metrics server stopped", "err", err)
		}
	}()
	h.log.Info("metrics", "url", "http://"+ln.Addr().String()+"/metrics")
	return nil
}

func (h *Hub) stopOps(ctx context.Context) {
	if h.metricsSrv != nil {
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		h.metricsSrv.Shutdown(sctx)
		cancel()
	}
}

// MetricsURL is where the metrics are served ("" when off).
func (h *Hub) MetricsURL() string {
	if h.metricsLn == nil {
		return ""
	}
	return "http://" + h.metricsLn.Addr().String() + "/metrics"
}

// onlineBridges counts the bridges heard from within the offline limit.
func (l *Link) onlineBridges() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, p := range l.presence {
		if time.Since(p.lastSeen) <= wire.OfflineAfter {
			n++
		}
	}
	return n
}
