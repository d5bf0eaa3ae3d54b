package cloud

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/svc-vms/svc/shared/ids"
)

// The attendance service: punches from the API and from gates, periods
// generated ahead and closed when they end, timesheets kept in step with
// the punches, confirmation and approval, consent and evidence. The rules
// are in docs/decisions.md ("Attendance").

// ConsentError is returned when evidence the organisation records only
// with consent is sent for a person who has not consented (or withdrew).
type ConsentError struct {
	Kind EvidenceKind
}

func (e *ConsentError) Error() string {
	return fmt.Sprintf("consent required: the organisation records %s evidence only with the person's consent, and this person has not given it", e.Kind)
}

// LocationCheckError is returned when a phone punch is neither inside
// the site's geofence nor on one of its Wi-Fi networks.
type LocationCheckError struct {
	Detail string
}

func (e *LocationCheckError) Error() string { return "location check failed: " + e.Detail }

// Timesheet actions audited.
const (
	AuditTimesheetReopened = "timesheet.reopened" // a late punch changed a confirmed or approved timesheet
	AuditAttendanceConsent = "attendance.consent_changed"
)

// periodRulesJSON is how PeriodRules are stored.
type periodRulesJSON struct {
	Kind        PeriodKind `json:"kind"`
	Weekday     string     `json:"weekday,omitempty"`
	Anchor      string     `json:"anchor,omitempty"`
	MonthDay    int        `json:"month_day,omitempty"`
	PayrollDays int        `json:"payroll_days"`
}

// EncodePeriodRules is the stored form of r.
func EncodePeriodRules(r PeriodRules) ([]byte, error) {
	j := periodRulesJSON{Kind: r.Kind, MonthDay: r.MonthDay, PayrollDays: r.PayrollDays}
	if r.Kind != PeriodMonthly {
		j.Weekday = strings.ToLower(r.Weekday.String())
	}
	if r.Kind == PeriodFortnightly {
		j.Anchor = r.Anchor.String()
	}
	return json.Marshal(j)
}

// DecodePeriodRules reads what EncodePeriodRules wrote.
func DecodePeriodRules(b []byte, r *PeriodRules) error {
	var j periodRulesJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return fmt.Errorf("period rules: %w", err)
	}
	*r = PeriodRules{Kind: j.Kind, MonthDay: j.MonthDay, PayrollDays: j.PayrollDays}
	if j.Weekday != "" {
		wd, ok := ParseWeekday(j.Weekday)
		if !ok {
			return fmt.Errorf("period rules: weekday %q", j.Weekday)
		}
		r.Weekday = wd
	}
	if j.Anchor != "" {
		d, err := ParseDate(j.Anchor)
		if err != nil {
			return fmt.Errorf("period rules: anchor: %w", err)
		}
		r.Anchor = d
	}
	return nil
}

// ParseWeekday reads a lower-case English weekday name.
func ParseWeekday(s string) (time.Weekday, bool) {
	for d := time.Sunday; d <= time.Saturday; d++ {
		if strings.ToLower(d.String()) == s {
			return d, true
		}
	}
	return 0, false
}

// today is the day now is at loc.
func today(now time.Time, loc *time.Location) Date { return DateOf(now.In(loc)) }

// AttendanceSettings returns the tenant's settings, or the defaults while
// it has stored none.
func (s *Service) AttendanceSettings(ctx context.Context, t Tenant) (AttendanceSettings, error) {
	st, err := s.store.AttendanceSettings(ctx, t)
	if errors.Is(err, ErrNotFound) {
		return DefaultAttendanceSettings(t, s.Now()), nil
	}
	return st, err
}

// AttendanceSettingsInput changes the settings; what is left out stays.
type AttendanceSettingsInput struct {
	Timezone Optional[string]
	Periods  Optional[PeriodRules] // whole rules
	Evidence map[string]string     // kind to policy, as given
}

// ValidateAttendanceSettings checks in and returns every problem.
func (s *Service) ValidateAttendanceSettings(_ context.Context, _ Tenant, in AttendanceSettingsInput) error {
	var v ValidationError
	if in.Timezone.Set && !ValidTimezone(in.Timezone.Value) {
		v.Add("timezone", "must be an IANA time zone name such as Europe/London")
	}
	if in.Periods.Set {
		for _, e := range in.Periods.Value.Validate() {
			v.Add("periods."+e.Field, "%s", e.Message)
		}
	}
	for k, p := range in.Evidence {
		switch {
		case !EvidenceKind(k).Valid():
			v.Add("evidence."+k, "is not an evidence kind: face, selfie or location")
		case !EvidencePolicy(p).Valid():
			v.Add("evidence."+k, "must be off, consent or required")
		}
	}
	return v.Err()
}

