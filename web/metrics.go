package web

import (
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	requests  *prometheus.CounterVec
	posts     prometheus.Counter
	wsClients prometheus.Gauge
	wsSlow    prometheus.Counter
}

func newMetrics(reg *prometheus.Registry) *metrics {
	m := &metrics{
		requests:  prometheus.NewCounterVec(prometheus.CounterOpts{Name: "wheelhouse_http_requests_total", Help: "HTTP requests by status code."}, []string{"code"}),
		posts:     prometheus.NewCounter(prometheus.CounterOpts{Name: "wheelhouse_messages_posted_total", Help: "Messages posted through this node."}),
		wsClients: prometheus.NewGauge(prometheus.GaugeOpts{Name: "wheelhouse_websocket_clients", Help: "Connected WebSocket clients."}),
		wsSlow:    prometheus.NewCounter(prometheus.CounterOpts{Name: "wheelhouse_websocket_slow_disconnects_total", Help: "Clients dropped because their queue filled."}),
	}
	reg.MustRegister(m.requests, m.posts, m.wsClients, m.wsSlow)
	return m
}

type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.code = code
	r.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController (and the WebSocket upgrade) reach the
// underlying writer.
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func (m *metrics) instrument(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, code: 200}
		h.ServeHTTP(rec, r)
		m.requests.WithLabelValues(strconv.Itoa(rec.code)).Inc()
	})
}
