// Package telemetry is what svc-cloud tells the people who run it:
// Prometheus metrics (GET /metrics), and the probes a load balancer or
// Kubernetes asks, GET /healthz (the process serves) and GET /readyz (its
// database answers, holds every migration, and its MQTT broker is
// connected). docs/decisions.md, "Metrics (issue 19)", has the series and
// why they are labelled as they are.
//
// It may import cloud, cloud/httpapi (whose Observer it is), the results
// of cloud/webhook, the types of sync/mqttsync, shared/ratelog and the
// Prometheus client library; never a storage engine.
package telemetry

import (
	"log/slog"
	"net/http"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/httpapi"
	"github.com/svc-vms/svc/cloud/webhook"
	"github.com/svc-vms/svc/shared/ratelog"
	"github.com/svc-vms/svc/sync/mqttsync"
)

// Config is what a Telemetry reports on.
type Config struct {
	// Store is the process's store: its readiness, pools and errors.
	Store cloud.Store
	// Sync reports the MQTT sync's state: whether it is connected to its
	// broker, and its counters. nil for a process without one
	// (--mqtt-url off).
	Sync func() mqttsync.CloudState
	// Version is the program's release version, for the build-info
	// series.
	Version string
	// Logger gets the readiness check's changes (ready to not ready, with
	// the reason, and back); nil for none.
	Logger *slog.Logger
	// ReadyTimeout bounds the readiness check's query, and each of the
	// scrape's queries; zero means DefaultReadyTimeout.
	ReadyTimeout time.Duration
	// StatsMaxAge is how long the webhook queue's and the fleet's
	// figures, read from the store, are reused by later scrapes; zero
	// means DefaultStatsMaxAge.
	StatsMaxAge time.Duration
	// Now is the clock the queue's and the fleet's ages are measured by;
	// time.Now when nil.
	Now func() time.Time
}

// DefaultReadyTimeout is Config.ReadyTimeout's default: below the 5 s
// that Kubernetes probes and most load balancers wait for an answer, so a
// database that does not answer is reported as such, not as a probe
// timeout.
const DefaultReadyTimeout = 2 * time.Second

// Telemetry keeps the metrics and answers the probes.
type Telemetry struct {
	reg       *prometheus.Registry
	requests  *prometheus.CounterVec
	durations *prometheus.HistogramVec
	replays   prometheus.Counter
	conflicts *prometheus.CounterVec
	limited   *prometheus.CounterVec
	webhooks  *prometheus.CounterVec

	store   cloud.Store
	sync    func() mqttsync.CloudState
	log     *slog.Logger
	timeout time.Duration

	draining  atomic.Bool // Drain was called
	readyMu   sync.Mutex
	lastReady string // the last readiness answer's failing checks, "" when ready; "?" before the first
}

var _ httpapi.Observer = (*Telemetry)(nil)

// latencyBuckets are the request duration histogram's upper bounds, in
// seconds: a cached read on SQLite answers in about a millisecond, and
// a request is cut off at httpapi.DefaultRequestTimeout (10 s).
var latencyBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// Label values the API's requests can have beside routes, set up at zero
// so their series exist before the first one (a rate over a series that
// appears only at its first event misses that event).
var (
	conflictReasons = []string{"in_flight", "key_reused"}
	rateLimits      = []string{"organisation", "pass_address", "pass_link", "enrol_address", "enrol_poll", "claim_attempts"}
)

