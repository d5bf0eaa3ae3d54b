package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/sync/protocol"
)

// scanner is a *sql.Row or *sql.Rows.
type scanner interface{ Scan(dest ...any) error }

// get runs a single-row query, turning no rows into cloud.ErrNotFound.
// Every query it runs reads a row by key, so on the read pool it is a
// point read (readDB.point).
func get[T any](ctx context.Context, db interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, scan func(scanner) (T, error), query string, args ...any) (T, error) {
	var row scanner
	if r, ok := db.(*readDB); ok {
		row = r.point(ctx, query, args...)
	} else {
		row = db.QueryRowContext(ctx, query, args...)
	}
	v, err := scan(row)
	if errors.Is(err, sql.ErrNoRows) {
		return v, cloud.ErrNotFound
	}
	return v, classify(err)
}

// list runs a page query; it returns at most limit rows and whether more
// follow.
func list[T any](ctx context.Context, db querier, scan func(scanner) (T, error), limit int, query string, args ...any) ([]T, bool, error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, false, classify(err)
	}
	defer rows.Close()
	out := make([]T, 0, limit+1)
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, false, err
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, false, classify(err)
	}
	out, more := trim(out, limit)
	return out, more, nil
}

// update is the read-modify-write of every Update method: in one write
// transaction, read the row, let fn change it, write it back.
func update[T any](ctx context.Context, s *Store, read func(*sql.Tx) (T, error), fn func(*T) error, write func(*sql.Tx, T) error) (T, error) {
	var v T
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var err error
		if v, err = read(tx); err != nil {
			return err
		}
		if err := fn(&v); err != nil {
			return err
		}
		return write(tx, v)
	})
	return v, err
}

const siteCols = `id, org_id, mode, name, timezone, addr_line1, addr_line2, addr_city, addr_region, addr_postal_code, addr_country, created_at, updated_at, attendance_zone, wait_limit_minutes`

func scanSite(r scanner) (cloud.Site, error) {
	var s cloud.Site
	var mode string
	var l1, l2, city, region, postal, country, zone sql.NullString
	var created, updated int64
	if err := r.Scan(&s.ID, &s.Tenant.OrgID, &mode, &s.Name, &s.Timezone, &l1, &l2, &city, &region, &postal, &country, &created, &updated, &zone,
		&s.WaitLimitMinutes); err != nil {
		return s, err
	}
	if zone.Valid {
		s.Zone = new(cloud.AttendanceZone)
		if err := json.Unmarshal([]byte(zone.String), s.Zone); err != nil {
			return s, fmt.Errorf("site %s: attendance zone: %w", s.ID, err)
		}
	}
	s.Tenant.Mode, s.CreatedAt, s.UpdatedAt = cloud.Mode(mode), fromMicros(created), fromMicros(updated)
	if l1.Valid {
		s.Address = &cloud.Address{Line1: l1.String, Line2: str(l2), City: str(city), Region: str(region), PostalCode: str(postal), Country: str(country)}
	}
	return s, nil
}

func siteArgs(s cloud.Site) []any {
	a := s.Address
	if a == nil {
		a = &cloud.Address{}
	}
	zone, _ := jsonOrNull(s.Zone) // plain numbers and strings always marshal
	return []any{s.Name, s.Timezone, null(a.Line1), null(a.Line2), null(a.City), null(a.Region), null(a.PostalCode), null(a.Country), micros(s.UpdatedAt), zone,
		s.WaitLimitMinutes}
}

// CreateSite implements cloud.Store: the site's feed starts with its
// settings, the tenant's keys, people, teams and visit types.
func (s *Store) CreateSite(ctx context.Context, site cloud.Site) error {
	args := append([]any{site.ID, site.Tenant.OrgID, string(site.Tenant.Mode), micros(site.CreatedAt)}, siteArgs(site)...)
	err := s.writeTx(ctx, site.Tenant, func(tx *sql.Tx, f *feed) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO sites (id, org_id, mode, created_at, name, timezone, addr_line1, addr_line2, addr_city, addr_region, addr_postal_code, addr_country, updated_at, attendance_zone, wait_limit_minutes)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, args...); err != nil {
			return err
		}
		settings := cloud.EdgeSettings(site)
		f.add(site.ID, protocol.Change{At: site.UpdatedAt, Settings: &settings})
		if err := s.keyChanges(ctx, tx, f, site); err != nil {
			return err
		}
		if err := peopleChanges(ctx, tx, f, site); err != nil {
			return err
		}
		return kioskChanges(ctx, tx, f, site)
	})
	if err != nil {
		return fmt.Errorf("insert site: %w", err)
	}
	return nil
}

