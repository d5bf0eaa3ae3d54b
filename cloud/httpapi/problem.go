package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/shared/problem"
)

// unavailableRetryAfter is the Retry-After, in seconds, of a 503
// unavailable: about what a database restart or failover takes.
const unavailableRetryAfter = 2

// apiError is an error the HTTP layer decided itself, already in the
// API's terms.
type apiError struct {
	code   problem.Code
	detail string
	errors []problem.FieldError
	header map[string]string
}

func (e *apiError) Error() string { return string(e.code) + ": " + e.detail }

func newError(code problem.Code, format string, args ...any) *apiError {
	return &apiError{code: code, detail: fmt.Sprintf(format, args...)}
}

// invalid is a validation_failed error with one problem at location.
func invalid(location, format string, args ...any) *apiError {
	return &apiError{code: problem.ValidationFailed, detail: "The request has 1 problem.",
		errors: []problem.FieldError{{Location: location, Message: fmt.Sprintf(format, args...)}}}
}

// fieldErrors collects problems found in one input before any is reported,
// so validation_failed lists every problem at once.
type fieldErrors []problem.FieldError

func (f *fieldErrors) add(location, format string, args ...any) {
	*f = append(*f, problem.FieldError{Location: location, Message: fmt.Sprintf(format, args...)})
}

func (f fieldErrors) err() error {
	if len(f) == 0 {
		return nil
	}
	return &apiError{code: problem.ValidationFailed, detail: problemCount(len(f)), errors: f}
}

func problemCount(n int) string {
	if n == 1 {
		return "The request has 1 problem."
	}
	return fmt.Sprintf("The request has %d problems.", n)
}

// notFound names the kind of object that was not found.
func notFound(kind, id string) *apiError {
	return newError(problem.NotFound, "No %s with ID %s exists in this organisation and mode.", kind, id)
}