// UpdateAttendanceSettings changes the tenant's settings. New period rules
// or a new zone apply from the first period that has not started: the
// periods after today are made again, the first of them bridging to the
// new rules (PeriodRules.After), and their timesheets rebuilt.
func (s *Service) UpdateAttendanceSettings(ctx context.Context, t Tenant, in AttendanceSettingsInput) (AttendanceSettings, error) {
	if err := s.ValidateAttendanceSettings(ctx, t, in); err != nil {
		return AttendanceSettings{}, err
	}
	ctx, l := withEvents(ctx)
	var out AttendanceSettings
	err := s.store.Attendance(ctx, t, func(tx AttendanceTx) error {
		now := s.Now()
		st, ok, err := tx.Settings()
		if err != nil {
			return err
		}
		if !ok {
			st = DefaultAttendanceSettings(t, now)
		}
		before := st
		if in.Timezone.Set {
			st.Timezone = in.Timezone.Value
		}
		if in.Periods.Set {
			st.Periods = in.Periods.Value
		}
		st.Evidence = withDefaultPolicies(st.Evidence)
		for k, p := range in.Evidence {
			st.Evidence[EvidenceKind(k)] = EvidencePolicy(p)
		}
		st.UpdatedAt = now
		if err := tx.PutSettings(st); err != nil {
			return err
		}
		if ok && (st.Periods != before.Periods || st.Timezone != before.Timezone) {
			if err := s.replanPeriods(ctx, tx, st, now); err != nil {
				return err
			}
		}
		if err := s.ensurePeriods(tx, st, now, today(now, st.Location())); err != nil {
			return err
		}
		out = st
		return nil
	})
	s.periodsChecked.Delete(t)
	return out, s.committed(l, err)
}

func withDefaultPolicies(m map[EvidenceKind]EvidencePolicy) map[EvidenceKind]EvidencePolicy {
	out := make(map[EvidenceKind]EvidencePolicy, len(EvidenceKinds))
	for _, k := range EvidenceKinds {
		out[k] = EvidenceConsent
	}
	for k, p := range m {
		out[k] = p
	}
	return out
}

// replanPeriods deletes the periods that start after today and rebuilds
// the timesheets of punches on their days once new ones are made.
func (s *Service) replanPeriods(ctx context.Context, tx AttendanceTx, st AttendanceSettings, now time.Time) error {
	if err := tx.LockPeriods(); err != nil {
		return err
	}
	from := today(now, st.Location()).AddDays(1)
	n, err := tx.DeletePeriodsFrom(from)
	if err != nil || n == 0 {
		return err
	}
	if err := s.ensurePeriods(tx, st, now, from); err != nil {
		return err
	}
	last, ok, err := tx.LastPeriod()
	if err != nil || !ok {
		return err
	}
	return s.rebuild(ctx, tx, st, from, last.EndsOn, now)
}

// ensurePeriods makes periods, following on from the last, until one
// ends on or after PeriodsAhead days past today and one holds day. The
// first period of a tenant is the one holding the earlier of today and
// day.
func (s *Service) ensurePeriods(tx AttendanceTx, st AttendanceSettings, now time.Time, day Date) error {
	loc := st.Location()
	td := today(now, loc)
	until := td.AddDays(PeriodsAhead)
	if day.After(until) {
		until = day
	}
	last, ok, err := tx.LastPeriod()
	if err != nil {
		return err
	}
	if ok && !last.EndsOn.Before(until) {
		return nil
	}
	// Another transaction may be making the same periods: take the lock
	// and look again.
	if err := tx.LockPeriods(); err != nil {
		return err
	}
	if last, ok, err = tx.LastPeriod(); err != nil {
		return err
	}
	if ok && !last.EndsOn.Before(until) {
		return nil
	}
	var next PeriodSpan
	if ok {
		next = st.Periods.After(last.EndsOn)
	} else {
		first := td
		if day.Before(first) {
			first = day
		}
		next = st.Periods.Containing(first)
	}
	for {
		p := TimesheetPeriod{ID: ids.New(ids.TimesheetPeriod), Tenant: st.Tenant, PeriodSpan: next, ClosesAt: next.ClosesAt(loc), CreatedAt: now}
		if err := tx.InsertPeriod(p); err != nil {
			return err
		}
		if !next.EndsOn.Before(until) {
			return nil
		}
		next = st.Periods.After(next.EndsOn)
	}
}

// settings reads the tenant's settings in tx, storing the defaults the
// first time.
func (s *Service) settings(tx AttendanceTx, t Tenant, now time.Time) (AttendanceSettings, error) {
	st, ok, err := tx.Settings()
	if err != nil || ok {
		return st, err
	}
	st = DefaultAttendanceSettings(t, now)
	return st, tx.PutSettings(st)
}

// PunchInput is a punch sent through the API.
type PunchInput struct {
	PersonID   string
	SiteID     string
	GateID     string
	Kind       string
	Source     string
	OccurredAt *time.Time
	SentAt     *time.Time
	Location   *GeoPoint
	Wifi       *WifiNetwork
	DeviceID   string
}

var bssidPattern = regexp.MustCompile(`^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$`)

func checkGeoPoint(v *ValidationError, field string, p *GeoPoint) {
	if p.Latitude < -90 || p.Latitude > 90 {
		v.Add(field+".latitude", "must be between -90 and 90")
	}
	if p.Longitude < -180 || p.Longitude > 180 {
		v.Add(field+".longitude", "must be between -180 and 180")
	}
	if p.AccuracyM < 0 || p.AccuracyM > 100000 {
		v.Add(field+".accuracy_m", "must be between 0 and 100000")
	}
}

func checkWifi(v *ValidationError, field string, w WifiNetwork, needSSID bool) {
	if (needSSID || w.SSID != "") && (w.SSID == "" || len(w.SSID) > 32) {
		v.Add(field+".ssid", "must hold 1 to 32 bytes")
	}
	if w.BSSID != "" && !bssidPattern.MatchString(w.BSSID) {
		v.Add(field+".bssid", "must be a MAC address such as 3c:22:fb:12:34:56")
	}
}

