// Package storedoc is the JSON that cloud/sqlite and cloud/postgres store
// for the parts of a visit or a booking no query looks inside, for pass
// rules and for a booking type's opening hours. Both engines write the
// same bytes, so a database can move from one to the other.
//
// The structs here are the stored form, apart from the domain's: renaming
// a field of cloud.Visit, cloud.Booking, cloud.OpeningHours or
// passrule.Rules must not change what rows already hold (STYLE D3). Add
// fields with omitempty; never rename or retype a json tag.
//
// It also holds the body of a site feed row (EncodeChange), the wire form
// of one change, and the columns both stores keep sealed with the
// key-encryption key (SealedColumns), with the row identity each sealed
// value is bound to.
//
// It may import cloud, cloud/kek, shared/passrule, sync/protocol and the
// standard library.
package storedoc

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/shared/passrule"
)

// visit is what a visit stores beyond its indexed columns (ID, tenant,
// status, type, site, lead host, visitor, booking, expected_at and the
// row's times).
type visit struct {
	Source        string            `json:"source,omitempty"`
	GateID        string            `json:"gate_id,omitempty"`
	Audience      string            `json:"audience,omitempty"`
	Hosts         []host            `json:"hosts,omitempty"`
	Team          *ref              `json:"team,omitempty"`
	AskedFor      *ref              `json:"asked_for,omitempty"`
	NeedsSomeone  bool              `json:"needs_someone,omitempty"`
	Purpose       string            `json:"purpose,omitempty"`
	VehiclePlate  string            `json:"vehicle_plate,omitempty"`
	ExpectedUntil *time.Time        `json:"expected_until,omitempty"`
	CheckedInAt   *time.Time        `json:"checked_in_at,omitempty"`
	CheckedOutAt  *time.Time        `json:"checked_out_at,omitempty"`
	CancelledAt   *time.Time        `json:"cancelled_at,omitempty"`
	Decision      *decision         `json:"decision,omitempty"`
	RescheduledTo *rescheduled      `json:"rescheduled_to,omitempty"`
	Pass          pass              `json:"pass"`
	CustomFields  map[string]string `json:"custom_fields,omitempty"`
	Receiver      receiver          `json:"receiver"`
	ReenteredAs   string            `json:"reentered_as,omitempty"`
	WaitingSince  *time.Time        `json:"waiting_since,omitempty"`
	RemindedFor   *time.Time        `json:"reminded_for,omitempty"`
}

// Custom fields are kept as the text of each value, in a JSON string:
// encoding/json compacts and HTML-escapes a json.RawMessage it marshals,
// and the answers must come back byte for byte.

type host struct {
	ID            string     `json:"id"`
	Name          string     `json:"name,omitempty"`
	Role          string     `json:"role,omitempty"`
	State         string     `json:"state,omitempty"`
	Answer        string     `json:"answer,omitempty"`
	AnswerMinutes *int       `json:"answer_minutes,omitempty"`
	AskedAt       *time.Time `json:"asked_at,omitempty"`
	AnsweredAt    *time.Time `json:"answered_at,omitempty"`
}

type ref struct {
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
}

type decision struct {
	Outcome   string    `json:"outcome"`
	DecidedAt time.Time `json:"decided_at"`
	DecidedBy string    `json:"decided_by,omitempty"`
	Reason    string    `json:"reason,omitempty"`
}

type rescheduled struct {
	VisitID   string    `json:"visit_id,omitempty"`
	BookingID string    `json:"booking_id,omitempty"`
	At        time.Time `json:"at"`
	Note      string    `json:"note,omitempty"`
}

type pass struct {
	Channels   []string   `json:"channels,omitempty"`
	LastSentAt *time.Time `json:"last_sent_at,omitempty"`
	Rules      rules      `json:"rules"`
	ForVisitID string     `json:"for_visit_id,omitempty"`
	Uses       int        `json:"uses,omitempty"`
	Revoked    bool       `json:"revoked,omitempty"`
}

