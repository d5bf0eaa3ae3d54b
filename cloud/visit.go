package cloud

import (
	"encoding/json"
	"time"

	"github.com/svc-vms/svc/shared/passrule"
)

// VisitStatus is where a visit is in its life (the spec's "Visit statuses").
type VisitStatus string

// The visit statuses.
const (
	VisitExpected         VisitStatus = "expected"
	VisitAwaitingApproval VisitStatus = "awaiting_approval"
	VisitCheckedIn        VisitStatus = "checked_in"
	VisitCheckedOut       VisitStatus = "checked_out"
	VisitDenied           VisitStatus = "denied"
	VisitCancelled        VisitStatus = "cancelled"
	VisitNoShow           VisitStatus = "no_show"
)

// VisitStatuses lists every status, for validating filters.
var VisitStatuses = []VisitStatus{VisitExpected, VisitAwaitingApproval, VisitCheckedIn, VisitCheckedOut, VisitDenied, VisitCancelled, VisitNoShow}

// Source says who made a visit.
type Source string

// The visit sources.
const (
	SourceInvitation      Source = "invitation"       // a host, the console or a secret key
	SourcePreRegistration Source = "pre_registration" // the visitor, through a publishable key
	SourceWalkIn          Source = "walk_in"          // the kiosk or the front desk
	SourceBooking         Source = "booking"          // a confirmed booking
)

// Audience says whom a visit is for.
type Audience string

// The audiences.
const (
	AudiencePerson Audience = "person" // one host
	AudiencePeople Audience = "people" // a lead host and others
	AudienceTeam   Audience = "team"   // a team; nobody in particular until someone takes it
	AudienceDesk   Audience = "desk"   // no one in particular: reception receives it
)

// Valid reports whether a is one of the four audiences.
func (a Audience) Valid() bool {
	return a == AudiencePerson || a == AudiencePeople || a == AudienceTeam || a == AudienceDesk
}

// Host roles, states and answers (docs/decisions.md, "Host entries").
const (
	HostRoleLead   = "lead"    // the person the visit is for, first in the list
	HostRoleCoHost = "co_host" // another person the visit is for
	HostRoleAsked  = "asked"   // someone reception asked to see the visitor

	HostStateInvited  = "invited"  // told of the visit, not yet of an arrival
	HostStateNotified = "notified" // told the visitor has arrived
	HostStateAnswered = "answered" // replied to the arrival

	HostAnswerComing  = "coming"   // on their way, in AnswerMinutes
	HostAnswerSendUp  = "send_up"  // reception may send the visitor up
	HostAnswerDecline = "declined" // cannot see the visitor
)

// Host is one entry of a visit's hosts.
type Host struct {
	ID            string
	Name          string // the person's name when the visit was made
	Role          string
	State         string
	Answer        string     // empty until answered
	AnswerMinutes *int       // set with the coming answer
	AskedAt       *time.Time // when the host was last asked (notified of an arrival)
	AnsweredAt    *time.Time
}

// Ref names another object with its display name, as the visit shows it.
type Ref struct {
	ID   string
	Name string
}

