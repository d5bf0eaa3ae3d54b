package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/svc-vms/svc/cloud"
)

// Attendance records (docs/decisions.md, "Attendance"): one write
// transaction at a time through attTx, reads through the pool.

const punchCols = `id, org_id, mode, person_id, site_id, gate_id, kind, source, occurred_at, received_at, sent_at, day,
	skew_seconds, location, wifi, device_id, edge_id, fact_id, created_at`

func scanPunch(r scanner) (cloud.AttendanceEvent, error) {
	var e cloud.AttendanceEvent
	var mode, kind, source, day string
	var gate, loc, wifi, device, edge, fact sql.NullString
	var occurred, received, created int64
	var sent, skew sql.NullInt64
	err := r.Scan(&e.ID, &e.Tenant.OrgID, &mode, &e.PersonID, &e.SiteID, &gate, &kind, &source, &occurred, &received, &sent, &day,
		&skew, &loc, &wifi, &device, &edge, &fact, &created)
	if err != nil {
		return e, err
	}
	e.Tenant.Mode, e.Kind, e.Source = cloud.Mode(mode), cloud.PunchKind(kind), cloud.PunchSource(source)
	e.GateID, e.DeviceID, e.EdgeID, e.FactID = str(gate), str(device), str(edge), str(fact)
	e.OccurredAt, e.ReceivedAt, e.CreatedAt, e.SentAt = fromMicros(occurred), fromMicros(received), fromMicros(created), fromNullMicros(sent)
	if e.Day, err = cloud.ParseDate(day); err != nil {
		return e, fmt.Errorf("punch %s: day: %w", e.ID, err)
	}
	if skew.Valid {
		s := int(skew.Int64)
		e.SkewSeconds = &s
	}
	if loc.Valid {
		e.Location = new(cloud.GeoPoint)
		if err := json.Unmarshal([]byte(loc.String), e.Location); err != nil {
			return e, fmt.Errorf("punch %s: location: %w", e.ID, err)
		}
	}
	if wifi.Valid {
		e.Wifi = new(cloud.WifiNetwork)
		if err := json.Unmarshal([]byte(wifi.String), e.Wifi); err != nil {
			return e, fmt.Errorf("punch %s: wifi: %w", e.ID, err)
		}
	}
	return e, nil
}

// jsonOrNull is v's JSON, or NULL for a nil pointer.
func jsonOrNull[T any](v *T) (any, error) {
	if v == nil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return string(b), nil
}

func collectPunches(rows *sql.Rows, err error) (map[string][]cloud.AttendanceEvent, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string][]cloud.AttendanceEvent{}
	for rows.Next() {
		e, err := scanPunch(rows)
		if err != nil {
			return nil, err
		}
		out[e.PersonID] = append(out[e.PersonID], e)
	}
	return out, rows.Err()
}

const periodCols = `id, org_id, mode, kind, starts_on, ends_on, payroll_on, label, closes_at, closed_at, approved_at, created_at`

func scanPeriod(r scanner) (cloud.TimesheetPeriod, error) {
	var p cloud.TimesheetPeriod
	var mode, kind, starts, ends, payroll string
	var closes, created int64
	var closed, approved sql.NullInt64
	if err := r.Scan(&p.ID, &p.Tenant.OrgID, &mode, &kind, &starts, &ends, &payroll, &p.Label, &closes, &closed, &approved, &created); err != nil {
		return p, err
	}
	p.Tenant.Mode, p.Kind = cloud.Mode(mode), cloud.PeriodKind(kind)
	p.ClosesAt, p.CreatedAt, p.ClosedAt, p.ApprovedAt = fromMicros(closes), fromMicros(created), fromNullMicros(closed), fromNullMicros(approved)
	var err error
	if p.StartsOn, err = cloud.ParseDate(starts); err == nil {
		if p.EndsOn, err = cloud.ParseDate(ends); err == nil {
			p.PayrollOn, err = cloud.ParseDate(payroll)
		}
	}
	if err != nil {
		return p, fmt.Errorf("period %s: %w", p.ID, err)
	}
	return p, nil
}

const timesheetCols = `id, org_id, mode, period_id, person_id, status, minutes, days, punches, unpaired, confirmed_at, approved_at, created_at, updated_at`

