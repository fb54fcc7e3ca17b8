package web

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wheelhouse-dev/wheelhouse/authz"
	"github.com/wheelhouse-dev/wheelhouse/room"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

type metrics struct {
	requests  *prometheus.CounterVec
	latency   *prometheus.HistogramVec
	posts     prometheus.Counter
	wsClients prometheus.Gauge
	wsSlow    prometheus.Counter
	wsEnded   prometheus.Counter
	// wsRequests counts requests over the events socket by the status
	// their reply carries.
	wsRequests *prometheus.CounterVec
}

// eventsRoute is the live-events WebSocket: its "latency" is the life of a
// connection, so it stays out of the latency histogram.
const eventsRoute = "GET /api/v1/events"

func newMetrics(reg *prometheus.Registry, rooms *room.Service) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "wheelhouse_http_requests_total",
			Help: "HTTP requests by route pattern and status code."}, []string{"route", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "wheelhouse_http_request_duration_seconds",
			Help:    "HTTP request latency by route pattern (the events WebSocket excluded).",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}}, []string{"route"}),
		posts:     prometheus.NewCounter(prometheus.CounterOpts{Name: "wheelhouse_messages_posted_total", Help: "Messages posted through this node."}),
		wsClients: prometheus.NewGauge(prometheus.GaugeOpts{Name: "wheelhouse_websocket_clients", Help: "Connected WebSocket clients."}),
		wsSlow:    prometheus.NewCounter(prometheus.CounterOpts{Name: "wheelhouse_websocket_slow_disconnects_total", Help: "Clients dropped because their queue filled."}),
		wsEnded: prometheus.NewCounter(prometheus.CounterOpts{Name: "wheelhouse_websocket_sessions_ended_total",
			Help: "Sockets closed because their session or token ended (logout, revocation, deactivation, password change)."}),
	}
	m.wsRequests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "wheelhouse_websocket_requests_total",
		Help: "Requests sent over the events WebSocket (posts), by the HTTP status of their reply."}, []string{"code"})
	reg.MustRegister(m.requests, m.latency, m.posts, m.wsClients, m.wsSlow, m.wsEnded, m.wsRequests)
	if rooms != nil {
		reg.MustRegister(&stateCollector{rooms: rooms})
	}
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
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, code: 200}
		h.ServeHTTP(rec, r)
		// The mux set r.Pattern on this very request: a bounded set of
		// labels, never a path a client made up.
		route := r.Pattern
		if route == "" {
			route = "unmatched"
		}
		m.requests.WithLabelValues(route, strconv.Itoa(rec.code)).Inc()
		if route != eventsRoute {
			m.latency.WithLabelValues(route).Observe(time.Since(start).Seconds())
		}
	})
}

// stateCollector reads the cluster's state at scrape time: approvals by
// outcome, agents by state, accounts, and how far this node's projection
// is behind the stream.
type stateCollector struct{ rooms *room.Service }

var (
	descApprovals = prometheus.NewDesc("wheelhouse_approvals_total",
		"Decided approval requests by outcome (approved, denied, expired, voided), from the log: every node reports the cluster's count.", []string{"outcome"}, nil)
	descApprovalsPending = prometheus.NewDesc("wheelhouse_approvals_pending",
		"Approval requests waiting for their owner.", nil, nil)
	descAgents = prometheus.NewDesc("wheelhouse_agents",
		"Agents of paired bridges by state, from the log.", []string{"state"}, nil)
	descUsers = prometheus.NewDesc("wheelhouse_users",
		"Accounts by state (active, deactivated).", []string{"state"}, nil)
	descStreamSeq = prometheus.NewDesc("wheelhouse_stream_last_seq",
		"The event stream's last sequence.", nil, nil)
	descLimitRefusals = prometheus.NewDesc("wheelhouse_limit_refusals_total",
		"Actions this node refused because a person went over a per-person limit, by limit (posts, rooms, uploads, sockets; unchecked: let through because the limits bucket could not be reached).", []string{"limit"}, nil)
	descLag = prometheus.NewDesc("wheelhouse_projection_lag_events",
		"Events in the stream this node has not applied yet (stream last sequence minus applied).", nil, nil)
)

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descApprovals, descApprovalsPending, descAgents, descUsers, descStreamSeq, descLag, descLimitRefusals} {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if n, err := c.rooms.ApprovalCounts(ctx); err == nil {
		ch <- prometheus.MustNewConstMetric(descApprovalsPending, prometheus.GaugeValue, n[authz.StatePending])
		for _, o := range []string{authz.StateApproved, authz.StateDenied, authz.StateExpired, authz.StateVoided} {
			ch <- prometheus.MustNewConstMetric(descApprovals, prometheus.CounterValue, n[o], o)
		}
	}
	if n, err := c.rooms.AgentCounts(ctx); err == nil {
		for _, st := range []string{wire.AgentOffline, wire.AgentIdle, wire.AgentWorking, wire.AgentNeedsApproval, wire.AgentFailed} {
			if _, ok := n[st]; !ok {
				n[st] = 0
			}
		}
		for k, v := range n {
			ch <- prometheus.MustNewConstMetric(descAgents, prometheus.GaugeValue, v, k)
		}
	}
	if n, err := c.rooms.UserCounts(ctx); err == nil {
		for k, v := range n {
			ch <- prometheus.MustNewConstMetric(descUsers, prometheus.GaugeValue, v, k)
		}
	}
	for k, n := range c.rooms.LimitRefusals() {
		ch <- prometheus.MustNewConstMetric(descLimitRefusals, prometheus.CounterValue, float64(n), k)
	}
	applied := c.rooms.Log.Applied()
	if st := c.rooms.Log.Stream(); st != nil {
		if info, err := st.Info(ctx); err == nil {
			last := info.State.LastSeq
			ch <- prometheus.MustNewConstMetric(descStreamSeq, prometheus.GaugeValue, float64(last))
			lag := 0.0
			if last > applied {
				lag = float64(last - applied)
			}
			ch <- prometheus.MustNewConstMetric(descLag, prometheus.GaugeValue, lag)
		}
	}
}