// New builds the metrics: the API's, the store's, the broker connection,
// the Go runtime's and the process's, and the build information.
func New(cfg Config) *Telemetry {
	t := &Telemetry{reg: prometheus.NewRegistry(), store: cfg.Store, sync: cfg.Sync, log: cfg.Logger,
		timeout: cfg.ReadyTimeout, lastReady: "?"}
	if t.log == nil {
		t.log = slog.New(slog.DiscardHandler)
	}
	if t.timeout <= 0 {
		t.timeout = DefaultReadyTimeout
	}
	t.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "svc_cloud_http_requests_total",
		Help: "API requests answered, by route template, method and status class (2xx, 4xx...).",
	}, []string{"route", "method", "status"})
	t.durations = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "svc_cloud_http_request_duration_seconds",
		Help:    "Time from a request reaching the API's handler to its response written, by route template and method.",
		Buckets: latencyBuckets,
	}, []string{"route", "method"})
	t.replays = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "svc_cloud_idempotency_replays_total",
		Help: "POST requests answered with the response stored under their Idempotency-Key.",
	})
	t.conflicts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "svc_cloud_idempotency_conflicts_total",
		Help: "POST requests refused for their Idempotency-Key: in_flight (409, the first request with it still runs) or key_reused (422, it answered another request).",
	}, []string{"reason"})
	t.limited = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "svc_cloud_rate_limited_total",
		Help: "Requests refused with 429 by a per-minute limit: organisation (per organisation and mode), pass_address, pass_link, enrol_address, enrol_poll, claim_attempts.",
	}, []string{"limit"})
	t.webhooks = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "svc_cloud_webhook_attempts_total",
		Help: "Webhook delivery attempts this process made, by result: succeeded (2xx), status_3xx, status_4xx, status_5xx, status_other, " +
			"timeout, refused (the URL or its addresses are not allowed), error (no such host, connection refused, TLS...).",
	}, []string{"result"})
	for _, r := range webhook.Results {
		t.webhooks.WithLabelValues(r)
	}
	for _, r := range conflictReasons {
		t.conflicts.WithLabelValues(r)
	}
	for _, l := range rateLimits {
		t.limited.WithLabelValues(l)
	}
	build := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "svc_cloud_build_info",
		Help:        "Always 1; its labels are the program's release version and the Go version it was built with.",
		ConstLabels: prometheus.Labels{"version": cfg.Version, "goversion": runtime.Version()},
	})
	build.Set(1)
	now, maxAge := cfg.Now, cfg.StatsMaxAge
	if now == nil {
		now = time.Now
	}
	if maxAge <= 0 {
		maxAge = DefaultStatsMaxAge
	}
	queue := &queueCollector{store: cfg.Store, now: now, maxAge: maxAge, timeout: t.timeout,
		// A database that is down fails every scrape's query.
		log: slog.New(ratelog.New(t.log.Handler(), 0, 0, nil))}
	t.reg.MustRegister(t.requests, t.durations, t.replays, t.conflicts, t.limited, t.webhooks, build,
		storeCollector{store: cfg.Store}, queue,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if cfg.Sync != nil {
		t.reg.MustRegister(syncCollector{state: cfg.Sync})
	}
	return t
}

// statusClasses are the status labels, by status / 100.
var statusClasses = [...]string{"other", "1xx", "2xx", "3xx", "4xx", "5xx"}

func statusClass(code int) string {
	if c := code / 100; c > 0 && c < len(statusClasses) {
		return statusClasses[c]
	}
	return statusClasses[0]
}

// ObserveRequest implements httpapi.Observer.
func (t *Telemetry) ObserveRequest(o httpapi.Observation) {
	t.requests.WithLabelValues(o.Route, o.Method, statusClass(o.Status)).Inc()
	t.durations.WithLabelValues(o.Route, o.Method).Observe(o.Duration.Seconds())
	switch o.Idempotency {
	case "":
	case "replayed":
		t.replays.Inc()
	default:
		t.conflicts.WithLabelValues(o.Idempotency).Inc()
	}
	if o.RateLimit != "" {
		t.limited.WithLabelValues(o.RateLimit).Inc()
	}
}

// ObserveWebhook counts a webhook attempt by its result (one of
// webhook.Results): it is webhook.Dispatcher's Observe.
func (t *Telemetry) ObserveWebhook(result string) {
	t.webhooks.WithLabelValues(result).Inc()
}

// Registry is where the metrics are registered, for more of them.
func (t *Telemetry) Registry() *prometheus.Registry { return t.reg }

// Handler serves the admin listener: GET /metrics, /healthz and /readyz.
func (t *Telemetry) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(t.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", t.Healthz)
	mux.HandleFunc("/readyz", t.Readyz)
	return mux
}

// Probes serves /healthz and /readyz, and hands every other request to
// next (the API, whose paths all start with /v1): a load balancer probes
// the port it sends traffic to.
func (t *Telemetry) Probes(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/healthz":
			t.Healthz(w, r)
		case "/readyz":
			t.Readyz(w, r)
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// Healthz answers 200 while the process serves: a liveness probe, which
// restarts a process that stops answering it. It asks nothing of the
// database: a database outage is not cured by restarting every process.
func (t *Telemetry) Healthz(w http.ResponseWriter, r *http.Request) {
	if !probeMethod(w, r) {
		return
	}
	writeProbe(w, r, http.StatusOK, []byte(`{"status":"ok"}`+"\n"))
}

// probeMethod answers 405 to a method other than GET and HEAD.
func probeMethod(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	w.Header().Set("Allow", "GET, HEAD")
	writeProbe(w, r, http.StatusMethodNotAllowed, []byte(`{"status":"fail","error":"method not allowed"}`+"\n"))
	return false
}

func writeProbe(w http.ResponseWriter, r *http.Request, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}