// Visitor is a person who visits; visits point at one. Contact details
// are matched to reuse a visitor for a new visit made with a secret key.
type Visitor struct {
	ID      string
	Tenant  Tenant
	Name    string
	Phone   string // E.164; empty when none
	Email   string // empty when none
	Company string // empty when none
	// SelfRegistered marks a record a publishable key made: what an
	// anonymous caller typed, never matched to reuse a record (see
	// Store.FindVisitor). Fixed at creation.
	SelfRegistered bool
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// Decision is a host's decision on a visit that needed approval.
type Decision struct {
	Outcome   string // approved or denied
	DecidedAt time.Time
	DecidedBy string // the key ID that decided (docs/decisions.md)
	Reason    string // empty when none given
}

// The decision outcomes.
const (
	OutcomeApproved = "approved"
	OutcomeDenied   = "denied"
)

// Rescheduled says what replaced a visit closed by reschedule: a new visit
// or a booking.
type Rescheduled struct {
	VisitID   string
	BookingID string
	At        time.Time
	Note      string // the reason given, for the record; not shown
}

// Pass is the visitor's QR pass for a visit.
type Pass struct {
	Channels   []string   // channels the pass was sent through, in first-sent order
	LastSentAt *time.Time // nil until sent
	Rules      passrule.Rules
	ForVisitID string // the visit that holds the pass (another visit's ID on a re-entry)
	Uses       int    // admissions made with this pass
	Revoked    bool   // stops working at once: the visit was rescheduled
}

// Visit is one visit by one visitor to one site.
type Visit struct {
	ID           string
	Tenant       Tenant
	Status       VisitStatus
	Type         string // visit type key
	Source       Source
	SiteID       string
	GateID       string // empty until known
	HostID       string // lead host; empty while nobody has taken the visit
	Audience     Audience
	Hosts        []Host
	Team         *Ref
	AskedFor     *Ref
	NeedsSomeone bool
	// WaitingSince is when the visitor began to wait for whoever receives
	// the visit now: the check-in, or the last hand-over after it; nil
	// before a check-in. Stored from issue 16 on: an older visit has none,
	// and its check-in time stands for it.
	WaitingSince *time.Time
	// RemindedFor is the start of the wait (WaitStart) the last waiting
	// reminder was sent for; nil before the first. A wait whose start it
	// is not has had no reminder (docs/decisions.md, "Waiting
	// reminders"). Stored, never shown.
	RemindedFor   *time.Time
	VisitorID     string
	Visitor       Visitor // filled on read from the visitor record
	Purpose       string
	VehiclePlate  string
	ExpectedAt    *time.Time
	ExpectedUntil *time.Time
	CheckedInAt   *time.Time
	CheckedOutAt  *time.Time
	CancelledAt   *time.Time
	Decision      *Decision
	BookingID     string
	RescheduledTo *Rescheduled
	Pass          Pass
	CustomFields  map[string]json.RawMessage // normalised answers, sensitive ones included
	Receiver      Receiver                   // who receives a visit nobody has taken
	ReenteredAs   string                     // the re-entry visit made from this one; empty until then
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// WaitStart is when the visitor of a checked-in visit began to wait for
// whoever receives it now: WaitingSince, or for a visit stored before it
// its check-in. It is nil for a visit not checked in.
func WaitStart(v Visit) *time.Time {
	if v.Status != VisitCheckedIn {
		return nil
	}
	if v.WaitingSince != nil {
		return v.WaitingSince
	}
	return v.CheckedInAt
}

// RemindFrom is the start of the wait a waiting reminder is still owed
// for: WaitStart of a checked-in visit that needs someone and has had no
// reminder for this wait (RemindedFor), in UTC to the microsecond; nil
// otherwise. Stores index it to find the waits due (Store.OverdueWaits).
func RemindFrom(v Visit) *time.Time {
	start := WaitStart(v)
	if !v.NeedsSomeone || start == nil || (v.RemindedFor != nil && v.RemindedFor.Equal(*start)) {
		return nil
	}
	t := start.UTC().Truncate(time.Microsecond)
	return &t
}

// Receiver is who a visit nobody has taken waits with: reception, a
// person or a team (hand-over moves it).
type Receiver struct {
	Kind     string // reception, person or team
	PersonID string
	TeamID   string
}

// The receiver kinds, as hand-over's "to" names them.
const (
	ReceiverReception = "reception"
	ReceiverPerson    = "person"
	ReceiverTeam      = "team"
)

// VisitFilter narrows ListVisits. Empty fields do not filter.
type VisitFilter struct {
	Status         []VisitStatus
	Type           string
	SiteID         string
	HostID         string // any host of the visit, lead or not
	VisitorID      string
	ExpectedFrom   *time.Time // expected_at at or after
	ExpectedBefore *time.Time // expected_at before
	CreatedAfter   *time.Time // hides records older than the plan's history
	// WaitingWith keeps visits nobody has taken whose receiver is this:
	// Reception, a person ID or a team ID.
	WaitingWith string
}

// VisitType is one of an organisation's visit types: a key with its own
// form, pass-rule defaults and rules for pre-registration and approval.
type VisitType struct {
	Tenant          Tenant
	Key             string
	Name            string
	Enabled         bool
	PreRegistration bool // open for pre-registration by visitors
	NeedsApproval   bool // a pre-registration waits for a host's approval
	Form            json.RawMessage
	FormVersion     int
	PassRules       passrule.Rules
	CreatedAt       time.Time
	UpdatedAt       time.Time
}

// VisitTypeFilter narrows ListVisitTypes.
type VisitTypeFilter struct {
	Public bool // only types turned on and open for pre-registration
}

// Message is a pass (or other notice) sent to someone through one channel.
// Test-mode messages stay in the test outbox and are never delivered.
type Message struct {
	ID        string
	Tenant    Tenant
	VisitID   string
	Channel   string // email or sms
	To        string // address or E.164 number
	Subject   string
	Body      string
	Status    string // queued, held (test mode), sent, failed
	CreatedAt time.Time
}

// The message channels and statuses.
const (
	ChannelEmail = "email"
	ChannelSMS   = "sms"

	MessageQueued = "queued"
	MessageHeld   = "held"
)

// MessageFilter narrows ListMessages.
type MessageFilter struct {
	VisitID      string
	CreatedAfter *time.Time // hides records older than the plan's history
}

// PassKey is a tenant's pass-signing key. The newest key not set to retire
// signs; every key verifies until it retires.
type PassKey struct {
	ID        string
	Tenant    Tenant
	Private   []byte // Ed25519 private key
	CreatedAt time.Time
	// RetiredAt is when the key stops verifying: nil while it signs; set
	// by a rotation to the latest time a pass it signed can still admit
	// (Service.RotatePassKey), so it verifies until then and never again.
	RetiredAt *time.Time
}

// Retired reports whether the key no longer verifies at now.
func (k PassKey) Retired(now time.Time) bool { return k.RetiredAt != nil && !now.Before(*k.RetiredAt) }

// VisitWrites are records written in the same transaction as a visit
// change: nothing half-done survives a crash.
type VisitWrites struct {
	Visitor  *Visitor     // a new visitor record
	Visits   []Visit      // new visits (reschedule, re-enter)
	Messages []Message    // outbox
	Audit    []AuditEvent // the audit trail
}

// WithNewVisitor returns v carrying the new visitor w writes, in v's
// tenant, and true, when that visitor is v's: the visit and its visitor
// are both rows the write inserts, so a store can put the visit on its
// site's feed as given rather than read it back. Otherwise it returns v
// and false: a visit of an existing visitor is read back, so that it
// carries the visitor as stored at the commit (none after an erasure).
func (w VisitWrites) WithNewVisitor(v Visit) (Visit, bool) {
	if w.Visitor == nil || w.Visitor.ID != v.VisitorID {
		return v, false
	}
	v.Visitor = *w.Visitor
	v.Visitor.Tenant = v.Tenant
	return v, true
}
