package cloud

import (
	"errors"
	"fmt"
	"strings"
)

var (
	// ErrNotFound is returned when no object with the ID exists in the
	// tenant (organisation and mode) asked about.
	ErrNotFound = errors.New("not found")

	// ErrSiteHasEdge is returned by CreateEdge when the site already has
	// an edge that is not revoked: a site has one appliance
	// (docs/decisions.md, "One appliance per site").
	ErrSiteHasEdge = errors.New("the site already has an edge")

	// ErrConflict is returned when a write would break a uniqueness rule,
	// such as a second person with the same email address.
	ErrConflict = errors.New("conflict")

	// ErrInvalidState is returned (wrapped in *StateError) when the object's
	// state does not allow the action.
	ErrInvalidState = errors.New("invalid state")

	// ErrIdempotencyKeyUsed is returned when a write (or
	// Store.PutIdempotencyRecord) would store a response under an
	// Idempotency-Key that a record from the last IdempotencyWindow already
	// holds: another request with the key got there first. Nothing was
	// written; the request replays that record.
	ErrIdempotencyKeyUsed = errors.New("idempotency key used")

	// ErrUnavailable is returned (wrapped, with the driver's error) when
	// the database could not be reached or did not answer in time: a
	// connection refused, reset or not made within its timeout, a server
	// shutting down or starting, a statement or lock timeout, a request's
	// deadline, a database busy beyond its timeout. The request may
	// succeed when retried later (docs/decisions.md, "Database outages
	// (issue 15)").
	ErrUnavailable = errors.New("database unavailable")

	// ErrSchemaBehind is returned by Store.Ready when the database lacks
	// migrations this program carries: one restored from an older backup
	// under a running process, or one this process did not migrate.
	ErrSchemaBehind = errors.New("database schema is behind this program's migrations")

	// ErrEdgeRejected is returned (wrapped, with the reason) for a message
	// from an edge the cloud will not record: malformed, or not from an
	// edge of the site it names. Nothing is stored, and the edge must not
	// be told it was applied.
	ErrEdgeRejected = errors.New("edge message rejected")

	// ErrFactEarly is returned (wrapped, with ErrEdgeRejected) for a desk
	// fact about a visit the cloud does not have yet: the walk_in that
	// makes it has not arrived (docs/decisions.md, "Kiosk data and
	// facts"). The fact is not recorded, so the edge sends it again.
	ErrFactEarly = errors.New("the fact's visit has not arrived yet")

	// ErrBrokerUnavailable is returned (wrapped, with the cause) when the
	// external MQTT broker that keeps the edges' accounts
	// (BrokerAccounts) could not be reached or did not answer: the edge
	// that needed its account was not made or given its password, and a
	// retry may succeed later.
	ErrBrokerUnavailable = errors.New("MQTT broker unavailable")
)

// FieldError names one problem with one input field. Field is the path
// inside the input it concerns ("name", "member_ids[2]"); the transport adds
// where the input came from (body, query).
type FieldError struct {
	Field   string
	Message string
}

// ValidationError is returned when input breaks one or more rules; it lists
// every problem found, not only the first.
type ValidationError struct {
	Fields []FieldError
}

func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Fields))
	for i, f := range e.Fields {
		parts[i] = f.Field + ": " + f.Message
	}
	return "validation failed: " + strings.Join(parts, "; ")
}

// Add records a problem with field.
func (e *ValidationError) Add(field, format string, args ...any) {
	e.Fields = append(e.Fields, FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
}

// Err returns e when it holds a problem, else nil.
func (e *ValidationError) Err() error {
	if e == nil || len(e.Fields) == 0 {
		return nil
	}
	return e
}

// ConflictError is returned when a write would break a uniqueness rule; Field
// names the input that collided. It unwraps to ErrConflict.
type ConflictError struct {
	Field   string
	Message string
}

func (e *ConflictError) Error() string { return "conflict: " + e.Field + ": " + e.Message }
func (e *ConflictError) Unwrap() error { return ErrConflict }

// StateError is returned when an object's status does not allow an action.
// It unwraps to ErrInvalidState.
type StateError struct {
	Object string // "person"
	State  string // "inactive"
	Action string // "deactivate"
}

func (e *StateError) Error() string {
	return fmt.Sprintf("cannot %s a %s that is %s", e.Action, e.Object, e.State)
}
func (e *StateError) Unwrap() error { return ErrInvalidState }

// ErrPlanRequired is returned (wrapped in *PlanError) when the
// organisation's plan does not allow an action in live mode.
var ErrPlanRequired = errors.New("plan required")

// PlanError is returned when an action needs a higher plan: a feature the
// plan lacks, a plan limit exceeded, or a record older than the plan's
// history. It unwraps to ErrPlanRequired.
type PlanError struct {
	Detail string // a sentence for the caller
}

func (e *PlanError) Error() string { return "plan required: " + e.Detail }
func (e *PlanError) Unwrap() error { return ErrPlanRequired }

// PassRuleError is returned when a visit's pass rules refuse an entry.
// Reason is one of passrule's reasons; Status the visit's status. It unwraps
// to ErrInvalidState.
type PassRuleError struct {
	Reason string
	Status VisitStatus
	Detail string
}

func (e *PassRuleError) Error() string {
	return "pass rules refuse entry: " + e.Reason + ": " + e.Detail
}
func (e *PassRuleError) Unwrap() error { return ErrInvalidState }
