package httpapi

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/shared/ids"
)

// Attendance: punches, day summaries, timesheet periods and timesheets,
// the organisation's attendance settings, a person's consent and evidence
// (docs/decisions.md, "Attendance").

func dateStr(d cloud.Date) string { return d.String() }

// day reads a YYYY-MM-DD date.
func (q *query) day(name string) *cloud.Date {
	v, ok := q.get(name)
	if !ok {
		return nil
	}
	d, err := cloud.ParseDate(v)
	if err != nil || d.Year < 2000 || d.Year > 9999 {
		q.errs.add("query."+name, "must be a date YYYY-MM-DD")
		return nil
	}
	return &d
}

// number reads a JSON number.
func (b *body) number(name string) cloud.Optional[float64] {
	raw, ok, isNull := b.take(name)
	if !ok {
		return cloud.Optional[float64]{}
	}
	var v float64
	if isNull || json.Unmarshal(raw, &v) != nil {
		b.errs.add(b.loc(name), "must be a number")
		return cloud.Optional[float64]{}
	}
	return cloud.Some(v)
}

// required adds a problem when o was left out.
func required[T any](b *body, name string, o cloud.Optional[T]) T {
	if !o.Set {
		loc := b.loc(name)
		for _, e := range *b.errs {
			if e.Location == loc {
				return o.Value // present and wrong: reported already
			}
		}
		b.errs.add(loc, "is required")
	}
	return o.Value
}

// geoPoint reads {latitude, longitude, accuracy_m}.
func geoPoint(b *body) *cloud.GeoPoint {
	var g cloud.GeoPoint
	g.Latitude = required(b, "latitude", b.number("latitude"))
	g.Longitude = required(b, "longitude", b.number("longitude"))
	g.AccuracyM = b.number("accuracy_m").Value
	return &g
}

type geoPointJSON struct {
	Latitude  float64  `json:"latitude"`
	Longitude float64  `json:"longitude"`
	AccuracyM *float64 `json:"accuracy_m"`
}

func renderGeoPoint(g *cloud.GeoPoint) *geoPointJSON {
	if g == nil {
		return nil
	}
	out := &geoPointJSON{Latitude: g.Latitude, Longitude: g.Longitude}
	if g.AccuracyM > 0 {
		a := g.AccuracyM
		out.AccuracyM = &a
	}
	return out
}

type wifiJSON struct {
	SSID  *string `json:"ssid"`
	BSSID *string `json:"bssid"`
}

func renderWifi(w *cloud.WifiNetwork) *wifiJSON {
	if w == nil {
		return nil
	}
	return &wifiJSON{SSID: nullable(w.SSID), BSSID: nullable(w.BSSID)}
}

// Sites' attendance zone: geofence and wifi_networks.

type geofenceJSON struct {
	Latitude  float64 `json:"latitude"`
	Longitude float64 `json:"longitude"`
	RadiusM   float64 `json:"radius_m"`
}

func renderZone(z *cloud.AttendanceZone) (*geofenceJSON, []wifiJSON) {
	nets := []wifiJSON{}
	if z == nil {
		return nil, nets
	}
	var g *geofenceJSON
	if z.Geofence != nil {
		g = &geofenceJSON{Latitude: z.Geofence.Latitude, Longitude: z.Geofence.Longitude, RadiusM: z.Geofence.RadiusM}
	}
	for _, n := range z.Wifi {
		nets = append(nets, *renderWifi(&n))
	}
	return g, nets
}

// parseZone reads a site's geofence (object or null) and wifi_networks.
func parseZone(b *body, in *cloud.SiteInput) {
	var g cloud.Geofence
	present, isNull := b.object("geofence", true, func(gb *body) {
		g.Latitude = required(gb, "latitude", gb.number("latitude"))
		g.Longitude = required(gb, "longitude", gb.number("longitude"))
		g.RadiusM = required(gb, "radius_m", gb.number("radius_m"))
	})
	switch {
	case present && isNull:
		in.Geofence = cloud.Some[*cloud.Geofence](nil)
	case present:
		in.Geofence = cloud.Some(&g)
	}
	nets := []cloud.WifiNetwork{}
	if _, ok := b.objects("wifi_networks", func(_ int, nb *body) {
		nets = append(nets, cloud.WifiNetwork{SSID: required(nb, "ssid", nb.str("ssid")), BSSID: nb.nullableStr("bssid").Value})
	}); ok {
		in.Wifi = cloud.Some(nets)
	}
}