// ValidatePunch checks an API punch and returns every problem.
func (s *Service) ValidatePunch(ctx context.Context, t Tenant, in PunchInput) error {
	var v ValidationError
	if err := s.checkPunch(ctx, &v, t, in); err != nil {
		return err
	}
	return v.Err()
}

func (s *Service) checkPunch(ctx context.Context, v *ValidationError, t Tenant, in PunchInput) error {
	if checkID(v, "person_id", ids.Person, in.PersonID) {
		p, err := s.store.Person(ctx, t, in.PersonID)
		switch {
		case errors.Is(err, ErrNotFound):
			v.Add("person_id", "no person with this ID")
		case err != nil:
			return err
		case !p.Active:
			v.Add("person_id", "this person is deactivated")
		}
	}
	if err := s.checkSite(ctx, v, t, "site_id", in.SiteID); err != nil {
		return err
	}
	if in.GateID != "" && checkID(v, "gate_id", ids.Gate, in.GateID) {
		g, err := s.store.Gate(ctx, t, in.GateID)
		switch {
		case errors.Is(err, ErrNotFound):
			v.Add("gate_id", "no gate with this ID")
		case err != nil:
			return err
		case in.SiteID != "" && g.SiteID != in.SiteID:
			v.Add("gate_id", "this gate is at another site")
		}
	}
	if !PunchKind(in.Kind).Valid() {
		v.Add("kind", "must be in or out")
	}
	switch PunchSource(in.Source) {
	case SourceTerminal, SourcePhone, SourceIntegration:
	case SourceGate:
		v.Add("source", "gate punches come from the site's edge; use terminal, phone or integration")
	default:
		v.Add("source", "must be terminal, phone or integration")
	}
	now := s.Now()
	switch {
	case in.OccurredAt == nil:
		v.Add("occurred_at", "is required")
	case in.OccurredAt.Before(now.Add(-MaxPunchAge)):
		v.Add("occurred_at", "is more than 400 days ago")
	case in.OccurredAt.After(now.Add(MaxPunchAhead)):
		v.Add("occurred_at", "is more than a day ahead of the server's clock")
	}
	if in.SentAt != nil && (in.SentAt.Before(now.Add(-MaxPunchAge)) || in.SentAt.After(now.Add(MaxPunchAge))) {
		v.Add("sent_at", "is not a plausible clock reading")
	}
	if in.Location != nil {
		checkGeoPoint(v, "location", in.Location)
	}
	if in.Wifi != nil {
		checkWifi(v, "wifi", *in.Wifi, false)
		if in.Wifi.SSID == "" && in.Wifi.BSSID == "" {
			v.Add("wifi", "must name the ssid, the bssid or both")
		}
	}
	if PunchSource(in.Source) == SourcePhone && in.Location == nil && in.Wifi == nil {
		v.Add("location", "a phone punch needs a location or the Wi-Fi network seen (wifi)")
	}
	checkText(v, "device_id", in.DeviceID, false, MaxNameLen)
	return nil
}

// RecordPunch records an API punch: it returns the punch and true, or
// the earlier punch it repeats (the same person, kind, site, gate and
// source within PunchRepeat) and false. A phone clock-in outside the
// site's zone returns *LocationCheckError (the spec's rule); a phone
// clock-out is kept wherever it was made, with its location, so someone
// who left before punching out can still end their stay; terminal and
// integration punches are never checked.
func (s *Service) RecordPunch(ctx context.Context, t Tenant, in PunchInput) (AttendanceEvent, bool, error) {
	if err := s.ValidatePunch(ctx, t, in); err != nil {
		return AttendanceEvent{}, false, err
	}
	site, err := s.store.Site(ctx, t, in.SiteID)
	if err != nil {
		return AttendanceEvent{}, false, err
	}
	if PunchSource(in.Source) == SourcePhone && PunchKind(in.Kind) == PunchIn && !site.Zone.Admits(in.Location, in.Wifi) {
		detail := "The phone was neither inside the site's geofence nor on one of its Wi-Fi networks."
		if site.Zone.Empty() {
			detail = "The site has no geofence or Wi-Fi networks, so phone punches cannot be checked there."
		}
		return AttendanceEvent{}, false, &LocationCheckError{Detail: detail}
	}
	now := s.Now()
	e := AttendanceEvent{ID: ids.New(ids.AttendanceEvent), Tenant: t, PersonID: in.PersonID, SiteID: in.SiteID, GateID: in.GateID,
		Kind: PunchKind(in.Kind), Source: PunchSource(in.Source), OccurredAt: in.OccurredAt.UTC().Truncate(time.Microsecond),
		ReceivedAt: now, Location: in.Location, Wifi: in.Wifi, DeviceID: in.DeviceID, CreatedAt: now}
	if in.SentAt != nil {
		sent := in.SentAt.UTC().Truncate(time.Microsecond)
		e.SentAt = &sent
	}
	if e.Wifi != nil {
		e.Wifi.BSSID = strings.ToLower(e.Wifi.BSSID)
	}
	return s.punch(ctx, t, site, e)
}

