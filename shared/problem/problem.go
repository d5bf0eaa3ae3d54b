// Package problem holds the stable error codes of the API and the RFC 9457
// problem-details body both the cloud and the edge render.
//
// It may import only the standard library.
package problem

import "net/http"

// Code is a stable, machine-readable error code. Clients branch on it.
type Code string

// The codes of the spec's error table.
const (
	ValidationFailed     Code = "validation_failed"
	BadRequest           Code = "bad_request"
	Unauthorized         Code = "unauthorized"
	Forbidden            Code = "forbidden"
	ScopeMissing         Code = "scope_missing"
	PlanRequired         Code = "plan_required"
	ConsentRequired      Code = "consent_required"
	NotFound             Code = "not_found"
	Conflict             Code = "conflict"
	InvalidState         Code = "invalid_state"
	DraftConflict        Code = "draft_conflict"
	IdempotencyKeyReused Code = "idempotency_key_reused"
	LocationCheckFailed  Code = "location_check_failed"
	RateLimited          Code = "rate_limited"
	InternalError        Code = "internal_error"
	Unavailable          Code = "unavailable"
)

// MethodNotAllowed is one code more than the spec's table: a path asked
// with a method it does not take, answered 405 with an Allow header
// (docs/decisions.md, "Errors"). A new code is a compatible change:
// clients handle codes they do not know by their status.
const MethodNotAllowed Code = "method_not_allowed"

var meta = map[Code]struct {
	status int
	title  string
}{
	ValidationFailed:     {http.StatusUnprocessableEntity, "The request is not valid"},
	BadRequest:           {http.StatusBadRequest, "The request could not be read"},
	Unauthorized:         {http.StatusUnauthorized, "Authentication is required"},
	Forbidden:            {http.StatusForbidden, "This credential may not do this"},
	ScopeMissing:         {http.StatusForbidden, "The credential lacks a scope"},
	PlanRequired:         {http.StatusForbidden, "The plan does not include this"},
	ConsentRequired:      {http.StatusForbidden, "Consent is required"},
	NotFound:             {http.StatusNotFound, "Not found"},
	MethodNotAllowed:     {http.StatusMethodNotAllowed, "The path does not take this method"},
	Conflict:             {http.StatusConflict, "Conflict"},
	InvalidState:         {http.StatusConflict, "The object's state does not allow this"},
	DraftConflict:        {http.StatusConflict, "The draft changed elsewhere"},
	IdempotencyKeyReused: {http.StatusUnprocessableEntity, "The idempotency key was used for another request"},
	LocationCheckFailed:  {http.StatusUnprocessableEntity, "The location check failed"},
	RateLimited:          {http.StatusTooManyRequests, "Too many requests"},
	InternalError:        {http.StatusInternalServerError, "Internal error"},
	Unavailable:          {http.StatusServiceUnavailable, "Service unavailable"},
}

// Status is the HTTP status the code is always sent with.
func (c Code) Status() int {
	if m, ok := meta[c]; ok {
		return m.status
	}
	return http.StatusInternalServerError
}

// Title is the short human summary of the code.
func (c Code) Title() string {
	if m, ok := meta[c]; ok {
		return m.title
	}
	return "Error"
}

// Codes lists every code, for documentation and tests.
func Codes() []Code {
	return []Code{ValidationFailed, BadRequest, Unauthorized, Forbidden, ScopeMissing, PlanRequired,
		ConsentRequired, NotFound, MethodNotAllowed, Conflict, InvalidState, DraftConflict, IdempotencyKeyReused,
		LocationCheckFailed, RateLimited, InternalError, Unavailable}
}

// FieldError is one entry of a problem's errors array.
type FieldError struct {
	Location string `json:"location"`
	Message  string `json:"message"`
}

// Details is an RFC 9457 problem-details body with the API's extensions.
type Details struct {
	Type      string       `json:"type"`
	Title     string       `json:"title"`
	Status    int          `json:"status"`
	Detail    string       `json:"detail,omitempty"`
	Instance  string       `json:"instance,omitempty"`
	Code      Code         `json:"code"`
	RequestID string       `json:"request_id"`
	Errors    []FieldError `json:"errors,omitempty"`
}

// ContentType is the media type of a problem body.
const ContentType = "application/problem+json"