// Punches.

type punchJSON struct {
	ID               string        `json:"id"`
	PersonID         string        `json:"person_id"`
	SiteID           string        `json:"site_id"`
	GateID           *string       `json:"gate_id"`
	Kind             string        `json:"kind"`
	Source           string        `json:"source"`
	OccurredAt       string        `json:"occurred_at"`
	ReceivedAt       string        `json:"received_at"`
	SentAt           *string       `json:"sent_at"`
	Date             string        `json:"date"`
	ClockSkewSeconds *int          `json:"clock_skew_seconds"`
	ClockSkewed      bool          `json:"clock_skewed"`
	Location         *geoPointJSON `json:"location"`
	Wifi             *wifiJSON     `json:"wifi"`
	DeviceID         *string       `json:"device_id"`
	EdgeID           *string       `json:"edge_id"`
	CreatedAt        string        `json:"created_at"`
}

func renderPunch(e cloud.AttendanceEvent) punchJSON {
	return punchJSON{ID: e.ID, PersonID: e.PersonID, SiteID: e.SiteID, GateID: nullable(e.GateID), Kind: string(e.Kind), Source: string(e.Source),
		OccurredAt: ts(e.OccurredAt), ReceivedAt: ts(e.ReceivedAt), SentAt: tsPtr(e.SentAt), Date: dateStr(e.Day),
		ClockSkewSeconds: e.SkewSeconds, ClockSkewed: e.ClockSkewed(), Location: renderGeoPoint(e.Location), Wifi: renderWifi(e.Wifi),
		DeviceID: nullable(e.DeviceID), EdgeID: nullable(e.EdgeID), CreatedAt: ts(e.CreatedAt)}
}

func parsePunch(b *body) cloud.PunchInput {
	in := cloud.PunchInput{
		PersonID: required(b, "person_id", b.str("person_id")),
		SiteID:   required(b, "site_id", b.str("site_id")),
		GateID:   b.nullableStr("gate_id").Value,
		Kind:     required(b, "kind", b.str("kind")),
		Source:   required(b, "source", b.str("source")),
		DeviceID: b.nullableStr("device_id").Value,
	}
	in.OccurredAt = required(b, "occurred_at", b.timestamp("occurred_at", false))
	in.SentAt = b.timestamp("sent_at", true).Value
	if present, isNull := b.object("location", true, func(lb *body) { in.Location = geoPoint(lb) }); present && isNull {
		in.Location = nil
	}
	var w cloud.WifiNetwork
	if present, isNull := b.object("wifi", true, func(wb *body) {
		w.SSID = wb.nullableStr("ssid").Value
		w.BSSID = wb.nullableStr("bssid").Value
	}); present && !isNull {
		in.Wifi = &w
	}
	return in
}

func (s *Server) createPunch(c echo.Context) error {
	t := tenant(c)
	in, err := decode(c, false, parsePunch, func(ctx context.Context, in cloud.PunchInput) error { return s.svc.ValidatePunch(ctx, t, in) })
	if err != nil {
		return err
	}
	send := answer(c, func(p cloud.RecordedPunch) (int, string, any) {
		status := http.StatusCreated
		if !p.New {
			status = http.StatusOK // the same punch within a minute: the one recorded, not a second
		}
		return status, "/v1/attendance-events/" + p.Event.ID, renderPunch(p.Event)
	})
	e, isNew, err := s.svc.RecordPunch(c.Request().Context(), t, in)
	if err != nil {
		return err
	}
	return send(cloud.RecordedPunch{Event: e, New: isNew})
}

