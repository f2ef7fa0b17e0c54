package orders

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"masterorder/node"
	"masterorder/orders/admission"
)

// Order metrics on the node's registry. They are counted from what the
// order endpoints answer (the Result of the one command, or the reason a
// request was refused before it), so they match what guests saw.

type orderMetrics struct {
	admitted *prometheus.CounterVec
	replayed *prometheus.CounterVec
	rejected *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

// The two order endpoints, as Echo names their routes.
const (
	guestOrderRoute = "/api/guest/sessions/:id/orders"
	staffOrderRoute = "/api/staff/orders"
)

// instrument registers the domain's metrics on the node's registry and
// counts every order request.
func (s *Service) instrument(n *node.Node) {
	reg := n.Metrics()
	m := &orderMetrics{
		admitted: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "masterorder_orders_admitted_total",
			Help: "Orders admitted (new orders), by source (guest, staff)."}, []string{"source"}),
		replayed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "masterorder_orders_replayed_total",
			Help: "Order requests answered with an earlier order's result: kind key (same Idempotency-Key) or payload (same cart within the window)."},
			[]string{"source", "kind"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "masterorder_orders_rejected_total",
			Help: "Order requests refused, by reason code."}, []string{"source", "reason"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "masterorder_order_request_seconds",
			Help:    "Order request handling time on this node, by outcome (admitted, replayed, rejected).",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}}, []string{"source", "outcome"}),
	}
	reg.MustRegister(m.admitted, m.replayed, m.rejected, m.latency, cloudCollector{s},
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "masterorder_sse_clients",
			Help: "Kitchen screens connected to this node's event stream."},
			func() float64 { return float64(s.hub.Clients()) }))
	n.Echo().Use(m.middleware)
}

// middleware times the order endpoints and classifies their answers.
func (m *orderMetrics) middleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if r.Method != http.MethodPost {
			return next(c)
		}
		var source string
		switch c.Path() {
		case guestOrderRoute:
			source = "guest"
		case staffOrderRoute:
			source = "staff"
		default:
			return next(c)
		}
		start := time.Now()
		rec := &bodyTap{ResponseWriter: c.Response().Writer}
		c.Response().Writer = rec
		err := next(c)
		if err != nil {
			// Let Echo write the error answer now, so it is counted.
			c.Error(err)
		}
		c.Response().Writer = rec.ResponseWriter
		outcome := m.count(source, c.Response().Status, r.Header.Get("Idempotency-Key"), rec.buf.Bytes())
		m.latency.WithLabelValues(source, outcome).Observe(time.Since(start).Seconds())
		return nil
	}
}

func (m *orderMetrics) count(source string, status int, rawKey string, body []byte) string {
	if status == http.StatusOK {
		// Most answers are admissions: a body without the replay flag set
		// needs no decoding (in JSON that byte run is only ever a key:
		// a quote inside a string is escaped).
		if !bytes.Contains(body, []byte(`"idempotentReplay":true`)) {
			m.admitted.WithLabelValues(source).Inc()
			return "admitted"
		}
		var b struct {
			RequestID        *string `json:"requestId"`
			IdempotentReplay bool    `json:"idempotentReplay"`
		}
		json.Unmarshal(body, &b)
		if !b.IdempotentReplay {
			m.admitted.WithLabelValues(source).Inc()
			return "admitted"
		}
		kind := "payload"
		if key, ok := admission.ParseIdempotencyKey(rawKey); ok && b.RequestID != nil && *b.RequestID == key {
			kind = "key"
		}
		m.replayed.WithLabelValues(source, kind).Inc()
		return "replayed"
	}
	var e struct {
		ReasonCode string `json:"reasonCode"`
	}
	json.Unmarshal(body, &e)
	if e.ReasonCode == "" {
		e.ReasonCode = "HTTP_" + strconv.Itoa(status)
	}
	m.rejected.WithLabelValues(source, e.ReasonCode).Inc()
	return "rejected"
}

// bodyTap keeps the first bytes of an answer (order answers are small).
type bodyTap struct {
	http.ResponseWriter
	buf bytes.Buffer
}

func (t *bodyTap) Write(p []byte) (int, error) {
	if room := 4096 - t.buf.Len(); room > 0 {
		t.buf.Write(p[:min(len(p), room)])
	}
	return t.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection.
func (t *bodyTap) Unwrap() http.ResponseWriter { return t.ResponseWriter }

// cloudCollector reports the cloud sync figures from status.cloudSync.
type cloudCollector struct{ s *Service }

var (
	descCloudPending = prometheus.NewDesc("masterorder_cloudsync_pending", "Outbox changes not yet pushed to Firestore.", nil, nil)
	descCloudLag     = prometheus.NewDesc("masterorder_cloudsync_lag_seconds", "How far Firestore is behind while changes are pending (0 when none are).", nil, nil)
	descCloudOnline  = prometheus.NewDesc("masterorder_cloudsync_online", "1 when the last call to Firestore succeeded.", nil, nil)
	descCloudEnabled = prometheus.NewDesc("masterorder_cloudsync_enabled", "1 when cloud sync is configured.", nil, nil)
)

func (c cloudCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descCloudPending
	ch <- descCloudLag
	ch <- descCloudOnline
	ch <- descCloudEnabled
}

func (c cloudCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.s.cloudStatus()
	b := func(x bool) float64 {
		if x {
			return 1
		}
		return 0
	}
	// The lag is the time since the last successful sync while changes
	// are pending; zero when nothing is.
	var lag time.Duration
	if st.Pending > 0 && st.LastSyncAt != nil {
		if t, err := time.Parse(time.RFC3339Nano, *st.LastSyncAt); err == nil {
			lag = max(time.Since(t), 0)
		}
	}
	ch <- prometheus.MustNewConstMetric(descCloudEnabled, prometheus.GaugeValue, b(st.Enabled))
	ch <- prometheus.MustNewConstMetric(descCloudOnline, prometheus.GaugeValue, b(st.Online))
	ch <- prometheus.MustNewConstMetric(descCloudPending, prometheus.GaugeValue, float64(st.Pending))
	ch <- prometheus.MustNewConstMetric(descCloudLag, prometheus.GaugeValue, lag.Seconds())
}
