// Package httpapi is the /v1 REST API of the cloud: echo handlers, the
// middleware every operation shares (request IDs, authentication, scopes,
// plans, rate limits, idempotency), problem rendering, pagination and the
// embedded OpenAPI document.
//
// It may import cloud, shared and echo; never a storage engine.
package httpapi

import (
	"cmp"
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/shared/problem"
)

// Config is what a Server needs.
type Config struct {
	Service *cloud.Service
	Logger  *slog.Logger
	// DocsURL is the base of the problem type URLs.
	DocsURL string
	// RateLimits are requests per minute per organisation and mode, by
	// plan; plans left out get cloud.DefaultRateLimits.
	RateLimits map[cloud.Plan]int
	// PassLinkLimit and PassAddressLimit are the key-free pass link's
	// requests per minute, per link and per client address; 0 means
	// DefaultPassLinkLimit and DefaultPassAddressLimit.
	PassLinkLimit, PassAddressLimit int
	// TrustedProxies are the peers (reverse proxies, load balancers) whose
	// X-Forwarded-For header names the client; with none, the client is
	// the peer and the header is never read.
	TrustedProxies []netip.Prefix
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// EdgeBroker is the broker enrolled appliances are told to connect
	// to; with no URL, appliances cannot be enrolled.
	EdgeBroker EdgeBroker
	// RequestTimeout is each request's deadline: a request that has not
	// finished by then (its database unreachable or stalled) answers 503
	// unavailable. Zero means DefaultRequestTimeout.
	RequestTimeout time.Duration
	// Observer is told of every request answered, for metrics; nil for
	// none. Every request is also logged at info on Logger (the access
	// log).
	Observer Observer
}

// DefaultRequestTimeout is Config.RequestTimeout's default.
const DefaultRequestTimeout = 10 * time.Second

// Server serves the API.
type Server struct {
	svc     *cloud.Service
	log     *slog.Logger
	docsURL string
	limits  map[cloud.Plan]int
	leases  leases // the slices of the per-minute budgets this process claimed
	now     func() time.Time
	timeout time.Duration // each request's deadline
	cursors cursors
	passes  passLimits
	clients clientAddrs
	held    inflight // Idempotency-Keys of the requests running here
	echo    *echo.Echo
	ops     []Operation
	broker  EdgeBroker // what enrolled appliances connect to
	// templates are the routes' paths as echo writes them (c.Path())
	// to the same as the OpenAPI document writes them, for observe.
	templates map[string]string
	observer  Observer
}

// Operation is what one operation asks of the key that calls it.
type Operation struct {
	Route       string      // "METHOD /v1/path", as Routes writes it
	Scope       cloud.Scope // the scope a secret key needs
	Publishable bool        // whether a publishable key may call it
	LivePlan    cloud.Plan  // the plan live mode needs
}