// Site implements cloud.Store.
func (s *Store) Site(ctx context.Context, t cloud.Tenant, id string) (cloud.Site, error) {
	return get(ctx, s.r, scanSite, `SELECT `+siteCols+` FROM sites WHERE id = ? AND org_id = ? AND mode = ?`, id, t.OrgID, string(t.Mode))
}

// UpdateSite implements cloud.Store.
func (s *Store) UpdateSite(ctx context.Context, t cloud.Tenant, id string, fn func(*cloud.Site) error) (cloud.Site, error) {
	var site cloud.Site
	err := s.writeTx(ctx, t, func(tx *sql.Tx, f *feed) error {
		var err error
		site, err = get(ctx, tx, scanSite, `SELECT `+siteCols+` FROM sites WHERE id = ? AND org_id = ? AND mode = ?`, id, t.OrgID, string(t.Mode))
		if err != nil {
			return err
		}
		if err := fn(&site); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE sites SET name = ?, timezone = ?, addr_line1 = ?, addr_line2 = ?, addr_city = ?, addr_region = ?,
			addr_postal_code = ?, addr_country = ?, updated_at = ?, attendance_zone = ?, wait_limit_minutes = ? WHERE id = ?`, append(siteArgs(site), id)...); err != nil {
			return err
		}
		settings := cloud.EdgeSettings(site)
		f.add(id, protocol.Change{At: site.UpdatedAt, Settings: &settings})
		return nil
	})
	return site, err
}

// ListSites implements cloud.Store.
func (s *Store) ListSites(ctx context.Context, t cloud.Tenant, _ cloud.SiteFilter, p cloud.Page) ([]cloud.Site, bool, error) {
	var q strings.Builder
	q.WriteString(`SELECT ` + siteCols + ` FROM sites WHERE org_id = ? AND mode = ?`)
	args := keyset(&q, []any{t.OrgID, string(t.Mode)}, p, "")
	return list(ctx, s.r, scanSite, p.Limit, q.String(), args...)
}

const gateCols = `id, org_id, mode, site_id, name, direction, created_at, updated_at`

func scanGate(r scanner) (cloud.Gate, error) {
	var g cloud.Gate
	var mode, dir string
	var created, updated int64
	err := r.Scan(&g.ID, &g.Tenant.OrgID, &mode, &g.SiteID, &g.Name, &dir, &created, &updated)
	g.Tenant.Mode, g.Direction, g.CreatedAt, g.UpdatedAt = cloud.Mode(mode), cloud.Direction(dir), fromMicros(created), fromMicros(updated)
	return g, err
}

// CreateGate implements cloud.Store.
func (s *Store) CreateGate(ctx context.Context, g cloud.Gate) error {
	return s.writeTx(ctx, g.Tenant, func(tx *sql.Tx, f *feed) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO gates (id, org_id, mode, site_id, name, direction, created_at, updated_at)
			SELECT ?, ?, ?, id, ?, ?, ?, ? FROM sites WHERE id = ? AND org_id = ? AND mode = ?`,
			g.ID, g.Tenant.OrgID, string(g.Tenant.Mode), g.Name, string(g.Direction), micros(g.CreatedAt), micros(g.UpdatedAt),
			g.SiteID, g.Tenant.OrgID, string(g.Tenant.Mode))
		if err != nil {
			return fmt.Errorf("insert gate: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return fmt.Errorf("insert gate: site %s: %w", g.SiteID, cloud.ErrNotFound)
		}
		pg := cloud.EdgeGate(g)
		f.add(g.SiteID, protocol.Change{At: g.UpdatedAt, Gate: &pg})
		return nil
	})
}

// Gate implements cloud.Store.
func (s *Store) Gate(ctx context.Context, t cloud.Tenant, id string) (cloud.Gate, error) {
	return get(ctx, s.r, scanGate, `SELECT `+gateCols+` FROM gates WHERE id = ? AND org_id = ? AND mode = ?`, id, t.OrgID, string(t.Mode))
}