// punch stores e in its own transaction, as RecordPunch describes.
func (s *Service) punch(ctx context.Context, t Tenant, site Site, e AttendanceEvent) (AttendanceEvent, bool, error) {
	loc, err := time.LoadLocation(site.Timezone)
	if err != nil {
		loc = time.UTC
	}
	e.Day = DateOf(e.OccurredAt.In(loc))
	e.measureSkew()
	ctx, l := withEvents(ctx)
	var out AttendanceEvent
	var isNew bool
	err = s.store.Attendance(ctx, t, func(tx AttendanceTx) error {
		var err error
		if out, isNew, err = s.punchIn(ctx, tx, e); err != nil {
			return err
		}
		return respond(ctx, RecordedPunch{Event: out, New: isNew})
	})
	return out, isNew, s.committed(l, err)
}

// RecordedPunch is what RecordPunch answers: the punch, and whether it is
// new or the one a repeat within PunchRepeat found.
type RecordedPunch struct {
	Event AttendanceEvent
	New   bool
}

// punchIn stores e in tx unless it repeats a punch, or is a fact's punch
// stored before, and keeps the timesheets of its days in step.
func (s *Service) punchIn(ctx context.Context, tx AttendanceTx, e AttendanceEvent) (AttendanceEvent, bool, error) {
	if err := tx.LockPerson(e.PersonID); err != nil {
		return e, false, err
	}
	if e.FactID != "" {
		if prev, ok, err := tx.PunchByFact(e.FactID); err != nil || ok {
			return prev, false, err
		}
	}
	prev, ok, err := tx.RepeatOf(e)
	if err != nil || ok {
		return prev, false, err
	}
	if err := tx.InsertPunch(e); err != nil {
		return e, false, err
	}
	if s.render != nil {
		data, err := s.render(e)
		if err != nil {
			return e, false, err
		}
		if err := s.record(ctx, eventLogOf(ctx), []string{EventAttendancePunch}, "attendance_event", e.ID, e.Tenant, data); err != nil {
			return e, false, err
		}
	}
	now := s.Now()
	st, err := s.settings(tx, e.Tenant, now)
	if err != nil {
		return e, false, err
	}
	if err := s.ensurePeriods(tx, st, now, e.Day); err != nil {
		return e, false, err
	}
	// A stay counts on its in's day: a punch can change the day before
	// (an out ending last night's stay) and the day after (an in whose
	// out was unpaired).
	periods, err := tx.Periods(e.Day.AddDays(-1), e.Day.AddDays(1))
	if err != nil {
		return e, false, err
	}
	for _, p := range periods {
		if err := s.retally(ctx, tx, p, e.PersonID, nil, now); err != nil {
			return e, false, err
		}
	}
	return e, true, nil
}

// eventLogOf returns the event log ctx carries (withEvents).
func eventLogOf(ctx context.Context) *eventLog {
	l, _ := ctx.Value(eventsKey{}).(*eventLog)
	return l
}

// retally recomputes a person's timesheet of period p from their punches
// (read in tx unless given) and stores it when it changed: made when the
// person first punches in the period (to_confirm at once in a closed
// period), and sent back to to_confirm, with an audit entry, when a late
// punch changes one the person had confirmed or a manager approved.
func (s *Service) retally(ctx context.Context, tx AttendanceTx, p TimesheetPeriod, personID string, punches []AttendanceEvent, now time.Time) error {
	ts, ok, err := tx.TimesheetOf(p.ID, personID)
	if err != nil {
		return err
	}
	return s.retallyOf(ctx, tx, p, personID, punches, ts, ok, false, now)
}

// retallyOf is retally with the person's timesheet of p already read: ts
// when ok, none when not. locked says p was read under its lock in this
// transaction already (a rebuild reads it once for every person).
func (s *Service) retallyOf(ctx context.Context, tx AttendanceTx, p TimesheetPeriod, personID string, punches []AttendanceEvent, ts Timesheet, ok, locked bool, now time.Time) error {
	var err error
	if punches == nil {
		if punches, err = tx.Punches(personID, p.StartsOn.AddDays(-1), p.EndsOn.AddDays(1)); err != nil {
			return err
		}
	}
	totals := Tally(Summarise(personID, punches, p.StartsOn, p.EndsOn))
	var events []string
	switch {
	case !ok && totals.Punches == 0:
		return nil
	case !ok:
		// The period's row, read again under its lock: a closing that
		// committed meanwhile is seen, so no open timesheet is made in a
		// closed period.
		if !locked {
			if p, err = tx.Period(p.ID); err != nil {
				return err
			}
		}
		ts = Timesheet{ID: ids.New(ids.Timesheet), Tenant: p.Tenant, PeriodID: p.ID, PersonID: personID, Status: TimesheetOpen,
			Totals: totals, CreatedAt: now, UpdatedAt: now}
		if p.ClosedAt != nil {
			ts.Status = TimesheetToConfirm
			events = append(events, EventTimesheetReady)
		}
		if p.ApprovedAt != nil { // a timesheet to confirm: the period is no longer all approved
			p.ApprovedAt = nil
			if err := tx.UpdatePeriod(p); err != nil {
				return err
			}
		}
	case ts.Totals == totals:
		return nil
	default:
		was := ts.Status
		ts.Totals, ts.UpdatedAt = totals, now
		if was == TimesheetToApprove || was == TimesheetApproved {
			ts.Status, ts.ConfirmedAt, ts.ApprovedAt = TimesheetToConfirm, nil, nil
			events = append(events, EventTimesheetReady)
			detail, _ := json.Marshal(map[string]any{"status": was, "period_id": p.ID, "minutes": totals.Minutes})
			l := eventLogOf(ctx)
			l.audit = append(l.audit, AuditEvent{ID: ids.New(ids.AuditEvent), Tenant: p.Tenant, Action: AuditTimesheetReopened,
				ActorKind: ActorSystem, ObjectType: "timesheet", ObjectID: ts.ID, RequestID: RequestID(ctx), Detail: detail, CreatedAt: now})
			if p.ApprovedAt != nil {
				p.ApprovedAt = nil
				if err := tx.UpdatePeriod(p); err != nil {
					return err
				}
			}
		}
	}
	if err := tx.PutTimesheet(ts); err != nil {
		return err
	}
	return s.timesheetEvents(ctx, ts, events)
}