func (s *Server) getPunch(c echo.Context) error {
	id, err := pathID(c, "attendance_event_id", ids.AttendanceEvent)
	if err != nil {
		return err
	}
	e, err := s.svc.Punch(c.Request().Context(), tenant(c), id)
	if err != nil {
		return notFoundAs(err, "attendance event", id)
	}
	return c.JSON(http.StatusOK, renderPunch(e))
}

func (s *Server) listPunches(c echo.Context) error {
	q, err := parseQuery(c, "limit", "cursor", "person_id", "site_id", "from", "to")
	if err != nil {
		return err
	}
	t := tenant(c)
	f := cloud.PunchFilter{PersonID: q.id("person_id", ids.Person), SiteID: q.id("site_id", ids.Site), From: q.timestamp("from"), To: q.timestamp("to")}
	if f.From != nil && f.To != nil && !f.To.After(*f.From) {
		q.errs.add("query.to", "must be after from")
	}
	scope := strings.Join([]string{"punches", t.OrgID, string(t.Mode), f.PersonID, f.SiteID, q.values.Get("from"), q.values.Get("to")}, "\x00")
	p := s.page(q, scope)
	if err := s.checkFilters(c.Request().Context(), q, t); err != nil {
		return err
	}
	rows, more, err := s.svc.Punches(c.Request().Context(), t, f, p)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, pageOf(s, rows, more, scope, func(r cloud.AttendanceEvent) cloud.Position {
		return cloud.Position{CreatedAt: r.OccurredAt, ID: r.ID}
	}, renderPunch))
}

// Day summaries.

type summaryJSON struct {
	PersonID string   `json:"person_id"`
	Date     string   `json:"date"`
	SiteIDs  []string `json:"site_ids"`
	FirstIn  *string  `json:"first_in"`
	LastOut  *string  `json:"last_out"`
	Minutes  int      `json:"minutes"`
	Punches  int      `json:"punches"`
	Unpaired int      `json:"unpaired"`
}

func renderSummary(d cloud.DaySummary) summaryJSON {
	return summaryJSON{PersonID: d.PersonID, Date: dateStr(d.Day), SiteIDs: d.SiteIDs, FirstIn: tsPtr(d.FirstIn), LastOut: tsPtr(d.LastOut),
		Minutes: d.Minutes, Punches: d.Punches, Unpaired: d.Unpaired}
}

func (s *Server) listSummaries(c echo.Context) error {
	q, err := parseQuery(c, "limit", "cursor", "person_id", "site_id", "from", "to")
	if err != nil {
		return err
	}
	t := tenant(c)
	f := cloud.SummaryFilter{PersonID: q.id("person_id", ids.Person), SiteID: q.id("site_id", ids.Site)}
	from, to := q.day("from"), q.day("to")
	if _, ok := q.get("from"); !ok {
		q.errs.add("query.from", "is required: the first day, YYYY-MM-DD")
	}
	if _, ok := q.get("to"); !ok {
		q.errs.add("query.to", "is required: the last day, YYYY-MM-DD")
	}
	if from != nil && to != nil {
		f.From, f.To = *from, *to
		switch n := cloud.DaysBetween(f.From, f.To); {
		case n < 0:
			q.errs.add("query.to", "must be on or after from")
		case n >= cloud.MaxSummaryDays:
			q.errs.add("query.to", "must be less than %d days after from", cloud.MaxSummaryDays)
		}
	}
	scope := strings.Join([]string{"summaries", t.OrgID, string(t.Mode), f.PersonID, f.SiteID, q.values.Get("from"), q.values.Get("to")}, "\x00")
	p := s.page(q, scope)
	if err := s.checkFilters(c.Request().Context(), q, t); err != nil {
		return err
	}
	rows, more, err := s.svc.Summaries(c.Request().Context(), t, f, p)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, pageOf(s, rows, more, scope, func(r cloud.DaySummary) cloud.Position {
		return cloud.Position{CreatedAt: r.Day.Time(), ID: r.PersonID}
	}, renderSummary))
}

