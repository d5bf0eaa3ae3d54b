package kiosk

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// Store is everything the kiosk reads and writes at its site. The edge
// implements it on its bbolt cache (edge/kioskstore.go): every read comes
// from the cache, so it answers while the site is offline; every write
// changes the cache and appends its fact to the outbox in one bbolt
// transaction, like a gate's admit, and the cloud applies that fact once.
//
// The kiosk never imports the cache, bbolt or the sync protocol: this
// interface and its types are the whole contract between them.
type Store interface {
	// Site is the site's name, zone and kiosk settings.
	Site() Site
	// SearchPeople returns up to limit active people whose name has a word
	// starting with q (case- and accent-insensitive), best first. q has at
	// least 2 letters; the kiosk never lists all staff.
	SearchPeople(q string, limit int) []Person
	// Person returns one person.
	Person(id string) (Person, bool)
	// Teams returns the site's teams that are not archived (the site's own
	// and the organisation-wide ones), by name.
	Teams() []Team
	// Team returns one team.
	Team(id string) (Team, bool)
	// VisitTypes returns the visit types turned on for walk-ins at the
	// site, in the organisation's order, each with its form.
	VisitTypes() []VisitType
	// VisitType returns one visit type by key.
	VisitType(key string) (VisitType, bool)
	// Visitors returns up to limit visitors whose name equals name
	// (case- and accent-insensitive, spaces folded): a returning visitor
	// picks theirs by a masked email or phone.
	Visitors(name string, limit int) []Visitor
	// Visit returns one visit of the site.
	Visit(id string) (Visit, bool)
	// VisitByCode returns the expected visit whose invitation short code
	// is code (Visit.Code, already normalised: upper case, no dash).
	VisitByCode(code string) (Visit, bool)
	// Waiting returns the visits with NeedsSomeone, oldest WaitingSince
	// first.
	Waiting() []Visit
	// OnSite returns the checked-in visits, by visitor name.
	OnSite() []Visit
	// Sync says how many kiosk and gate facts wait to be sent and whether
	// the cloud was reachable lately.
	Sync() SyncState

	// WalkIn makes a walk-in visit, checked in at in.At, with source
	// walk_in, exactly as POST /visits then check-in would, and returns it
	// with its badge pass token. A *ValidationError says what is wrong.
	WalkIn(ctx context.Context, in WalkIn) (Visit, error)
	// CheckIn checks in the visit holding the pass token (a scanned QR) or
	// the visit with the short code, deciding with shared/passrule as a
	// gate does but at no gate. A refusal is a *RefusedError.
	CheckIn(ctx context.Context, in CheckIn) (Visit, error)
	// CheckOut checks a visit out. A visit that is not checked in is an
	// *StateError.
	CheckOut(ctx context.Context, visitID string, by Desk) (Visit, error)
	// Take gives a waiting visit its host: personID takes it. A visit that
	// has a host is a *StateError.
	Take(ctx context.Context, visitID, personID string, by Desk) (Visit, error)
	// HandOver passes a visit nobody has taken to another receiver, with
	// the API's rule: a visit with a host is a *StateError.
	HandOver(ctx context.Context, visitID string, to Receiver, by Desk) (Visit, error)
	// VisitByPass returns the visit a scanned pass or badge names (its
	// newest re-entry), verified with the site's keys.
	VisitByPass(token string) (Visit, bool)
}

// Desk is where and when a desk action happened: the kiosk device and
// the time at the desk, which the cloud applies it with.
type Desk struct {
	DeviceID string
	At       time.Time
}

// Site is what the kiosk shows and obeys of its site.
type Site struct {
	ID       string
	Name     string
	Timezone string
	Location *time.Location
	// Logo is a PNG, or nil.
	Logo []byte
	// WaitLimit is how long a visitor may wait before the queue
	// highlights them and the team is reminded; 0 means 10 minutes.
	WaitLimit time.Duration
}