func (s *Service) timesheetEvents(ctx context.Context, ts Timesheet, types []string) error {
	if len(types) == 0 || s.render == nil {
		return nil
	}
	data, err := s.render(ts)
	if err != nil {
		return err
	}
	return s.record(ctx, eventLogOf(ctx), types, "timesheet", ts.ID, ts.Tenant, data)
}

// rebuild recomputes every timesheet of the periods overlapping [from,
// to] from the punches.
func (s *Service) rebuild(ctx context.Context, tx AttendanceTx, st AttendanceSettings, from, to Date, now time.Time) error {
	periods, err := tx.Periods(from, to)
	if err != nil {
		return err
	}
	for _, p := range periods {
		if _, err := s.rebuildPeriod(ctx, tx, p, now); err != nil {
			return err
		}
	}
	return nil
}

// rebuildPeriod recomputes every timesheet of p and returns how many
// people punched on its days (or the day either side). It reads the
// period's punches and timesheets in one query each, not one per person.
func (s *Service) rebuildPeriod(ctx context.Context, tx AttendanceTx, p TimesheetPeriod, now time.Time) (int, error) {
	p, err := tx.Period(p.ID) // under its lock, once: see retallyOf
	if err != nil {
		return 0, err
	}
	byPerson, err := tx.PeriodPunches(p.StartsOn.AddDays(-1), p.EndsOn.AddDays(1))
	if err != nil {
		return 0, err
	}
	all, err := tx.PeriodTimesheets(p.ID, "")
	if err != nil {
		return 0, err
	}
	sheets := make(map[string]Timesheet, len(all))
	for _, ts := range all {
		sheets[ts.PersonID] = ts
	}
	people := make([]string, 0, len(byPerson))
	for id := range byPerson {
		people = append(people, id)
	}
	slices.Sort(people)
	for _, id := range people {
		ts, ok := sheets[id]
		if err := s.retallyOf(ctx, tx, p, id, byPerson[id], ts, ok, true, now); err != nil {
			return 0, err
		}
	}
	return len(people), nil
}

// RebuildTimesheets recomputes every timesheet of a period from the
// punches, in one transaction, and returns how many people punched in it.
// Punches keep timesheets in step as they arrive; this is for repair and
// for measuring the cost of a whole period.
func (s *Service) RebuildTimesheets(ctx context.Context, t Tenant, periodID string) (int, error) {
	ctx, l := withEvents(ctx)
	var n int
	err := s.store.Attendance(ctx, t, func(tx AttendanceTx) error {
		p, err := tx.Period(periodID)
		if err != nil {
			return err
		}
		n, err = s.rebuildPeriod(ctx, tx, p, s.Now())
		return err
	})
	return n, s.committed(l, err)
}

// ClosePeriods closes the tenant's periods that have ended (their
// timesheets go to to_confirm, each with timesheet.to_confirm) and makes
// periods ahead. It returns how many periods it closed.
func (s *Service) ClosePeriods(ctx context.Context, t Tenant) (int, error) {
	ctx, l := withEvents(ctx)
	var n int
	var next time.Time
	err := s.store.Attendance(ctx, t, func(tx AttendanceTx) error {
		now := s.Now()
		st, err := s.settings(tx, t, now)
		if err != nil {
			return err
		}
		td := today(now, st.Location())
		if err := s.ensurePeriods(tx, st, now, td); err != nil {
			return err
		}
		next = td.AddDays(1).Start(st.Location())
		if err := tx.LockPeriods(); err != nil {
			return err
		}
		due, err := tx.DuePeriods(now)
		if err != nil {
			return err
		}
		for _, p := range due {
			closed := now
			p.ClosedAt = &closed
			if err := tx.UpdatePeriod(p); err != nil {
				return err
			}
			open, err := tx.PeriodTimesheets(p.ID, TimesheetOpen)
			if err != nil {
				return err
			}
			for _, ts := range open {
				ts.Status, ts.UpdatedAt = TimesheetToConfirm, now
				if err := tx.PutTimesheet(ts); err != nil {
					return err
				}
				if err := s.timesheetEvents(ctx, ts, []string{EventTimesheetReady}); err != nil {
					return err
				}
			}
		}
		n = len(due)
		return nil
	})
	if err = s.committed(l, err); err != nil {
		return 0, err
	}
	s.periodsChecked.Store(t, next)
	return n, nil
}