// Timesheet periods.

type countsJSON struct {
	Open      int `json:"open"`
	ToConfirm int `json:"to_confirm"`
	ToApprove int `json:"to_approve"`
	Approved  int `json:"approved"`
}

type periodJSON struct {
	ID         string     `json:"id"`
	Kind       string     `json:"kind"`
	StartsOn   string     `json:"starts_on"`
	EndsOn     string     `json:"ends_on"`
	Label      string     `json:"label"`
	PayrollOn  string     `json:"payroll_on"`
	Status     string     `json:"status"`
	Counts     countsJSON `json:"counts"`
	ClosedAt   *string    `json:"closed_at"`
	ApprovedAt *string    `json:"approved_at"`
	CreatedAt  string     `json:"created_at"`
}

func renderPeriod(today cloud.Date) func(p cloud.TimesheetPeriod) periodJSON {
	return func(p cloud.TimesheetPeriod) periodJSON {
		return periodJSON{ID: p.ID, Kind: string(p.Kind), StartsOn: dateStr(p.StartsOn), EndsOn: dateStr(p.EndsOn), Label: p.Label,
			PayrollOn: dateStr(p.PayrollOn), Status: string(p.Status(today)),
			Counts:   countsJSON{Open: p.Counts.Open, ToConfirm: p.Counts.ToConfirm, ToApprove: p.Counts.ToApprove, Approved: p.Counts.Approved},
			ClosedAt: tsPtr(p.ClosedAt), ApprovedAt: tsPtr(p.ApprovedAt), CreatedAt: ts(p.CreatedAt)}
	}
}

func (s *Server) listTimesheetPeriods(c echo.Context) error {
	q, err := parseQuery(c, "limit", "cursor", "from", "to")
	if err != nil {
		return err
	}
	t := tenant(c)
	f := cloud.PeriodFilter{From: q.day("from"), To: q.day("to")}
	scope := strings.Join([]string{"periods", t.OrgID, string(t.Mode), q.values.Get("from"), q.values.Get("to")}, "\x00")
	p := s.page(q, scope)
	if err := s.checkFilters(c.Request().Context(), q, t); err != nil {
		return err
	}
	rows, more, today, err := s.svc.TimesheetPeriods(c.Request().Context(), t, f, p)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, pageOf(s, rows, more, scope, func(r cloud.TimesheetPeriod) cloud.Position {
		return cloud.Position{CreatedAt: r.StartsOn.Time(), ID: r.ID}
	}, renderPeriod(today)))
}

func (s *Server) getTimesheetPeriod(c echo.Context) error {
	id, err := pathID(c, "timesheet_period_id", ids.TimesheetPeriod)
	if err != nil {
		return err
	}
	p, today, err := s.svc.TimesheetPeriod(c.Request().Context(), tenant(c), id)
	if err != nil {
		return notFoundAs(err, "timesheet period", id)
	}
	return c.JSON(http.StatusOK, renderPeriod(today)(p))
}

// Timesheets.

type timesheetJSON struct {
	ID          string         `json:"id"`
	PeriodID    string         `json:"period_id"`
	PersonID    string         `json:"person_id"`
	Status      string         `json:"status"`
	Minutes     int            `json:"minutes"`
	DaysWorked  int            `json:"days_worked"`
	Punches     int            `json:"punches"`
	Unpaired    int            `json:"unpaired"`
	ConfirmedAt *string        `json:"confirmed_at"`
	ApprovedAt  *string        `json:"approved_at"`
	CreatedAt   string         `json:"created_at"`
	UpdatedAt   string         `json:"updated_at"`
	Days        *[]summaryJSON `json:"days,omitempty"` // single-timesheet responses only; empty is []
}

