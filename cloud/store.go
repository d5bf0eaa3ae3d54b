package cloud

import (
	"context"
	"crypto/ed25519"
	"io"
	"time"

	"github.com/svc-vms/svc/sync/protocol"
)

// Store is what the cloud keeps its records in. cloud/sqlite and
// cloud/postgres implement it and pass cloud/storetest.
//
// Every method confined to a tenant returns ErrNotFound for an ID that
// belongs to another organisation or mode. List methods return rows newest
// first (created_at, then ID, descending), at most page.Limit of them, and
// whether more follow.
type Store interface {
	// Atomic runs fn in one write transaction: every Store method called
	// with the context fn is given, or one derived from it, reads and
	// writes inside that transaction, and a write method makes no commit
	// of its own. When fn returns nil the transaction commits, with the
	// events, audit entries and request's reply the writes recorded
	// (cloud.TakeReply: one stored response, counted once by
	// WriteCommitted); fn's error, or the error of any write inside it,
	// rolls everything back and is returned. Atomic inside Atomic joins the
	// outer transaction. A write made apart (apart) inside fn joins it too.
	// fn may run more than once: a store that commits several calls in one
	// transaction may roll it back for another call's failure and run fn
	// again from its start (cloud/sqlite). So a run must leave nothing for
	// the next (it sets, never adds to, what it hands out) and act on
	// nothing outside the store until Atomic has returned.
	Atomic(ctx context.Context, fn func(ctx context.Context) error) error
	// ReadAhead names reads by key that an Atomic call is about to make,
	// so that a store paying a round trip a statement (PostgreSQL) can
	// make them in one: each read named then answers from what was read,
	// once, unless a statement of another kind ran in between. Outside
	// Atomic, or where a read costs no round trip (SQLite), it does
	// nothing. A read it could not make is made when asked.
	ReadAhead(ctx context.Context, t Tenant, r ReadsAhead)

	// CreateOrganisation stores a new organisation.
	CreateOrganisation(ctx context.Context, o Organisation) error
	// Organisation returns an organisation or ErrNotFound.
	Organisation(ctx context.Context, id string) (Organisation, error)

	// CreateKey stores a key, with what TakeAudit returns, in one
	// transaction. The hash must be unique.
	CreateKey(ctx context.Context, k APIKey) error
	// KeyByHash returns the key with this hash and its organisation's plan,
	// revoked or not, or ErrNotFound.
	KeyByHash(ctx context.Context, hash []byte) (Principal, error)
	// Key returns a key of the organisation, revoked or not, or
	// ErrNotFound.
	Key(ctx context.Context, orgID, keyID string) (APIKey, error)
	// RevokeKey marks a key of the organisation revoked; ErrNotFound when
	// the organisation has no such key. Revoking twice keeps the first time.
	RevokeKey(ctx context.Context, orgID, keyID string, at time.Time) error

	// CreateSite stores a new site.
	CreateSite(ctx context.Context, s Site) error
	// Site returns a site or ErrNotFound.
	Site(ctx context.Context, t Tenant, id string) (Site, error)
	// UpdateSite applies fn to the current site inside one transaction and
	// stores the result; fn's error aborts and is returned as is.
	UpdateSite(ctx context.Context, t Tenant, id string, fn func(*Site) error) (Site, error)
	// ListSites returns a page of sites.
	ListSites(ctx context.Context, t Tenant, f SiteFilter, p Page) ([]Site, bool, error)

	// CreateGate stores a new gate; its site must exist in the tenant.
	CreateGate(ctx context.Context, g Gate) error
	// Gate returns a gate or ErrNotFound.
	Gate(ctx context.Context, t Tenant, id string) (Gate, error)
	// UpdateGate is UpdateSite for gates.
	UpdateGate(ctx context.Context, t Tenant, id string, fn func(*Gate) error) (Gate, error)
	// ListGates returns a page of gates.
	ListGates(ctx context.Context, t Tenant, f GateFilter, p Page) ([]Gate, bool, error)

	// CreatePerson stores a new person; a used email returns *ConflictError.
	// The person goes out on the feed of every site of the tenant.
	CreatePerson(ctx context.Context, p Person) error
	// Person returns a person or ErrNotFound.
	Person(ctx context.Context, t Tenant, id string) (Person, error)
	// People returns the people of the tenant with these IDs, in any order,
	// leaving out IDs that are not found.
	People(ctx context.Context, t Tenant, ids []string) ([]Person, error)
	// UpdatePerson is UpdateSite for people; a used email returns
	// *ConflictError. The person goes out on the feed of every site of the
	// tenant, as fn left them.
	UpdatePerson(ctx context.Context, t Tenant, id string, fn func(*Person) error) (Person, error)
	// ListPeople returns a page of people.
	ListPeople(ctx context.Context, t Tenant, f PersonFilter, p Page) ([]Person, bool, error)

	// CreateTeam stores a new team with its members, who must exist.
	CreateTeam(ctx context.Context, tm Team) error
	// Team returns a team with its members or ErrNotFound.
	Team(ctx context.Context, t Tenant, id string) (Team, error)
	// UpdateTeam is UpdateSite for teams; fn may change MemberIDs.
	UpdateTeam(ctx context.Context, t Tenant, id string, fn func(*Team) error) (Team, error)
	// ListTeams returns a page of teams with their members.
	ListTeams(ctx context.Context, t Tenant, f TeamFilter, p Page) ([]Team, bool, error)

	// PutVisitType stores a visit type, replacing the tenant's type with the
	// same key (keeping its CreatedAt).
	PutVisitType(ctx context.Context, vt VisitType) error
	// VisitType returns the tenant's type with this key or ErrNotFound.
	VisitType(ctx context.Context, t Tenant, key string) (VisitType, error)
	// ListVisitTypes returns a page of visit types.
	ListVisitTypes(ctx context.Context, t Tenant, f VisitTypeFilter, p Page) ([]VisitType, bool, error)

	// Visitor returns a visitor or ErrNotFound.
	Visitor(ctx context.Context, t Tenant, id string) (Visitor, error)
	// FindVisitor returns the newest visitor, not self-registered, whose
	// email (compared case-insensitively) or, when email is empty, phone
	// matches; ErrNotFound when none does.
	FindVisitor(ctx context.Context, t Tenant, email, phone string) (Visitor, error)
	// UpdateVisitor is UpdateSite for visitors.
	UpdateVisitor(ctx context.Context, t Tenant, id string, fn func(*Visitor) error) (Visitor, error)
	// EraseVisitor deletes a visitor and, in the same transaction, applies
	// fn to each of its visits and bfn to each of its bookings and stores
	// the results, and deletes the outbox messages about its visits or sent
	// to its email address or phone number; ErrNotFound when there is no
	// such visitor.
	EraseVisitor(ctx context.Context, t Tenant, id string, fn func(*Visit), bfn func(*Booking)) error

	// CreateVisit stores a new visit and w in one transaction.
	CreateVisit(ctx context.Context, v Visit, w VisitWrites) error
	// Visit returns a visit, its Visitor filled from the visitor record, or
	// ErrNotFound.
	Visit(ctx context.Context, t Tenant, id string) (Visit, error)
	// UpdateVisit applies fn to the current visit inside one transaction and
	// stores the result with what fn added to w; fn's error aborts and is
	// returned as is.
	UpdateVisit(ctx context.Context, t Tenant, id string, fn func(*Visit, *VisitWrites) error) (Visit, error)
	// ListVisits returns a page of visits, newest first.
	ListVisits(ctx context.Context, t Tenant, f VisitFilter, p Page) ([]Visit, bool, error)
	// OverdueWaits returns, of any tenant, up to limit visits whose
	// RemindFrom is after from and at least their site's WaitLimit minutes
	// before now, earliest RemindFrom first: the waits a reminder is due
	// for (docs/decisions.md, "Waiting reminders"). It only reads; sending
	// the reminder is an UpdateVisit that checks again.
	OverdueWaits(ctx context.Context, from, now time.Time, limit int) ([]OverdueWait, error)

	// CreateBookingType stores a new booking type.
	CreateBookingType(ctx context.Context, bt BookingType) error
	// BookingType returns a booking type or ErrNotFound.
	BookingType(ctx context.Context, t Tenant, id string) (BookingType, error)
	// UpdateBookingType is UpdateSite for booking types.
	UpdateBookingType(ctx context.Context, t Tenant, id string, fn func(*BookingType) error) (BookingType, error)
	// ListBookingTypes returns a page of booking types.
	ListBookingTypes(ctx context.Context, t Tenant, f BookingTypeFilter, p Page) ([]BookingType, bool, error)

	// CreateBooking stores a new booking and w in one transaction. With
	// w.Capacity above zero it first checks the slot, as of now, under a
	// lock that keeps two bookings from taking its last place.
	CreateBooking(ctx context.Context, b Booking, w BookingWrites, now time.Time) error
	// Booking returns a booking, its Visitor filled from the visitor
	// record, or ErrNotFound.
	Booking(ctx context.Context, t Tenant, id string) (Booking, error)
	// UpdateBooking applies fn to the current booking inside one
	// transaction and stores the result with what fn added to w (checking
	// the slot as CreateBooking does when fn set w.Capacity); fn's error
	// aborts and is returned as is.
	UpdateBooking(ctx context.Context, t Tenant, id string, now time.Time, fn func(*Booking, *BookingWrites) error) (Booking, error)
	// ListBookings returns a page of bookings, newest first.
	ListBookings(ctx context.Context, t Tenant, f BookingFilter, p Page) ([]Booking, bool, error)
	// SlotUse counts, per starts_at in [from, to), the bookings of the type
	// that hold their slot at now (Booking.HoldsSlot).
	SlotUse(ctx context.Context, t Tenant, typeID string, from, to, now time.Time) (map[time.Time]int, error)
	// ExpireBookings marks every pending booking, of any tenant, whose
	// confirm_by is at or before now expired, in one transaction, calling
	// fn (when not nil) with each as stored; fn's error aborts it. It
	// returns how many it expired.
	ExpireBookings(ctx context.Context, now time.Time, fn func(Booking) error) (int64, error)

	// ListAuditEvents returns a page of the tenant's audit trail, newest
	// first. Audit events are written with the changes they record
	// (VisitWrites.Audit).
	ListAuditEvents(ctx context.Context, t Tenant, f AuditFilter, p Page) ([]AuditEvent, bool, error)

	// ListEvents returns a page of the tenant's events, newest first.
	// Events are written with the changes they describe: every write
	// transaction inserts what TakeEvents(ctx) returns before it commits.
	ListEvents(ctx context.Context, t Tenant, f EventFilter, p Page) ([]Event, bool, error)
	// Event returns one of the tenant's events or ErrNotFound.
	Event(ctx context.Context, t Tenant, id string) (Event, error)

	// Webhooks (docs/decisions.md, "Webhooks"). When a write inserts its
	// events it also queues, in the same statement's transaction, one
	// delivery per enabled endpoint of the event's tenant subscribed to
	// its type: pending, due at the event's time.

	// CreateWebhookEndpoint stores a new endpoint.
	CreateWebhookEndpoint(ctx context.Context, e WebhookEndpoint) error
	// WebhookEndpoint returns an endpoint or ErrNotFound.
	WebhookEndpoint(ctx context.Context, t Tenant, id string) (WebhookEndpoint, error)
	// UpdateWebhookEndpoint is UpdateSite for endpoints; it inserts what
	// TakeEvents and TakeAudit return in the same transaction.
	UpdateWebhookEndpoint(ctx context.Context, t Tenant, id string, fn func(*WebhookEndpoint) error) (WebhookEndpoint, error)
	// DeleteWebhookEndpoint deletes an endpoint with its deliveries and
	// attempts, or returns ErrNotFound.
	DeleteWebhookEndpoint(ctx context.Context, t Tenant, id string) error
	// ListWebhookEndpoints returns a page of endpoints.
	ListWebhookEndpoints(ctx context.Context, t Tenant, p Page) ([]WebhookEndpoint, bool, error)
	// ClaimWebhookDeliveries claims, for the token claim, up to limit
	// pending deliveries of enabled endpoints, of any tenant, due at or
	// before now, earliest first: each is marked due again at until (so a
	// claimant that dies leaves it to be claimed then) and held by claim.
	// No two callers, in any process sharing the store, claim the same
	// delivery until its until has passed.
	ClaimWebhookDeliveries(ctx context.Context, now, until time.Time, claim string, limit int) ([]WebhookJob, error)
	// CompleteWebhookDelivery stores the attempt a and, when the delivery
	// is still held by claim, applies fn to it and its endpoint and stores
	// both, with what TakeEvents and TakeAudit return, in one
	// transaction. fn may set a.NextAttemptAt before a is stored. When the
	// claim was lost (the lease ran out and another claimant took it) the
	// attempt is stored and nothing else changes.
	CompleteWebhookDelivery(ctx context.Context, claim string, a *WebhookAttempt, fn func(*WebhookDelivery, *WebhookEndpoint) error) error
	// WebhookDelivery returns the delivery of the event to the tenant's
	// endpoint, or ErrNotFound.
	WebhookDelivery(ctx context.Context, t Tenant, endpointID, eventID string) (WebhookDelivery, error)
	// ListWebhookDeliveries returns a page of an endpoint's deliveries,
	// newest first (Position.ID is the event ID).
	ListWebhookDeliveries(ctx context.Context, t Tenant, endpointID string, f DeliveryFilter, p Page) ([]WebhookDelivery, bool, error)
	// ListWebhookAttempts returns a page of an endpoint's attempts, newest
	// first (Position.CreatedAt is the attempt's time).
	ListWebhookAttempts(ctx context.Context, t Tenant, endpointID string, f AttemptFilter, p Page) ([]WebhookAttempt, bool, error)
	// ResendWebhookDeliveries makes the deliveries f chooses of the
	// endpoint pending again, due at now, at schedule step step, released
	// from any claim: with f.EventID the one delivery unless it is
	// pending, with f.Since every failed one created at or after it. It
	// returns how many. fn, when not nil, is called inside the
	// transaction with that number before it commits; its error aborts
	// it and is returned as is.
	ResendWebhookDeliveries(ctx context.Context, t Tenant, endpointID string, f ResendFilter, now time.Time, step int, fn func(n int64) error) (int64, error)

	// Attendance (docs/decisions.md, "Attendance"). Writes go through
	// Attendance, whose transaction inserts what TakeEvents and TakeAudit
	// return before it commits.

	// Attendance runs fn in one write transaction over the tenant's
	// attendance records; fn's error aborts it and is returned as is.
	Attendance(ctx context.Context, t Tenant, fn func(AttendanceTx) error) error
	// AttendanceSettings returns the tenant's settings or ErrNotFound.
	AttendanceSettings(ctx context.Context, t Tenant) (AttendanceSettings, error)
	// Punch returns one of the tenant's punches or ErrNotFound.
	Punch(ctx context.Context, t Tenant, id string) (AttendanceEvent, error)
	// ListPunches returns a page of punches, newest (OccurredAt) first;
	// Position.CreatedAt is OccurredAt.
	ListPunches(ctx context.Context, t Tenant, f PunchFilter, p Page) ([]AttendanceEvent, bool, error)
	// PunchDays returns a page of the (day, person) pairs with punches,
	// newest day first, then person ID descending; Position.CreatedAt is
	// the day's midnight UTC (Date.Time) and Position.ID the person.
	PunchDays(ctx context.Context, t Tenant, personID, siteID string, from, to Date, p Page) ([]PersonDay, bool, error)
	// PersonPunches returns the punches of these people on days in
	// [from, to], by person.
	PersonPunches(ctx context.Context, t Tenant, personIDs []string, from, to Date) (map[string][]AttendanceEvent, error)
	// TimesheetPeriod returns one period with its counts, or ErrNotFound.
	TimesheetPeriod(ctx context.Context, t Tenant, id string) (TimesheetPeriod, error)
	// ListTimesheetPeriods returns a page of periods with their counts,
	// newest (StartsOn) first; Position.CreatedAt is StartsOn.Time().
	ListTimesheetPeriods(ctx context.Context, t Tenant, f PeriodFilter, p Page) ([]TimesheetPeriod, bool, error)
	// Timesheet returns one timesheet or ErrNotFound.
	Timesheet(ctx context.Context, t Tenant, id string) (Timesheet, error)
	// ListTimesheets returns a page of timesheets, newest first.
	ListTimesheets(ctx context.Context, t Tenant, f TimesheetFilter, p Page) ([]Timesheet, bool, error)
	// Consents returns a person's consents, by kind; a kind never
	// answered is absent.
	Consents(ctx context.Context, t Tenant, personID string) (map[EvidenceKind]Consent, error)
	// DuePeriods returns the tenants, of any organisation, with a period
	// not closed whose ClosesAt is at or before now.
	DuePeriods(ctx context.Context, now time.Time) ([]Tenant, error)

	// ListMessages returns a page of the tenant's outbox, newest first.
	ListMessages(ctx context.Context, t Tenant, f MessageFilter, p Page) ([]Message, bool, error)

	// CreatePassKey stores a new pass-signing key and appends its public
	// half (EdgeKey) to the feed of every site of its tenant; an error when
	// there are sites and the key is not an Ed25519 private key.
	CreatePassKey(ctx context.Context, k PassKey) error
	// RotatePassKey is CreatePassKey for a key that replaces the tenant's
	// signing key: in the same transaction every key of the tenant not yet
	// set to retire (RetiredAt nil) is set to retire at retireAt, and goes
	// out again on every site's feed with that time before k does. It
	// returns the keys it set to retire; errors as CreatePassKey.
	RotatePassKey(ctx context.Context, k PassKey, retireAt time.Time) ([]PassKey, error)
	// PassesUntil returns the latest EdgeUntil of the tenant's visits
	// whose pass works (expected, checked in or checked out); nil when
	// there is none.
	PassesUntil(ctx context.Context, t Tenant) (*time.Time, error)
	// PassKeys returns the tenant's pass-signing keys, newest first. The
	// private keys are stored sealed (cloud/kek); an error when one does
	// not open.
	PassKeys(ctx context.Context, t Tenant) ([]PassKey, error)

	// The per-site change feed (docs/decisions.md, "Edge facts in the
	// cloud"). Every write of a visit, gate, site, pass key or person
	// appends, in its own transaction, one change per object it wrote to
	// the feed of the object's site, numbered from 1 without gaps per site:
	// visits as EdgeVisit reads them after the write (an erased visitor's
	// without the name), gates as EdgeGate, sites as EdgeSettings, followed
	// on a new site by every key of the tenant that is not retired and
	// every person of the tenant (EdgePerson), keys as EdgeKey in every
	// site of the tenant, and people as EdgePerson in every site of the
	// tenant (docs/decisions.md, "Personal passes and punches at gates"). A
	// write whose change would not pass protocol's checks fails whole.
	// Erasing a visitor also removes the name from the feed's earlier
	// changes of its visits.

	// SiteChanges returns the changes of the tenant's site after sequence
	// after, in sequence order, at most limit of them (protocol.MaxChanges
	// when limit is outside 1..MaxChanges), and the feed's head: its last
	// sequence, 0 before the first change. Both come from one consistent
	// read. ErrNotFound when the tenant has no such site.
	SiteChanges(ctx context.Context, t Tenant, siteID string, after uint64, limit int) ([]protocol.Change, uint64, error)
	// FeedHead returns the head of the tenant's site's feed: its last
	// sequence, 0 before the first change and for a site the tenant does
	// not have. It is one read of the committed head, outside any
	// transaction, for a caller that needs no more (the cloud half's
	// acknowledgements, one a batch of facts).
	FeedHead(ctx context.Context, t Tenant, siteID string) (uint64, error)
	// SiteSnapshot reads, in one consistent view, the tenant's site as its
	// edge needs it as of now (EdgeSnapshot). ErrNotFound when the tenant
	// has no such site.
	SiteSnapshot(ctx context.Context, t Tenant, siteID string, now time.Time) (EdgeSnapshot, error)
	// PublishFeeds hands fn the changes of up to limit site feeds (at least
	// one; each at most once a call) whose head is past what was
	// published, each site's in sequence order and at most
	// protocol.MaxChanges a call of fn, and marks them published when fn
	// returns nil. Each call works on one site at a
	// time, which no other caller (in any process sharing the store) works
	// on meanwhile, so no change is handed over twice once fn has returned
	// nil, and a site's changes go out in order. fn's error stops the call
	// and is returned, wrapped; that batch stays unpublished. It returns
	// how many changes fn accepted.
	PublishFeeds(ctx context.Context, limit int, fn func(site protocol.Site, changes []protocol.Change) error) (int, error)

	// ApplyFact records f.Fact under its ID and, in the same transaction,
	// writes what fn decides: fn reads visits of f.Tenant through load
	// (locked for the transaction; ErrNotFound for a visit the tenant does
	// not have) and fills w. The visits in w.Visits are stored again
	// whole, w.New stored as new visits, w.Visitors as new visitor
	// records, w.Messages put in the outbox, w.Audit appended to the audit
	// trail and w.Conflict recorded with the fact; every visit written
	// goes out on its site's feed. A fact ID recorded before returns
	// applied false and changes nothing, fn not called: each ID is
	// applied once, also when several processes apply it at once. fn's
	// error aborts and is returned as is, nothing recorded.
	ApplyFact(ctx context.Context, f EdgeFact, fn func(load func(id string) (Visit, error), w *FactWrites) error) (applied bool, err error)
	// ApplyFacts applies facts, all of one tenant, in one transaction, in
	// order, each as ApplyFact does: its row first, then fn(i, load, w)
	// for facts[i]. A fact ID recorded before, in an earlier transaction
	// or earlier in facts, is skipped: applied[i] false and fn not called
	// for it. load reads through the batch: a visit an earlier fact of the
	// batch wrote comes back as that fact left it. Each visit the batch
	// writes is stored once, as its last fact left it, and goes out on its
	// site's feed once; every conflict and audit event is recorded. fn's
	// error, or the store's, aborts the whole batch (nothing recorded) and
	// is returned, fn's as is. Facts of another tenant than facts[0]'s
	// are an error. The rules are in docs/decisions.md ("Edge facts in
	// the cloud").
	ApplyFacts(ctx context.Context, facts []EdgeFact, fn func(i int, load func(id string) (Visit, error), w *FactWrites) error) (applied []bool, err error)
	// EdgeFact returns the tenant's recorded fact or ErrNotFound.
	EdgeFact(ctx context.Context, t Tenant, id string) (EdgeFact, error)

	// CreateEdge stores a new edge; its site must exist in the tenant
	// (else an error wrapping ErrNotFound) and have no edge that is not
	// revoked (else an error wrapping ErrSiteHasEdge), checked in the
	// insert's transaction; a username in use returns an error wrapping
	// ErrConflict.
	CreateEdge(ctx context.Context, e Edge) error
	// RevokeEdge marks the tenant's edge revoked at at, unless it was
	// already (the first time stays), and returns it; ErrNotFound when
	// the tenant has no such edge. Revoking an edge with a badge key
	// appends the key, retired (EdgeBadgeKey), to its site's feed in the
	// same transaction. The first time, it is announced offline too (the
	// caller's edge.offline goes with it).
	RevokeEdge(ctx context.Context, t Tenant, id string, at time.Time) (Edge, error)
	// EdgesRevoked reports, for each of the IDs given that names an edge
	// of whatever tenant, whether it is revoked; an ID that names no edge
	// is not in the map. The accounts of an external broker are kept in
	// step with it (Service.ReconcileBrokerAccounts), and the embedded
	// broker drops revoked edges (Service.RevokedEdges).
	EdgesRevoked(ctx context.Context, ids []string) (map[string]bool, error)
	// UpdateEdge changes the tenant's edge as fn says (its Name and
	// Hardware; other fields fn sets are not stored) in one transaction
	// in which the edge is read and locked, and returns it as stored;
	// fn's error is returned as it is, storing nothing. When fn changed
	// the hardware, the edge's site's feed gets HardwareChange at at in
	// the same transaction. ErrNotFound when the tenant has no such edge.
	UpdateEdge(ctx context.Context, t Tenant, id string, at time.Time, fn func(*Edge) error) (Edge, error)
	// Edge returns the edge with this ID, of whatever tenant (brokers
	// authenticate edges before knowing their tenant), or ErrNotFound.
	Edge(ctx context.Context, id string) (Edge, error)
	// ListEdges returns the tenant's edges at the site, or at every site
	// when siteID is empty, oldest first.
	ListEdges(ctx context.Context, t Tenant, siteID string) ([]Edge, error)
	// CertifyBadgeKey stores pub as the walk-in badge key of the tenant's
	// edge edgeID at site siteID, certified at at, and appends it
	// (EdgeBadgeKey) to that site's feed alone, in one transaction in
	// which the edge is read and locked: ErrNotFound, storing nothing,
	// when the site has no edge edgeID that is not revoked. An edge whose
	// badge key is pub already returns nil and appends nothing; one with
	// another key, or a key whose ID is one of the tenant's pass keys',
	// returns an error wrapping ErrConflict and stores nothing. RevokeEdge
	// appends the key again, retired, in its own transaction, and
	// SiteSnapshot holds the key of the site's edge that is not revoked.
	CertifyBadgeKey(ctx context.Context, t Tenant, siteID, edgeID string, pub []byte, at time.Time) error
	// RecordEdgeStatus stores what an edge of the tenant's site says of
	// itself, received at at: its state (since at, when it changed) and,
	// when it says online, its sequence, outbox, software and at as last
	// seen. An offline status (a last will, written when the edge
	// connected) leaves the rest as the last online one said. ErrNotFound
	// when the site has no edge st.EdgeID.
	RecordEdgeStatus(ctx context.Context, t Tenant, siteID string, st protocol.Status, at time.Time) error
	// EdgeByIdentity returns the edge, not revoked, whose identity key is
	// pub, of whatever tenant, or ErrNotFound.
	EdgeByIdentity(ctx context.Context, pub []byte) (Edge, error)
	// SetEdgeSecret replaces the broker password hash of the edge id, not
	// revoked, and records skew measured at at; ErrNotFound otherwise.
	SetEdgeSecret(ctx context.Context, id string, hash []byte, skew time.Duration, at time.Time) error

	// Enrolment (docs/decisions.md, "Enrolment (issue 17)").
	// PutEnrolment stores en as the enrolment of its public key, replacing
	// any other, claimed or not. A code hash in use by another key
	// returns an error wrapping ErrConflict.
	PutEnrolment(ctx context.Context, en Enrolment) error
	// Enrolment returns the enrolment of the public key, or ErrNotFound.
	Enrolment(ctx context.Context, pub []byte) (Enrolment, error)
	// EnrolmentSkew records the skew of an enrolment's appliance;
	// ErrNotFound when it has none.
	EnrolmentSkew(ctx context.Context, pub []byte, skew time.Duration) error
	// ClaimEnrolment, in one transaction, finds the enrolment whose code
	// hash is codeHash, makes e with its identity key and skew as
	// CreateEdge does (same errors), and marks the enrolment claimed by
	// e at at; it returns e as stored. ErrNotFound when no enrolment has
	// the code hash, ErrEnrolmentUsed when it was claimed,
	// ErrEnrolmentExpired when its ExpiresAt is not after at. fn is
	// called inside the transaction with the edge as stored; its error
	// aborts the claim.
	ClaimEnrolment(ctx context.Context, codeHash []byte, e Edge, at time.Time, fn func(Edge) error) (Edge, error)
	// AddEnrolmentFailure records a wrong code tried by the tenant at at.
	AddEnrolmentFailure(ctx context.Context, t Tenant, at time.Time) error
	// EnrolmentFailures returns the times of the tenant's wrong codes
	// after since, oldest first.
	EnrolmentFailures(ctx context.Context, t Tenant, since time.Time) ([]time.Time, error)
	// PurgeEnrolments deletes what enrolment no longer needs as of
	// before: the wrong codes tried before it; the enrolments whose code
	// expired unclaimed before it; and the enrolments claimed before it
	// whose edge has connected (LastSeenAt set), was revoked or is gone.
	// An enrolment claimed by an edge that has neither connected nor been
	// revoked is kept however old: its appliance may still collect its
	// configuration. It returns how many rows it deleted.
	PurgeEnrolments(ctx context.Context, before time.Time) (int64, error)

	// Idempotency (docs/decisions.md, "Idempotency"). Every write
	// transaction inserts the record TakeReply(ctx) returns, if any, before
	// it commits, and then calls WriteCommitted(ctx, that record): so a
	// request's action and its stored response commit together. When a
	// record created less than IdempotencyWindow before the new one's
	// CreatedAt holds its key, the write fails with an error wrapping
	// ErrIdempotencyKeyUsed and changes nothing; an older record is
	// replaced. Two writes racing on one key: exactly one commits.

	// IdempotencyRecord returns the tenant's record of key created at or
	// after since, or ErrNotFound.
	IdempotencyRecord(ctx context.Context, t Tenant, key string, since time.Time) (IdempotencyRecord, error)
	// PutIdempotencyRecord stores rec in a transaction of its own, by the
	// rule above: for a response that no write carried (an error found
	// before acting, or one that rolled the action back).
	PutIdempotencyRecord(ctx context.Context, rec IdempotencyRecord) error
	// PurgeIdempotencyKeys deletes records created before the time.
	PurgeIdempotencyKeys(ctx context.Context, before time.Time) (int64, error)

	// CountRequests adds n requests to the tenant's counter for the window
	// starting at windowStart and returns the count including them. A
	// serve process claims its requests a slice at a time
	// (httpapi's leases), so n is often more than one.
	CountRequests(ctx context.Context, t Tenant, windowStart time.Time, n int64) (int64, error)
	// PurgeRequestCounts deletes counters of windows before the time.
	PurgeRequestCounts(ctx context.Context, before time.Time) (int64, error)

	// PutReplica stores what a serve process says of itself (replicas.go),
	// replacing what it said before, and deletes the replicas not seen
	// since ReplicaForget before r.SeenAt.
	PutReplica(ctx context.Context, r Replica) error
	// Replicas returns the replicas seen at or after since, by ID.
	Replicas(ctx context.Context, since time.Time) ([]Replica, error)

	// Secret returns the named server secret, storing generate's value first
	// if there is none, so every process sharing the store agrees on it.
	Secret(ctx context.Context, name string, generate func() []byte) ([]byte, error)

	// Signed updates (releases.go).

	// AddRelease stores a release and its bundle, read to the end, in
	// pieces of ReleaseChunk bytes, in one transaction; an error wrapping
	// ErrConflict when the version exists for the platform.
	AddRelease(ctx context.Context, r Release, bundle io.Reader) error
	// Release returns a release or ErrNotFound.
	Release(ctx context.Context, version, platform string) (Release, error)
	// ListReleases returns every release, newest added first.
	ListReleases(ctx context.Context) ([]Release, error)
	// ReleaseChunk returns piece index of a release's bundle, or
	// ErrNotFound.
	ReleaseChunk(ctx context.Context, version, platform string, index int) ([]byte, error)
	// CreateRollout stores a new rollout.
	CreateRollout(ctx context.Context, r Rollout) error
	// Rollout returns one of the tenant's rollouts or ErrNotFound.
	Rollout(ctx context.Context, t Tenant, id string) (Rollout, error)
	// Rollouts returns the tenant's rollouts, newest first.
	Rollouts(ctx context.Context, t Tenant) ([]Rollout, error)
	// SetRolloutState stores a rollout's state and reason (and when it was
	// cancelled, when at is set); ErrNotFound when the tenant has no such
	// rollout. A cancelled rollout stays cancelled.
	SetRolloutState(ctx context.Context, t Tenant, id, state, reason string, at *time.Time) error
	// PutEdgeUpdate stores what an edge last said of its updates, with
	// the events of ctx, in one transaction, provided what is stored is
	// what the caller read: a row polled at prev, or no row when prev is
	// nil. Otherwise (another poll wrote meanwhile) it returns an error
	// wrapping ErrConflict and stores nothing. An update without a last
	// outcome (LastOutcome "") keeps the one stored.
	PutEdgeUpdate(ctx context.Context, u EdgeUpdate, prev *time.Time) error
	// EdgeUpdates returns what the tenant's edges last said of their
	// updates, by edge ID; those of edgeID alone unless it is "".
	EdgeUpdates(ctx context.Context, t Tenant, edgeID string) ([]EdgeUpdate, error)
	// AnnounceEdge records that the tenant's edge id is announced as
	// being in state to, with the events of ctx, in one transaction,
	// provided it was announced as in state from; otherwise it returns an
	// error wrapping ErrConflict (another process announced it) and
	// stores nothing. ErrNotFound for no such edge.
	AnnounceEdge(ctx context.Context, t Tenant, id, from, to string) error
	// EdgesToAnnounce returns up to limit edges, of every tenant, that
	// may be due an announcement (Edge.Announcement), cutoff being
	// EdgeSilentAfter before now: those announced offline that are online
	// with a status at or after cutoff and unrevoked, and those announced
	// online that are revoked, online with no status since before cutoff,
	// or offline since cutoff or before.
	EdgesToAnnounce(ctx context.Context, cutoff time.Time, limit int) ([]Edge, error)
	// SetEdgeIdentityKey binds an identity key to an edge outside
	// enrolment (which binds it on a claim): for appliances installed
	// before it, and tests. An error wrapping ErrConflict when another
	// edge, not revoked, has it; ErrNotFound for no such edge.
	SetEdgeIdentityKey(ctx context.Context, edgeID string, key ed25519.PublicKey) error

	// Ready returns nil when the database answers within ctx and holds
	// every migration this program carries; an error wrapping
	// ErrUnavailable when it does not answer in time, ErrSchemaBehind
	// when migrations are missing, and another error when it answers with
	// one (the store closed, for instance). It is what a readiness probe
	// asks, so it reads one small row.
	Ready(ctx context.Context) error
	// WebhookQueue counts the pending webhook deliveries of every tenant
	// as at now, for metrics (WebhookQueueStats). It reads only pending
	// rows, so it costs what the backlog is, not the history.
	WebhookQueue(ctx context.Context, now time.Time) (WebhookQueueStats, error)
	// FleetTotals sums what the edges of every tenant last said of
	// themselves, for metrics (FleetTotals), an edge being online when its
	// last status said so at or after silentBefore (EdgeSilentAfter before
	// now, as Edge.Presented judges) and it is not revoked. It lists at
	// most lagSites of the sites behind (FleetTotals.Behind), in the same
	// statement.
	FleetTotals(ctx context.Context, silentBefore time.Time, lagSites int) (FleetTotals, error)
	// Stats tells how the store's connections are used and how many
	// statements failed since it opened, for metrics. It never waits for
	// the database.
	Stats() StoreStats

	// Close releases the store's connections.
	Close() error
}

