package protocol

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/svc-vms/svc/shared/hardware"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/shared/passrule"
	"github.com/svc-vms/svc/shared/strictjson"
)

// Version is the "v" every message carries.
const Version = 1

// Bounds on messages. A batch or reply larger than these is split by the
// sender; a receiver refuses anything larger.
const (
	MaxMessage     = 512 << 10 // bytes
	MaxChanges     = 500       // changes in a Batch or Reply
	MaxAcks        = 1000      // fact IDs in one Reply
	MaxSnapshot    = 1000      // objects of one kind (visits, people, ...) in one snapshot part
	maxText        = 200       // names
	maxRequestID   = 64
	maxSoftwareVer = 64
	// MaxHardwareError bounds Status.HardwareError; the edge shortens a
	// longer one.
	MaxHardwareError = 1000
)

// ErrInvalid wraps every decoding and validation failure.
var ErrInvalid = errors.New("protocol: invalid message")

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// Window and Daily are pass rules' parts as the API spells them.
type Window struct {
	Before int `json:"before"`
	After  int `json:"after"`
}

// Daily is the daily hours of a pass, as HH:MM at the site.
type Daily struct {
	From  passrule.Clock `json:"from"`
	Until passrule.Clock `json:"until"`
}

// Rules are a pass's rules on the wire, shaped as the API's pass_rules.
type Rules struct {
	Daily     *Daily   `json:"daily"`
	Window    Window   `json:"window"`
	SingleUse bool     `json:"single_use"`
	GateIDs   []string `json:"gate_ids"`
}

// FromRules is the wire form of r.
func FromRules(r passrule.Rules) Rules {
	out := Rules{Window: Window{Before: r.Window.Before, After: r.Window.After}, SingleUse: r.SingleUse, GateIDs: r.GateIDs}
	if r.Daily != nil {
		out.Daily = &Daily{From: r.Daily.From, Until: r.Daily.Until}
	}
	if out.GateIDs == nil {
		out.GateIDs = []string{}
	}
	return out
}

// Rules returns the decision's form of r.
func (r Rules) Rules() passrule.Rules {
	out := passrule.Rules{Window: passrule.Window{Before: r.Window.Before, After: r.Window.After}, SingleUse: r.SingleUse, GateIDs: r.GateIDs}
	if r.Daily != nil {
		out.Daily = &passrule.Daily{From: r.Daily.From, Until: r.Daily.Until}
	}
	return out
}

func (r Rules) validate(where string) error {
	if errs := r.Rules().Validate(); len(errs) > 0 {
		return invalid("%s.rules.%s", where, errs[0].Error())
	}
	for i, g := range r.GateIDs {
		if !ids.Valid(ids.Gate, g) {
			return invalid("%s.rules.gate_ids[%d] is not a gate ID", where, i)
		}
	}
	return nil
}

// Visit is what an edge keeps of a visit at its site: enough to decide at
// a gate and show the visitor's name.
type Visit struct {
	ID            string     `json:"id"`
	Status        string     `json:"status"`
	ExpectedAt    *time.Time `json:"expected_at"`
	ExpectedUntil *time.Time `json:"expected_until"`
	CheckedInAt   *time.Time `json:"checked_in_at"`
	CheckedOutAt  *time.Time `json:"checked_out_at"`
	Rules         Rules      `json:"rules"`
	Uses          int        `json:"uses"`
	Revoked       bool       `json:"revoked"`
	ForVisitID    string     `json:"for_visit_id"`
	ReenteredAs   string     `json:"reentered_as,omitempty"`
	VisitorName   string     `json:"visitor_name,omitempty"` // empty after erasure
	HostName      string     `json:"host_name,omitempty"`
	// What the reception kiosk shows of a visit (docs/decisions.md, "Kiosk
	// data and facts"); each is left out when empty, so a visit without
	// them reads as before. An edge older than these fields refuses a
	// visit that carries them: upgrade edges before the cloud.
	Type           string     `json:"type,omitempty"`     // the visit type's key
	Source         string     `json:"source,omitempty"`   // invitation, pre_registration, walk_in or booking
	Audience       string     `json:"audience,omitempty"` // person, people, team or desk
	HostID         string     `json:"host_id,omitempty"`  // the lead host; empty while nobody has taken the visit
	TeamID         string     `json:"team_id,omitempty"`
	TeamName       string     `json:"team_name,omitempty"`
	NeedsSomeone   bool       `json:"needs_someone,omitempty"`
	WaitingSince   *time.Time `json:"waiting_since,omitempty"` // when the visitor began to wait for their receiver
	VisitorID      string     `json:"visitor_id,omitempty"`    // empty after erasure
	VisitorEmail   string     `json:"visitor_email,omitempty"`
	VisitorPhone   string     `json:"visitor_phone,omitempty"` // E.164
	VisitorCompany string     `json:"visitor_company,omitempty"`
	// GateID is the gate the visitor came in through, once known, as the
	// API's visit has it; empty while unknown. AtDesk says the visitor
	// was checked in at no gate (at the reception desk, or by the API
	// without a gate) and has passed no entry gate since: the one state in
	// which an entry gate lets a checked-in visit in, once (FactEntered).
	// It is said rather than read from an empty GateID, since an empty
	// GateID also comes from a cloud or a cache older than these fields.
	// Both are left out when empty (docs/decisions.md, "Entering after a
	// desk check-in (issue 16)"); an edge older than them refuses a visit
	// that carries them.
	GateID string `json:"gate_id,omitempty"`
	AtDesk bool   `json:"at_desk,omitempty"`
	// Receiver and ReceiverID are whom a visit nobody has taken waits with
	// after a hand-over, as the API's hand-over names them: ToReception
	// (no ID), ToPerson or ToTeam with the person's or team's ID; empty
	// when it was never handed over (its audience says). Left out when
	// empty; an edge older than them refuses a visit that carries them.
	Receiver   string `json:"receiver,omitempty"`
	ReceiverID string `json:"receiver_id,omitempty"`
}

// Sources and audiences a visit may carry, as the API names them.
var (
	visitSources   = []string{"invitation", "pre_registration", "walk_in", "booking"}
	visitAudiences = []string{"person", "people", "team", "desk"}
)