func renderTimesheet(t cloud.Timesheet) timesheetJSON {
	return timesheetJSON{ID: t.ID, PeriodID: t.PeriodID, PersonID: t.PersonID, Status: string(t.Status), Minutes: t.Totals.Minutes,
		DaysWorked: t.Totals.Days, Punches: t.Totals.Punches, Unpaired: t.Totals.Unpaired, ConfirmedAt: tsPtr(t.ConfirmedAt),
		ApprovedAt: tsPtr(t.ApprovedAt), CreatedAt: ts(t.CreatedAt), UpdatedAt: ts(t.UpdatedAt)}
}

func renderTimesheetView(v cloud.TimesheetView) timesheetJSON {
	out := renderTimesheet(v.Timesheet)
	days := make([]summaryJSON, len(v.Days))
	for i, d := range v.Days {
		days[i] = renderSummary(d)
	}
	out.Days = &days
	return out
}

var timesheetStatuses = []string{string(cloud.TimesheetOpen), string(cloud.TimesheetToConfirm), string(cloud.TimesheetToApprove), string(cloud.TimesheetApproved)}

func (s *Server) listTimesheets(c echo.Context) error {
	q, err := parseQuery(c, "limit", "cursor", "period_id", "person_id", "status")
	if err != nil {
		return err
	}
	t := tenant(c)
	f := cloud.TimesheetFilter{PeriodID: q.id("period_id", ids.TimesheetPeriod), PersonID: q.id("person_id", ids.Person)}
	if v, ok := q.get("status"); ok {
		if !cloud.TimesheetStatus(v).Valid() {
			q.errs.add("query.status", "must be one of %s", strings.Join(timesheetStatuses, ", "))
		}
		f.Status = cloud.TimesheetStatus(v)
	}
	scope := strings.Join([]string{"timesheets", t.OrgID, string(t.Mode), f.PeriodID, f.PersonID, string(f.Status)}, "\x00")
	p := s.page(q, scope)
	if err := s.checkFilters(c.Request().Context(), q, t); err != nil {
		return err
	}
	rows, more, err := s.svc.Timesheets(c.Request().Context(), t, f, p)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, pageOf(s, rows, more, scope, func(r cloud.Timesheet) cloud.Position {
		return cloud.Position{CreatedAt: r.CreatedAt, ID: r.ID}
	}, renderTimesheet))
}

func (s *Server) getTimesheet(c echo.Context) error {
	id, err := pathID(c, "timesheet_id", ids.Timesheet)
	if err != nil {
		return err
	}
	v, err := s.svc.Timesheet(c.Request().Context(), tenant(c), id)
	if err != nil {
		return notFoundAs(err, "timesheet", id)
	}
	return c.JSON(http.StatusOK, renderTimesheetView(v))
}

func (s *Server) moveTimesheet(approve bool) echo.HandlerFunc {
	return func(c echo.Context) error {
		id, err := pathID(c, "timesheet_id", ids.Timesheet)
		if err != nil {
			return err
		}
		b, err := readBody(c, true)
		if err != nil {
			return err
		}
		if err := b.done(); err != nil {
			return err
		}
		move := s.svc.ConfirmTimesheet
		if approve {
			move = s.svc.ApproveTimesheet
		}
		send := answer(c, answerOK(renderTimesheetView))
		v, err := move(c.Request().Context(), tenant(c), id)
		if err != nil {
			return notFoundAs(err, "timesheet", id)
		}
		return send(v)
	}
}

// Settings.

type periodRulesJSON struct {
	Kind        string  `json:"kind"`
	Weekday     *string `json:"weekday"`
	Anchor      *string `json:"anchor"`
	MonthDay    *int    `json:"month_day"`
	PayrollDays int     `json:"payroll_days"`
}

type attendanceSettingsJSON struct {
	Timezone  string            `json:"timezone"`
	Periods   periodRulesJSON   `json:"periods"`
	Evidence  map[string]string `json:"evidence"`
	UpdatedAt *string           `json:"updated_at"`
}