// StoreStats is what a store tells of its connections and of the
// statements the database failed, for metrics: gauges as they are now,
// counters since the store opened.
type StoreStats struct {
	Pools []PoolStats
	// Errors counts the statements the database failed, by kind; nil
	// when the store has no one place every statement's error passes
	// (SQLite: docs/decisions.md, "Metrics (issue 19)").
	Errors *StatementErrors
	// WAL is SQLite's checkpointer's (docs/decisions.md, "SQLite's
	// checkpoints off the writer (issue 20)"); nil for PostgreSQL.
	WAL *WALStats
}

// WALStats is what the checkpoints of SQLite's write-ahead log did.
type WALStats struct {
	// Checkpoints and Failed count the checkpoints made and those that
	// failed.
	Checkpoints, Failed int64
	// Frames is the log's length in pages at the last checkpoint, and
	// Uncopied those it could not copy into the database file (a reader
	// still read them). A log that keeps growing, or pages that stay
	// uncopied, are the checkpointer falling behind.
	Frames, Uncopied int64
}

// PoolStats is one connection pool of a store.
type PoolStats struct {
	// Name tells the pool apart: "postgres", or SQLite's "sqlite_write"
	// (its one writer) and "sqlite_read".
	Name string
	// MaxOpen is how many connections the pool may open; InUse and Idle
	// are those open now, busy and waiting for work.
	MaxOpen, InUse, Idle int
	// Waits counts the times a caller found no free connection and
	// waited for one, and WaitTime is how long those waits took in all.
	Waits    int64
	WaitTime time.Duration
}