func (v *Visit) validate(where string) error {
	switch {
	case !ids.Valid(ids.Visit, v.ID):
		return invalid("%s.id is not a visit ID", where)
	case !passrule.Status(v.Status).Valid():
		return invalid("%s.status %q is not a visit status", where, v.Status)
	case !ids.Valid(ids.Visit, v.ForVisitID):
		return invalid("%s.for_visit_id is not a visit ID", where)
	case v.ReenteredAs != "" && !ids.Valid(ids.Visit, v.ReenteredAs):
		return invalid("%s.reentered_as is not a visit ID", where)
	case v.Uses < 0:
		return invalid("%s.uses is negative", where)
	case len(v.VisitorName) > maxText || len(v.HostName) > maxText || len(v.TeamName) > maxText ||
		len(v.Type) > maxText || len(v.VisitorEmail) > maxText || len(v.VisitorPhone) > maxText || len(v.VisitorCompany) > maxText:
		return invalid("%s: a name is longer than %d bytes", where, maxText)
	case v.Source != "" && !slices.Contains(visitSources, v.Source):
		return invalid("%s.source %q is not a visit source", where, v.Source)
	case v.Audience != "" && !slices.Contains(visitAudiences, v.Audience):
		return invalid("%s.audience %q is not an audience", where, v.Audience)
	case v.HostID != "" && !ids.Valid(ids.Person, v.HostID):
		return invalid("%s.host_id is not a person ID", where)
	case v.TeamID != "" && !ids.Valid(ids.Team, v.TeamID):
		return invalid("%s.team_id is not a team ID", where)
	case v.TeamID == "" && v.TeamName != "":
		return invalid("%s.team_name names no team_id", where)
	case v.VisitorID != "" && !ids.Valid(ids.Visitor, v.VisitorID):
		return invalid("%s.visitor_id is not a visitor ID", where)
	case v.ExpectedAt != nil && v.ExpectedUntil != nil && !v.ExpectedUntil.After(*v.ExpectedAt):
		return invalid("%s.expected_until is not after expected_at", where)
	case v.GateID != "" && !ids.Valid(ids.Gate, v.GateID):
		return invalid("%s.gate_id is not a gate ID", where)
	case v.AtDesk && v.GateID != "":
		return invalid("%s: a visit at_desk came in through no gate yet, and names no gate_id", where)
	case v.Receiver == "" && v.ReceiverID != "",
		v.Receiver == ToReception && v.ReceiverID != "",
		v.Receiver == ToPerson && !ids.Valid(ids.Person, v.ReceiverID),
		v.Receiver == ToTeam && !ids.Valid(ids.Team, v.ReceiverID):
		return invalid("%s: receiver %q with receiver_id %q is not reception, or a person or team with its ID", where, v.Receiver, v.ReceiverID)
	case v.Receiver != "" && v.Receiver != ToReception && v.Receiver != ToPerson && v.Receiver != ToTeam:
		return invalid("%s.receiver %q is not reception, person or team", where, v.Receiver)
	}
	return v.Rules.validate(where)
}

// Gate is one of the site's gates; Removed takes it out of the cache.
type Gate struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Direction string `json:"direction"` // entry, exit or both
	Removed   bool   `json:"removed,omitempty"`
}

func (g *Gate) validate(where string) error {
	switch {
	case !ids.Valid(ids.Gate, g.ID):
		return invalid("%s.id is not a gate ID", where)
	case len(g.Name) > maxText:
		return invalid("%s.name is longer than %d bytes", where, maxText)
	case g.Direction != "entry" && g.Direction != "exit" && g.Direction != "both":
		return invalid("%s.direction %q is not entry, exit or both", where, g.Direction)
	}
	return nil
}

// Settings are the site's settings an edge needs.
type Settings struct {
	Timezone            string `json:"timezone"`              // IANA name
	OfflineLimitMinutes int    `json:"offline_limit_minutes"` // how old the cache may grow before gates fail as configured
	// For the reception kiosk; left out when empty (an edge older than
	// them refuses settings that carry them).
	SiteName         string `json:"site_name,omitempty"`
	WaitLimitMinutes int    `json:"wait_limit_minutes,omitempty"` // how long a visitor may wait before the queue highlights them; 0: 10
}

func (s *Settings) validate(where string) error {
	if s.Timezone == "" || len(s.Timezone) > maxText {
		return invalid("%s.timezone is missing", where)
	}
	if _, err := time.LoadLocation(s.Timezone); err != nil {
		return invalid("%s.timezone %q is not an IANA time zone", where, s.Timezone)
	}
	if s.OfflineLimitMinutes < 0 {
		return invalid("%s.offline_limit_minutes is negative", where)
	}
	if len(s.SiteName) > maxText {
		return invalid("%s.site_name is longer than %d bytes", where, maxText)
	}
	if s.WaitLimitMinutes < 0 || s.WaitLimitMinutes > 24*60 {
		return invalid("%s.wait_limit_minutes is not 0 to 1440", where)
	}
	return nil
}

// Key is one of the organisation's pass-verification keys.
type Key struct {
	ID      string `json:"id"`     // 8 lower-case hex digits, as shared/passtoken names keys
	Public  []byte `json:"public"` // Ed25519 public key, base64 in JSON
	Retired bool   `json:"retired,omitempty"`
	// RetireAt is the Unix second from which the key no longer verifies,
	// by the edge's own clock (so an edge cut off from the cloud drops it
	// on time); 0 when no end is set. A rotated key keeps verifying until
	// the passes it signed have expired. Edges older than this field do not
	// decode a key that carries it: upgrade edges before rotating keys.
	RetireAt int64 `json:"retire_at,omitempty"`
	// Kind is what the key verifies: KeyPass (empty) for one of the
	// organisation's keys, which verify visit and personal passes, or
	// KeyBadge for a site appliance's own key, which verifies only the
	// walk-in badges it signed (shared/passtoken's "B1:" tokens). Edges
	// older than this field do not decode a key that carries it; the
	// cloud sends badge keys only to sites whose edge certified one, which
	// only an edge that knows the field does.
	Kind string `json:"kind,omitempty"`
	// SiteID is the one site a badge key is certified for; empty for an
	// organisation's key.
	SiteID string `json:"site_id,omitempty"`
}