func renderAttendanceSettings(st cloud.AttendanceSettings, stored bool) attendanceSettingsJSON {
	r := st.Periods
	out := attendanceSettingsJSON{Timezone: st.Timezone, Evidence: map[string]string{},
		Periods: periodRulesJSON{Kind: string(r.Kind), PayrollDays: r.PayrollDays}}
	switch r.Kind {
	case cloud.PeriodWeekly, cloud.PeriodFortnightly:
		wd := strings.ToLower(r.Weekday.String())
		out.Periods.Weekday = &wd
		if r.Kind == cloud.PeriodFortnightly {
			a := r.Anchor.String()
			out.Periods.Anchor = &a
		}
	case cloud.PeriodMonthly:
		md := max(r.MonthDay, 1)
		out.Periods.MonthDay = &md
	}
	for _, k := range cloud.EvidenceKinds {
		p := st.Evidence[k]
		if p == "" {
			p = cloud.EvidenceConsent
		}
		out.Evidence[string(k)] = string(p)
	}
	if stored {
		out.UpdatedAt = tsPtr(&st.UpdatedAt)
	}
	return out
}

func parseAttendanceSettings(b *body) cloud.AttendanceSettingsInput {
	var in cloud.AttendanceSettingsInput
	in.Timezone = b.str("timezone")
	var r cloud.PeriodRules
	if present, isNull := b.object("periods", false, func(pb *body) {
		r.Kind = cloud.PeriodKind(required(pb, "kind", pb.str("kind")))
		if wd := pb.str("weekday"); wd.Set {
			d, ok := cloud.ParseWeekday(wd.Value)
			if !ok {
				pb.errs.add(pb.loc("weekday"), "must be a weekday in lower case, such as monday")
			}
			r.Weekday = d
		} else if r.Kind == cloud.PeriodWeekly || r.Kind == cloud.PeriodFortnightly {
			pb.errs.add(pb.loc("weekday"), "is required for %s periods", r.Kind)
		}
		if a := pb.str("anchor"); a.Set {
			d, err := cloud.ParseDate(a.Value)
			if err != nil {
				pb.errs.add(pb.loc("anchor"), "must be a date YYYY-MM-DD")
			}
			r.Anchor = d
		}
		r.MonthDay = pb.integer("month_day", 1, 28).Value
		if r.Kind == cloud.PeriodMonthly && r.MonthDay == 0 {
			r.MonthDay = 1
		}
		r.PayrollDays = pb.integer("payroll_days", -28, 62).Value
	}); present && !isNull {
		in.Periods = cloud.Some(r)
	}
	b.object("evidence", false, func(eb *body) {
		in.Evidence = map[string]string{}
		for name := range eb.fields {
			in.Evidence[name] = eb.str(name).Value
		}
	})
	return in
}

func (s *Server) getAttendanceSettings(c echo.Context) error {
	t := tenant(c)
	st, err := s.svc.Store().AttendanceSettings(c.Request().Context(), t)
	stored := err == nil
	if !stored {
		if st, err = s.svc.AttendanceSettings(c.Request().Context(), t); err != nil {
			return err
		}
	}
	return c.JSON(http.StatusOK, renderAttendanceSettings(st, stored))
}

func (s *Server) updateAttendanceSettings(c echo.Context) error {
	t := tenant(c)
	in, err := decode(c, false, parseAttendanceSettings, func(ctx context.Context, in cloud.AttendanceSettingsInput) error {
		return s.svc.ValidateAttendanceSettings(ctx, t, in)
	})
	if err != nil {
		return err
	}
	st, err := s.svc.UpdateAttendanceSettings(c.Request().Context(), t, in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, renderAttendanceSettings(st, true))
}

// Consent.

type consentJSON struct {
	Given     bool    `json:"given"`
	UpdatedAt *string `json:"updated_at"`
}

type consentsJSON struct {
	PersonID string      `json:"person_id"`
	Face     consentJSON `json:"face"`
	Selfie   consentJSON `json:"selfie"`
	Location consentJSON `json:"location"`
}