// StatementErrors counts failed statements by kind.
type StatementErrors struct {
	// Unavailable are those that found the database unreachable or did
	// not finish in time (ErrUnavailable).
	Unavailable int64
	// Canceled are those whose caller went away (a client that closed
	// its connection).
	Canceled int64
	// Constraint are those a constraint refused (a unique key taken, a
	// reference missing): the stores use some as answers (ErrConflict).
	Constraint int64
	// Other are all else: the ones to look into.
	Other int64
}

// PersonDay names one person's day.
type PersonDay struct {
	PersonID string
	Day      Date
}

// AttendanceTx is one write transaction over a tenant's attendance
// records (Store.Attendance). Reads inside it see its own writes.
type AttendanceTx interface {
	// LockPerson serialises this transaction with every other that locks
	// the same person (PostgreSQL: the person's row, FOR UPDATE); an
	// error wrapping ErrNotFound when the tenant has no such person.
	LockPerson(id string) error
	// LockPeriods serialises this transaction with every other that makes,
	// replans or closes the tenant's periods (PostgreSQL: a transaction
	// advisory lock); SQLite has one writer, so it need do nothing.
	LockPeriods() error
	// Settings returns the tenant's settings; false when there are none.
	Settings() (AttendanceSettings, bool, error)
	// PutSettings stores the tenant's settings.
	PutSettings(a AttendanceSettings) error

	// PunchByFact returns the punch an edge's fact made; false when none.
	PunchByFact(factID string) (AttendanceEvent, bool, error)
	// RepeatOf returns the earliest punch of e's person, site, gate, kind
	// and source within PunchRepeat of e.OccurredAt; false when none.
	RepeatOf(e AttendanceEvent) (AttendanceEvent, bool, error)
	// InsertPunch stores a new punch.
	InsertPunch(e AttendanceEvent) error
	// Punches returns a person's punches on days in [from, to].
	Punches(personID string, from, to Date) ([]AttendanceEvent, error)

	// Periods returns the tenant's periods overlapping [from, to], oldest
	// first, without counts.
	Periods(from, to Date) ([]TimesheetPeriod, error)
	// Period returns one of the tenant's periods, without counts, or
	// ErrNotFound.
	Period(id string) (TimesheetPeriod, error)
	// LastPeriod returns the tenant's latest period; false when none.
	LastPeriod() (TimesheetPeriod, bool, error)
	// InsertPeriod stores a new period.
	InsertPeriod(p TimesheetPeriod) error
	// DeletePeriodsFrom deletes the periods starting on or after day, with
	// their timesheets, and returns how many.
	DeletePeriodsFrom(day Date) (int, error)
	// UpdatePeriod stores a period's ClosedAt and ApprovedAt.
	UpdatePeriod(p TimesheetPeriod) error
	// DuePeriods returns the periods not closed whose ClosesAt is at or
	// before now, oldest first.
	DuePeriods(now time.Time) ([]TimesheetPeriod, error)
	// PeriodCounts counts a period's timesheets by stage.
	PeriodCounts(periodID string) (TimesheetCounts, error)

	// Timesheet returns a timesheet by ID (ErrNotFound when none).
	Timesheet(id string) (Timesheet, error)
	// TimesheetOf returns a person's timesheet of a period; false when none.
	TimesheetOf(periodID, personID string) (Timesheet, bool, error)
	// PutTimesheet inserts a new timesheet or stores one again.
	PutTimesheet(ts Timesheet) error
	// PeriodTimesheets returns a period's timesheets in a stage, or in
	// every stage when st is empty.
	PeriodTimesheets(periodID string, st TimesheetStatus) ([]Timesheet, error)
	// PeriodPunches returns every punch on days in [from, to], by person.
	PeriodPunches(from, to Date) (map[string][]AttendanceEvent, error)

	// Consent returns a person's consent to a kind; false when never given
	// or withdrawn.
	Consent(personID string, kind EvidenceKind) (Consent, bool, error)
	// PutConsent stores a consent.
	PutConsent(c Consent) error
	// InsertEvidence stores evidence.
	InsertEvidence(e Evidence) error
	// DeleteEvidence deletes a person's evidence of a kind kept on a
	// basis, and returns how many.
	DeleteEvidence(personID string, kind EvidenceKind, basis EvidencePolicy) (int, error)
}

