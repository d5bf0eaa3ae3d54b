package httpapi

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/svc-vms/svc/shared/problem"
)

// Observer is told of every request the API answered, for metrics
// (cloud/telemetry keeps them as Prometheus series). It is called on the
// request's goroutine once the response is written: it must be quick and
// safe for concurrent use.
type Observer interface {
	ObserveRequest(Observation)
}

// Observation is one answered request, in labels of few values: a
// series per object or per client would swamp a metrics store.
type Observation struct {
	// Route is the operation's path as the OpenAPI document writes it
	// ("/v1/visits/{visit_id}"), never the request's own path, or
	// RouteUnmatched for a path no operation has.
	Route string
	// Method is the request's method, or "other" for one the HTTP
	// specification does not define.
	Method string
	Status int
	// Duration runs from the request reaching the API's handler to its
	// response written.
	Duration time.Duration
	// Bytes is the response body's length.
	Bytes int64
	// RateLimit names the per-minute limit that refused the request with
	// 429, or is "": organisation, pass_address, pass_link,
	// enrol_address, enrol_poll, or claim_attempts (a tenant locked out
	// after wrong enrolment codes).
	RateLimit string
	// Idempotency is what an Idempotency-Key did to a POST: "replayed" (a
	// stored response sent again), "in_flight" (refused: the first
	// request with the key still runs here) or "key_reused" (refused: the
	// key answered another request), or "".
	Idempotency string
}

// RouteUnmatched is Observation.Route for a request no operation
// matched.
const RouteUnmatched = "unmatched"

// note is what the handling of a request tells the access log and the
// Observer beside its status: set by the parts that decide it.
type note struct {
	code        problem.Code // the problem the request was answered with
	limit       string       // Observation.RateLimit
	idempotency string       // Observation.Idempotency
}

const ctxNote = "svc.note" // *note

// noted returns the request's note; one that goes nowhere outside
// observe (in tests of one handler).
func noted(c echo.Context) *note {
	if n, ok := c.Get(ctxNote).(*note); ok {
		return n
	}
	return &note{}
}

// observe writes the access log line of every request and tells the
// Observer, after the response (problems included: withDeadline, inside
// it, renders them). Its log line carries the route, never the path: a
// pass link's path is the credential that shows the pass.
func (s *Server) observe(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		// Elapsed time is measured on the monotonic clock, not on the
		// server's clock (Config.Now), which tests stop.
		start := time.Now()
		n := &note{}
		c.Set(ctxNote, n)
		err := next(c)
		d := time.Since(start)
		res := c.Response()
		o := Observation{Route: s.templates[c.Path()], Method: methodLabel(c.Request().Method), Status: res.Status,
			Duration: d, Bytes: res.Size, RateLimit: n.limit, Idempotency: n.idempotency}
		if o.Route == "" {
			o.Route = RouteUnmatched
		}
		if s.observer != nil {
			s.observer.ObserveRequest(o)
		}
		ctx := c.Request().Context()
		if s.log.Enabled(ctx, slog.LevelInfo) {
			attrs := make([]slog.Attr, 0, 13)
			attrs = append(attrs, slog.String("request_id", requestID(c)), slog.String("method", o.Method), slog.String("route", o.Route),
				slog.Int("status", o.Status), slog.Float64("duration_ms", float64(d.Microseconds())/1000), slog.Int64("bytes", o.Bytes))
			if p := principal(c); p.Key.ID != "" {
				attrs = append(attrs, slog.String("org_id", p.Key.Tenant.OrgID), slog.String("mode", string(p.Key.Tenant.Mode)),
					slog.String("key_id", p.Key.ID))
			}
			if n.code != "" {
				attrs = append(attrs, slog.String("code", string(n.code)))
			}
			if n.limit != "" {
				attrs = append(attrs, slog.String("rate_limit", n.limit))
			}
			if n.idempotency != "" {
				attrs = append(attrs, slog.String("idempotency", n.idempotency))
			}
			s.log.LogAttrs(ctx, slog.LevelInfo, "request", attrs...)
		}
		return err
	}
}

// methodLabel is the method as a label: one of few values, whatever a
// client sends.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete,
		http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "other"
}