type receiver struct {
	Kind     string `json:"kind,omitempty"`
	PersonID string `json:"person_id,omitempty"`
	TeamID   string `json:"team_id,omitempty"`
}

// rules are pass rules. Times of day are minutes after midnight, not the
// API's "HH:MM": the stored form does not depend on passrule's text.
type rules struct {
	Daily     *daily   `json:"daily,omitempty"`
	Before    int      `json:"window_before,omitempty"`
	After     int      `json:"window_after,omitempty"`
	SingleUse bool     `json:"single_use,omitempty"`
	GateIDs   []string `json:"gate_ids,omitempty"`
}

type daily struct {
	From  int `json:"from"`
	Until int `json:"until"`
}

// EncodeVisit returns the document of v. Times are stored in UTC to the
// microsecond, like the columns beside it.
func EncodeVisit(v cloud.Visit) ([]byte, error) {
	d := visit{
		Source:        string(v.Source),
		GateID:        v.GateID,
		Audience:      string(v.Audience),
		Team:          toRef(v.Team),
		AskedFor:      toRef(v.AskedFor),
		NeedsSomeone:  v.NeedsSomeone,
		Purpose:       v.Purpose,
		VehiclePlate:  v.VehiclePlate,
		ExpectedUntil: micros(v.ExpectedUntil),
		CheckedInAt:   micros(v.CheckedInAt),
		CheckedOutAt:  micros(v.CheckedOutAt),
		CancelledAt:   micros(v.CancelledAt),
		Pass: pass{
			Channels:   v.Pass.Channels,
			LastSentAt: micros(v.Pass.LastSentAt),
			Rules:      toRules(v.Pass.Rules),
			ForVisitID: v.Pass.ForVisitID,
			Uses:       v.Pass.Uses,
			Revoked:    v.Pass.Revoked,
		},
		Receiver:     receiver{Kind: v.Receiver.Kind, PersonID: v.Receiver.PersonID, TeamID: v.Receiver.TeamID},
		ReenteredAs:  v.ReenteredAs,
		WaitingSince: micros(v.WaitingSince),
		RemindedFor:  micros(v.RemindedFor),
	}
	for _, h := range v.Hosts {
		d.Hosts = append(d.Hosts, host{ID: h.ID, Name: h.Name, Role: h.Role, State: h.State, Answer: h.Answer,
			AnswerMinutes: h.AnswerMinutes, AskedAt: micros(h.AskedAt), AnsweredAt: micros(h.AnsweredAt)})
	}
	if x := v.Decision; x != nil {
		d.Decision = &decision{Outcome: x.Outcome, DecidedAt: micro(x.DecidedAt), DecidedBy: x.DecidedBy, Reason: x.Reason}
	}
	if x := v.RescheduledTo; x != nil {
		d.RescheduledTo = &rescheduled{VisitID: x.VisitID, BookingID: x.BookingID, At: micro(x.At), Note: x.Note}
	}
	if len(v.CustomFields) > 0 {
		d.CustomFields = make(map[string]string, len(v.CustomFields))
		for k, raw := range v.CustomFields {
			d.CustomFields[k] = string(raw)
		}
	}
	b, err := json.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("encode visit document: %w", err)
	}
	return b, nil
}