// catchUp runs ClosePeriods unless it ran since the tenant's day began:
// periods close, and periods ahead are due, only when the day changes at
// the organisation's zone, so reads need not take a write transaction
// each time.
func (s *Service) catchUp(ctx context.Context, t Tenant) error {
	if next, ok := s.periodsChecked.Load(t); ok && s.Now().Before(next.(time.Time)) {
		return nil
	}
	_, err := s.ClosePeriods(apart(ctx), t)
	return err
}

// CloseAllPeriods runs ClosePeriods for every tenant with a period due;
// the server's maintenance loop calls it.
func (s *Service) CloseAllPeriods(ctx context.Context) (int, error) {
	tenants, err := s.store.DuePeriods(ctx, s.Now())
	if err != nil {
		return 0, err
	}
	total := 0
	for _, t := range tenants {
		n, err := s.ClosePeriods(ctx, t)
		if err != nil {
			return total, fmt.Errorf("close periods of %s (%s): %w", t.OrgID, t.Mode, err)
		}
		total += n
	}
	return total, nil
}

// TimesheetPeriods returns a page of periods, newest first, after closing
// what has ended, so a period's status and counts are current.
func (s *Service) TimesheetPeriods(ctx context.Context, t Tenant, f PeriodFilter, p Page) ([]TimesheetPeriod, bool, Date, error) {
	if err := s.catchUp(ctx, t); err != nil {
		return nil, false, Date{}, err
	}
	st, err := s.AttendanceSettings(ctx, t)
	if err != nil {
		return nil, false, Date{}, err
	}
	rows, more, err := s.store.ListTimesheetPeriods(ctx, t, f, p)
	return rows, more, today(s.Now(), st.Location()), err
}

// TimesheetPeriod returns one period, closing what has ended first.
func (s *Service) TimesheetPeriod(ctx context.Context, t Tenant, id string) (TimesheetPeriod, Date, error) {
	if err := s.catchUp(ctx, t); err != nil {
		return TimesheetPeriod{}, Date{}, err
	}
	st, err := s.AttendanceSettings(ctx, t)
	if err != nil {
		return TimesheetPeriod{}, Date{}, err
	}
	p, err := s.store.TimesheetPeriod(ctx, t, id)
	return p, today(s.Now(), st.Location()), err
}

// Timesheets returns a page of timesheets, after closing what has ended.
func (s *Service) Timesheets(ctx context.Context, t Tenant, f TimesheetFilter, p Page) ([]Timesheet, bool, error) {
	if err := s.catchUp(ctx, t); err != nil {
		return nil, false, err
	}
	return s.store.ListTimesheets(ctx, t, f, p)
}

// TimesheetView is a timesheet with its period and days.
type TimesheetView struct {
	Timesheet
	Period TimesheetPeriod
	Days   []DaySummary
}

// Timesheet returns one timesheet with its days, after closing what has
// ended.
func (s *Service) Timesheet(ctx context.Context, t Tenant, id string) (TimesheetView, error) {
	if err := s.catchUp(ctx, t); err != nil {
		return TimesheetView{}, err
	}
	ts, err := s.store.Timesheet(ctx, t, id)
	if err != nil {
		return TimesheetView{}, err
	}
	return s.timesheetView(ctx, t, ts)
}

// timesheetViewIn is timesheetView read inside tx, for the response a
// write stores with it.
func timesheetViewIn(tx AttendanceTx, ts Timesheet) (TimesheetView, error) {
	p, err := tx.Period(ts.PeriodID)
	if err != nil {
		return TimesheetView{}, fmt.Errorf("timesheet %s: period: %w", ts.ID, err)
	}
	if p.Counts, err = tx.PeriodCounts(p.ID); err != nil {
		return TimesheetView{}, err
	}
	punches, err := tx.Punches(ts.PersonID, p.StartsOn.AddDays(-1), p.EndsOn.AddDays(1))
	if err != nil {
		return TimesheetView{}, err
	}
	return TimesheetView{Timesheet: ts, Period: p, Days: Summarise(ts.PersonID, punches, p.StartsOn, p.EndsOn)}, nil
}

func (s *Service) timesheetView(ctx context.Context, t Tenant, ts Timesheet) (TimesheetView, error) {
	p, err := s.store.TimesheetPeriod(ctx, t, ts.PeriodID)
	if err != nil {
		return TimesheetView{}, fmt.Errorf("timesheet %s: period: %w", ts.ID, err)
	}
	punches, err := s.store.PersonPunches(ctx, t, []string{ts.PersonID}, p.StartsOn.AddDays(-1), p.EndsOn.AddDays(1))
	if err != nil {
		return TimesheetView{}, err
	}
	return TimesheetView{Timesheet: ts, Period: p, Days: Summarise(ts.PersonID, punches[ts.PersonID], p.StartsOn, p.EndsOn)}, nil
}

// ConfirmTimesheet is the person's confirmation: to_confirm → to_approve.
func (s *Service) ConfirmTimesheet(ctx context.Context, t Tenant, id string) (TimesheetView, error) {
	return s.moveTimesheet(ctx, t, id, "confirm", TimesheetToConfirm, TimesheetToApprove)
}

// ApproveTimesheet is a manager's approval: to_approve → approved. The
// period is approved with its last timesheet.
func (s *Service) ApproveTimesheet(ctx context.Context, t Tenant, id string) (TimesheetView, error) {
	return s.moveTimesheet(ctx, t, id, "approve", TimesheetToApprove, TimesheetApproved)
}