func renderConsents(personID string, m map[cloud.EvidenceKind]cloud.Consent) consentsJSON {
	one := func(k cloud.EvidenceKind) consentJSON {
		c, ok := m[k]
		if !ok {
			return consentJSON{}
		}
		return consentJSON{Given: c.Given, UpdatedAt: tsPtr(&c.UpdatedAt)}
	}
	return consentsJSON{PersonID: personID, Face: one(cloud.EvidenceFace), Selfie: one(cloud.EvidenceSelfie), Location: one(cloud.EvidenceLocation)}
}

func (s *Server) getConsent(c echo.Context) error {
	id, err := pathID(c, "person_id", ids.Person)
	if err != nil {
		return err
	}
	m, err := s.svc.PersonConsents(c.Request().Context(), tenant(c), id)
	if err != nil {
		return notFoundAs(err, "person", id)
	}
	return c.JSON(http.StatusOK, renderConsents(id, m))
}

func (s *Server) updateConsent(c echo.Context) error {
	id, err := pathID(c, "person_id", ids.Person)
	if err != nil {
		return err
	}
	b, err := readBody(c, false)
	if err != nil {
		return err
	}
	given := map[cloud.EvidenceKind]bool{}
	for _, k := range cloud.EvidenceKinds {
		if v := b.boolean(string(k)); v.Set {
			given[k] = v.Value
		}
	}
	if err := b.done(); err != nil {
		return err
	}
	m, err := s.svc.SetConsents(c.Request().Context(), cloud.ActorOf(principal(c)), id, given)
	if err != nil {
		return notFoundAs(err, "person", id)
	}
	return c.JSON(http.StatusOK, renderConsents(id, m))
}

// Evidence.

type evidenceImageJSON struct {
	ContentType string `json:"content_type"`
	Bytes       int    `json:"bytes"`
}

type evidenceJSON struct {
	ID                string             `json:"id"`
	PersonID          string             `json:"person_id"`
	Kind              string             `json:"kind"`
	Basis             string             `json:"basis"`
	AttendanceEventID *string            `json:"attendance_event_id"`
	CapturedAt        string             `json:"captured_at"`
	Image             *evidenceImageJSON `json:"image"`
	Location          *geoPointJSON      `json:"location"`
	CreatedAt         string             `json:"created_at"`
}

func renderEvidence(e cloud.Evidence) evidenceJSON {
	out := evidenceJSON{ID: e.ID, PersonID: e.PersonID, Kind: string(e.Kind), Basis: string(e.Basis),
		AttendanceEventID: nullable(e.AttendanceEventID), CapturedAt: ts(e.CapturedAt), Location: renderGeoPoint(e.Location), CreatedAt: ts(e.CreatedAt)}
	if e.ContentType != "" {
		out.Image = &evidenceImageJSON{ContentType: e.ContentType, Bytes: len(e.Image)}
	}
	return out
}

func parseEvidence(b *body) cloud.EvidenceInput {
	in := cloud.EvidenceInput{Kind: required(b, "kind", b.str("kind")), AttendanceEventID: b.nullableStr("attendance_event_id").Value}
	in.CapturedAt = b.timestamp("captured_at", false).Value
	if img := b.str("image"); img.Set {
		in.ImageSet = true
		raw, err := base64.StdEncoding.DecodeString(img.Value)
		if err != nil {
			b.errs.add(b.loc("image"), "must be standard base64 (RFC 4648, with padding)")
		}
		in.Image = raw
	}
	b.object("location", false, func(lb *body) { in.Location = geoPoint(lb) })
	return in
}

func (s *Server) createEvidence(c echo.Context) error {
	id, err := pathID(c, "person_id", ids.Person)
	if err != nil {
		return err
	}
	t := tenant(c)
	in, err := decode(c, false, parseEvidence, func(ctx context.Context, in cloud.EvidenceInput) error {
		return s.svc.ValidateEvidence(ctx, t, id, in)
	})
	if err != nil {
		return err
	}
	send := answer(c, func(e cloud.Evidence) (int, string, any) { return http.StatusCreated, "", renderEvidence(e) })
	e, err := s.svc.AddEvidence(c.Request().Context(), t, id, in)
	if err != nil {
		return notFoundAs(err, "person", id)
	}
	return send(e)
}