// New builds the server. It reads (or, the first time, creates) the secret
// that seals pagination cursors, so all processes on a store agree.
func New(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Service == nil {
		return nil, fmt.Errorf("httpapi: Config.Service is required")
	}
	s := &Server{svc: cfg.Service, log: cfg.Logger, docsURL: cfg.DocsURL, now: cfg.Now, limits: map[cloud.Plan]int{},
		passes:  passLimits{link: cmp.Or(cfg.PassLinkLimit, DefaultPassLinkLimit), address: cmp.Or(cfg.PassAddressLimit, DefaultPassAddressLimit)},
		clients: clientAddrs{trusted: slices.Clone(cfg.TrustedProxies)}, broker: cfg.EdgeBroker, observer: cfg.Observer}
	cfg.Service.SetEventRenderer(RenderEvent) // events carry their objects as this API encodes them
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.docsURL == "" {
		s.docsURL = "https://docs.svc.example"
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.timeout = cfg.RequestTimeout
	if s.timeout <= 0 {
		s.timeout = DefaultRequestTimeout
	}
	for p, n := range cloud.DefaultRateLimits {
		s.limits[p] = n
	}
	for p, n := range cfg.RateLimits {
		s.limits[p] = n
	}
	key, err := cfg.Service.Store().Secret(ctx, "cursor-key", func() []byte {
		b := make([]byte, 32)
		_, _ = rand.Read(b)
		return b
	})
	if err != nil {
		return nil, fmt.Errorf("httpapi: cursor key: %w", err)
	}
	s.cursors = cursors{key: key}
	if err := cfg.Service.LoadSecrets(ctx); err != nil {
		return nil, fmt.Errorf("httpapi: %w", err)
	}
	s.echo = s.routes()
	return s, nil
}

// Routes lists the operations the server serves, sorted, as "METHOD /v1/path"
// with path parameters written {name} the way the OpenAPI document writes
// them, so a test can hold the document to the router.
func (s *Server) Routes() []string {
	var out []string
	for _, r := range s.echo.Routes() {
		if r.Method == echo.RouteNotFound {
			continue
		}
		out = append(out, routeName(r.Method, r.Path))
	}
	slices.Sort(out)
	return out
}

// Operations lists the operations that take a key, sorted by route, with
// what each asks of the key, so tests can hold the OpenAPI document and
// the scope table of docs/decisions.md to the router.
func (s *Server) Operations() []Operation {
	out := slices.Clone(s.ops)
	slices.SortFunc(out, func(a, b Operation) int { return strings.Compare(a.Route, b.Route) })
	return out
}

// routeName writes an echo route the way the OpenAPI document does:
// "METHOD /path" with parameters as {name}.
func routeName(method, path string) string { return method + " " + pathTemplate(path) }

// pathTemplate writes an echo path the way the OpenAPI document does:
// parameters as {name}.
func pathTemplate(path string) string {
	segs := strings.Split(path, "/")
	for i, seg := range segs {
		if name, ok := strings.CutPrefix(seg, ":"); ok {
			segs[i] = "{" + name + "}"
		}
	}
	return strings.Join(segs, "/")
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.echo.ServeHTTP(w, r) }

// Maintain runs Purge every interval until ctx ends. Each sweep is
// logged at debug, with the interval (svc-cloud serve --maintain-every).
func (s *Server) Maintain(ctx context.Context, interval time.Duration) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		s.log.Debug("maintenance sweep", "every", interval)
		if err := s.Purge(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("purge", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Purge deletes idempotency records older than the replay window and
// rate-limit counters of past minutes, stores pending bookings whose
// confirmation window has closed as expired, closes timesheet periods
// that have ended, and deletes enrolments and wrong enrolment codes no
// longer needed (cloud.EnrolmentRetention).
func (s *Server) Purge(ctx context.Context) error {
	now := s.now()
	store := s.svc.Store()
	n, err := store.PurgeIdempotencyKeys(ctx, now.Add(-cloud.IdempotencyWindow))
	if err != nil {
		return fmt.Errorf("purge idempotency keys: %w", err)
	}
	if n > 0 {
		s.log.Info("purged idempotency keys", "count", n)
	}
	if _, err := store.PurgeRequestCounts(ctx, now.Add(-2*time.Minute)); err != nil {
		return fmt.Errorf("purge request counts: %w", err)
	}
	if n, err := store.ExpireBookings(ctx, now, nil); err != nil {
		return fmt.Errorf("expire bookings: %w", err)
	} else if n > 0 {
		s.log.Info("expired bookings", "count", n)
	}
	if n, err := s.svc.CloseAllPeriods(ctx); err != nil {
		return fmt.Errorf("close timesheet periods: %w", err)
	} else if n > 0 {
		s.log.Info("closed timesheet periods", "count", n)
	}
	if n, err := s.svc.PurgeEnrolments(ctx); err != nil {
		return err
	} else if n > 0 {
		s.log.Info("purged enrolments", "count", n)
	}
	return nil
}

func (s *Server) routes() *echo.Echo {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.handleError
	e.Use(withRequestID, s.observe, s.withDeadline, s.withRecover)

	v1 := e.Group("/v1")
	v1.GET("/openapi.json", s.openAPI)

	op := func(method, path string, r route, h echo.HandlerFunc) {
		if r.minLivePlan == "" {
			r.minLivePlan = cloud.PlanPro
		}
		mw := []echo.MiddlewareFunc{wholeSegments, s.authenticate(r)}
		if !r.list {
			mw = append(mw, noQuery)
		}
		if method == http.MethodPost {
			mw = append(mw, s.idempotent)
		}
		v1.Add(method, path, h, mw...)
		s.ops = append(s.ops, Operation{Route: routeName(method, "/v1"+path), Scope: r.scope, Publishable: r.publishable, LivePlan: r.minLivePlan})
	}

	op(http.MethodGet, "/organisation", route{scope: cloud.ScopeOrganisationRead}, s.getOrganisation)

	// Signed updates: an appliance's own two routes, authenticated by its
	// identity key's signature (shared/edgeauth) instead of an API key.
	v1.POST("/edge/update", s.edgePoll)
	v1.GET("/edge/releases/:version/:platform", s.edgeRelease)
	op(http.MethodPost, "/rollouts", route{scope: cloud.ScopeSitesWrite}, s.createRollout)
	op(http.MethodGet, "/rollouts", route{scope: cloud.ScopeSitesRead, list: true}, s.listRollouts)
	op(http.MethodGet, "/rollouts/:rollout_id", route{scope: cloud.ScopeSitesRead}, s.getRollout)
	op(http.MethodPost, "/rollouts/:rollout_id/cancel", route{scope: cloud.ScopeSitesWrite}, s.cancelRollout)

	op(http.MethodGet, "/sites", route{scope: cloud.ScopeSitesRead, list: true}, s.listSites)
	op(http.MethodPost, "/sites", route{scope: cloud.ScopeSitesWrite}, s.createSite)
	op(http.MethodGet, "/sites/:site_id", route{scope: cloud.ScopeSitesRead}, s.getSite)
	op(http.MethodPatch, "/sites/:site_id", route{scope: cloud.ScopeSitesWrite}, s.updateSite)

	op(http.MethodGet, "/gates", route{scope: cloud.ScopeSitesRead, list: true}, s.listGates)
	op(http.MethodPost, "/gates", route{scope: cloud.ScopeSitesWrite}, s.createGate)
	op(http.MethodGet, "/gates/:gate_id", route{scope: cloud.ScopeSitesRead}, s.getGate)
	op(http.MethodPatch, "/gates/:gate_id", route{scope: cloud.ScopeSitesWrite}, s.updateGate)

	op(http.MethodGet, "/people", route{scope: cloud.ScopePeopleRead, list: true}, s.listPeople)
	op(http.MethodPost, "/people", route{scope: cloud.ScopePeopleWrite}, s.createPerson)
	op(http.MethodGet, "/people/:person_id", route{scope: cloud.ScopePeopleRead}, s.getPerson)
	op(http.MethodPatch, "/people/:person_id", route{scope: cloud.ScopePeopleWrite}, s.updatePerson)
	op(http.MethodPost, "/people/:person_id/deactivate", route{scope: cloud.ScopePeopleWrite}, s.deactivatePerson)
	op(http.MethodPost, "/people/:person_id/reactivate", route{scope: cloud.ScopePeopleWrite}, s.reactivatePerson)
	// A pass opens doors: reading one needs the write scope of what holds
	// it, never a read scope (docs/decisions.md, "Keys, scopes and what a
	// publishable key may see").
	op(http.MethodGet, "/people/:person_id/pass", route{scope: cloud.ScopePeopleWrite}, s.personPass)
	op(http.MethodGet, "/people/:person_id/pass.png", route{scope: cloud.ScopePeopleWrite}, s.personPassPNG)
	op(http.MethodPost, "/people/:person_id/reissue-pass", route{scope: cloud.ScopePeopleWrite}, s.reissuePersonPass)

	op(http.MethodGet, "/people/:person_id/attendance-consent", route{scope: cloud.ScopeAttendanceRead}, s.getConsent)
	op(http.MethodPatch, "/people/:person_id/attendance-consent", route{scope: cloud.ScopeAttendanceWrite}, s.updateConsent)
	op(http.MethodPost, "/people/:person_id/attendance-evidence", route{scope: cloud.ScopeAttendanceWrite}, s.createEvidence)

	op(http.MethodGet, "/teams", route{scope: cloud.ScopePeopleRead, list: true}, s.listTeams)
	op(http.MethodPost, "/teams", route{scope: cloud.ScopePeopleWrite}, s.createTeam)
	op(http.MethodGet, "/teams/:team_id", route{scope: cloud.ScopePeopleRead}, s.getTeam)
	op(http.MethodPatch, "/teams/:team_id", route{scope: cloud.ScopePeopleWrite}, s.updateTeam)

	op(http.MethodGet, "/visit-types", route{scope: cloud.ScopeFormsRead, publishable: true, list: true}, s.listVisitTypes)
	op(http.MethodGet, "/visit-types/:visit_type", route{scope: cloud.ScopeFormsRead, publishable: true}, s.getVisitType)
	op(http.MethodGet, "/forms", route{scope: cloud.ScopeFormsRead, list: true}, s.listForms)

	op(http.MethodGet, "/visits", route{scope: cloud.ScopeVisitsRead, list: true}, s.listVisits)
	op(http.MethodPost, "/visits", route{scope: cloud.ScopeVisitsWrite, publishable: true}, s.createVisit)
	op(http.MethodGet, "/visits/:visit_id", route{scope: cloud.ScopeVisitsRead}, s.getVisit)
	op(http.MethodPatch, "/visits/:visit_id", route{scope: cloud.ScopeVisitsWrite}, s.updateVisit)
	op(http.MethodPost, "/visits/:visit_id/check-in", route{scope: cloud.ScopeVisitsWrite}, s.checkIn)
	op(http.MethodPost, "/visits/:visit_id/check-out", route{scope: cloud.ScopeVisitsWrite}, s.checkOut)
	op(http.MethodPost, "/visits/:visit_id/approve", route{scope: cloud.ScopeVisitsWrite}, s.decideVisit(cloud.OutcomeApproved))
	op(http.MethodPost, "/visits/:visit_id/deny", route{scope: cloud.ScopeVisitsWrite}, s.decideVisit(cloud.OutcomeDenied))
	op(http.MethodPost, "/visits/:visit_id/cancel", route{scope: cloud.ScopeVisitsWrite}, s.cancelVisit)
	op(http.MethodGet, "/visits/:visit_id/pass.png", route{scope: cloud.ScopeVisitsWrite}, s.passPNG)
	op(http.MethodPost, "/visits/:visit_id/resend-pass", route{scope: cloud.ScopeVisitsWrite}, s.resendPass)
	op(http.MethodPost, "/visits/:visit_id/reschedule", route{scope: cloud.ScopeVisitsWrite}, s.rescheduleVisit)
	op(http.MethodPost, "/visits/:visit_id/hand-over", route{scope: cloud.ScopeVisitsWrite}, s.handOverVisit)
	op(http.MethodPost, "/visits/:visit_id/re-enter", route{scope: cloud.ScopeVisitsWrite}, s.reEnterVisit)

	op(http.MethodGet, "/visitors/:visitor_id", route{scope: cloud.ScopeVisitorsRead}, s.getVisitor)
	op(http.MethodDelete, "/visitors/:visitor_id", route{scope: cloud.ScopeVisitorsWrite}, s.deleteVisitor)

	op(http.MethodGet, "/booking-types", route{scope: cloud.ScopeBookingsRead, publishable: true, list: true}, s.listBookingTypes)
	op(http.MethodPost, "/booking-types", route{scope: cloud.ScopeBookingsWrite}, s.createBookingType)
	op(http.MethodGet, "/booking-types/:booking_type_id", route{scope: cloud.ScopeBookingsRead, publishable: true}, s.getBookingType)
	op(http.MethodPatch, "/booking-types/:booking_type_id", route{scope: cloud.ScopeBookingsWrite}, s.updateBookingType)
	op(http.MethodGet, "/booking-types/:booking_type_id/slots", route{scope: cloud.ScopeBookingsRead, publishable: true, list: true}, s.listSlots)

	op(http.MethodGet, "/bookings", route{scope: cloud.ScopeBookingsRead, list: true}, s.listBookings)
	op(http.MethodPost, "/bookings", route{scope: cloud.ScopeBookingsWrite, publishable: true}, s.createBooking)
	op(http.MethodGet, "/bookings/:booking_id", route{scope: cloud.ScopeBookingsRead}, s.getBooking)
	op(http.MethodPost, "/bookings/:booking_id/confirm", route{scope: cloud.ScopeBookingsWrite}, s.confirmBooking)
	op(http.MethodPost, "/bookings/:booking_id/decline", route{scope: cloud.ScopeBookingsWrite}, s.declineBooking)
	op(http.MethodPost, "/bookings/:booking_id/cancel", route{scope: cloud.ScopeBookingsWrite}, s.cancelBooking)
	op(http.MethodPost, "/bookings/:booking_id/reschedule", route{scope: cloud.ScopeBookingsWrite}, s.rescheduleBooking)

	op(http.MethodGet, "/attendance-settings", route{scope: cloud.ScopeAttendanceRead}, s.getAttendanceSettings)
	op(http.MethodPatch, "/attendance-settings", route{scope: cloud.ScopeAttendanceWrite}, s.updateAttendanceSettings)
	op(http.MethodGet, "/attendance-events", route{scope: cloud.ScopeAttendanceRead, list: true}, s.listPunches)
	op(http.MethodPost, "/attendance-events", route{scope: cloud.ScopeAttendanceWrite}, s.createPunch)
	op(http.MethodGet, "/attendance-events/:attendance_event_id", route{scope: cloud.ScopeAttendanceRead}, s.getPunch)
	op(http.MethodGet, "/attendance-summaries", route{scope: cloud.ScopeAttendanceRead, list: true}, s.listSummaries)
	op(http.MethodGet, "/timesheet-periods", route{scope: cloud.ScopeAttendanceRead, list: true}, s.listTimesheetPeriods)
	op(http.MethodGet, "/timesheet-periods/:timesheet_period_id", route{scope: cloud.ScopeAttendanceRead}, s.getTimesheetPeriod)
	op(http.MethodGet, "/timesheets", route{scope: cloud.ScopeAttendanceRead, list: true}, s.listTimesheets)
	op(http.MethodGet, "/timesheets/:timesheet_id", route{scope: cloud.ScopeAttendanceRead}, s.getTimesheet)
	op(http.MethodPost, "/timesheets/:timesheet_id/confirm", route{scope: cloud.ScopeAttendanceWrite}, s.moveTimesheet(false))
	op(http.MethodPost, "/timesheets/:timesheet_id/approve", route{scope: cloud.ScopeAttendanceWrite}, s.moveTimesheet(true))

	// The fleet (docs/decisions.md, "Enrolment (issue 17)").
	op(http.MethodGet, "/edges", route{scope: cloud.ScopeSitesRead, list: true}, s.listEdges)
	op(http.MethodPost, "/edges", route{scope: cloud.ScopeSitesWrite}, s.claimEdge)
	op(http.MethodGet, "/edges/:edge_id", route{scope: cloud.ScopeSitesRead}, s.getEdge)
	op(http.MethodPatch, "/edges/:edge_id", route{scope: cloud.ScopeSitesWrite}, s.updateEdge)
	op(http.MethodPost, "/edges/:edge_id/revoke", route{scope: cloud.ScopeSitesWrite}, s.revokeEdge)
	// An appliance's enrolment: no key, a request signed with its
	// identity key (shared/edgeauth).
	v1.POST("/enrolments", s.requestEnrolment, noQuery)
	v1.GET("/enrolments/self", s.pollEnrolment, noQuery)

	// The visitor's pass image: no key, the link is the credential.
	v1.GET("/passes/:link", s.passByLink, noQuery)

	// The outbox holds the visitors' pass links, each of which shows a pass.
	op(http.MethodGet, "/messages", route{scope: cloud.ScopeVisitsWrite, list: true}, s.listMessages)
	op(http.MethodGet, "/audit-events", route{scope: cloud.ScopeAuditRead, list: true}, s.listAuditEvents)
	wh := route{scope: cloud.ScopeWebhooksWrite, minLivePlan: cloud.PlanGrowth}
	whList := route{scope: cloud.ScopeWebhooksWrite, minLivePlan: cloud.PlanGrowth, list: true}
	op(http.MethodGet, "/webhook-endpoints", whList, s.listWebhookEndpoints)
	op(http.MethodPost, "/webhook-endpoints", wh, s.createWebhookEndpoint)
	op(http.MethodGet, "/webhook-endpoints/:webhook_endpoint_id", wh, s.getWebhookEndpoint)
	op(http.MethodPatch, "/webhook-endpoints/:webhook_endpoint_id", wh, s.updateWebhookEndpoint)
	op(http.MethodDelete, "/webhook-endpoints/:webhook_endpoint_id", wh, s.deleteWebhookEndpoint)
	op(http.MethodPost, "/webhook-endpoints/:webhook_endpoint_id/enable", wh, s.setWebhookEndpointEnabled(true))
	op(http.MethodPost, "/webhook-endpoints/:webhook_endpoint_id/disable", wh, s.setWebhookEndpointEnabled(false))
	op(http.MethodPost, "/webhook-endpoints/:webhook_endpoint_id/rotate-secret", wh, s.rotateWebhookSecret)
	op(http.MethodGet, "/webhook-endpoints/:webhook_endpoint_id/deliveries", whList, s.listWebhookDeliveries)
	op(http.MethodGet, "/webhook-endpoints/:webhook_endpoint_id/deliveries/:event_id", wh, s.getWebhookDelivery)
	op(http.MethodPost, "/webhook-endpoints/:webhook_endpoint_id/deliveries/:event_id/resend", wh, s.resendWebhookDelivery)
	op(http.MethodPost, "/webhook-endpoints/:webhook_endpoint_id/resend", wh, s.resendFailedWebhooks)
	op(http.MethodGet, "/webhook-endpoints/:webhook_endpoint_id/attempts", whList, s.listWebhookAttempts)
	op(http.MethodGet, "/events", route{scope: cloud.ScopeEventsRead, minLivePlan: cloud.PlanGrowth, list: true}, s.listEvents)
	op(http.MethodGet, "/events/:event_id", route{scope: cloud.ScopeEventsRead, minLivePlan: cloud.PlanGrowth}, s.getEvent)

	e.RouteNotFound(catchAll, s.noRoute)
	s.templates = map[string]string{}
	for _, r := range e.Routes() {
		if r.Method != echo.RouteNotFound {
			s.templates[r.Path] = pathTemplate(r.Path)
		}
	}
	return e
}

// catchAll is the route echo gives a request no other route takes.
const catchAll = "/*"

// routeMethods are the methods a route may be registered with: the ones
// the Allow header of a 405 can name.
var routeMethods = []string{http.MethodDelete, http.MethodGet, http.MethodHead, http.MethodPatch, http.MethodPost, http.MethodPut}

func hasSlash(s string) bool { return strings.Contains(s, "/") }

// noRoute answers a request no route takes. A path that some route has,
// asked with another method, is 405 method_not_allowed with Allow naming
// the path's methods (RFC 9110 requires it); any other path is 404
// (docs/decisions.md, "Errors"). The catch-all route takes method
// mismatches too (echo prefers it to its own 405), so the methods are
// found here by asking the router for each.
func (s *Server) noRoute(c echo.Context) error {
	r := c.Request()
	var allow []string
	for _, m := range routeMethods {
		found := s.echo.NewContext(nil, nil)
		s.echo.Router().Find(m, echo.GetPath(r), found)
		// A route whose last segment is a parameter takes the rest of
		// the path in it, slashes and all (echo's leaf parameters): that
		// is no path the route has.
		if found.Path() != "" && found.Path() != catchAll && !slices.ContainsFunc(found.ParamValues(), hasSlash) {
			allow = append(allow, m)
		}
	}
	if len(allow) == 0 {
		return echo.ErrNotFound
	}
	methods := strings.Join(allow, ", ")
	return &apiError{code: problem.MethodNotAllowed,
		detail: fmt.Sprintf("%s takes %s, not %s: see the Allow header.", r.URL.Path, methods, r.Method),
		header: map[string]string{echo.HeaderAllow: methods}}
}
