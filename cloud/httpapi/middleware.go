package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/shared/problem"
)

// Header names the API sends and reads.
const (
	headerRequestID      = "Svc-Request-Id"
	headerIdempotencyKey = "Idempotency-Key"
	headerReplayed       = "Idempotent-Replayed"
	headerLimit          = "RateLimit-Limit"
	headerRemaining      = "RateLimit-Remaining"
	headerReset          = "RateLimit-Reset"
	headerRetryAfter     = "Retry-After"
)

const (
	ctxRequestID = "svc.request_id"
	ctxPrincipal = "svc.principal"
	ctxReply     = "svc.reply" // *cloud.Reply of a POST (idempotent)
)

func requestID(c echo.Context) string {
	id, _ := c.Get(ctxRequestID).(string)
	return id
}

func principal(c echo.Context) cloud.Principal {
	p, _ := c.Get(ctxPrincipal).(cloud.Principal)
	return p
}

func tenant(c echo.Context) cloud.Tenant { return principal(c).Tenant() }

// withRequestID gives every request an ID, sent back in Svc-Request-Id
// on every response, errors and unknown routes included.
func withRequestID(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		id := ids.New(ids.Request)
		c.Set(ctxRequestID, id)
		c.SetRequest(c.Request().WithContext(cloud.WithRequestID(c.Request().Context(), id)))
		c.Response().Header().Set(headerRequestID, id)
		return next(c)
	}
}

// withRecover turns a panic into an internal_error problem and logs the
// stack; the caller never sees it.
func (s *Server) withRecover(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			if r := recover(); r != nil {
				if r == http.ErrAbortHandler {
					panic(r)
				}
				s.log.Error("panic", "panic", fmt.Sprint(r), "request_id", requestID(c), "stack", string(debug.Stack()))
				err = fmt.Errorf("panic: %v", r)
			}
		}()
		return next(c)
	}
}

// withDeadline gives every request its deadline (Config.RequestTimeout):
// whatever it waits for (a connection, a statement, a lock) gives up then,
// and the request answers 503 unavailable (toProblem).
func (s *Server) withDeadline(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		ctx, cancel := context.WithTimeout(c.Request().Context(), s.timeout)
		defer cancel()
		c.SetRequest(c.Request().WithContext(ctx))
		// The error becomes a problem here, while the context still
		// tells its own deadline from a cancelled request.
		if err := next(c); err != nil {
			c.Error(err)
		}
		return nil
	}
}

// route describes what an operation needs of its caller.
type route struct {
	scope       cloud.Scope
	minLivePlan cloud.Plan // live mode needs this plan or above
	publishable bool       // publishable keys may call it
	list        bool       // it reads its own query parameters
}

// noQuery refuses query parameters on operations that take none, as lists
// refuse the ones they do not know.
// wholeSegments answers 404 for a path a route took only because echo's
// last path parameter swallows the rest of the path, slashes and all
// (/v1/teams/{id}/archive reaching GET /teams/{team_id}): no route has
// that path. Every parameter of the API's routes is one path segment.
func wholeSegments(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if slices.ContainsFunc(c.ParamValues(), hasSlash) {
			return echo.ErrNotFound
		}
		return next(c)
	}
}

func noQuery(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if c.Request().URL.RawQuery == "" {
			return next(c)
		}
		q, err := parseQuery(c)
		if err != nil {
			return err
		}
		if err := q.errs.err(); err != nil {
			return err
		}
		return next(c)
	}
}

// authenticate checks the bearer key and the route's rules, in the order
// the decisions document gives: unauthorized, then the rate limit, then
// forbidden, scope_missing and plan_required.
func (s *Server) authenticate(r route) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			token, ok := bearer(c.Request().Header.Get(echo.HeaderAuthorization))
			if !ok {
				c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="svc"`)
				return newError(problem.Unauthorized, "Send Authorization: Bearer followed by an API key.")
			}
			p, err := s.svc.Authenticate(c.Request().Context(), token)
			if errors.Is(err, cloud.ErrUnauthorized) {
				c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="svc", error="invalid_token"`)
				return newError(problem.Unauthorized, "The API key is unknown, malformed or revoked.")
			}
			if err != nil {
				return err
			}
			c.Set(ctxPrincipal, p)
			if err := s.rateLimit(c, p); err != nil {
				return err
			}
			if p.Key.Kind == cloud.KindPublishable && !r.publishable {
				return newError(problem.Forbidden, "A publishable key cannot call %s %s; use a secret key from a server.", c.Request().Method, c.Path())
			}
			if p.Key.Kind == cloud.KindSecret && !p.Key.Has(r.scope) {
				return newError(problem.ScopeMissing, "This operation needs the scope %s, which the key does not carry.", r.scope)
			}
			if p.Key.Tenant.Mode == cloud.ModeLive && !p.Plan.Includes(r.minLivePlan) {
				return newError(problem.PlanRequired, "In live mode this operation needs the %s plan or above; the organisation is on %s. Test mode works on every plan.", title(r.minLivePlan), title(p.Plan))
			}
			return next(c)
		}
	}
}

func title(p cloud.Plan) string {
	if p == "" {
		return ""
	}
	return strings.ToUpper(string(p[:1])) + string(p[1:])
}

// bearer extracts the token of an Authorization: Bearer header.
func bearer(h string) (string, bool) {
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// rateLimit counts the request against the tenant's per-minute budget and
// sets the RateLimit headers.
func (s *Server) rateLimit(c echo.Context, p cloud.Principal) error {
	b, err := s.count(c.Request().Context(), p.Tenant(), s.limits[p.Plan])
	if err != nil {
		return err
	}
	if _, spent := limitHeaders(c, b); spent {
		noted(c).limit = "organisation"
		return newError(problem.RateLimited, "The organisation used its %d requests for this minute in %s mode; retry after %d seconds.", b.limit, p.Key.Tenant.Mode, b.reset)
	}
	return nil
}