// Person is one of the organisation's people, as the kiosk may show them
// to a visitor: a name and a job title, nothing else.
type Person struct {
	ID       string
	Name     string
	JobTitle string
}

// Team is a team a visit can be for.
type Team struct {
	ID                string
	Name              string
	VisitorsCanChoose bool
}

// VisitType is a visit type turned on for walk-ins, with its form's JSON
// Schema (the cloud's form, x-svc annotations included).
type VisitType struct {
	Key    string
	Name   string
	Schema []byte
}

// Visitor is a visitor record. The kiosk shows a visitor's email and
// phone only masked (Mask).
type Visitor struct {
	ID      string
	Name    string
	Email   string
	Phone   string // E.164
	Company string
}

// Ref names a person or team.
type Ref struct {
	ID   string
	Name string
}

// Visit is a visit as the kiosk shows it.
type Visit struct {
	ID       string
	Status   string // the API's visit statuses
	Type     string
	Source   string
	Audience string // person, people, team or desk
	Host     *Ref   // the lead host; nil until someone takes a team or desk visit
	Team     *Ref
	// WaitsWith is whom a visit nobody has taken was handed over to:
	// reception, person or team (Receiver names the last two); empty when
	// it was never handed over.
	WaitsWith string
	Receiver  *Ref
	Visitor   Visitor
	// Code is the invitation's short code, upper case without its dash.
	Code         string
	NeedsSomeone bool
	// WaitingSince is when the visitor began to wait for the receiver they
	// wait for now (check-in, or the last hand-over).
	WaitingSince time.Time
	CheckedInAt  *time.Time
	CheckedOutAt *time.Time
	// Pass is the token a badge's QR holds: for a visit checked in at this
	// desk, a badge pass the edge signed (valid at this site until the end
	// of the local day); empty when the edge has none to give.
	Pass string
	// Pending is true while the visit's last kiosk fact waits to reach the
	// cloud: its host has not been told yet.
	Pending bool
}

// SyncState is the kiosk's discreet offline indicator.
type SyncState struct {
	Online  bool
	Pending int // facts waiting to be sent
}

// WalkIn is a walk-in sign-in as the visitor typed it.
type WalkIn struct {
	// ID is the new visit's ID, made by the kiosk before the first attempt
	// so that a retried submit makes one visit.
	ID string
	At time.Time
	// Exactly one receiver: a person, a team, or the desk (both empty).
	HostID string
	TeamID string
	Type   string
	// VisitorID names a returning visitor's record; empty for a new one.
	VisitorID    string
	Visitor      Visitor
	CustomFields map[string]json.RawMessage // answers keyed by question, checked at the desk
	DeviceID     string                     // the kiosk device
}

// CheckIn is an express check-in at the desk.
type CheckIn struct {
	Token    string // a scanned pass, or empty
	Code     string // a short code, or empty
	At       time.Time
	DeviceID string
}

// Receiver is whom a hand-over passes a visit to.
type Receiver struct {
	To       string // reception, person or team
	PersonID string
	TeamID   string
}

// ValidationError lists what is wrong with a write's input, keyed by the
// field as the API names it (visitor.phone, custom_fields.badge_colour),
// with the API's messages.
type ValidationError struct {
	Fields map[string]string
}

func (e *ValidationError) Error() string { return "kiosk: the input is not valid" }

// RefusedError is a pass refused at the desk: Reason is a passrule.Reason
// or a gate reason (invalid_token, already_in ...).
type RefusedError struct {
	Reason string
}

func (e *RefusedError) Error() string { return "kiosk: pass refused: " + e.Reason }

// StateError is an action the visit's state does not allow. Action is
// check_in, check_out, take or hand_over; Status the visit's status; the
// kiosk words it from its catalogue ("state.<action>"), Detail is the
// API's words for logs.
type StateError struct {
	Action string
	Status string
	Detail string
}

func (e *StateError) Error() string { return "kiosk: " + e.Detail }

// ErrNotFound is a visit, person or team that is not at this site.
var ErrNotFound = errors.New("kiosk: not found")