func scanTimesheet(r scanner) (cloud.Timesheet, error) {
	var ts cloud.Timesheet
	var mode, status string
	var created, updated int64
	var confirmed, approved sql.NullInt64
	err := r.Scan(&ts.ID, &ts.Tenant.OrgID, &mode, &ts.PeriodID, &ts.PersonID, &status, &ts.Totals.Minutes, &ts.Totals.Days,
		&ts.Totals.Punches, &ts.Totals.Unpaired, &confirmed, &approved, &created, &updated)
	if err != nil {
		return ts, err
	}
	ts.Tenant.Mode, ts.Status = cloud.Mode(mode), cloud.TimesheetStatus(status)
	ts.ConfirmedAt, ts.ApprovedAt, ts.CreatedAt, ts.UpdatedAt = fromNullMicros(confirmed), fromNullMicros(approved), fromMicros(created), fromMicros(updated)
	return ts, nil
}

// Attendance implements cloud.Store.
func (s *Store) Attendance(ctx context.Context, t cloud.Tenant, fn func(cloud.AttendanceTx) error) error {
	return s.tx(ctx, func(tx *sql.Tx) error { return fn(&attTx{ctx: ctx, tx: tx, t: t}) })
}

// attTx is cloud.AttendanceTx on a SQLite write transaction. SQLite has
// one writer at a time, so LockPerson needs no lock, only the check.
type attTx struct {
	ctx context.Context
	tx  *sql.Tx
	t   cloud.Tenant
}

func (a *attTx) args(more ...any) []any { return append([]any{a.t.OrgID, string(a.t.Mode)}, more...) }

func (a *attTx) LockPerson(id string) error {
	var one int
	err := a.tx.QueryRowContext(a.ctx, `SELECT 1 FROM people WHERE org_id = ? AND mode = ? AND id = ?`, a.args(id)...).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("person %s: %w", id, cloud.ErrNotFound)
	}
	return err
}

func (a *attTx) LockPeriods() error { return nil }

func (a *attTx) Settings() (cloud.AttendanceSettings, bool, error) {
	st, err := readSettings(a.ctx, a.tx, a.t)
	if errors.Is(err, cloud.ErrNotFound) {
		return st, false, nil
	}
	return st, err == nil, err
}

func readSettings(ctx context.Context, db interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, t cloud.Tenant) (cloud.AttendanceSettings, error) {
	st := cloud.AttendanceSettings{Tenant: t}
	var rules, evidence string
	var created, updated int64
	err := db.QueryRowContext(ctx, `SELECT timezone, rules, evidence, created_at, updated_at FROM attendance_settings WHERE org_id = ? AND mode = ?`,
		t.OrgID, string(t.Mode)).Scan(&st.Timezone, &rules, &evidence, &created, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return st, cloud.ErrNotFound
	}
	if err != nil {
		return st, err
	}
	st.CreatedAt, st.UpdatedAt = fromMicros(created), fromMicros(updated)
	if err := cloud.DecodePeriodRules([]byte(rules), &st.Periods); err != nil {
		return st, err
	}
	if err := json.Unmarshal([]byte(evidence), &st.Evidence); err != nil {
		return st, fmt.Errorf("attendance settings: evidence: %w", err)
	}
	return st, nil
}

func (a *attTx) PutSettings(st cloud.AttendanceSettings) error {
	rules, err := cloud.EncodePeriodRules(st.Periods)
	if err != nil {
		return err
	}
	evidence, err := json.Marshal(st.Evidence)
	if err != nil {
		return err
	}
	_, err = a.tx.ExecContext(a.ctx, `INSERT INTO attendance_settings (org_id, mode, timezone, rules, evidence, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (org_id, mode) DO UPDATE SET timezone = excluded.timezone, rules = excluded.rules, evidence = excluded.evidence,
			updated_at = excluded.updated_at`,
		a.args(st.Timezone, string(rules), string(evidence), micros(st.CreatedAt), micros(st.UpdatedAt))...)
	return err
}