func (s *Service) moveTimesheet(ctx context.Context, t Tenant, id, action string, from, to TimesheetStatus) (TimesheetView, error) {
	if err := s.catchUp(ctx, t); err != nil {
		return TimesheetView{}, err
	}
	ctx, l := withEvents(ctx)
	var out Timesheet
	err := s.store.Attendance(ctx, t, func(tx AttendanceTx) error {
		ts, err := tx.Timesheet(id)
		if err != nil {
			return err
		}
		if ts.Status != from {
			return &StateError{Object: "timesheet", State: string(ts.Status), Action: action}
		}
		now := s.Now()
		ts.Status, ts.UpdatedAt = to, now
		var events []string
		switch to {
		case TimesheetToApprove:
			ts.ConfirmedAt = &now
		case TimesheetApproved:
			ts.ApprovedAt = &now
			events = append(events, EventTimesheetOK)
		}
		if err := tx.PutTimesheet(ts); err != nil {
			return err
		}
		if to == TimesheetApproved {
			p, err := tx.Period(ts.PeriodID)
			if err != nil {
				return err
			}
			c, err := tx.PeriodCounts(p.ID)
			if err != nil {
				return err
			}
			if p.ClosedAt != nil && c.Approved == c.Total() {
				p.ApprovedAt = &now
				if err := tx.UpdatePeriod(p); err != nil {
					return err
				}
			}
		}
		out = ts
		if err := s.timesheetEvents(ctx, ts, events); err != nil {
			return err
		}
		if replyOf(ctx) == nil {
			return nil
		}
		view, err := timesheetViewIn(tx, ts)
		if err != nil {
			return err
		}
		return respond(ctx, view)
	})
	if err = s.committed(l, err); err != nil {
		return TimesheetView{}, err
	}
	return s.timesheetView(ctx, t, out)
}

// SummaryFilter narrows Summaries.
type SummaryFilter struct {
	PersonID, SiteID string
	From, To         Date
}

// MaxSummaryDays is the longest range GET /attendance-summaries covers.
const MaxSummaryDays = 92

// Summaries returns a page of day summaries, newest day first, then by
// person ID descending.
func (s *Service) Summaries(ctx context.Context, t Tenant, f SummaryFilter, p Page) ([]DaySummary, bool, error) {
	keys, more, err := s.store.PunchDays(ctx, t, f.PersonID, f.SiteID, f.From, f.To, p)
	if err != nil || len(keys) == 0 {
		return []DaySummary{}, more, err
	}
	people := []string{}
	lo, hi := keys[0].Day, keys[0].Day
	for _, k := range keys {
		if !slices.Contains(people, k.PersonID) {
			people = append(people, k.PersonID)
		}
		if k.Day.Before(lo) {
			lo = k.Day
		}
		if k.Day.After(hi) {
			hi = k.Day
		}
	}
	punches, err := s.store.PersonPunches(ctx, t, people, lo.AddDays(-1), hi.AddDays(1))
	if err != nil {
		return nil, false, err
	}
	out := make([]DaySummary, 0, len(keys))
	for _, k := range keys {
		out = append(out, Summarise(k.PersonID, punches[k.PersonID], k.Day, k.Day)...)
	}
	return out, more, nil
}

// PersonConsents returns a person's consents to each kind; kinds never
// answered are absent.
func (s *Service) PersonConsents(ctx context.Context, t Tenant, personID string) (map[EvidenceKind]Consent, error) {
	if _, err := s.store.Person(ctx, t, personID); err != nil {
		return nil, err
	}
	return s.store.Consents(ctx, t, personID)
}