// The kinds of Key.
const (
	// KeyPass is an organisation's pass-verification key.
	KeyPass = ""
	// KeyBadge is a site appliance's walk-in badge key, certified by the
	// cloud for that appliance's site.
	KeyBadge = "walk_in_badge"
)

// Verifies reports whether the key verifies passes at now.
func (k *Key) Verifies(now time.Time) bool {
	return !k.Retired && (k.RetireAt == 0 || now.Unix() < k.RetireAt)
}

func (k *Key) validate(where string) error {
	if len(k.ID) != 8 || !isHex(k.ID) {
		return invalid("%s.id is not 8 hex digits", where)
	}
	if len(k.Public) != ed25519.PublicKeySize {
		return invalid("%s.public is not a %d-byte Ed25519 key", where, ed25519.PublicKeySize)
	}
	if k.RetireAt < 0 {
		return invalid("%s.retire_at is negative", where)
	}
	switch {
	case k.Kind == KeyPass && k.SiteID != "":
		return invalid("%s.site_id is set on an organisation key; only a badge key is bound to a site", where)
	case k.Kind == KeyBadge && !ids.Valid(ids.Site, k.SiteID):
		return invalid("%s.site_id is not a site ID: a badge key is certified for one site", where)
	case k.Kind != KeyPass && k.Kind != KeyBadge:
		return invalid("%s.kind %q is not %q", where, k.Kind, KeyBadge)
	}
	return nil
}

// Person is one of the organisation's people as a gate needs them: an
// employee who clocks in and out with a personal pass (shared/passtoken's
// "E1:" tokens). Every site follows every person of its organisation.
type Person struct {
	ID     string `json:"id"`
	Name   string `json:"name,omitempty"` // for a gate display
	Active bool   `json:"active"`         // a deactivated person's pass is refused
	// PassIssuedAt is the Unix second the person's current pass was issued
	// at: a token with another issue time was replaced and is refused.
	PassIssuedAt int64 `json:"pass_issued_at"`
	// JobTitle is shown beside the name at the reception kiosk; left out
	// when empty.
	JobTitle string `json:"job_title,omitempty"`
}

func (p *Person) validate(where string) error {
	switch {
	case !ids.Valid(ids.Person, p.ID):
		return invalid("%s.id is not a person ID", where)
	case len(p.Name) > maxText || len(p.JobTitle) > maxText:
		return invalid("%s: a name or job title is longer than %d bytes", where, maxText)
	case p.PassIssuedAt < 0:
		return invalid("%s.pass_issued_at is negative", where)
	}
	return nil
}

// Team is one of the organisation's teams as the reception kiosk needs it:
// a visit can be for it. SiteID is empty for a team at every site. Every
// site follows every team of its organisation; the edge shows those at
// its own site or at every site.
type Team struct {
	ID                string `json:"id"`
	Name              string `json:"name"`
	SiteID            string `json:"site_id,omitempty"`
	VisitorsCanChoose bool   `json:"visitors_can_choose,omitempty"`
	Archived          bool   `json:"archived,omitempty"`
}

func (t *Team) validate(where string) error {
	switch {
	case !ids.Valid(ids.Team, t.ID):
		return invalid("%s.id is not a team ID", where)
	case len(t.Name) > maxText:
		return invalid("%s.name is longer than %d bytes", where, maxText)
	case t.SiteID != "" && !ids.Valid(ids.Site, t.SiteID):
		return invalid("%s.site_id is not a site ID", where)
	}
	return nil
}

// MaxFormSchema bounds a visit type's form on the wire, in bytes.
const MaxFormSchema = 64 << 10

// VisitType is a visit type as the reception kiosk needs it: its key,
// name, order and form (the cloud's JSON Schema with its x-svc
// annotations). Enabled false takes it off the kiosk's list; Removed takes
// it out of the cache.
type VisitType struct {
	Key      string          `json:"key"`
	Name     string          `json:"name"`
	Position int             `json:"position"` // the organisation's order
	Enabled  bool            `json:"enabled,omitempty"`
	Form     json.RawMessage `json:"form,omitempty"` // null or absent: no form
}

func (t *VisitType) validate(where string) error {
	switch {
	case t.Key == "" || len(t.Key) > maxText:
		return invalid("%s.key must hold 1 to %d bytes", where, maxText)
	case len(t.Name) > maxText:
		return invalid("%s.name is longer than %d bytes", where, maxText)
	case t.Position < 0:
		return invalid("%s.position is negative", where)
	case len(t.Form) > MaxFormSchema:
		return invalid("%s.form is longer than %d bytes", where, MaxFormSchema)
	case len(t.Form) > 0 && !json.Valid(t.Form):
		return invalid("%s.form is not JSON", where)
	}
	return nil
}

// EdgeHardware is the hardware the cloud holds for one edge of the site
// (PATCH /v1/edges/{edge_id}): the document of shared/hardware, which an
// edge drives in place of its configuration file's gates. Only the edge
// it names takes it; another edge of the site (one revoked or replaced)
// passes over it. Hardware null says the cloud holds none: the edge goes
// back to its file's gates.
type EdgeHardware struct {
	EdgeID   string             `json:"edge_id"`
	Hardware *hardware.Document `json:"hardware"`
}

func (h *EdgeHardware) validate(where string) error {
	if !ids.Valid(ids.Edge, h.EdgeID) {
		return invalid("%s.edge_id is not an edge ID", where)
	}
	if h.Hardware == nil {
		return nil
	}
	d := &strictjson.Decoder{}
	h.Hardware.Check(d, where+".hardware", nil)
	if len(d.Problems) > 0 {
		return invalid("%s", d.Problems[0])
	}
	return nil
}

