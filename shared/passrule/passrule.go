// Package passrule is the one decision whether a pass admits its holder now.
// The cloud's check-in and the gate appliance both call Decide, so the two
// can never disagree about a scan.
//
// Decide is pure: everything it needs, the time and the site's zone
// included, comes in through Input, and it neither reads a clock nor
// allocates.
//
// Time is judged in whole minutes, the unit of the rules: now, the start of
// the window (expected_at less window.before) and its end (expected_until
// plus window.after) each count as the minute they fall in, and the window
// admits from its start minute through its end minute, both included. With
// expected_until 17:00:00 a scan at 17:00:59 is admitted and one at 17:01:00
// has expired. So the decision does not depend on seconds, and a pass token
// that carries its times to the minute decides as the cloud does.
//
// It may import only the standard library.
package passrule

import "time"

// Status is a visit's status, spelled as the API spells it.
type Status string

// The visit statuses of the API.
const (
	Expected         Status = "expected"
	AwaitingApproval Status = "awaiting_approval"
	CheckedIn        Status = "checked_in"
	CheckedOut       Status = "checked_out"
	Denied           Status = "denied"
	Cancelled        Status = "cancelled"
	NoShow           Status = "no_show"
)

// Valid reports whether s is one of the API's visit statuses.
func (s Status) Valid() bool {
	switch s {
	case Expected, AwaitingApproval, CheckedIn, CheckedOut, Denied, Cancelled, NoShow:
		return true
	}
	return false
}

// ended reports whether no pass rule or override may admit a visit in this
// status. A status this code does not know counts as ended: a gate that
// cannot tell what a visit's state means fails closed.
func (s Status) ended() bool {
	switch s {
	case Expected, AwaitingApproval, CheckedIn, CheckedOut:
		return false
	}
	return true
}

// Reason is why Decide refused a pass, or Admit. The API reports a refusal
// as location pass_rule.<reason>.
type Reason string

// The outcomes of Decide, refusals in the order they are checked.
const (
	Admit        Reason = ""
	Ended        Reason = "ended"
	WrongGate    Reason = "wrong_gate"
	NotYet       Reason = "not_yet"
	Expired      Reason = "expired"
	OutsideHours Reason = "outside_hours"
	Used         Reason = "used"
)

// Reasons lists every refusal reason in the order Decide checks them, for
// documentation and tests.
func Reasons() []Reason {
	return []Reason{Ended, WrongGate, NotYet, Expired, OutsideHours, Used}
}

// Overridable reports whether a check-in with override_pass_rules may admit
// despite the refusal r. Ended never may: the visit is over or the pass was
// withdrawn. Admit is no refusal, and an unknown reason is not trusted, so
// both report false.
func (r Reason) Overridable() bool {
	switch r {
	case WrongGate, NotYet, Expired, OutsideHours, Used:
		return true
	}
	return false
}

// Input is everything Decide looks at.
type Input struct {
	Rules         Rules
	Status        Status
	Revoked       bool      // the pass was revoked (e.g. the visit was rescheduled)
	ExpectedAt    time.Time // zero for a walk-in: no lower bound
	ExpectedUntil time.Time // zero: no upper bound
	VisitSiteID   string
	GateID        string
	GateSiteID    string
	Uses          int            // admissions already made with this pass
	Location      *time.Location // the site's zone, for daily hours; nil means UTC
	Now           time.Time
}

// Decide returns Admit, or the first reason to refuse in this order:
//
//  1. Ended: the status is cancelled, denied or no_show (or not a status
//     at all), or the pass was revoked.
//  2. WrongGate: the gate is at another site than the visit, or GateIDs is
//     not empty and does not hold the gate.
//  3. NotYet: the visit awaits approval, or now is before ExpectedAt less
//     Window.Before minutes.
//  4. Expired: now is after ExpectedUntil plus Window.After minutes.
//  5. OutsideHours: Daily is set and the site-local wall-clock time is not
//     in it.
//  6. Used: the pass is single-use and has admitted once.
//
// Expected, checked_in and checked_out are not ended here: whether a visit
// already in may enter again is the caller's business. Times are compared
// to the minute, as the package comment says.
func Decide(in Input) Reason {
	if in.Revoked || in.Status.ended() {
		return Ended
	}
	if in.GateSiteID != in.VisitSiteID || !in.Rules.allowsGate(in.GateID) {
		return WrongGate
	}
	now := minuteOf(in.Now)
	if in.Status == AwaitingApproval ||
		!in.ExpectedAt.IsZero() && now < minuteOf(in.ExpectedAt)-int64(in.Rules.Window.Before) {
		return NotYet
	}
	if !in.ExpectedUntil.IsZero() && now > minuteOf(in.ExpectedUntil)+int64(in.Rules.Window.After) {
		return Expired
	}
	if d := in.Rules.Daily; d != nil && !d.Contains(localClock(in.Now, in.Location)) {
		return OutsideHours
	}
	if in.Rules.SingleUse && in.Uses >= 1 {
		return Used
	}
	return Admit
}

// minuteOf is the Unix minute t falls in, rounding down before 1970 too.
func minuteOf(t time.Time) int64 {
	s := t.Unix()
	m := s / 60
	if s%60 < 0 {
		m--
	}
	return m
}

// localClock is the wall-clock minute at loc. Time.In only swaps the zone
// pointer and Clock looks the offset up in the zone's table, so neither
// allocates.
func localClock(t time.Time, loc *time.Location) Clock {
	if loc == nil {
		loc = time.UTC
	}
	h, m, _ := t.In(loc).Clock()
	return Clock(h*60 + m)
}

// EndOfDay is the last microsecond of t's day at loc (UTC when loc is
// nil), in UTC: the end of a walk-in's pass, which lasts the day of
// arrival at the site, for the cloud, the gates and the badges an
// appliance signs alike.
func EndOfDay(t time.Time, loc *time.Location) time.Time {
	if loc == nil {
		loc = time.UTC
	}
	y, m, d := t.In(loc).Date()
	return time.Date(y, m, d+1, 0, 0, 0, 0, loc).Add(-time.Microsecond).UTC()
}