// SetConsents records a person's answers, by kind. Withdrawing consent
// deletes, in the same transaction, the evidence of that kind kept on
// consent; evidence the organisation requires is kept.
func (s *Service) SetConsents(ctx context.Context, a Actor, personID string, given map[EvidenceKind]bool) (map[EvidenceKind]Consent, error) {
	t := a.Tenant
	var v ValidationError
	for k := range given {
		if !k.Valid() {
			v.Add(string(k), "is not an evidence kind: face, selfie or location")
		}
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	ctx, l := withEvents(ctx)
	err := s.store.Attendance(ctx, t, func(tx AttendanceTx) error {
		if err := tx.LockPerson(personID); err != nil {
			return err
		}
		now := s.Now()
		changes := map[string]any{}
		for _, k := range EvidenceKinds {
			g, ok := given[k]
			if !ok {
				continue
			}
			cur, _, err := tx.Consent(personID, k)
			if err != nil {
				return err
			}
			if err := tx.PutConsent(Consent{Tenant: t, PersonID: personID, Kind: k, Given: g, UpdatedAt: now}); err != nil {
				return err
			}
			if cur.Given && !g {
				n, err := tx.DeleteEvidence(personID, k, EvidenceConsent)
				if err != nil {
					return err
				}
				changes[string(k)] = map[string]any{"given": false, "evidence_deleted": n}
			} else if cur.Given != g {
				changes[string(k)] = map[string]any{"given": g}
			}
		}
		if len(changes) > 0 {
			detail, _ := json.Marshal(changes)
			l.audit = append(l.audit, AuditEvent{ID: ids.New(ids.AuditEvent), Tenant: t, Action: AuditAttendanceConsent, ActorKind: ActorKey,
				ActorID: a.KeyID, ObjectType: "person", ObjectID: personID, RequestID: RequestID(ctx), Detail: detail, CreatedAt: now})
		}
		return nil
	})
	if err = s.committed(l, err); err != nil {
		return nil, err
	}
	return s.store.Consents(ctx, t, personID)
}

// EvidenceInput is evidence sent through the API.
type EvidenceInput struct {
	Kind              string
	AttendanceEventID string
	CapturedAt        *time.Time
	Image             []byte // decoded
	ImageSet          bool
	Location          *GeoPoint
}

// imageType returns the content type of a JPEG or PNG image, or "".
func imageType(b []byte) string {
	switch {
	case bytes.HasPrefix(b, []byte{0xFF, 0xD8, 0xFF}):
		return "image/jpeg"
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		return "image/png"
	}
	return ""
}

// ValidateEvidence checks evidence for a person and returns every problem
// with the input (not consent, which AddEvidence checks).
func (s *Service) ValidateEvidence(ctx context.Context, t Tenant, personID string, in EvidenceInput) error {
	var v ValidationError
	kind := EvidenceKind(in.Kind)
	if !kind.Valid() {
		v.Add("kind", "must be face, selfie or location")
	} else {
		st, err := s.AttendanceSettings(ctx, t)
		if err != nil {
			return err
		}
		if st.Evidence[kind] == EvidenceOff {
			v.Add("kind", "this organisation does not record %s evidence (attendance settings)", kind)
		}
	}
	switch kind {
	case EvidenceFace, EvidenceSelfie:
		switch {
		case !in.ImageSet:
			v.Add("image", "is required for %s evidence (a base64 JPEG or PNG)", kind)
		case len(in.Image) == 0 || len(in.Image) > MaxEvidenceImage:
			v.Add("image", "must hold 1 to %d bytes", MaxEvidenceImage)
		case imageType(in.Image) == "":
			v.Add("image", "must be a JPEG or PNG image")
		}
		if in.Location != nil {
			v.Add("location", "is only for location evidence")
		}
	case EvidenceLocation:
		if in.Location == nil {
			v.Add("location", "is required for location evidence")
		} else {
			checkGeoPoint(&v, "location", in.Location)
		}
		if in.ImageSet {
			v.Add("image", "is only for face and selfie evidence")
		}
	}
	now := s.Now()
	if in.CapturedAt != nil && (in.CapturedAt.After(now.Add(MaxPunchAhead)) || in.CapturedAt.Before(now.Add(-MaxPunchAge))) {
		v.Add("captured_at", "is not within the last 400 days")
	}
	if in.AttendanceEventID != "" && checkID(&v, "attendance_event_id", ids.AttendanceEvent, in.AttendanceEventID) {
		e, err := s.store.Punch(ctx, t, in.AttendanceEventID)
		switch {
		case errors.Is(err, ErrNotFound):
			v.Add("attendance_event_id", "no attendance event with this ID")
		case err != nil:
			return err
		case e.PersonID != personID:
			v.Add("attendance_event_id", "this attendance event is another person's")
		}
	}
	return v.Err()
}

// AddEvidence records evidence for a person. Where the organisation
// records the kind only with consent and the person has not given it (or
// withdrew it), *ConsentError; evidence the organisation requires never
// returns it.
func (s *Service) AddEvidence(ctx context.Context, t Tenant, personID string, in EvidenceInput) (Evidence, error) {
	if _, err := s.store.Person(ctx, t, personID); err != nil {
		return Evidence{}, err
	}
	if err := s.ValidateEvidence(ctx, t, personID, in); err != nil {
		return Evidence{}, err
	}
	now := s.Now()
	kind := EvidenceKind(in.Kind)
	e := Evidence{ID: ids.New(ids.Evidence), Tenant: t, PersonID: personID, Kind: kind, AttendanceEventID: in.AttendanceEventID,
		CapturedAt: now, Image: in.Image, ContentType: imageType(in.Image), Location: in.Location, CreatedAt: now}
	if in.CapturedAt != nil {
		e.CapturedAt = in.CapturedAt.UTC().Truncate(time.Microsecond)
	}
	err := s.store.Attendance(ctx, t, func(tx AttendanceTx) error {
		if err := tx.LockPerson(personID); err != nil {
			return err
		}
		st, err := s.settings(tx, t, now)
		if err != nil {
			return err
		}
		switch st.Evidence[kind] {
		case EvidenceRequired:
			e.Basis = EvidenceRequired
		case EvidenceConsent:
			if _, given, err := tx.Consent(personID, kind); err != nil {
				return err
			} else if !given {
				return &ConsentError{Kind: kind}
			}
			e.Basis = EvidenceConsent
		default:
			var v ValidationError
			v.Add("kind", "this organisation does not record %s evidence (attendance settings)", kind)
			return &v
		}
		if err := tx.InsertEvidence(e); err != nil {
			return err
		}
		return respond(ctx, e)
	})
	return e, err
}

// Punch returns one punch.
func (s *Service) Punch(ctx context.Context, t Tenant, id string) (AttendanceEvent, error) {
	return s.store.Punch(ctx, t, id)
}

// Punches returns a page of punches, newest first.
func (s *Service) Punches(ctx context.Context, t Tenant, f PunchFilter, p Page) ([]AttendanceEvent, bool, error) {
	return s.store.ListPunches(ctx, t, f, p)
}