func isHex(s string) bool {
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// Change is one entry of a site's change feed: exactly one object, as it
// now is.
type Change struct {
	Seq      uint64    `json:"seq"` // from 1, one per change, no gaps
	At       time.Time `json:"at"`
	Visit    *Visit    `json:"visit,omitempty"`
	Gate     *Gate     `json:"gate,omitempty"`
	Settings *Settings `json:"settings,omitempty"`
	Key      *Key      `json:"key,omitempty"`
	Person   *Person   `json:"person,omitempty"`
	// Team and VisitType are for the reception kiosk: an edge older than
	// them refuses a change that carries one.
	Team      *Team      `json:"team,omitempty"`
	VisitType *VisitType `json:"visit_type,omitempty"`
	// Hardware is an edge's hardware from the cloud (issue 17): an edge
	// older than it refuses a change that carries one, so edges are
	// upgraded before their hardware is configured from the cloud.
	Hardware *EdgeHardware `json:"hardware,omitempty"`
}

func (c *Change) validate(where string) error {
	if c.Seq == 0 {
		return invalid("%s.seq is 0", where)
	}
	n := 0
	var err error
	if c.Visit != nil {
		n, err = n+1, c.Visit.validate(where+".visit")
	}
	if err == nil && c.Gate != nil {
		n, err = n+1, c.Gate.validate(where+".gate")
	}
	if err == nil && c.Settings != nil {
		n, err = n+1, c.Settings.validate(where+".settings")
	}
	if err == nil && c.Key != nil {
		n, err = n+1, c.Key.validate(where+".key")
	}
	if err == nil && c.Person != nil {
		n, err = n+1, c.Person.validate(where+".person")
	}
	if err == nil && c.Team != nil {
		n, err = n+1, c.Team.validate(where+".team")
	}
	if err == nil && c.VisitType != nil {
		n, err = n+1, c.VisitType.validate(where+".visit_type")
	}
	if err == nil && c.Hardware != nil {
		n, err = n+1, c.Hardware.validate(where+".hardware")
	}
	if err != nil {
		return err
	}
	if n != 1 {
		return invalid("%s holds %d objects; a change holds exactly one", where, n)
	}
	return nil
}

func validateChanges(cs []Change, where string) error {
	if len(cs) > MaxChanges {
		return invalid("%s holds more than %d changes", where, MaxChanges)
	}
	for i := range cs {
		if err := cs[i].validate(fmt.Sprintf("%s[%d]", where, i)); err != nil {
			return err
		}
		if i > 0 && cs[i].Seq != cs[i-1].Seq+1 {
			return invalid("%s[%d].seq %d does not follow %d", where, i, cs[i].Seq, cs[i-1].Seq)
		}
	}
	return nil
}

// Batch is a message of the change feed: consecutive changes in order.
type Batch struct {
	V       int      `json:"v"`
	Changes []Change `json:"changes"`
}

func (b *Batch) validate() error {
	if len(b.Changes) == 0 {
		return invalid("a batch holds no changes")
	}
	return validateChanges(b.Changes, "changes")
}

// FactKind says what happened at a gate.
type FactKind string

// The fact kinds.
const (
	FactCheckIn  FactKind = "check_in"  // an expected visit admitted
	FactCheckOut FactKind = "check_out" // a visitor left through an exit gate
	FactReEntry  FactKind = "re_entry"  // a new visit admitted on a checked-out visit's pass
	FactRefused  FactKind = "refused"   // a scan refused, with its reason
	FactPunch    FactKind = "punch"     // a person clocked in or out with their personal pass
	// FactPassage is a gate opened again for a person's last punch: their
	// personal pass held to the reader a second time within the repeat
	// window. It is a recorded opening of the door, never a new punch.
	FactPassage FactKind = "passage"
	// FactEntered is a visitor checked in at no gate (Visit.AtDesk: the
	// reception desk, or the API without a gate) who then passed entry
	// gate GateID: not a new check-in, the gate of the one they had.
	// VisitID is the visit, PassVisitID the pass's. A cloud older than it
	// drops such a fact unacknowledged, so it waits in the edge's outbox
	// until the cloud is upgraded.
	FactEntered FactKind = "entered"
)

// The kiosk's fact kinds: what happened at the reception desk of the site,
// at no gate. Each names the kiosk device (DeviceID) and no gate
// (docs/decisions.md, "Kiosk data and facts"). A cloud older than them
// drops such a fact unacknowledged, so it waits in the edge's outbox until
// the cloud is upgraded.
const (
	// FactWalkIn is a walk-in signed in at the desk: VisitID is the new
	// visit's ID, made at the edge, and WalkIn holds the rest.
	FactWalkIn FactKind = "walk_in"
	// FactDeskCheckIn is an expected visit checked in at the desk, by its
	// pass (PassVisitID, the visit holding the pass scanned) or its short
	// code.
	FactDeskCheckIn FactKind = "desk_check_in"
	// FactDeskCheckOut is a visit checked out at the desk.
	FactDeskCheckOut FactKind = "desk_check_out"
	// FactTake is a visit nobody had taken taken by a person (PersonID),
	// who becomes its lead host.
	FactTake FactKind = "take"
	// FactHandOver is a visit nobody has taken passed to another receiver:
	// To is reception, person (PersonID) or team (TeamID).
	FactHandOver FactKind = "hand_over"
)

// DeskKind reports whether k is one of the kiosk's fact kinds, which
// happen at no gate.
func DeskKind(k FactKind) bool {
	switch k {
	case FactWalkIn, FactDeskCheckIn, FactDeskCheckOut, FactTake, FactHandOver:
		return true
	}
	return false
}

// The receivers of a hand-over.
const (
	ToReception = "reception"
	ToPerson    = "person"
	ToTeam      = "team"
)

// Bounds on a walk-in's fields.
const (
	maxDeviceID     = 64
	MaxCustomFields = 100      // answers in one walk-in
	maxAnswer       = 16 << 10 // bytes of one answer
)

// WalkIn is what a walk-in fact carries besides its visit ID: the visit as
// the visitor made it at the desk. Exactly one receiver, or none for the
// desk: HostID (a person) or TeamID.
type WalkIn struct {
	Type         string                     `json:"type"`
	HostID       string                     `json:"host_id,omitempty"`
	TeamID       string                     `json:"team_id,omitempty"`
	VisitorID    string                     `json:"visitor_id,omitempty"` // a returning visitor's record; empty for a new one
	Visitor      WalkInVisitor              `json:"visitor"`
	CustomFields map[string]json.RawMessage `json:"custom_fields,omitempty"`
}

// WalkInVisitor is the visitor of a walk-in as typed at the desk.
type WalkInVisitor struct {
	Name    string `json:"name"`
	Email   string `json:"email,omitempty"`
	Phone   string `json:"phone,omitempty"`
	Company string `json:"company,omitempty"`
}

func (w *WalkIn) validate() error {
	switch {
	case w.Type == "" || len(w.Type) > maxText:
		return invalid("walk_in.type must hold 1 to %d bytes", maxText)
	case w.HostID != "" && w.TeamID != "":
		return invalid("walk_in names a host or a team, not both")
	case w.HostID != "" && !ids.Valid(ids.Person, w.HostID):
		return invalid("walk_in.host_id is not a person ID")
	case w.TeamID != "" && !ids.Valid(ids.Team, w.TeamID):
		return invalid("walk_in.team_id is not a team ID")
	case w.VisitorID != "" && !ids.Valid(ids.Visitor, w.VisitorID):
		return invalid("walk_in.visitor_id is not a visitor ID")
	case len(w.Visitor.Name) > maxText || len(w.Visitor.Email) > maxText || len(w.Visitor.Phone) > maxText || len(w.Visitor.Company) > maxText:
		return invalid("walk_in.visitor: a field is longer than %d bytes", maxText)
	case len(w.CustomFields) > MaxCustomFields:
		return invalid("walk_in.custom_fields holds more than %d answers", MaxCustomFields)
	}
	for k, raw := range w.CustomFields {
		if k == "" || len(k) > maxText || len(raw) > maxAnswer || !json.Valid(raw) {
			return invalid("walk_in.custom_fields[%q] is not a key and a JSON value of at most %d bytes", k, maxAnswer)
		}
	}
	return nil
}

// Directions of a punch.
const (
	DirectionIn  = "in"
	DirectionOut = "out"
)

// Reasons a gate refuses a scan for besides the pass rules' (a
// passrule.Reason). A refused fact carries one of either.
const (
	// ReasonInvalidToken: the scanned text was no pass of this
	// organisation (malformed, unknown key, bad signature).
	ReasonInvalidToken = "invalid_token"
	// ReasonStale: the edge's cache is older than the site's offline
	// limit and the gate is set to fail secure.
	ReasonStale = "stale_cache"
	// ReasonRelayFailed: the pass admitted but the gate's relay could not
	// be pulsed, so nobody was let through. A refusal for this reason may
	// void the admit recorded before the pulse (Fact.Voids).
	ReasonRelayFailed = "relay_failed"
	// ReasonAlreadyIn: the pass's visit is checked in and was scanned at
	// an entry gate (anti-passback: the pass cannot let a second person in).
	ReasonAlreadyIn = "already_in"
	// ReasonNotIn: the pass's visit is not checked in and was scanned at
	// an exit gate, so there is no stay to end.
	ReasonNotIn = "not_in"
	// ReasonPersonInactive: a personal pass of a person who is deactivated.
	ReasonPersonInactive = "person_inactive"
	// ReasonPassReplaced: a personal pass whose issue time is not the
	// person's current pass's: it was replaced by a reissue.
	ReasonPassReplaced = "pass_replaced"
)

// ReasonRecordFailed: the pass admitted but the edge could not make the
// admit durable, so the relay was not pulsed. It is a gate's answer, never
// a recorded fact's reason: the store that would record it has failed.
const ReasonRecordFailed = "record_failed"

// GateReasons lists the refusal reasons of a gate that are not pass-rule
// reasons, for documentation and tests.
func GateReasons() []string {
	return []string{ReasonInvalidToken, ReasonStale, ReasonRelayFailed, ReasonAlreadyIn, ReasonNotIn,
		ReasonPersonInactive, ReasonPassReplaced}
}

// Fact is something that happened at a gate, as the edge saw it. The cloud
// applies each ID once.
type Fact struct {
	V           int       `json:"v"`
	ID          string    `json:"id"`      // fact_...
	Kind        FactKind  `json:"kind"`    //
	EdgeID      string    `json:"edge_id"` //
	Counter     uint64    `json:"counter"` // per edge, from 1, in the order facts happened
	At          time.Time `json:"at"`      // the scan time at the gate
	GateID      string    `json:"gate_id"`
	VisitID     string    `json:"visit_id,omitempty"`      // the visit checked in or out; the new visit of a re-entry; empty for a refusal of no known visit
	PassVisitID string    `json:"pass_visit_id,omitempty"` // the visit holding the pass
	Reason      string    `json:"reason,omitempty"`        // a refusal's passrule.Reason or one of GateReasons
	PersonID    string    `json:"person_id,omitempty"`     // the person of a punch, or of a refused personal pass
	Direction   string    `json:"direction,omitempty"`     // a punch's or a passage's: DirectionIn or DirectionOut
	// Voids names the admit this relay_failed refusal undoes: the gate
	// recorded the admit, then its relay did not free the passage.
	Voids string `json:"voids,omitempty"`

	// A kiosk fact's (DeskKind): the device it was made on, which takes
	// the place of the gate; a hand-over's receiver; a walk-in's visit.
	DeviceID string  `json:"device_id,omitempty"`
	To       string  `json:"to,omitempty"`      // a hand-over's: ToReception, ToPerson or ToTeam
	TeamID   string  `json:"team_id,omitempty"` // a hand-over's to a team
	WalkIn   *WalkIn `json:"walk_in,omitempty"`

	// AckSeq is set by an edge that holds an acknowledgement until its
	// cache holds the site's feed up to the acknowledgement's Seq (Reply):
	// the cloud then sends this fact's acknowledgement with Seq. It is a
	// property of the publication, not of what happened: the edge sets it
	// as it publishes, the cloud does not store it, and an edge older than
	// it sends none and is acknowledged without Seq.
	AckSeq bool `json:"ack_seq,omitempty"`
}

func (f *Fact) validate() error {
	desk := DeskKind(f.Kind)
	switch {
	case !ids.Valid(ids.Fact, f.ID):
		return invalid("id is not a fact ID")
	case !ids.Valid(ids.Edge, f.EdgeID):
		return invalid("edge_id is not an edge ID")
	case f.Counter == 0:
		return invalid("counter is 0")
	case f.At.IsZero():
		return invalid("at is missing")
	case desk:
		return f.validateDesk()
	case f.DeviceID != "" || f.To != "" || f.TeamID != "" || f.WalkIn != nil:
		return invalid("a %s has no device_id, to, team_id or walk_in", f.Kind)
	case !ids.Valid(ids.Gate, f.GateID):
		return invalid("gate_id is not a gate ID")
	case f.VisitID != "" && !ids.Valid(ids.Visit, f.VisitID):
		return invalid("visit_id is not a visit ID")
	case f.PassVisitID != "" && !ids.Valid(ids.Visit, f.PassVisitID):
		return invalid("pass_visit_id is not a visit ID")
	case f.PersonID != "" && !ids.Valid(ids.Person, f.PersonID):
		return invalid("person_id is not a person ID")
	case f.Kind != FactPunch && f.Kind != FactPassage && f.Direction != "":
		return invalid("a %s has no direction", f.Kind)
	case f.Kind != FactPunch && f.Kind != FactPassage && f.Kind != FactRefused && f.PersonID != "":
		return invalid("a %s names no person", f.Kind)
	case f.Voids != "" && (f.Kind != FactRefused || f.Reason != ReasonRelayFailed):
		return invalid("only a relay_failed refusal voids a fact")
	case f.Voids != "" && (!ids.Valid(ids.Fact, f.Voids) || f.Voids == f.ID):
		return invalid("voids is not another fact's ID")
	}
	switch f.Kind {
	case FactPunch, FactPassage:
		if f.PersonID == "" || f.VisitID != "" || f.PassVisitID != "" || f.Reason != "" {
			return invalid("a %s names its person, and no visit, pass visit or reason", f.Kind)
		}
		if f.Direction != DirectionIn && f.Direction != DirectionOut {
			return invalid("direction %q is not in or out", f.Direction)
		}
	case FactCheckIn, FactCheckOut:
		if f.VisitID == "" || f.Reason != "" {
			return invalid("a %s names its visit and no reason", f.Kind)
		}
	case FactReEntry:
		if f.VisitID == "" || f.PassVisitID == "" || f.Reason != "" {
			return invalid("a re_entry names its new visit and the pass's visit, and no reason")
		}
	case FactEntered:
		if f.VisitID == "" || f.PassVisitID == "" || f.Reason != "" {
			return invalid("an entered names its visit and the pass's visit, and no reason")
		}
	case FactRefused:
		if !slices.Contains(GateReasons(), f.Reason) && !validReason(f.Reason) {
			return invalid("reason %q is not a refusal reason", f.Reason)
		}
		if f.PersonID != "" && (f.VisitID != "" || f.PassVisitID != "") {
			return invalid("a refusal names a person or a visit, not both")
		}
	default:
		return invalid("kind %q is not a fact kind", f.Kind)
	}
	return nil
}

// validateDesk checks a kiosk fact: a device and no gate, and per kind
// exactly the fields it names.
func (f *Fact) validateDesk() error {
	switch {
	case f.GateID != "":
		return invalid("a %s happens at the desk and names no gate", f.Kind)
	case f.DeviceID == "" || len(f.DeviceID) > maxDeviceID || !printable(f.DeviceID):
		return invalid("device_id must hold 1 to %d printable ASCII characters", maxDeviceID)
	case !ids.Valid(ids.Visit, f.VisitID):
		return invalid("visit_id is not a visit ID")
	case f.PassVisitID != "" && (f.Kind != FactDeskCheckIn || !ids.Valid(ids.Visit, f.PassVisitID)):
		return invalid("only a desk_check_in names the visit of the pass scanned")
	case f.Reason != "" || f.Direction != "" || f.Voids != "":
		return invalid("a %s has no reason, direction or voids", f.Kind)
	case f.PersonID != "" && !ids.Valid(ids.Person, f.PersonID):
		return invalid("person_id is not a person ID")
	case f.TeamID != "" && !ids.Valid(ids.Team, f.TeamID):
		return invalid("team_id is not a team ID")
	case (f.WalkIn != nil) != (f.Kind == FactWalkIn):
		return invalid("walk_in goes with a walk_in fact, and only with it")
	}
	switch f.Kind {
	case FactWalkIn:
		if f.PersonID != "" || f.TeamID != "" || f.To != "" {
			return invalid("a walk_in names its receiver in walk_in")
		}
		return f.WalkIn.validate()
	case FactTake:
		if f.PersonID == "" || f.TeamID != "" || f.To != "" {
			return invalid("a take names the person who takes the visit, and no team or to")
		}
	case FactHandOver:
		switch f.To {
		case ToReception:
			if f.PersonID != "" || f.TeamID != "" {
				return invalid("a hand_over to reception names no person or team")
			}
		case ToPerson:
			if f.PersonID == "" || f.TeamID != "" {
				return invalid("a hand_over to a person names the person and no team")
			}
		case ToTeam:
			if f.TeamID == "" || f.PersonID != "" {
				return invalid("a hand_over to a team names the team and no person")
			}
		default:
			return invalid("to %q is not reception, person or team", f.To)
		}
	default: // desk check-in and check-out
		if f.PersonID != "" || f.TeamID != "" || f.To != "" {
			return invalid("a %s names its visit only", f.Kind)
		}
	}
	return nil
}

func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

func validReason(r string) bool {
	for _, x := range passrule.Reasons() {
		if string(x) == r {
			return true
		}
	}
	return false
}

// ResyncRequest asks for the site's changes after sequence After.
type ResyncRequest struct {
	V         int    `json:"v"`
	RequestID string `json:"request_id"`
	After     uint64 `json:"after"`
}

func (r *ResyncRequest) validate() error {
	if r.RequestID == "" || len(r.RequestID) > maxRequestID {
		return invalid("request_id must hold 1 to %d bytes", maxRequestID)
	}
	return nil
}

// ReplyKind says what a Reply carries.
type ReplyKind string

// The reply kinds.
const (
	ReplyAck      ReplyKind = "ack"      // Acks: facts applied (or applied before)
	ReplyChanges  ReplyKind = "changes"  // Changes answering a ResyncRequest; More when more follow
	ReplySnapshot ReplyKind = "snapshot" // one part of a snapshot answering a ResyncRequest
)

// Snapshot is one part of the site's whole state as of sequence Seq: an
// edge replaces its cache with the parts' union once it holds all Parts
// of one RequestID, and continues the feed after Seq.
type Snapshot struct {
	Seq      uint64    `json:"seq"`
	Part     int       `json:"part"`  // from 1
	Parts    int       `json:"parts"` // how many make the whole
	Settings *Settings `json:"settings,omitempty"`
	Gates    []Gate    `json:"gates"`
	Keys     []Key     `json:"keys"`
	Visits   []Visit   `json:"visits"`
	People   []Person  `json:"people"`
	// Teams and VisitTypes are for the reception kiosk; left out when
	// empty, so a snapshot without them reads as before.
	Teams      []Team      `json:"teams,omitempty"`
	VisitTypes []VisitType `json:"visit_types,omitempty"`
	// Hardware is the hardware the cloud holds for the site's edge, in
	// the first part only; left out when the cloud holds none, so a
	// snapshot without it reads as before.
	Hardware *EdgeHardware `json:"hardware,omitempty"`
}

func (s *Snapshot) validate() error {
	switch {
	case s.Parts < 1 || s.Part < 1 || s.Part > s.Parts:
		return invalid("snapshot part %d of %d", s.Part, s.Parts)
	case len(s.Visits) > MaxSnapshot || len(s.Gates) > MaxSnapshot || len(s.Keys) > MaxSnapshot || len(s.People) > MaxSnapshot ||
		len(s.Teams) > MaxSnapshot || len(s.VisitTypes) > MaxSnapshot:
		return invalid("a snapshot part holds more than %d objects of a kind", MaxSnapshot)
	}
	if s.Settings != nil {
		if err := s.Settings.validate("snapshot.settings"); err != nil {
			return err
		}
	}
	if s.Hardware != nil {
		if err := s.Hardware.validate("snapshot.hardware"); err != nil {
			return err
		}
	}
	for i := range s.Gates {
		if err := s.Gates[i].validate(fmt.Sprintf("snapshot.gates[%d]", i)); err != nil {
			return err
		}
	}
	for i := range s.Keys {
		if err := s.Keys[i].validate(fmt.Sprintf("snapshot.keys[%d]", i)); err != nil {
			return err
		}
	}
	for i := range s.Visits {
		if err := s.Visits[i].validate(fmt.Sprintf("snapshot.visits[%d]", i)); err != nil {
			return err
		}
	}
	for i := range s.People {
		if err := s.People[i].validate(fmt.Sprintf("snapshot.people[%d]", i)); err != nil {
			return err
		}
	}
	for i := range s.Teams {
		if err := s.Teams[i].validate(fmt.Sprintf("snapshot.teams[%d]", i)); err != nil {
			return err
		}
	}
	for i := range s.VisitTypes {
		if err := s.VisitTypes[i].validate(fmt.Sprintf("snapshot.visit_types[%d]", i)); err != nil {
			return err
		}
	}
	return nil
}

// Reply is the cloud's message to one edge.
type Reply struct {
	V         int       `json:"v"`
	Kind      ReplyKind `json:"kind"`
	RequestID string    `json:"request_id,omitempty"` // the ResyncRequest answered
	Acks      []string  `json:"acks,omitempty"`
	// Seq, in an ack of facts that asked for it (Fact.AckSeq), is the
	// site's feed sequence read after the commit that applied them, so
	// every change they made is at or before it. The edge removes the
	// facts from its outbox only once it has applied the feed up to Seq:
	// a visit a fact changed then holds the cloud's version of that
	// change, never an earlier one. Left out (0) otherwise.
	Seq      uint64    `json:"seq,omitempty"`
	Changes  []Change  `json:"changes,omitempty"`
	More     bool      `json:"more,omitempty"`
	Snapshot *Snapshot `json:"snapshot,omitempty"`
}

func (r *Reply) validate() error {
	switch r.Kind {
	case ReplyAck:
		if len(r.Acks) == 0 || len(r.Acks) > MaxAcks || r.RequestID != "" || r.Changes != nil || r.More || r.Snapshot != nil {
			return invalid("an ack holds 1 to %d fact IDs and nothing else", MaxAcks)
		}
		for i, id := range r.Acks {
			if !ids.Valid(ids.Fact, id) {
				return invalid("acks[%d] is not a fact ID", i)
			}
		}
		return nil
	case ReplyChanges:
		if r.RequestID == "" || r.Acks != nil || r.Snapshot != nil || r.Seq != 0 {
			return invalid("a changes reply names its request and holds only changes")
		}
		return validateChanges(r.Changes, "changes")
	case ReplySnapshot:
		if r.RequestID == "" || r.Snapshot == nil || r.Acks != nil || r.Changes != nil || r.More || r.Seq != 0 {
			return invalid("a snapshot reply names its request and holds only a snapshot part")
		}
		return r.Snapshot.validate()
	}
	return invalid("kind %q is not a reply kind", r.Kind)
}

// Status is an edge's retained presence.
type Status struct {
	V        int       `json:"v"`
	EdgeID   string    `json:"edge_id"`
	State    string    `json:"state"` // online or offline (the last will)
	At       time.Time `json:"at"`
	Seq      uint64    `json:"seq"`    // last change applied
	Outbox   int       `json:"outbox"` // facts not yet acknowledged
	Software string    `json:"software,omitempty"`
	// BadgeKey is the public half of the edge's own walk-in badge key, in
	// every online status, for the cloud to certify for the edge's site
	// (docs/decisions.md, "Offline walk-in badge passes"). A retained
	// status carries it again after every reconnection, so a certification
	// lost to an outage is asked for again with no state of its own.
	BadgeKey []byte `json:"badge_key,omitempty"`
	// What the cloud shows of the appliance in its fleet (issue 17); an
	// older edge sends none of them.
	OutboxOldest *time.Time   `json:"outbox_oldest,omitempty"` // when the oldest fact waiting happened
	Cache        *CacheCounts `json:"cache,omitempty"`         // what its cache holds
	DiskFree     *uint64      `json:"disk_free,omitempty"`     // bytes free on its data partition
	// HardwareError says why the appliance could not drive the hardware
	// the cloud sent it (it drives what it drove before); left out when
	// nothing went wrong. An older edge sends none.
	HardwareError string `json:"hardware_error,omitempty"`
}

// CacheCounts are what an edge's cache holds, as its status says.
type CacheCounts struct {
	Visits int `json:"visits"`
	People int `json:"people"`
	Gates  int `json:"gates"`
	Keys   int `json:"keys"`
}

func (s *Status) validate() error {
	switch {
	case !ids.Valid(ids.Edge, s.EdgeID):
		return invalid("edge_id is not an edge ID")
	case s.State != "online" && s.State != "offline":
		return invalid("state %q is not online or offline", s.State)
	case s.Outbox < 0:
		return invalid("outbox is negative")
	case len(s.Software) > maxSoftwareVer:
		return invalid("software is longer than %d bytes", maxSoftwareVer)
	case s.BadgeKey != nil && len(s.BadgeKey) != ed25519.PublicKeySize:
		return invalid("badge_key is not a %d-byte Ed25519 key", ed25519.PublicKeySize)
	case s.BadgeKey != nil && s.State != "online":
		return invalid("an offline status carries no badge_key")
	case s.Cache != nil && (s.Cache.Visits < 0 || s.Cache.People < 0 || s.Cache.Gates < 0 || s.Cache.Keys < 0):
		return invalid("cache counts are negative")
	case s.OutboxOldest != nil && s.OutboxOldest.IsZero():
		return invalid("outbox_oldest is the zero time")
	case len(s.HardwareError) > MaxHardwareError:
		return invalid("hardware_error is longer than %d bytes", MaxHardwareError)
	case s.HardwareError != "" && s.State != "online":
		return invalid("an offline status carries no hardware_error")
	}
	return nil
}

// Message is any of the protocol's messages.
type Message interface {
	*Batch | *Fact | *ResyncRequest | *Reply | *Status
	validate() error
	version() int
	setVersion()
}

func (b *Batch) version() int         { return b.V }
func (f *Fact) version() int          { return f.V }
func (r *ResyncRequest) version() int { return r.V }
func (r *Reply) version() int         { return r.V }
func (s *Status) version() int        { return s.V }
func (b *Batch) setVersion()          { b.V = Version }
func (f *Fact) setVersion()           { f.V = Version }
func (r *ResyncRequest) setVersion()  { r.V = Version }
func (r *Reply) setVersion()          { r.V = Version }
func (s *Status) setVersion()         { s.V = Version }

// Encode validates m, sets its version and returns its JSON.
func Encode[M Message](m M) ([]byte, error) {
	if err := prepare(m); err != nil {
		return nil, err
	}
	b, err := json.Marshal(m)
	return checkEncoded(b, err)
}

// Encoder encodes messages as Encode does into a buffer of its own,
// reused: for a writer that encodes a message at a time and copies the
// bytes on, which json.Marshal would give it in a new slice each time.
// Not safe for concurrent use.
type Encoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

// EncodeWith is Encode through e: the bytes are e's, valid until its next
// use.
func EncodeWith[M Message](e *Encoder, m M) ([]byte, error) {
	if err := prepare(m); err != nil {
		return nil, err
	}
	if e.enc == nil {
		e.enc = json.NewEncoder(&e.buf) // escapes HTML as json.Marshal does
	}
	e.buf.Reset()
	err := e.enc.Encode(m)
	return checkEncoded(bytes.TrimSuffix(e.buf.Bytes(), []byte("\n")), err)
}

func prepare[M Message](m M) error {
	m.setVersion()
	return m.validate()
}

func checkEncoded(b []byte, err error) ([]byte, error) {
	if err != nil {
		return nil, fmt.Errorf("protocol: encode: %w", err)
	}
	if len(b) > MaxMessage {
		return nil, invalid("the message is %d bytes, more than %d", len(b), MaxMessage)
	}
	return b, nil
}

// Decode reads one message strictly into m: at most MaxMessage bytes, one
// JSON object of this version with no unknown fields, valid. Every failure
// wraps ErrInvalid.
func Decode[M Message](b []byte, m M) error {
	if len(b) > MaxMessage {
		return invalid("the message is %d bytes, more than %d", len(b), MaxMessage)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(m); err != nil {
		return invalid("%v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return invalid("data after the message")
	}
	if v := m.version(); v != Version {
		return invalid("version %d, not %d", v, Version)
	}
	return m.validate()
}

// Object is one of the objects a change carries, validated on its own
// when it is stored rather than sent (the edge's cache keeps them).
type Object interface {
	*Visit | *Gate | *Settings | *Key | *Person | *Team | *VisitType | *EdgeHardware
	validate(where string) error
}

// Validate checks one object as a message carrying it would be checked.
func Validate[O Object](o O) error { return o.validate(objectName(o)) }

// DecodeObject reads one object strictly into o, as Decode reads a
// message: at most MaxMessage bytes, no unknown fields, valid.
func DecodeObject[O Object](b []byte, o O) error {
	if len(b) > MaxMessage {
		return invalid("the object is %d bytes, more than %d", len(b), MaxMessage)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(o); err != nil {
		return invalid("%v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return invalid("data after the object")
	}
	return Validate(o)
}

func objectName(o any) string {
	switch o.(type) {
	case *Visit:
		return "visit"
	case *Gate:
		return "gate"
	case *Settings:
		return "settings"
	case *Person:
		return "person"
	case *Team:
		return "team"
	case *VisitType:
		return "visit_type"
	case *EdgeHardware:
		return "hardware"
	}
	return "key"
}