// DecodeVisit fills the fields of v the document holds. Lists and maps
// come back empty rather than nil, whether or not they were stored.
func DecodeVisit(b []byte, v *cloud.Visit) error {
	var d visit
	if err := json.Unmarshal(b, &d); err != nil {
		return fmt.Errorf("decode visit document: %w", err)
	}
	v.Source, v.GateID, v.Audience = cloud.Source(d.Source), d.GateID, cloud.Audience(d.Audience)
	v.Team, v.AskedFor, v.NeedsSomeone = fromRef(d.Team), fromRef(d.AskedFor), d.NeedsSomeone
	v.Purpose, v.VehiclePlate = d.Purpose, d.VehiclePlate
	v.ExpectedUntil, v.CheckedInAt, v.CheckedOutAt, v.CancelledAt = d.ExpectedUntil, d.CheckedInAt, d.CheckedOutAt, d.CancelledAt
	v.Hosts = make([]cloud.Host, len(d.Hosts))
	for i, h := range d.Hosts {
		v.Hosts[i] = cloud.Host{ID: h.ID, Name: h.Name, Role: h.Role, State: h.State, Answer: h.Answer,
			AnswerMinutes: h.AnswerMinutes, AskedAt: h.AskedAt, AnsweredAt: h.AnsweredAt}
	}
	v.Decision = nil
	if x := d.Decision; x != nil {
		v.Decision = &cloud.Decision{Outcome: x.Outcome, DecidedAt: x.DecidedAt, DecidedBy: x.DecidedBy, Reason: x.Reason}
	}
	v.RescheduledTo = nil
	if x := d.RescheduledTo; x != nil {
		v.RescheduledTo = &cloud.Rescheduled{VisitID: x.VisitID, BookingID: x.BookingID, At: x.At, Note: x.Note}
	}
	v.Pass = cloud.Pass{
		Channels:   nonNil(d.Pass.Channels),
		LastSentAt: d.Pass.LastSentAt,
		Rules:      fromRules(d.Pass.Rules),
		ForVisitID: d.Pass.ForVisitID,
		Uses:       d.Pass.Uses,
		Revoked:    d.Pass.Revoked,
	}
	v.CustomFields = make(map[string]json.RawMessage, len(d.CustomFields))
	for k, s := range d.CustomFields {
		v.CustomFields[k] = json.RawMessage(s)
	}
	v.Receiver = cloud.Receiver{Kind: d.Receiver.Kind, PersonID: d.Receiver.PersonID, TeamID: d.Receiver.TeamID}
	v.ReenteredAs = d.ReenteredAs
	v.WaitingSince, v.RemindedFor = d.WaitingSince, d.RemindedFor
	return nil
}

// EncodeRules returns the document of pass rules, as a visit type stores
// its defaults.
func EncodeRules(r passrule.Rules) ([]byte, error) {
	b, err := json.Marshal(toRules(r))
	if err != nil {
		return nil, fmt.Errorf("encode pass rules: %w", err)
	}
	return b, nil
}

// DecodeRules reads what EncodeRules wrote. GateIDs comes back empty
// rather than nil.
func DecodeRules(b []byte) (passrule.Rules, error) {
	var d rules
	if err := json.Unmarshal(b, &d); err != nil {
		return passrule.Rules{}, fmt.Errorf("decode pass rules: %w", err)
	}
	return fromRules(d), nil
}

func toRules(r passrule.Rules) rules {
	d := rules{Before: r.Window.Before, After: r.Window.After, SingleUse: r.SingleUse, GateIDs: r.GateIDs}
	if r.Daily != nil {
		d.Daily = &daily{From: int(r.Daily.From), Until: int(r.Daily.Until)}
	}
	return d
}

func fromRules(d rules) passrule.Rules {
	r := passrule.Rules{Window: passrule.Window{Before: d.Before, After: d.After}, SingleUse: d.SingleUse,
		GateIDs: nonNil(d.GateIDs)}
	if d.Daily != nil {
		r.Daily = &passrule.Daily{From: passrule.Clock(d.Daily.From), Until: passrule.Clock(d.Daily.Until)}
	}
	return r
}

func toRef(r *cloud.Ref) *ref {
	if r == nil {
		return nil
	}
	return &ref{ID: r.ID, Name: r.Name}
}

func fromRef(r *ref) *cloud.Ref {
	if r == nil {
		return nil
	}
	return &cloud.Ref{ID: r.ID, Name: r.Name}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// micro is t as stored: UTC, to the microsecond.
func micro(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

func micros(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := micro(*t)
	return &u
}
