package cloud

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/svc-vms/svc/shared/hardware"
	"github.com/svc-vms/svc/sync/protocol"
)

// Edge is a site's appliance as the cloud knows it: its broker
// credentials and what its last status said.
type Edge struct {
	ID         string
	Tenant     Tenant
	SiteID     string
	Name       string
	Username   string // at the broker: the edge's ID
	SecretHash []byte // SHA-256 of the broker password, which is never stored
	CreatedAt  time.Time
	State      string     // EdgeOnline or EdgeOffline, as its last status said; offline until one arrives
	StateSince *time.Time // when the cloud learned of State; nil until a status arrives
	LastSeenAt *time.Time // when the cloud last heard the edge say it is online
	Seq        uint64     // the last change of the feed it had applied, as it last said
	Outbox     int        // facts it had not had acknowledged, as it last said
	Software   string     // its software version, as it last said
	RevokedAt  *time.Time // when it was revoked; nil while it may connect
	// BadgeKey is the public half of the appliance's own walk-in badge
	// key, certified for the edge's site (Service.RecordEdgeStatus); nil
	// until the edge has sent one. It is certified once and never
	// replaced; revoking the edge retires it.
	BadgeKey   []byte
	BadgeKeyAt *time.Time // when it was certified

	// IdentityKey is the appliance's Ed25519 identity key, bound when an
	// installer claimed its enrolment code (ClaimEnrolment); nil for an
	// edge made by svc-cloud edges create.
	IdentityKey []byte
	// Skew is the appliance's clock minus the cloud's, as last measured
	// (its enrolment polls, its online statuses); nil until measured.
	Skew *time.Duration
	// Head is its site's feed head when the edge was read: Head - Seq is
	// how far the appliance lags behind.
	Head uint64
	// What its last online status said of it; nil when it did not say
	// (an appliance older than issue 17).
	OutboxOldest *time.Time            // when the oldest fact waiting happened
	Cache        *protocol.CacheCounts // what its cache holds
	DiskFree     *uint64               // bytes free on its data partition
	// Announced is the state the last edge.online or edge.offline event
	// said it was in (EdgeOffline before its first).
	Announced string
	// Update is what it last said of its updates, when the service read
	// it (Service.Edges, Service.Edge); nil before its first poll.
	Update *EdgeUpdate

	// Hardware is the appliance's hardware as configured from the cloud
	// (UpdateEdge); nil until set, when the appliance drives its
	// configuration file's gates.
	Hardware *hardware.Document
	// HardwareError is what the appliance's last online status said went
	// wrong applying its hardware; "" when nothing did, or it did not say.
	HardwareError string
}

// The states of an edge.
const (
	EdgeOnline  = "online"
	EdgeOffline = "offline"
)

// EdgeSilentAfter is how long an edge that said it was online may go
// without saying so again before the cloud takes it as offline: three of
// its 60-second status periods. Its last will usually says so first, but a
// broker does not always deliver it (the embedded broker does not replay
// a retained will to a cloud process that subscribes after it fired).
const EdgeSilentAfter = 3 * time.Minute

// Presented is e as the cloud shows it at now: offline since it was
// revoked, or since EdgeSilentAfter past its last online status when
// that is longer ago.
func (e Edge) Presented(now time.Time) Edge {
	if e.RevokedAt != nil && e.State == EdgeOnline {
		e.State, e.StateSince = EdgeOffline, e.RevokedAt
		return e
	}
	return e.silent(now)
}

// silent returns e as the cloud should present it at now: offline since
// EdgeSilentAfter past its last online status when that is longer ago.
func (e Edge) silent(now time.Time) Edge {
	if e.State != EdgeOnline || e.LastSeenAt == nil {
		return e
	}
	if since := e.LastSeenAt.Add(EdgeSilentAfter); now.After(since) {
		e.State, e.StateSince = EdgeOffline, &since
	}
	return e
}

// EdgeFact is a fact from a site's edge as the cloud records it: each
// fact ID once, whether or not it agreed with the cloud's state.
type EdgeFact struct {
	Tenant     Tenant
	SiteID     string
	Fact       protocol.Fact
	ReceivedAt time.Time
	Conflict   string // why the fact disagreed with the cloud (Conflict*); "" when it did not
}

// FactWrites are what applying a fact writes, in the transaction that
// records the fact.
type FactWrites struct {
	Visits   []Visit      // visits read through the transaction's load, stored again whole
	New      []Visit      // visits the fact makes (a re-entry, a walk-in)
	Visitors []Visitor    // visitor records the fact makes (a walk-in's new visitor)
	Messages []Message    // the outbox: a walk-in's pass, notices to a visit's receivers
	Audit    []AuditEvent // the audit trail
	Conflict string       // recorded with the fact; "" when the fact agreed with the cloud
}

// Why a fact disagreed with the cloud's state (docs/decisions.md, "Edge
// facts in the cloud"). The fact is recorded all the same.
const (
	ConflictUnknownVisit      = "unknown_visit"      // no such visit at the site
	ConflictVisitExists       = "visit_exists"       // a re-entry's new visit ID is taken
	ConflictEnded             = "ended"              // the visit is cancelled, denied or no_show, or its pass revoked
	ConflictAwaitingApproval  = "awaiting_approval"  // nobody has approved the visit
	ConflictAlreadyCheckedIn  = "already_checked_in" // a check-in of a visit the cloud has checked in
	ConflictAlreadyCheckedOut = "already_checked_out"
	ConflictNotCheckedIn      = "not_checked_in"  // a check-out of a visit the cloud has as expected
	ConflictNotCheckedOut     = "not_checked_out" // a re-entry from a visit the cloud has not checked out
	ConflictUnknownGate       = "unknown_gate"    // the gate is not one of the site's
	ConflictUnknownPerson     = "unknown_person"  // a punch by no person of the organisation: recorded, no attendance event
	ConflictPersonInactive    = "person_inactive" // a punch by a deactivated person: recorded, and counted
	ConflictNotVoided         = "not_voided"      // a relay_failed refusal voids an admit the visit no longer shows: left as it is

	// The desk's (docs/decisions.md, "Kiosk data and facts").
	ConflictWalkInUnvalidated = "walk_in_unvalidated" // a walk-in the API would refuse now: made all the same, the problems audited
	ConflictTakenElsewhere    = "taken_elsewhere"     // a take of a visit that got a host, or was handed over, in the cloud meanwhile: the desk's take stands
	ConflictHasHost           = "has_host"            // a hand-over of a visit with a host: the API's rule, not applied
	ConflictInvalidReceiver   = "invalid_receiver"    // a hand-over to a receiver the API refuses now (deactivated, archived, elsewhere): not applied
)

// EncodeCacheCounts is how stores keep an edge's cache counts: JSON, ""
// for none.
func EncodeCacheCounts(c *protocol.CacheCounts) string {
	if c == nil {
		return ""
	}
	b, _ := json.Marshal(c) // four ints always marshal
	return string(b)
}

// DecodeCacheCounts reads what EncodeCacheCounts wrote.
func DecodeCacheCounts(s string) (*protocol.CacheCounts, error) {
	if s == "" {
		return nil, nil
	}
	var c protocol.CacheCounts
	if err := json.Unmarshal([]byte(s), &c); err != nil {
		return nil, fmt.Errorf("edge cache counts: %w", err)
	}
	return &c, nil
}