func (a *attTx) PunchByFact(factID string) (cloud.AttendanceEvent, bool, error) {
	e, err := get(a.ctx, a.tx, scanPunch, `SELECT `+punchCols+` FROM attendance_events WHERE fact_id = ? AND org_id = ? AND mode = ?`,
		factID, a.t.OrgID, string(a.t.Mode))
	if errors.Is(err, cloud.ErrNotFound) {
		return e, false, nil
	}
	return e, err == nil, err
}

func (a *attTx) RepeatOf(e cloud.AttendanceEvent) (cloud.AttendanceEvent, bool, error) {
	from, to := micros(e.OccurredAt.Add(-cloud.PunchRepeat)), micros(e.OccurredAt.Add(cloud.PunchRepeat))
	r, err := get(a.ctx, a.tx, scanPunch, `SELECT `+punchCols+` FROM attendance_events
		WHERE org_id = ? AND mode = ? AND person_id = ? AND day BETWEEN ? AND ? AND site_id = ? AND coalesce(gate_id, '') = ?
			AND kind = ? AND source = ? AND occurred_at BETWEEN ? AND ?
		ORDER BY occurred_at, id LIMIT 1`,
		a.args(e.PersonID, e.Day.AddDays(-1).String(), e.Day.AddDays(1).String(), e.SiteID, e.GateID, string(e.Kind), string(e.Source), from, to)...)
	if errors.Is(err, cloud.ErrNotFound) {
		return r, false, nil
	}
	return r, err == nil, err
}

func (a *attTx) InsertPunch(e cloud.AttendanceEvent) error {
	loc, err := jsonOrNull(e.Location)
	if err != nil {
		return err
	}
	wifi, err := jsonOrNull(e.Wifi)
	if err != nil {
		return err
	}
	var skew any
	if e.SkewSeconds != nil {
		skew = *e.SkewSeconds
	}
	_, err = a.tx.ExecContext(a.ctx, `INSERT INTO attendance_events (`+punchCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		e.ID, e.Tenant.OrgID, string(e.Tenant.Mode), e.PersonID, e.SiteID, null(e.GateID), string(e.Kind), string(e.Source),
		micros(e.OccurredAt), micros(e.ReceivedAt), nullMicros(e.SentAt), e.Day.String(), skew, loc, wifi, null(e.DeviceID),
		null(e.EdgeID), null(e.FactID), micros(e.CreatedAt))
	return err
}

func (a *attTx) Punches(personID string, from, to cloud.Date) ([]cloud.AttendanceEvent, error) {
	m, err := collectPunches(a.tx.QueryContext(a.ctx, `SELECT `+punchCols+` FROM attendance_events
		WHERE org_id = ? AND mode = ? AND person_id = ? AND day BETWEEN ? AND ?`, a.args(personID, from.String(), to.String())...))
	return m[personID], err
}

func (a *attTx) PeriodPunches(from, to cloud.Date) (map[string][]cloud.AttendanceEvent, error) {
	return collectPunches(a.tx.QueryContext(a.ctx, `SELECT `+punchCols+` FROM attendance_events
		WHERE org_id = ? AND mode = ? AND day BETWEEN ? AND ?`, a.args(from.String(), to.String())...))
}

