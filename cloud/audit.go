package cloud

import (
	"context"
	"encoding/json"
	"time"
)

// AuditEvent records who did something that must be accountable later:
// an overridden pass rule, an erasure, a key created or revoked.
type AuditEvent struct {
	ID         string
	Tenant     Tenant
	Action     string // what was done, such as "visit.pass_rules_overridden"
	ActorKind  string // key, person, edge or system
	ActorID    string // the key, person or edge; empty for the system
	ObjectType string // visit, visitor, key, ...
	ObjectID   string
	RequestID  string          // the API request that did it; empty when none
	Detail     json.RawMessage // a JSON object particular to the action
	CreatedAt  time.Time
}

// The audited actions and actor kinds (docs/decisions.md, "Audit trail").
const (
	AuditPassRulesOverridden     = "visit.pass_rules_overridden"
	AuditEdgeFactConflicted      = "edge.fact_conflicted" // a fact from an edge disagreed with the cloud's state
	AuditEdgeAdmitVoided         = "edge.admit_voided"    // a gate recorded an admit, then its relay did not open
	AuditKeyCreated              = "key.created"
	AuditKeyRevoked              = "key.revoked"
	AuditVisitorErased           = "visitor.erased"
	AuditWebhookSecretRotated    = "webhook_endpoint.secret_rotated"
	AuditWebhookEndpointDisabled = "webhook_endpoint.disabled" // by the system, after failing for the whole schedule

	ActorKey    = "key"
	ActorPerson = "person"
	ActorEdge   = "edge"
	ActorSystem = "system"
)

// AuditFilter narrows ListAuditEvents. Empty fields do not filter.
type AuditFilter struct {
	Action       string
	ObjectID     string
	CreatedAfter *time.Time // hides records older than the plan's history
}

type ctxKey int

const ctxRequestID ctxKey = iota

// WithRequestID returns ctx carrying the API request's ID, which audit
// events record.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, ctxRequestID, id)
}

// RequestID returns the request ID ctx carries, or "".
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(ctxRequestID).(string)
	return id
}