// toProblem is the one place domain and framework errors become problems.
func (s *Server) toProblem(c echo.Context, err error) (problem.Details, map[string]string) {
	var (
		ae  *apiError
		ve  *cloud.ValidationError
		ce  *cloud.ConflictError
		se  *cloud.StateError
		pe  *cloud.PlanError
		re  *cloud.PassRuleError
		cr  *cloud.ConsentError
		lc  *cloud.LocationCheckError
		ae2 *cloud.AttemptsError
		he  *echo.HTTPError
		out = &apiError{}
	)
	switch {
	case errors.As(err, &ae):
		out = ae
	case errors.As(err, &ve):
		out.code, out.detail = problem.ValidationFailed, problemCount(len(ve.Fields))
		for _, f := range ve.Fields {
			out.errors = append(out.errors, problem.FieldError{Location: "body." + f.Field, Message: f.Message})
		}
	case errors.As(err, &ce):
		out.code, out.detail = problem.Conflict, ce.Message+"."
		out.errors = []problem.FieldError{{Location: "body." + ce.Field, Message: ce.Message}}
	case errors.As(err, &re):
		out.code, out.detail = problem.InvalidState, re.Detail
		out.errors = []problem.FieldError{{Location: "pass_rule." + re.Reason, Message: re.Detail}}
	case errors.As(err, &pe):
		out.code, out.detail = problem.PlanRequired, pe.Detail
	case errors.As(err, &cr):
		out.code = problem.ConsentRequired
		out.detail = fmt.Sprintf("This organisation records %s evidence only with the person's consent, and this person has not given it or withdrew it. Record their consent (PATCH /v1/people/{person_id}/attendance-consent) or use another method.", cr.Kind)
	case errors.As(err, &lc):
		out.code, out.detail = problem.LocationCheckFailed, lc.Detail
	case errors.As(err, &ae2):
		noted(c).limit = "claim_attempts"
		out.code = problem.RateLimited
		out.detail = fmt.Sprintf("%d wrong enrolment codes were tried in %s: this organisation's claims are refused until %s. Check the code on the appliance's screen.",
			cloud.ClaimAttempts, cloud.ClaimLockout, ts(ae2.Until))
		out.header = map[string]string{headerRetryAfter: strconv.Itoa(max(1, int(ae2.Until.Sub(s.now()).Seconds()+0.999)))}
	case errors.Is(err, cloud.ErrEnrolmentExpired):
		out.code = problem.InvalidState
		out.detail = fmt.Sprintf("The enrolment code expired (a code lasts %s): the appliance shows a new one; claim that.", cloud.EnrolmentTTL)
		out.errors = []problem.FieldError{{Location: "body.code", Message: "expired"}}
	case errors.Is(err, cloud.ErrEnrolmentUsed):
		out.code = problem.InvalidState
		out.detail = "The enrolment code was claimed already: a code works once. GET /v1/edges shows the appliance it enrolled."
		out.errors = []problem.FieldError{{Location: "body.code", Message: "already claimed"}}
	case errors.Is(err, cloud.ErrSiteHasEdge):
		out.code = problem.Conflict
		out.detail = "The site has an appliance already: a site has one, so that a single-use pass works once there. Revoke it first (POST /v1/edges/{edge_id}/revoke) to replace it."
		out.errors = []problem.FieldError{{Location: "body.site_id", Message: "has an appliance"}}
	case errors.As(err, &se):
		out.code, out.detail = problem.InvalidState, fmt.Sprintf("Cannot %s a %s whose status is %s.", se.Action, se.Object, se.State)
	case errors.Is(err, cloud.ErrNotFound):
		out.code, out.detail = problem.NotFound, "No such object exists in this organisation and mode."
	case errors.As(err, &he):
		switch he.Code {
		case http.StatusNotFound:
			out.code, out.detail = problem.NotFound, fmt.Sprintf("No operation %s %s exists.", c.Request().Method, c.Request().URL.Path)
		case http.StatusMethodNotAllowed: // echo's own 405 (noRoute makes the API's), which sets Allow
			out.code, out.detail = problem.MethodNotAllowed, fmt.Sprintf("%s does not take %s: see the Allow header.", c.Request().URL.Path, c.Request().Method)
		case http.StatusRequestEntityTooLarge:
			out.code, out.detail = problem.BadRequest, fmt.Sprintf("The body is larger than %d bytes.", maxBody)
		default:
			out.code, out.detail = problem.InternalError, "The request could not be handled."
			s.log.Error("unexpected framework error", "err", err, "request_id", requestID(c))
		}
	case errors.Is(err, cloud.ErrBrokerUnavailable):
		// The edge's account at the MQTT broker could not be made or given
		// its password; nothing was committed (docs/decisions.md, "Edge
		// accounts on Mosquitto").
		out.code = problem.Unavailable
		out.detail = "The service could not reach its MQTT broker to give the appliance its broker account, so nothing was changed. Retry after the seconds in Retry-After, with the same Idempotency-Key on a POST."
		out.header = map[string]string{headerRetryAfter: strconv.Itoa(unavailableRetryAfter)}
		s.log.Warn("MQTT broker unavailable", "err", err, "request_id", requestID(c), "method", c.Request().Method, "path", c.Request().URL.Path)
	case errors.Is(err, cloud.ErrUnavailable), errors.Is(c.Request().Context().Err(), context.DeadlineExceeded):
		// The database could not be reached or did not answer before the
		// request's deadline: nothing is known to be wrong with the
		// request, and a retry may succeed (docs/decisions.md, "Database
		// outages (issue 15)").
		out.code = problem.Unavailable
		out.detail = "The service could not reach its database in time. Retry after the seconds in Retry-After, with the same Idempotency-Key on a POST."
		out.header = map[string]string{headerRetryAfter: strconv.Itoa(unavailableRetryAfter)}
		s.log.Warn("database unavailable", "err", err, "request_id", requestID(c), "method", c.Request().Method, "path", c.Request().URL.Path)
	case c.Request().Context().Err() != nil:
		// The client went away; nobody reads this response. The error may
		// not wrap context.Canceled (database/sql answers sql.ErrTxDone
		// when a cancelled context rolled its transaction back).
		out.code, out.detail = problem.InternalError, "The request was cancelled by the client."
		s.log.Debug("request cancelled by the client", "request_id", requestID(c), "method", c.Request().Method, "path", c.Request().URL.Path)
	default:
		out.code, out.detail = problem.InternalError, "Something went wrong on our side. Retry with backoff and the same Idempotency-Key; quote the request_id if it persists."
		s.log.Error("internal error", "err", err, "request_id", requestID(c), "method", c.Request().Method, "path", c.Request().URL.Path)
	}
	return problem.Details{
		Type:      s.docsURL + "/developers/concepts/errors#" + string(out.code),
		Title:     out.code.Title(),
		Status:    out.code.Status(),
		Detail:    out.detail,
		Instance:  c.Request().URL.Path,
		Code:      out.code,
		RequestID: requestID(c),
		Errors:    out.errors,
	}, out.header
}

// handleError renders err as a problem; echo calls it for errors that reach
// the top of the chain.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	p, header := s.toProblem(c, err)
	noted(c).code = p.Code
	for k, v := range header {
		c.Response().Header().Set(k, v)
	}
	body, mErr := json.Marshal(p)
	if mErr != nil {
		body = []byte(`{"code":"internal_error","status":500}`)
	}
	c.Response().Header().Set(echo.HeaderContentType, problem.ContentType)
	c.Response().WriteHeader(p.Status)
	_, _ = c.Response().Write(body)
}