func (a *attTx) periods(query string, args ...any) ([]cloud.TimesheetPeriod, error) {
	rows, err := a.tx.QueryContext(a.ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []cloud.TimesheetPeriod
	for rows.Next() {
		p, err := scanPeriod(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

func (a *attTx) Periods(from, to cloud.Date) ([]cloud.TimesheetPeriod, error) {
	return a.periods(`SELECT `+periodCols+` FROM timesheet_periods WHERE org_id = ? AND mode = ? AND ends_on >= ? AND starts_on <= ?
		ORDER BY starts_on`, a.args(from.String(), to.String())...)
}

func (a *attTx) Period(id string) (cloud.TimesheetPeriod, error) {
	return get(a.ctx, a.tx, scanPeriod, `SELECT `+periodCols+` FROM timesheet_periods WHERE id = ? AND org_id = ? AND mode = ?`, id, a.t.OrgID, string(a.t.Mode))
}

func (a *attTx) LastPeriod() (cloud.TimesheetPeriod, bool, error) {
	p, err := get(a.ctx, a.tx, scanPeriod, `SELECT `+periodCols+` FROM timesheet_periods WHERE org_id = ? AND mode = ?
		ORDER BY starts_on DESC LIMIT 1`, a.args()...)
	if errors.Is(err, cloud.ErrNotFound) {
		return p, false, nil
	}
	return p, err == nil, err
}

func (a *attTx) InsertPeriod(p cloud.TimesheetPeriod) error {
	_, err := a.tx.ExecContext(a.ctx, `INSERT INTO timesheet_periods (`+periodCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		p.ID, p.Tenant.OrgID, string(p.Tenant.Mode), string(p.Kind), p.StartsOn.String(), p.EndsOn.String(), p.PayrollOn.String(),
		p.Label, micros(p.ClosesAt), nullMicros(p.ClosedAt), nullMicros(p.ApprovedAt), micros(p.CreatedAt))
	return err
}

func (a *attTx) DeletePeriodsFrom(day cloud.Date) (int, error) {
	res, err := a.tx.ExecContext(a.ctx, `DELETE FROM timesheet_periods WHERE org_id = ? AND mode = ? AND starts_on >= ?`, a.args(day.String())...)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

func (a *attTx) UpdatePeriod(p cloud.TimesheetPeriod) error {
	_, err := a.tx.ExecContext(a.ctx, `UPDATE timesheet_periods SET closed_at = ?, approved_at = ? WHERE org_id = ? AND mode = ? AND id = ?`,
		nullMicros(p.ClosedAt), nullMicros(p.ApprovedAt), a.t.OrgID, string(a.t.Mode), p.ID)
	return err
}

func (a *attTx) DuePeriods(now time.Time) ([]cloud.TimesheetPeriod, error) {
	return a.periods(`SELECT `+periodCols+` FROM timesheet_periods WHERE org_id = ? AND mode = ? AND closed_at IS NULL AND closes_at <= ?
		ORDER BY starts_on`, a.args(micros(now))...)
}

func (a *attTx) PeriodCounts(periodID string) (cloud.TimesheetCounts, error) {
	m, err := periodCounts(a.ctx, a.tx, []string{periodID})
	return m[periodID], err
}

func periodCounts(ctx context.Context, db querier, periodIDs []string) (map[string]cloud.TimesheetCounts, error) {
	out := map[string]cloud.TimesheetCounts{}
	if len(periodIDs) == 0 {
		return out, nil
	}
	args := make([]any, len(periodIDs))
	for i, id := range periodIDs {
		args[i] = id
	}
	rows, err := db.QueryContext(ctx, `SELECT period_id, status, count(*) FROM timesheets WHERE period_id IN (?`+
		strings.Repeat(", ?", len(periodIDs)-1)+`) GROUP BY period_id, status`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id, st string
		var n int
		if err := rows.Scan(&id, &st, &n); err != nil {
			return nil, err
		}
		c := out[id]
		c.Add(cloud.TimesheetStatus(st), n)
		out[id] = c
	}
	return out, rows.Err()
}

func (a *attTx) Timesheet(id string) (cloud.Timesheet, error) {
	return get(a.ctx, a.tx, scanTimesheet, `SELECT `+timesheetCols+` FROM timesheets WHERE org_id = ? AND mode = ? AND id = ?`, a.args(id)...)
}

func (a *attTx) TimesheetOf(periodID, personID string) (cloud.Timesheet, bool, error) {
	ts, err := get(a.ctx, a.tx, scanTimesheet, `SELECT `+timesheetCols+` FROM timesheets WHERE period_id = ? AND person_id = ? AND org_id = ? AND mode = ?`,
		periodID, personID, a.t.OrgID, string(a.t.Mode))
	if errors.Is(err, cloud.ErrNotFound) {
		return ts, false, nil
	}
	return ts, err == nil, err
}

func (a *attTx) PutTimesheet(ts cloud.Timesheet) error {
	_, err := a.tx.ExecContext(a.ctx, `INSERT INTO timesheets (`+timesheetCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET status = excluded.status, minutes = excluded.minutes, days = excluded.days, punches = excluded.punches,
			unpaired = excluded.unpaired, confirmed_at = excluded.confirmed_at, approved_at = excluded.approved_at, updated_at = excluded.updated_at`,
		ts.ID, ts.Tenant.OrgID, string(ts.Tenant.Mode), ts.PeriodID, ts.PersonID, string(ts.Status), ts.Totals.Minutes, ts.Totals.Days,
		ts.Totals.Punches, ts.Totals.Unpaired, nullMicros(ts.ConfirmedAt), nullMicros(ts.ApprovedAt), micros(ts.CreatedAt), micros(ts.UpdatedAt))
	return err
}

func (a *attTx) PeriodTimesheets(periodID string, st cloud.TimesheetStatus) ([]cloud.Timesheet, error) {
	q, args := `SELECT `+timesheetCols+` FROM timesheets WHERE period_id = ? AND org_id = ? AND mode = ?`, []any{periodID, a.t.OrgID, string(a.t.Mode)}
	if st != "" {
		q, args = q+` AND status = ?`, append(args, string(st))
	}
	rows, err := a.tx.QueryContext(a.ctx, q+` ORDER BY id`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []cloud.Timesheet
	for rows.Next() {
		ts, err := scanTimesheet(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, ts)
	}
	return out, rows.Err()
}

func (a *attTx) Consent(personID string, kind cloud.EvidenceKind) (cloud.Consent, bool, error) {
	c := cloud.Consent{Tenant: a.t, PersonID: personID, Kind: kind}
	var given int
	var at int64
	err := a.tx.QueryRowContext(a.ctx, `SELECT given, updated_at FROM attendance_consents WHERE org_id = ? AND mode = ? AND person_id = ? AND kind = ?`,
		a.args(personID, string(kind))...).Scan(&given, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return c, false, nil
	}
	if err != nil {
		return c, false, err
	}
	c.Given, c.UpdatedAt = given == 1, fromMicros(at)
	return c, c.Given, nil
}

func (a *attTx) PutConsent(c cloud.Consent) error {
	_, err := a.tx.ExecContext(a.ctx, `INSERT INTO attendance_consents (org_id, mode, person_id, kind, given, updated_at) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (org_id, mode, person_id, kind) DO UPDATE SET given = excluded.given, updated_at = excluded.updated_at`,
		a.args(c.PersonID, string(c.Kind), boolInt(c.Given), micros(c.UpdatedAt))...)
	return err
}

func (a *attTx) InsertEvidence(e cloud.Evidence) error {
	loc, err := jsonOrNull(e.Location)
	if err != nil {
		return err
	}
	_, err = a.tx.ExecContext(a.ctx, `INSERT INTO attendance_evidence (id, org_id, mode, person_id, kind, basis, attendance_event_id, captured_at,
		content_type, image, location, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		e.ID, e.Tenant.OrgID, string(e.Tenant.Mode), e.PersonID, string(e.Kind), string(e.Basis), null(e.AttendanceEventID),
		micros(e.CapturedAt), null(e.ContentType), e.Image, loc, micros(e.CreatedAt))
	return err
}

func (a *attTx) DeleteEvidence(personID string, kind cloud.EvidenceKind, basis cloud.EvidencePolicy) (int, error) {
	res, err := a.tx.ExecContext(a.ctx, `DELETE FROM attendance_evidence WHERE org_id = ? AND mode = ? AND person_id = ? AND kind = ? AND basis = ?`,
		a.args(personID, string(kind), string(basis))...)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// AttendanceSettings implements cloud.Store.
func (s *Store) AttendanceSettings(ctx context.Context, t cloud.Tenant) (cloud.AttendanceSettings, error) {
	return readSettings(ctx, s.r, t)
}

// Punch implements cloud.Store.
func (s *Store) Punch(ctx context.Context, t cloud.Tenant, id string) (cloud.AttendanceEvent, error) {
	return get(ctx, s.r, scanPunch, `SELECT `+punchCols+` FROM attendance_events WHERE id = ? AND org_id = ? AND mode = ?`, id, t.OrgID, string(t.Mode))
}

// ListPunches implements cloud.Store.
func (s *Store) ListPunches(ctx context.Context, t cloud.Tenant, f cloud.PunchFilter, p cloud.Page) ([]cloud.AttendanceEvent, bool, error) {
	var q strings.Builder
	q.WriteString(`SELECT ` + punchCols + ` FROM attendance_events WHERE org_id = ? AND mode = ?`)
	args := []any{t.OrgID, string(t.Mode)}
	if f.PersonID != "" {
		q.WriteString(` AND person_id = ?`)
		args = append(args, f.PersonID)
	}
	if f.SiteID != "" {
		q.WriteString(` AND site_id = ?`)
		args = append(args, f.SiteID)
	}
	if f.From != nil {
		q.WriteString(` AND occurred_at >= ?`)
		args = append(args, micros(*f.From))
	}
	if f.To != nil {
		q.WriteString(` AND occurred_at < ?`)
		args = append(args, micros(*f.To))
	}
	if p.After != nil {
		q.WriteString(` AND (occurred_at, id) < (?, ?)`) // a range of the index, as in keysetOn
		args = append(args, micros(p.After.CreatedAt), p.After.ID)
	}
	q.WriteString(` ORDER BY occurred_at DESC, id DESC LIMIT ?`)
	return list(ctx, s.r, scanPunch, p.Limit, q.String(), append(args, p.Limit+1)...)
}

// PunchDays implements cloud.Store.
func (s *Store) PunchDays(ctx context.Context, t cloud.Tenant, personID, siteID string, from, to cloud.Date, p cloud.Page) ([]cloud.PersonDay, bool, error) {
	var q strings.Builder
	q.WriteString(`SELECT DISTINCT day, person_id FROM attendance_events WHERE org_id = ? AND mode = ? AND day BETWEEN ? AND ?`)
	args := []any{t.OrgID, string(t.Mode), from.String(), to.String()}
	if personID != "" {
		q.WriteString(` AND person_id = ?`)
		args = append(args, personID)
	}
	if siteID != "" {
		q.WriteString(` AND site_id = ?`)
		args = append(args, siteID)
	}
	if p.After != nil {
		d := cloud.DateOf(p.After.CreatedAt.UTC()).String()
		q.WriteString(` AND (day < ? OR (day = ? AND person_id < ?))`)
		args = append(args, d, d, p.After.ID)
	}
	q.WriteString(` ORDER BY day DESC, person_id DESC LIMIT ?`)
	return list(ctx, s.r, func(r scanner) (cloud.PersonDay, error) {
		var pd cloud.PersonDay
		var day string
		if err := r.Scan(&day, &pd.PersonID); err != nil {
			return pd, err
		}
		var err error
		pd.Day, err = cloud.ParseDate(day)
		return pd, err
	}, p.Limit, q.String(), append(args, p.Limit+1)...)
}

// PersonPunches implements cloud.Store.
func (s *Store) PersonPunches(ctx context.Context, t cloud.Tenant, personIDs []string, from, to cloud.Date) (map[string][]cloud.AttendanceEvent, error) {
	if len(personIDs) == 0 {
		return map[string][]cloud.AttendanceEvent{}, nil
	}
	args := []any{t.OrgID, string(t.Mode), from.String(), to.String()}
	for _, id := range personIDs {
		args = append(args, id)
	}
	return collectPunches(s.r.QueryContext(ctx, `SELECT `+punchCols+` FROM attendance_events
		WHERE org_id = ? AND mode = ? AND day BETWEEN ? AND ? AND person_id IN (?`+strings.Repeat(", ?", len(personIDs)-1)+`)`, args...))
}

// TimesheetPeriod implements cloud.Store.
func (s *Store) TimesheetPeriod(ctx context.Context, t cloud.Tenant, id string) (cloud.TimesheetPeriod, error) {
	p, err := get(ctx, s.r, scanPeriod, `SELECT `+periodCols+` FROM timesheet_periods WHERE id = ? AND org_id = ? AND mode = ?`, id, t.OrgID, string(t.Mode))
	if err != nil {
		return p, err
	}
	counts, err := periodCounts(ctx, s.r, []string{p.ID})
	p.Counts = counts[p.ID]
	return p, err
}

// ListTimesheetPeriods implements cloud.Store.
func (s *Store) ListTimesheetPeriods(ctx context.Context, t cloud.Tenant, f cloud.PeriodFilter, p cloud.Page) ([]cloud.TimesheetPeriod, bool, error) {
	var q strings.Builder
	q.WriteString(`SELECT ` + periodCols + ` FROM timesheet_periods WHERE org_id = ? AND mode = ?`)
	args := []any{t.OrgID, string(t.Mode)}
	if f.From != nil {
		q.WriteString(` AND ends_on >= ?`)
		args = append(args, f.From.String())
	}
	if f.To != nil {
		q.WriteString(` AND starts_on <= ?`)
		args = append(args, f.To.String())
	}
	if p.After != nil {
		q.WriteString(` AND starts_on < ?`) // starts_on is unique per tenant
		args = append(args, cloud.DateOf(p.After.CreatedAt.UTC()).String())
	}
	q.WriteString(` ORDER BY starts_on DESC LIMIT ?`)
	rows, more, err := list(ctx, s.r, scanPeriod, p.Limit, q.String(), append(args, p.Limit+1)...)
	if err != nil {
		return nil, false, err
	}
	idList := make([]string, len(rows))
	for i := range rows {
		idList[i] = rows[i].ID
	}
	counts, err := periodCounts(ctx, s.r, idList)
	if err != nil {
		return nil, false, err
	}
	for i := range rows {
		rows[i].Counts = counts[rows[i].ID]
	}
	return rows, more, nil
}

// Timesheet implements cloud.Store.
func (s *Store) Timesheet(ctx context.Context, t cloud.Tenant, id string) (cloud.Timesheet, error) {
	return get(ctx, s.r, scanTimesheet, `SELECT `+timesheetCols+` FROM timesheets WHERE id = ? AND org_id = ? AND mode = ?`, id, t.OrgID, string(t.Mode))
}

// ListTimesheets implements cloud.Store.
func (s *Store) ListTimesheets(ctx context.Context, t cloud.Tenant, f cloud.TimesheetFilter, p cloud.Page) ([]cloud.Timesheet, bool, error) {
	var q strings.Builder
	q.WriteString(`SELECT ` + timesheetCols + ` FROM timesheets WHERE org_id = ? AND mode = ?`)
	args := []any{t.OrgID, string(t.Mode)}
	if f.PeriodID != "" {
		q.WriteString(` AND period_id = ?`)
		args = append(args, f.PeriodID)
	}
	if f.PersonID != "" {
		q.WriteString(` AND person_id = ?`)
		args = append(args, f.PersonID)
	}
	if f.Status != "" {
		q.WriteString(` AND status = ?`)
		args = append(args, string(f.Status))
	}
	args = keyset(&q, args, p, "")
	return list(ctx, s.r, scanTimesheet, p.Limit, q.String(), args...)
}

// Consents implements cloud.Store.
func (s *Store) Consents(ctx context.Context, t cloud.Tenant, personID string) (map[cloud.EvidenceKind]cloud.Consent, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT kind, given, updated_at FROM attendance_consents WHERE org_id = ? AND mode = ? AND person_id = ?`,
		t.OrgID, string(t.Mode), personID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[cloud.EvidenceKind]cloud.Consent{}
	for rows.Next() {
		c := cloud.Consent{Tenant: t, PersonID: personID}
		var kind string
		var given int
		var at int64
		if err := rows.Scan(&kind, &given, &at); err != nil {
			return nil, err
		}
		c.Kind, c.Given, c.UpdatedAt = cloud.EvidenceKind(kind), given == 1, fromMicros(at)
		out[c.Kind] = c
	}
	return out, rows.Err()
}

// DuePeriods implements cloud.Store.
func (s *Store) DuePeriods(ctx context.Context, now time.Time) ([]cloud.Tenant, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT DISTINCT org_id, mode FROM timesheet_periods WHERE closed_at IS NULL AND closes_at <= ?`, micros(now))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []cloud.Tenant
	for rows.Next() {
		var t cloud.Tenant
		var mode string
		if err := rows.Scan(&t.OrgID, &mode); err != nil {
			return nil, err
		}
		t.Mode = cloud.Mode(mode)
		out = append(out, t)
	}
	return out, rows.Err()
}
