package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/svc-vms/svc/cloud"
)

// Attendance records (docs/decisions.md, "Attendance"). Writes run in
// one transaction each; LockPerson takes the person's row lock, so two
// punches of one person (dedupe, then the timesheet) never interleave.

const punchCols = `id, org_id, mode, person_id, site_id, gate_id, kind, source, occurred_at, received_at, sent_at, day,
	skew_seconds, location, wifi, device_id, edge_id, fact_id, created_at`

func scanPunch(r scanner) (cloud.AttendanceEvent, error) {
	var e cloud.AttendanceEvent
	var mode, kind, source, day string
	var gate, device, edge, fact pgtype.Text
	var sent pgtype.Timestamptz
	var skew pgtype.Int4
	var loc, wifi []byte
	err := r.Scan(&e.ID, &e.Tenant.OrgID, &mode, &e.PersonID, &e.SiteID, &gate, &kind, &source, &e.OccurredAt, &e.ReceivedAt, &sent, &day,
		&skew, &loc, &wifi, &device, &edge, &fact, &e.CreatedAt)
	if err != nil {
		return e, err
	}
	e.Tenant.Mode, e.Kind, e.Source = cloud.Mode(mode), cloud.PunchKind(kind), cloud.PunchSource(source)
	e.GateID, e.DeviceID, e.EdgeID, e.FactID = gate.String, device.String, edge.String, fact.String
	e.OccurredAt, e.ReceivedAt, e.CreatedAt, e.SentAt = e.OccurredAt.UTC(), e.ReceivedAt.UTC(), e.CreatedAt.UTC(), timePtr(sent)
	if e.Day, err = cloud.ParseDate(day); err != nil {
		return e, fmt.Errorf("punch %s: day: %w", e.ID, err)
	}
	if skew.Valid {
		s := int(skew.Int32)
		e.SkewSeconds = &s
	}
	if loc != nil {
		e.Location = new(cloud.GeoPoint)
		if err := json.Unmarshal(loc, e.Location); err != nil {
			return e, fmt.Errorf("punch %s: location: %w", e.ID, err)
		}
	}
	if wifi != nil {
		e.Wifi = new(cloud.WifiNetwork)
		if err := json.Unmarshal(wifi, e.Wifi); err != nil {
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
	return json.Marshal(v)
}

func collectPunches(rows pgx.Rows, err error) (map[string][]cloud.AttendanceEvent, error) {
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
	var closed, approved pgtype.Timestamptz
	if err := r.Scan(&p.ID, &p.Tenant.OrgID, &mode, &kind, &starts, &ends, &payroll, &p.Label, &p.ClosesAt, &closed, &approved, &p.CreatedAt); err != nil {
		return p, err
	}
	p.Tenant.Mode, p.Kind = cloud.Mode(mode), cloud.PeriodKind(kind)
	p.ClosesAt, p.CreatedAt, p.ClosedAt, p.ApprovedAt = p.ClosesAt.UTC(), p.CreatedAt.UTC(), timePtr(closed), timePtr(approved)
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
	var confirmed, approved pgtype.Timestamptz
	err := r.Scan(&ts.ID, &ts.Tenant.OrgID, &mode, &ts.PeriodID, &ts.PersonID, &status, &ts.Totals.Minutes, &ts.Totals.Days,
		&ts.Totals.Punches, &ts.Totals.Unpaired, &confirmed, &approved, &ts.CreatedAt, &ts.UpdatedAt)
	if err != nil {
		return ts, err
	}
	ts.Tenant.Mode, ts.Status = cloud.Mode(mode), cloud.TimesheetStatus(status)
	ts.ConfirmedAt, ts.ApprovedAt, ts.CreatedAt, ts.UpdatedAt = timePtr(confirmed), timePtr(approved), ts.CreatedAt.UTC(), ts.UpdatedAt.UTC()
	return ts, nil
}

// getOne runs a single-row query, turning no rows into cloud.ErrNotFound.
func getOne[T any](ctx context.Context, q querier, scan func(scanner) (T, error), query string, args ...any) (T, error) {
	v, err := scan(q.QueryRow(ctx, query, args...))
	if errors.Is(err, pgx.ErrNoRows) {
		return v, cloud.ErrNotFound
	}
	return v, err
}

// found turns ErrNotFound into false.
func found[T any](v T, err error) (T, bool, error) {
	if errors.Is(err, cloud.ErrNotFound) {
		return v, false, nil
	}
	return v, err == nil, err
}

func all[T any](ctx context.Context, q querier, scan func(scanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// Attendance implements cloud.Store.
func (s *Store) Attendance(ctx context.Context, t cloud.Tenant, fn func(cloud.AttendanceTx) error) error {
	return s.inTx(ctx, func(tx pgx.Tx) error { return fn(&attTx{ctx: ctx, tx: tx, t: t}) })
}

// attTx is cloud.AttendanceTx on a PostgreSQL transaction.
type attTx struct {
	ctx context.Context
	tx  pgx.Tx
	t   cloud.Tenant
}

func (a *attTx) args(more ...any) []any { return append([]any{a.t.OrgID, string(a.t.Mode)}, more...) }

func (a *attTx) LockPerson(id string) error {
	var one int
	err := a.tx.QueryRow(a.ctx, `SELECT 1 FROM people WHERE org_id = $1 AND mode = $2 AND id = $3 FOR UPDATE`, a.args(id)...).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("person %s: %w", id, cloud.ErrNotFound)
	}
	return err
}

func (a *attTx) LockPeriods() error {
	_, err := a.tx.Exec(a.ctx, `SELECT pg_advisory_xact_lock(hashtextextended('timesheet_periods:' || $1 || ':' || $2, 0))`, a.args()...)
	return err
}

func (a *attTx) Settings() (cloud.AttendanceSettings, bool, error) {
	return found(readSettings(a.ctx, a.tx, a.t, false))
}

func readSettings(ctx context.Context, q querier, t cloud.Tenant, lock bool) (cloud.AttendanceSettings, error) {
	st := cloud.AttendanceSettings{Tenant: t}
	var rules, evidence []byte
	sql := `SELECT timezone, rules, evidence, created_at, updated_at FROM attendance_settings WHERE org_id = $1 AND mode = $2`
	if lock {
		sql += ` FOR UPDATE`
	}
	err := q.QueryRow(ctx, sql, t.OrgID, string(t.Mode)).Scan(&st.Timezone, &rules, &evidence, &st.CreatedAt, &st.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return st, cloud.ErrNotFound
	}
	if err != nil {
		return st, err
	}
	st.CreatedAt, st.UpdatedAt = st.CreatedAt.UTC(), st.UpdatedAt.UTC()
	if err := cloud.DecodePeriodRules(rules, &st.Periods); err != nil {
		return st, err
	}
	if err := json.Unmarshal(evidence, &st.Evidence); err != nil {
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
	_, err = a.tx.Exec(a.ctx, `INSERT INTO attendance_settings (org_id, mode, timezone, rules, evidence, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (org_id, mode) DO UPDATE SET timezone = excluded.timezone, rules = excluded.rules, evidence = excluded.evidence,
			updated_at = excluded.updated_at`,
		a.args(st.Timezone, rules, evidence, st.CreatedAt, st.UpdatedAt)...)
	return err
}

func (a *attTx) PunchByFact(factID string) (cloud.AttendanceEvent, bool, error) {
	return found(getOne(a.ctx, a.tx, scanPunch, `SELECT `+punchCols+` FROM attendance_events WHERE org_id = $1 AND mode = $2 AND fact_id = $3`,
		a.args(factID)...))
}

func (a *attTx) RepeatOf(e cloud.AttendanceEvent) (cloud.AttendanceEvent, bool, error) {
	return found(getOne(a.ctx, a.tx, scanPunch, `SELECT `+punchCols+` FROM attendance_events
		WHERE org_id = $1 AND mode = $2 AND person_id = $3 AND day BETWEEN $4 AND $5 AND site_id = $6 AND coalesce(gate_id, '') = $7
			AND kind = $8 AND source = $9 AND occurred_at BETWEEN $10 AND $11
		ORDER BY occurred_at, id LIMIT 1`,
		a.args(e.PersonID, e.Day.AddDays(-1).String(), e.Day.AddDays(1).String(), e.SiteID, e.GateID, string(e.Kind), string(e.Source),
			e.OccurredAt.Add(-cloud.PunchRepeat), e.OccurredAt.Add(cloud.PunchRepeat))...))
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
	_, err = a.tx.Exec(a.ctx, `INSERT INTO attendance_events (`+punchCols+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)`,
		e.ID, e.Tenant.OrgID, string(e.Tenant.Mode), e.PersonID, e.SiteID, null(e.GateID), string(e.Kind), string(e.Source),
		e.OccurredAt, e.ReceivedAt, nullTime(e.SentAt), e.Day.String(), skew, loc, wifi, null(e.DeviceID),
		null(e.EdgeID), null(e.FactID), e.CreatedAt)
	if err != nil {
		return translate("insert punch", err)
	}
	return nil
}

func (a *attTx) Punches(personID string, from, to cloud.Date) ([]cloud.AttendanceEvent, error) {
	m, err := collectPunches(a.tx.Query(a.ctx, `SELECT `+punchCols+` FROM attendance_events
		WHERE org_id = $1 AND mode = $2 AND person_id = $3 AND day BETWEEN $4 AND $5`, a.args(personID, from.String(), to.String())...))
	return m[personID], err
}

func (a *attTx) PeriodPunches(from, to cloud.Date) (map[string][]cloud.AttendanceEvent, error) {
	return collectPunches(a.tx.Query(a.ctx, `SELECT `+punchCols+` FROM attendance_events
		WHERE org_id = $1 AND mode = $2 AND day BETWEEN $3 AND $4`, a.args(from.String(), to.String())...))
}

func (a *attTx) Periods(from, to cloud.Date) ([]cloud.TimesheetPeriod, error) {
	return all(a.ctx, a.tx, scanPeriod, `SELECT `+periodCols+` FROM timesheet_periods
		WHERE org_id = $1 AND mode = $2 AND ends_on >= $3 AND starts_on <= $4 ORDER BY starts_on`, a.args(from.String(), to.String())...)
}

func (a *attTx) Period(id string) (cloud.TimesheetPeriod, error) {
	return getOne(a.ctx, a.tx, scanPeriod, `SELECT `+periodCols+` FROM timesheet_periods WHERE org_id = $1 AND mode = $2 AND id = $3 FOR UPDATE`,
		a.args(id)...)
}

func (a *attTx) LastPeriod() (cloud.TimesheetPeriod, bool, error) {
	return found(getOne(a.ctx, a.tx, scanPeriod, `SELECT `+periodCols+` FROM timesheet_periods WHERE org_id = $1 AND mode = $2
		ORDER BY starts_on DESC LIMIT 1`, a.args()...))
}

func (a *attTx) InsertPeriod(p cloud.TimesheetPeriod) error {
	_, err := a.tx.Exec(a.ctx, `INSERT INTO timesheet_periods (`+periodCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
		p.ID, p.Tenant.OrgID, string(p.Tenant.Mode), string(p.Kind), p.StartsOn.String(), p.EndsOn.String(), p.PayrollOn.String(),
		p.Label, p.ClosesAt, nullTime(p.ClosedAt), nullTime(p.ApprovedAt), p.CreatedAt)
	if err != nil {
		return translate("insert timesheet period", err)
	}
	return nil
}

func (a *attTx) DeletePeriodsFrom(day cloud.Date) (int, error) {
	tag, err := a.tx.Exec(a.ctx, `DELETE FROM timesheet_periods WHERE org_id = $1 AND mode = $2 AND starts_on >= $3`, a.args(day.String())...)
	return int(tag.RowsAffected()), err
}

func (a *attTx) UpdatePeriod(p cloud.TimesheetPeriod) error {
	_, err := a.tx.Exec(a.ctx, `UPDATE timesheet_periods SET closed_at = $4, approved_at = $5 WHERE org_id = $1 AND mode = $2 AND id = $3`,
		a.args(p.ID, nullTime(p.ClosedAt), nullTime(p.ApprovedAt))...)
	return err
}

func (a *attTx) DuePeriods(now time.Time) ([]cloud.TimesheetPeriod, error) {
	return all(a.ctx, a.tx, scanPeriod, `SELECT `+periodCols+` FROM timesheet_periods
		WHERE org_id = $1 AND mode = $2 AND closed_at IS NULL AND closes_at <= $3 ORDER BY starts_on FOR UPDATE`, a.args(now)...)
}

func (a *attTx) PeriodCounts(periodID string) (cloud.TimesheetCounts, error) {
	m, err := periodCounts(a.ctx, a.tx, []string{periodID})
	return m[periodID], err
}

func periodCounts(ctx context.Context, q querier, periodIDs []string) (map[string]cloud.TimesheetCounts, error) {
	out := map[string]cloud.TimesheetCounts{}
	if len(periodIDs) == 0 {
		return out, nil
	}
	rows, err := q.Query(ctx, `SELECT period_id, status, count(*) FROM timesheets WHERE period_id = ANY($1) GROUP BY period_id, status`, periodIDs)
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
	return getOne(a.ctx, a.tx, scanTimesheet, `SELECT `+timesheetCols+` FROM timesheets WHERE org_id = $1 AND mode = $2 AND id = $3 FOR UPDATE`,
		a.args(id)...)
}

func (a *attTx) TimesheetOf(periodID, personID string) (cloud.Timesheet, bool, error) {
	return found(getOne(a.ctx, a.tx, scanTimesheet, `SELECT `+timesheetCols+` FROM timesheets
		WHERE org_id = $1 AND mode = $2 AND period_id = $3 AND person_id = $4 FOR UPDATE`, a.args(periodID, personID)...))
}

func (a *attTx) PutTimesheet(ts cloud.Timesheet) error {
	_, err := a.tx.Exec(a.ctx, `INSERT INTO timesheets (`+timesheetCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
		ON CONFLICT (id) DO UPDATE SET status = excluded.status, minutes = excluded.minutes, days = excluded.days, punches = excluded.punches,
			unpaired = excluded.unpaired, confirmed_at = excluded.confirmed_at, approved_at = excluded.approved_at, updated_at = excluded.updated_at`,
		ts.ID, ts.Tenant.OrgID, string(ts.Tenant.Mode), ts.PeriodID, ts.PersonID, string(ts.Status), ts.Totals.Minutes, ts.Totals.Days,
		ts.Totals.Punches, ts.Totals.Unpaired, nullTime(ts.ConfirmedAt), nullTime(ts.ApprovedAt), ts.CreatedAt, ts.UpdatedAt)
	if err != nil {
		return translate("store timesheet", err)
	}
	return nil
}

func (a *attTx) PeriodTimesheets(periodID string, st cloud.TimesheetStatus) ([]cloud.Timesheet, error) {
	q, args := `SELECT `+timesheetCols+` FROM timesheets WHERE org_id = $1 AND mode = $2 AND period_id = $3`, a.args(periodID)
	if st != "" {
		q, args = q+` AND status = $4`, append(args, string(st))
	}
	return all(a.ctx, a.tx, scanTimesheet, q+` ORDER BY id FOR UPDATE`, args...)
}

func (a *attTx) Consent(personID string, kind cloud.EvidenceKind) (cloud.Consent, bool, error) {
	c := cloud.Consent{Tenant: a.t, PersonID: personID, Kind: kind}
	err := a.tx.QueryRow(a.ctx, `SELECT given, updated_at FROM attendance_consents WHERE org_id = $1 AND mode = $2 AND person_id = $3 AND kind = $4`,
		a.args(personID, string(kind))...).Scan(&c.Given, &c.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return c, false, nil
	}
	if err != nil {
		return c, false, err
	}
	c.UpdatedAt = c.UpdatedAt.UTC()
	return c, c.Given, nil
}

func (a *attTx) PutConsent(c cloud.Consent) error {
	_, err := a.tx.Exec(a.ctx, `INSERT INTO attendance_consents (org_id, mode, person_id, kind, given, updated_at) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (org_id, mode, person_id, kind) DO UPDATE SET given = excluded.given, updated_at = excluded.updated_at`,
		a.args(c.PersonID, string(c.Kind), c.Given, c.UpdatedAt)...)
	return err
}

func (a *attTx) InsertEvidence(e cloud.Evidence) error {
	loc, err := jsonOrNull(e.Location)
	if err != nil {
		return err
	}
	_, err = a.tx.Exec(a.ctx, `INSERT INTO attendance_evidence (id, org_id, mode, person_id, kind, basis, attendance_event_id, captured_at,
		content_type, image, location, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
		e.ID, e.Tenant.OrgID, string(e.Tenant.Mode), e.PersonID, string(e.Kind), string(e.Basis), null(e.AttendanceEventID),
		e.CapturedAt, null(e.ContentType), e.Image, loc, e.CreatedAt)
	return err
}

func (a *attTx) DeleteEvidence(personID string, kind cloud.EvidenceKind, basis cloud.EvidencePolicy) (int, error) {
	tag, err := a.tx.Exec(a.ctx, `DELETE FROM attendance_evidence WHERE org_id = $1 AND mode = $2 AND person_id = $3 AND kind = $4 AND basis = $5`,
		a.args(personID, string(kind), string(basis))...)
	return int(tag.RowsAffected()), err
}

// AttendanceSettings implements cloud.Store.
func (s *Store) AttendanceSettings(ctx context.Context, t cloud.Tenant) (cloud.AttendanceSettings, error) {
	return readSettings(ctx, s.pool, t, false)
}

// Punch implements cloud.Store.
func (s *Store) Punch(ctx context.Context, t cloud.Tenant, id string) (cloud.AttendanceEvent, error) {
	return getOne(ctx, s.pool, scanPunch, `SELECT `+punchCols+` FROM attendance_events WHERE org_id = $1 AND mode = $2 AND id = $3`,
		t.OrgID, string(t.Mode), id)
}

// ListPunches implements cloud.Store.
func (s *Store) ListPunches(ctx context.Context, t cloud.Tenant, f cloud.PunchFilter, p cloud.Page) ([]cloud.AttendanceEvent, bool, error) {
	l := newList(punchCols, "attendance_events", t)
	if f.PersonID != "" {
		l.where("person_id = $%d", f.PersonID)
	}
	if f.SiteID != "" {
		l.where("site_id = $%d", f.SiteID)
	}
	if f.From != nil {
		l.where("occurred_at >= $%d", *f.From)
	}
	if f.To != nil {
		l.where("occurred_at < $%d", *f.To)
	}
	if p.After != nil {
		l.args = append(l.args, p.After.CreatedAt, p.After.ID)
		fmt.Fprintf(&l.sql, " AND (occurred_at, id) < ($%d::timestamptz, $%d::text)", len(l.args)-1, len(l.args))
	}
	l.args = append(l.args, p.Limit+1)
	fmt.Fprintf(&l.sql, " ORDER BY occurred_at DESC, id DESC LIMIT $%d", len(l.args))
	rows, err := all(ctx, s.pool, scanPunch, l.sql.String(), l.args...)
	if err != nil {
		return nil, false, fmt.Errorf("list punches: %w", err)
	}
	if len(rows) > p.Limit {
		return rows[:p.Limit], true, nil
	}
	return rows, false, nil
}

// PunchDays implements cloud.Store.
func (s *Store) PunchDays(ctx context.Context, t cloud.Tenant, personID, siteID string, from, to cloud.Date, p cloud.Page) ([]cloud.PersonDay, bool, error) {
	l := newList("DISTINCT day, person_id", "attendance_events", t)
	l.where("day >= $%d", from.String())
	l.where("day <= $%d", to.String())
	if personID != "" {
		l.where("person_id = $%d", personID)
	}
	if siteID != "" {
		l.where("site_id = $%d", siteID)
	}
	if p.After != nil {
		l.args = append(l.args, cloud.DateOf(p.After.CreatedAt.UTC()).String(), p.After.ID)
		fmt.Fprintf(&l.sql, " AND (day, person_id) < ($%d::text, $%d::text)", len(l.args)-1, len(l.args))
	}
	l.args = append(l.args, p.Limit+1)
	fmt.Fprintf(&l.sql, " ORDER BY day DESC, person_id DESC LIMIT $%d", len(l.args))
	rows, err := all(ctx, s.pool, func(r scanner) (cloud.PersonDay, error) {
		var pd cloud.PersonDay
		var day string
		if err := r.Scan(&day, &pd.PersonID); err != nil {
			return pd, err
		}
		var err error
		pd.Day, err = cloud.ParseDate(day)
		return pd, err
	}, l.sql.String(), l.args...)
	if err != nil {
		return nil, false, fmt.Errorf("list punch days: %w", err)
	}
	if len(rows) > p.Limit {
		return rows[:p.Limit], true, nil
	}
	return rows, false, nil
}

// PersonPunches implements cloud.Store.
func (s *Store) PersonPunches(ctx context.Context, t cloud.Tenant, personIDs []string, from, to cloud.Date) (map[string][]cloud.AttendanceEvent, error) {
	if len(personIDs) == 0 {
		return map[string][]cloud.AttendanceEvent{}, nil
	}
	return collectPunches(s.pool.Query(ctx, `SELECT `+punchCols+` FROM attendance_events
		WHERE org_id = $1 AND mode = $2 AND day BETWEEN $3 AND $4 AND person_id = ANY($5)`, t.OrgID, string(t.Mode), from.String(), to.String(), personIDs))
}

// TimesheetPeriod implements cloud.Store.
func (s *Store) TimesheetPeriod(ctx context.Context, t cloud.Tenant, id string) (cloud.TimesheetPeriod, error) {
	p, err := getOne(ctx, s.pool, scanPeriod, `SELECT `+periodCols+` FROM timesheet_periods WHERE org_id = $1 AND mode = $2 AND id = $3`,
		t.OrgID, string(t.Mode), id)
	if err != nil {
		return p, err
	}
	counts, err := periodCounts(ctx, s.pool, []string{p.ID})
	p.Counts = counts[p.ID]
	return p, err
}

// ListTimesheetPeriods implements cloud.Store.
func (s *Store) ListTimesheetPeriods(ctx context.Context, t cloud.Tenant, f cloud.PeriodFilter, p cloud.Page) ([]cloud.TimesheetPeriod, bool, error) {
	l := newList(periodCols, "timesheet_periods", t)
	if f.From != nil {
		l.where("ends_on >= $%d", f.From.String())
	}
	if f.To != nil {
		l.where("starts_on <= $%d", f.To.String())
	}
	if p.After != nil {
		l.where("starts_on < $%d", cloud.DateOf(p.After.CreatedAt.UTC()).String()) // starts_on is unique per tenant
	}
	l.args = append(l.args, p.Limit+1)
	fmt.Fprintf(&l.sql, " ORDER BY starts_on DESC LIMIT $%d", len(l.args))
	rows, err := all(ctx, s.pool, scanPeriod, l.sql.String(), l.args...)
	if err != nil {
		return nil, false, fmt.Errorf("list timesheet periods: %w", err)
	}
	more := len(rows) > p.Limit
	if more {
		rows = rows[:p.Limit]
	}
	idList := make([]string, len(rows))
	for i := range rows {
		idList[i] = rows[i].ID
	}
	counts, err := periodCounts(ctx, s.pool, idList)
	if err != nil {
		return nil, false, fmt.Errorf("count timesheets: %w", err)
	}
	for i := range rows {
		rows[i].Counts = counts[rows[i].ID]
	}
	return rows, more, nil
}

// Timesheet implements cloud.Store.
func (s *Store) Timesheet(ctx context.Context, t cloud.Tenant, id string) (cloud.Timesheet, error) {
	return getOne(ctx, s.pool, scanTimesheet, `SELECT `+timesheetCols+` FROM timesheets WHERE org_id = $1 AND mode = $2 AND id = $3`,
		t.OrgID, string(t.Mode), id)
}

// ListTimesheets implements cloud.Store.
func (s *Store) ListTimesheets(ctx context.Context, t cloud.Tenant, f cloud.TimesheetFilter, p cloud.Page) ([]cloud.Timesheet, bool, error) {
	l := newList(timesheetCols, "timesheets", t)
	if f.PeriodID != "" {
		l.where("period_id = $%d", f.PeriodID)
	}
	if f.PersonID != "" {
		l.where("person_id = $%d", f.PersonID)
	}
	if f.Status != "" {
		l.where("status = $%d", string(f.Status))
	}
	l.page(p)
	rows, err := all(ctx, s.pool, scanTimesheet, l.sql.String(), l.args...)
	if err != nil {
		return nil, false, fmt.Errorf("list timesheets: %w", err)
	}
	if len(rows) > p.Limit {
		return rows[:p.Limit], true, nil
	}
	return rows, false, nil
}

// Consents implements cloud.Store.
func (s *Store) Consents(ctx context.Context, t cloud.Tenant, personID string) (map[cloud.EvidenceKind]cloud.Consent, error) {
	rows, err := s.pool.Query(ctx, `SELECT kind, given, updated_at FROM attendance_consents WHERE org_id = $1 AND mode = $2 AND person_id = $3`,
		t.OrgID, string(t.Mode), personID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[cloud.EvidenceKind]cloud.Consent{}
	for rows.Next() {
		c := cloud.Consent{Tenant: t, PersonID: personID}
		var kind string
		if err := rows.Scan(&kind, &c.Given, &c.UpdatedAt); err != nil {
			return nil, err
		}
		c.Kind, c.UpdatedAt = cloud.EvidenceKind(kind), c.UpdatedAt.UTC()
		out[c.Kind] = c
	}
	return out, rows.Err()
}

// DuePeriods implements cloud.Store.
func (s *Store) DuePeriods(ctx context.Context, now time.Time) ([]cloud.Tenant, error) {
	return all(ctx, s.pool, func(r scanner) (cloud.Tenant, error) {
		var t cloud.Tenant
		var mode string
		err := r.Scan(&t.OrgID, &mode)
		t.Mode = cloud.Mode(mode)
		return t, err
	}, `SELECT DISTINCT org_id, mode FROM timesheet_periods WHERE closed_at IS NULL AND closes_at <= $1`, now)
}