// WebhookQueueStats is the webhook delivery queue at a moment, over every
// tenant. Due, Waiting and Held together are every pending delivery.
type WebhookQueueStats struct {
	// Due are pending deliveries to enabled endpoints whose next attempt
	// is at or before now: sent as soon as a dispatcher claims them.
	Due int64
	// Waiting are pending deliveries to enabled endpoints whose next
	// attempt is later: a retry's wait, or a claim being sent.
	Waiting int64
	// Held are pending deliveries to disabled endpoints, which stay until
	// the endpoint is enabled again.
	Held int64
	// Oldest is when the oldest pending delivery to an enabled endpoint
	// was queued (its event's time); nil when there is none.
	Oldest *time.Time
}

// FleetTotals sums the edges of every tenant, from what each last said in
// its status.
type FleetTotals struct {
	// Online, Offline and Revoked count the edges by state: revoked ones
	// are neither online nor offline.
	Online, Offline, Revoked int64
	// Outbox is the facts the edges not revoked said they had not had
	// acknowledged yet, summed.
	Outbox int64
	// OutboxOldest is when the oldest of those facts happened, as the
	// edges said; nil when none said it had one.
	OutboxOldest *time.Time
	// MaxLag is the most changes an online edge is behind its site's
	// feed (the feed's head minus the last change the edge said it
	// applied); 0 when none is online.
	MaxLag uint64
	// Behind is the sites whose online edges are behind their feed, each
	// with its most behind edge's lag: the most behind first (then by site
	// ID), at most the lagSites asked for. A site that has caught up, or
	// has no online edge, is not in it. nil when none is behind.
	Behind []SiteLag
	// BehindOmitted is how many more sites were behind than Behind holds.
	BehindOmitted int64
}

// SiteLag is how many changes a site's online edges have not applied: its
// feed's head minus the last change its most behind online edge said it
// applied.
type SiteLag struct {
	SiteID string
	Lag    uint64
}

// ReadsAhead are the reads Store.ReadAhead may make ahead: Site(Site),
// People(People), VisitType(VisitType) and FindVisitor(VisitorEmail,
// VisitorPhone), each left out when empty.
type ReadsAhead struct {
	Site                       string
	People                     []string
	VisitType                  string
	VisitorEmail, VisitorPhone string
}