// UpdateGate implements cloud.Store. A gate stays at its site.
func (s *Store) UpdateGate(ctx context.Context, t cloud.Tenant, id string, fn func(*cloud.Gate) error) (cloud.Gate, error) {
	var g cloud.Gate
	err := s.writeTx(ctx, t, func(tx *sql.Tx, f *feed) error {
		var err error
		g, err = get(ctx, tx, scanGate, `SELECT `+gateCols+` FROM gates WHERE id = ? AND org_id = ? AND mode = ?`, id, t.OrgID, string(t.Mode))
		if err != nil {
			return err
		}
		site := g.SiteID
		if err := fn(&g); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE gates SET name = ?, direction = ?, updated_at = ? WHERE id = ?`,
			g.Name, string(g.Direction), micros(g.UpdatedAt), id); err != nil {
			return err
		}
		pg := cloud.EdgeGate(g)
		f.add(site, protocol.Change{At: g.UpdatedAt, Gate: &pg})
		return nil
	})
	return g, err
}

// ListGates implements cloud.Store.
func (s *Store) ListGates(ctx context.Context, t cloud.Tenant, f cloud.GateFilter, p cloud.Page) ([]cloud.Gate, bool, error) {
	var q strings.Builder
	q.WriteString(`SELECT ` + gateCols + ` FROM gates WHERE org_id = ? AND mode = ?`)
	args := []any{t.OrgID, string(t.Mode)}
	if f.SiteID != "" {
		q.WriteString(` AND site_id = ?`)
		args = append(args, f.SiteID)
	}
	args = keyset(&q, args, p, "")
	return list(ctx, s.r, scanGate, p.Limit, q.String(), args...)
}

const personCols = `id, org_id, mode, name, email, phone, job_title, site_id, active, deactivated_at, pass_issued_at, created_at, updated_at`

func scanPerson(r scanner) (cloud.Person, error) {
	var p cloud.Person
	var mode string
	var email, phone, title, site sql.NullString
	var active int
	var deact sql.NullInt64
	var issued, created, updated int64
	err := r.Scan(&p.ID, &p.Tenant.OrgID, &mode, &p.Name, &email, &phone, &title, &site, &active, &deact, &issued, &created, &updated)
	p.Tenant.Mode, p.Email, p.Phone, p.JobTitle, p.SiteID = cloud.Mode(mode), str(email), str(phone), str(title), str(site)
	p.Active, p.DeactivatedAt, p.CreatedAt, p.UpdatedAt = active == 1, fromNullMicros(deact), fromMicros(created), fromMicros(updated)
	p.PassIssuedAt = fromMicros(issued)
	return p, err
}

func personArgs(p cloud.Person) []any {
	var emailFold any
	if p.Email != "" {
		emailFold = cloud.Fold(p.Email)
	}
	return []any{p.Name, cloud.Fold(p.Name), null(p.Email), emailFold, null(p.Phone), null(p.JobTitle), null(p.SiteID),
		boolInt(p.Active), nullMicros(p.DeactivatedAt), micros(p.PassIssuedAt), micros(p.UpdatedAt)}
}

// personToSites adds p to the feed of every site of its tenant: every site
// follows every person (a person may clock in at any site). It reads the
// sites in the write's transaction, which SQLite's one writer keeps apart
// from a site being created.
func personToSites(ctx context.Context, tx *sql.Tx, f *feed, p cloud.Person) error {
	pp := cloud.EdgePerson(p)
	if err := toSites(ctx, tx, f, p.Tenant, protocol.Change{At: p.UpdatedAt, Person: &pp}); err != nil {
		return fmt.Errorf("sites of person %s: %w", p.ID, err)
	}
	return nil
}

// toSites adds c to the feed of every site of the tenant: people, teams
// and visit types go to every site.
func toSites(ctx context.Context, tx *sql.Tx, f *feed, t cloud.Tenant, c protocol.Change) error {
	sites, err := all(ctx, tx, func(r scanner) (string, error) {
		var id string
		return id, r.Scan(&id)
	}, `SELECT id FROM sites WHERE org_id = ? AND mode = ? ORDER BY id`, t.OrgID, string(t.Mode))
	if err != nil {
		return err
	}
	for _, site := range sites {
		f.add(site, c)
	}
	return nil
}

// kioskChanges adds every team and visit type of the tenant to a new
// site's feed, for its reception kiosk.
func kioskChanges(ctx context.Context, tx *sql.Tx, f *feed, site cloud.Site) error {
	teams, err := all(ctx, tx, scanTeam, `SELECT `+teamCols+` FROM teams WHERE org_id = ? AND mode = ? ORDER BY created_at, id`,
		site.Tenant.OrgID, string(site.Tenant.Mode))
	if err != nil {
		return err
	}
	for _, tm := range teams {
		et := cloud.EdgeTeam(tm)
		f.add(site.ID, protocol.Change{At: tm.UpdatedAt, Team: &et})
	}
	types, err := all(ctx, tx, scanVisitType, `SELECT `+visitTypeCols+` FROM visit_types WHERE org_id = ? AND mode = ? ORDER BY key`,
		site.Tenant.OrgID, string(site.Tenant.Mode))
	if err != nil {
		return err
	}
	for _, vt := range types {
		ev := cloud.EdgeVisitType(vt)
		f.add(site.ID, protocol.Change{At: vt.UpdatedAt, VisitType: &ev})
	}
	return nil
}

// peopleChanges adds every person of the tenant, active or not, to a new
// site's feed.
func peopleChanges(ctx context.Context, tx *sql.Tx, f *feed, site cloud.Site) error {
	people, err := all(ctx, tx, scanPerson, `SELECT `+personCols+` FROM people WHERE org_id = ? AND mode = ? ORDER BY created_at, id`,
		site.Tenant.OrgID, string(site.Tenant.Mode))
	if err != nil {
		return err
	}
	for _, p := range people {
		pp := cloud.EdgePerson(p)
		f.add(site.ID, protocol.Change{At: p.UpdatedAt, Person: &pp})
	}
	return nil
}

func emailConflict(err error) error {
	if isUniqueViolation(err) && strings.Contains(err.Error(), "email") {
		return &cloud.ConflictError{Field: "email", Message: "another person already has this email address"}
	}
	return err
}

// CreatePerson implements cloud.Store: the person goes out on the feed of
// every site of the tenant.
func (s *Store) CreatePerson(ctx context.Context, p cloud.Person) error {
	args := append([]any{p.ID, p.Tenant.OrgID, string(p.Tenant.Mode), micros(p.CreatedAt)}, personArgs(p)...)
	err := s.writeTx(ctx, p.Tenant, func(tx *sql.Tx, f *feed) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO people (id, org_id, mode, created_at, name, name_search, email, email_fold, phone, job_title, site_id, active, deactivated_at, pass_issued_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, args...); err != nil {
			return err
		}
		return personToSites(ctx, tx, f, p)
	})
	if err != nil {
		return emailConflict(fmt.Errorf("insert person: %w", err))
	}
	return nil
}

// Person implements cloud.Store.
func (s *Store) Person(ctx context.Context, t cloud.Tenant, id string) (cloud.Person, error) {
	return get(ctx, s.r, scanPerson, `SELECT `+personCols+` FROM people WHERE id = ? AND org_id = ? AND mode = ?`, id, t.OrgID, string(t.Mode))
}

// People implements cloud.Store.
func (s *Store) People(ctx context.Context, t cloud.Tenant, ids []string) ([]cloud.Person, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	args := []any{t.OrgID, string(t.Mode)}
	for _, id := range ids {
		args = append(args, id)
	}
	q := `SELECT ` + personCols + ` FROM people WHERE org_id = ? AND mode = ? AND id IN (?` + strings.Repeat(", ?", len(ids)-1) + `)`
	var out []cloud.Person
	err := s.r.byKey(ctx, func(ctx context.Context, r keyReader) (err error) {
		out, _, err = list(ctx, r, scanPerson, len(ids)+1, q, args...)
		return err
	})
	return out, classify(err)
}

// UpdatePerson implements cloud.Store: the person goes out on the feed of
// every site of the tenant, as fn left them.
func (s *Store) UpdatePerson(ctx context.Context, t cloud.Tenant, id string, fn func(*cloud.Person) error) (cloud.Person, error) {
	var p cloud.Person
	err := s.writeTx(ctx, t, func(tx *sql.Tx, f *feed) error {
		var err error
		p, err = get(ctx, tx, scanPerson, `SELECT `+personCols+` FROM people WHERE id = ? AND org_id = ? AND mode = ?`, id, t.OrgID, string(t.Mode))
		if err != nil {
			return err
		}
		if err := fn(&p); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE people SET name = ?, name_search = ?, email = ?, email_fold = ?, phone = ?, job_title = ?, site_id = ?,
			active = ?, deactivated_at = ?, pass_issued_at = ?, updated_at = ? WHERE id = ?`, append(personArgs(p), p.ID)...); err != nil {
			return emailConflict(err)
		}
		return personToSites(ctx, tx, f, p)
	})
	return p, err
}

// ListPeople implements cloud.Store.
func (s *Store) ListPeople(ctx context.Context, t cloud.Tenant, f cloud.PersonFilter, p cloud.Page) ([]cloud.Person, bool, error) {
	var conds strings.Builder
	var args []any
	if f.SiteID != "" {
		conds.WriteString(` AND site_id = ?`)
		args = append(args, f.SiteID)
	}
	if f.Email != "" {
		conds.WriteString(` AND email_fold = ?`)
		args = append(args, cloud.Fold(f.Email))
	}
	if f.Active != nil {
		conds.WriteString(` AND active = ?`)
		args = append(args, boolInt(*f.Active))
	}
	n := nameSearch{table: "people", key: "person_id", cols: personCols, query: f.Query,
		match: ` AND (instr(name_search, ?) > 0 OR instr(coalesce(email_fold, ''), ?) > 0)`, matchArgs: []any{f.Query, f.Query}}
	return searchList(ctx, s, n, scanPerson, t, conds.String(), args, p)
}
