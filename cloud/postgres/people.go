package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/sync/protocol"
)

const personCols = `id, name, email, phone, job_title, site_id, active, deactivated_at, pass_issued_at, created_at, updated_at`

func scanPerson(row scanner, t cloud.Tenant) (cloud.Person, error) {
	p := cloud.Person{Tenant: t}
	var email, phone, title, site pgtype.Text
	var deactivated pgtype.Timestamptz
	err := row.Scan(&p.ID, &p.Name, &email, &phone, &title, &site, &p.Active, &deactivated, &p.PassIssuedAt, &p.CreatedAt, &p.UpdatedAt)
	if err != nil {
		return cloud.Person{}, err
	}
	p.Email, p.Phone, p.JobTitle, p.SiteID = email.String, phone.String, title.String, site.String
	p.DeactivatedAt, p.CreatedAt, p.UpdatedAt = timePtr(deactivated), p.CreatedAt.UTC(), p.UpdatedAt.UTC()
	p.PassIssuedAt = p.PassIssuedAt.UTC()
	return p, nil
}

// personArgs are the values of every column but org_id, mode and id, from
// $4 on: name, name_search, email, email_fold, phone, job_title, site_id,
// active, deactivated_at, pass_issued_at, created_at, updated_at.
func personArgs(t cloud.Tenant, id string, p cloud.Person) []any {
	var emailFold any
	if p.Email != "" {
		emailFold = cloud.Fold(p.Email)
	}
	return []any{t.OrgID, string(t.Mode), id, p.Name, cloud.Fold(p.Name), null(p.Email), emailFold, null(p.Phone),
		null(p.JobTitle), null(p.SiteID), p.Active, nullTime(p.DeactivatedAt), p.PassIssuedAt, p.CreatedAt, p.UpdatedAt}
}

// personToSites adds p to the feed of every site of its tenant: every site
// follows every person (a person may clock in at any site). The caller
// holds the tenant's feed lock (lockTenantFeeds), so a site created
// meanwhile either is seen here or, committing after this write, finds p
// among the people it starts with.
func personToSites(ctx context.Context, tx pgx.Tx, f *feed, p cloud.Person) error {
	rows, _ := tx.Query(ctx, `SELECT id FROM sites WHERE org_id = $1 AND mode = $2 ORDER BY id`, p.Tenant.OrgID, string(p.Tenant.Mode))
	sites, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("sites of person %s: %w", p.ID, err)
	}
	pp := cloud.EdgePerson(p)
	for _, site := range sites {
		f.add(site, protocol.Change{At: p.UpdatedAt, Person: &pp})
	}
	return nil
}

// toSites adds c to the feed of every site of the tenant, under the
// tenant's feed lock (see personToSites): teams and visit types go to
// every site, for the reception kiosks.
func toSites(ctx context.Context, tx pgx.Tx, f *feed, t cloud.Tenant, c protocol.Change) error {
	if err := lockTenantFeeds(ctx, tx, t); err != nil {
		return err
	}
	rows, _ := tx.Query(ctx, `SELECT id FROM sites WHERE org_id = $1 AND mode = $2 ORDER BY id`, t.OrgID, string(t.Mode))
	sites, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	for _, site := range sites {
		f.add(site, c)
	}
	return nil
}

// tenantKiosk are every team and visit type of the tenant as edges keep
// them, with the times they changed.
func tenantKiosk(ctx context.Context, q querier, t cloud.Tenant) ([]protocol.Team, []time.Time, []protocol.VisitType, []time.Time, error) {
	rows, _ := q.Query(ctx, `SELECT `+teamCols+` FROM teams WHERE org_id = $1 AND mode = $2 ORDER BY created_at, id`, t.OrgID, string(t.Mode))
	teams, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (cloud.Team, error) { return scanTeam(row, t) })
	if err != nil {
		return nil, nil, nil, nil, err
	}
	rows, _ = q.Query(ctx, `SELECT `+visitTypeCols+` FROM visit_types WHERE org_id = $1 AND mode = $2 ORDER BY key`, t.OrgID, string(t.Mode))
	types, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (cloud.VisitType, error) { return scanVisitType(row, t) })
	if err != nil {
		return nil, nil, nil, nil, err
	}
	et, tat := make([]protocol.Team, len(teams)), make([]time.Time, len(teams))
	for i, tm := range teams {
		et[i], tat[i] = cloud.EdgeTeam(tm), tm.UpdatedAt
	}
	ev, vat := make([]protocol.VisitType, len(types)), make([]time.Time, len(types))
	for i, vt := range types {
		ev[i], vat[i] = cloud.EdgeVisitType(vt), vt.UpdatedAt
	}
	return et, tat, ev, vat, nil
}

// tenantPeople are every person of the tenant, active or not, oldest first,
// as edges keep them.
func tenantPeople(ctx context.Context, q querier, t cloud.Tenant) ([]protocol.Person, []time.Time, error) {
	rows, _ := q.Query(ctx, `SELECT `+personCols+` FROM people WHERE org_id = $1 AND mode = $2 ORDER BY created_at, id`,
		t.OrgID, string(t.Mode))
	people, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (cloud.Person, error) { return scanPerson(row, t) })
	if err != nil {
		return nil, nil, err
	}
	out := make([]protocol.Person, len(people))
	at := make([]time.Time, len(people))
	for i, p := range people {
		out[i], at[i] = cloud.EdgePerson(p), p.UpdatedAt
	}
	return out, at, nil
}

// CreatePerson implements cloud.Store, under the tenant's feed lock: the
// person goes out on the feed of every site of the tenant.
func (s *Store) CreatePerson(ctx context.Context, p cloud.Person) error {
	err := s.writeTx(ctx, p.Tenant, func(tx pgx.Tx, f *feed) error {
		if err := lockTenantFeeds(ctx, tx, p.Tenant); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO people (org_id, mode, id, name, name_search, email, email_fold, phone,
				job_title, site_id, active, deactivated_at, pass_issued_at, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`, personArgs(p.Tenant, p.ID, p)...); err != nil {
			return err
		}
		return personToSites(ctx, tx, f, p)
	})
	if err != nil {
		return translate("create person", err)
	}
	return nil
}

// Person implements cloud.Store.
func (s *Store) Person(ctx context.Context, t cloud.Tenant, id string) (cloud.Person, error) {
	p, err := scanPerson(s.pool.QueryRow(ctx, `SELECT `+personCols+` FROM people WHERE org_id = $1 AND mode = $2 AND id = $3`,
		t.OrgID, string(t.Mode), id), t)
	if errors.Is(err, pgx.ErrNoRows) {
		return cloud.Person{}, cloud.ErrNotFound
	}
	if err != nil {
		return cloud.Person{}, fmt.Errorf("get person: %w", err)
	}
	return p, nil
}

// People implements cloud.Store.
func (s *Store) People(ctx context.Context, t cloud.Tenant, ids []string) ([]cloud.Person, error) {
	if len(ids) == 0 {
		return []cloud.Person{}, nil
	}
	if v, err, ok := takeAhead[[]cloud.Person](s.bound(ctx), aheadPeople, t, ids...); ok {
		return v, err
	}
	rows, _ := s.pool.Query(ctx, qPeople, t.OrgID, string(t.Mode), ids)
	return peopleRead(t)(rows)
}

const qPeople = `SELECT ` + personCols + ` FROM people WHERE org_id = $1 AND mode = $2 AND id = ANY($3)`

// peopleRead collects qPeople's rows as People returns them.
func peopleRead(t cloud.Tenant) func(pgx.Rows) ([]cloud.Person, error) {
	return func(rows pgx.Rows) ([]cloud.Person, error) {
		out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (cloud.Person, error) { return scanPerson(row, t) })
		if err != nil {
			return nil, fmt.Errorf("get people: %w", err)
		}
		return out, nil
	}
}

// UpdatePerson implements cloud.Store, under the tenant's feed lock: the
// person goes out on the feed of every site of the tenant, as fn left
// them.
func (s *Store) UpdatePerson(ctx context.Context, t cloud.Tenant, id string, fn func(*cloud.Person) error) (cloud.Person, error) {
	var out cloud.Person
	err := s.writeTx(ctx, t, func(tx pgx.Tx, f *feed) error {
		if err := lockTenantFeeds(ctx, tx, t); err != nil {
			return err
		}
		p, err := scanPerson(tx.QueryRow(ctx, `SELECT `+personCols+` FROM people WHERE org_id = $1 AND mode = $2 AND id = $3 FOR UPDATE`,
			t.OrgID, string(t.Mode), id), t)
		if errors.Is(err, pgx.ErrNoRows) {
			return cloud.ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("update person: %w", err)
		}
		if err := fn(&p); err != nil {
			return err
		}
		out, err = scanPerson(tx.QueryRow(ctx, `UPDATE people SET name = $4, name_search = $5, email = $6, email_fold = $7,
				phone = $8, job_title = $9, site_id = $10, active = $11, deactivated_at = $12, pass_issued_at = $13,
				created_at = $14, updated_at = $15
			WHERE org_id = $1 AND mode = $2 AND id = $3 RETURNING `+personCols, personArgs(t, id, p)...), t)
		if err != nil {
			return translate("update person", err)
		}
		return personToSites(ctx, tx, f, out)
	})
	if err != nil {
		return cloud.Person{}, err
	}
	return out, nil
}

// contains is the condition that col holds q, which the list's $%[1]d
// will be: LIKE '%q%' with q's wildcards escaped, which a pg_trgm index
// serves, when cloud.SearchIndexed(q); otherwise strpos, which is the same
// test, made on the rows in list order. It returns the argument.
func contains(col, q string) (string, any) {
	if !cloud.SearchIndexed(q) {
		return "strpos(" + col + ", $%[1]d) > 0", q
	}
	return col + " LIKE $%[1]d", "%" + likeEscaper.Replace(q) + "%"
}

var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

// ListPeople implements cloud.Store. Query is matched as a substring
// (contains), in which % and _ are plain characters.
func (s *Store) ListPeople(ctx context.Context, t cloud.Tenant, f cloud.PersonFilter, p cloud.Page) ([]cloud.Person, bool, error) {
	l := newList(personCols, "people", t)
	if f.Query != "" {
		name, arg := contains("name_search", f.Query)
		email, _ := contains("email_fold", f.Query)
		l.where("("+name+" OR "+email+")", arg)
	}
	if f.SiteID != "" {
		l.where("site_id = $%d", f.SiteID)
	}
	if f.Email != "" {
		l.where("email_fold = $%d", cloud.Fold(f.Email))
	}
	if f.Active != nil {
		l.where("active = $%d", *f.Active)
	}
	l.page(p)
	out, more, err := collect(ctx, s.pool, l, p.Limit, func(row pgx.CollectableRow) (cloud.Person, error) {
		return scanPerson(row, t)
	})
	if err != nil {
		return nil, false, fmt.Errorf("list people: %w", err)
	}
	return out, more, nil
}

const teamCols = `id, name, site_id, lead_id, visitors_can_choose, archived, created_at, updated_at`

// scanTeam reads teamCols; the members are loaded separately.
func scanTeam(row scanner, t cloud.Tenant) (cloud.Team, error) {
	tm := cloud.Team{Tenant: t, MemberIDs: []string{}, Members: []cloud.Member{}}
	var site, lead pgtype.Text
	err := row.Scan(&tm.ID, &tm.Name, &site, &lead, &tm.VisitorsCanChoose, &tm.Archived, &tm.CreatedAt, &tm.UpdatedAt)
	if err != nil {
		return cloud.Team{}, err
	}
	tm.SiteID, tm.LeadID = site.String, lead.String
	tm.CreatedAt, tm.UpdatedAt = tm.CreatedAt.UTC(), tm.UpdatedAt.UTC()
	return tm, nil
}

// loadMembers fills MemberIDs and Members of the teams, all in one query.
func loadMembers(ctx context.Context, q querier, t cloud.Tenant, teams []cloud.Team) error {
	if len(teams) == 0 {
		return nil
	}
	at := make(map[string]int, len(teams))
	ids := make([]string, len(teams))
	for i, tm := range teams {
		at[tm.ID], ids[i] = i, tm.ID
	}
	rows, _ := q.Query(ctx, `SELECT m.team_id, p.id, p.name, p.job_title, p.active
		FROM team_members m JOIN people p ON p.org_id = m.org_id AND p.mode = m.mode AND p.id = m.person_id
		WHERE m.org_id = $1 AND m.mode = $2 AND m.team_id = ANY($3)
		ORDER BY m.team_id, m.position`, t.OrgID, string(t.Mode), ids)
	var teamID string
	var m cloud.Member
	var title pgtype.Text
	_, err := pgx.ForEachRow(rows, []any{&teamID, &m.ID, &m.Name, &title, &m.Active}, func() error {
		m.JobTitle = title.String
		tm := &teams[at[teamID]]
		tm.MemberIDs = append(tm.MemberIDs, m.ID)
		tm.Members = append(tm.Members, m)
		return nil
	})
	if err != nil {
		return fmt.Errorf("load team members: %w", err)
	}
	return nil
}

// insertMembers stores a team's members in the order given, in one
// statement. A person missing from the tenant returns an error wrapping
// ErrNotFound.
func insertMembers(ctx context.Context, q querier, t cloud.Tenant, teamID string, memberIDs []string) error {
	if len(memberIDs) == 0 {
		return nil
	}
	_, err := q.Exec(ctx, `INSERT INTO team_members (org_id, mode, team_id, position, person_id)
		SELECT $1, $2, $3, u.ord - 1, u.person_id FROM unnest($4::text[]) WITH ORDINALITY AS u(person_id, ord)`,
		t.OrgID, string(t.Mode), teamID, memberIDs)
	if err != nil {
		return translate("store team members", err)
	}
	return nil
}

// teamArgs are $1..$11: org_id, mode, id, name, name_search, site_id,
// lead_id, visitors_can_choose, archived, created_at, updated_at.
func teamArgs(t cloud.Tenant, id string, tm cloud.Team) []any {
	return []any{t.OrgID, string(t.Mode), id, tm.Name, cloud.Fold(tm.Name), null(tm.SiteID), null(tm.LeadID),
		tm.VisitorsCanChoose, tm.Archived, tm.CreatedAt, tm.UpdatedAt}
}

// CreateTeam implements cloud.Store: the team goes out on the feed of
// every site of the tenant, for the reception kiosks. A member, lead or site missing from
// the tenant returns an error wrapping ErrNotFound.
func (s *Store) CreateTeam(ctx context.Context, tm cloud.Team) error {
	return s.writeTx(ctx, tm.Tenant, func(tx pgx.Tx, f *feed) error {
		_, err := tx.Exec(ctx, `INSERT INTO teams (org_id, mode, id, name, name_search, site_id, lead_id,
				visitors_can_choose, archived, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`, teamArgs(tm.Tenant, tm.ID, tm)...)
		if err != nil {
			return translate("create team", err)
		}
		if err := insertMembers(ctx, tx, tm.Tenant, tm.ID, tm.MemberIDs); err != nil {
			return err
		}
		et := cloud.EdgeTeam(tm)
		return toSites(ctx, tx, f, tm.Tenant, protocol.Change{At: tm.UpdatedAt, Team: &et})
	})
}

// Team implements cloud.Store.
func (s *Store) Team(ctx context.Context, t cloud.Tenant, id string) (cloud.Team, error) {
	tm, err := scanTeam(s.pool.QueryRow(ctx, `SELECT `+teamCols+` FROM teams WHERE org_id = $1 AND mode = $2 AND id = $3`,
		t.OrgID, string(t.Mode), id), t)
	if errors.Is(err, pgx.ErrNoRows) {
		return cloud.Team{}, cloud.ErrNotFound
	}
	if err != nil {
		return cloud.Team{}, fmt.Errorf("get team: %w", err)
	}
	teams := []cloud.Team{tm}
	if err := loadMembers(ctx, s.pool, t, teams); err != nil {
		return cloud.Team{}, err
	}
	return teams[0], nil
}

// UpdateTeam implements cloud.Store: the team goes out on the feed of
// every site of the tenant as fn left it. The member rows are rewritten only
// when MemberIDs changed.
func (s *Store) UpdateTeam(ctx context.Context, t cloud.Tenant, id string, fn func(*cloud.Team) error) (cloud.Team, error) {
	var out cloud.Team
	err := s.writeTx(ctx, t, func(tx pgx.Tx, f *feed) error {
		tm, err := scanTeam(tx.QueryRow(ctx, `SELECT `+teamCols+` FROM teams WHERE org_id = $1 AND mode = $2 AND id = $3 FOR UPDATE`,
			t.OrgID, string(t.Mode), id), t)
		if errors.Is(err, pgx.ErrNoRows) {
			return cloud.ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("update team: %w", err)
		}
		teams := []cloud.Team{tm}
		if err := loadMembers(ctx, tx, t, teams); err != nil {
			return err
		}
		tm = teams[0]
		before := slices.Clone(tm.MemberIDs)
		if err := fn(&tm); err != nil {
			return err
		}
		out, err = scanTeam(tx.QueryRow(ctx, `UPDATE teams SET name = $4, name_search = $5, site_id = $6, lead_id = $7,
				visitors_can_choose = $8, archived = $9, created_at = $10, updated_at = $11
			WHERE org_id = $1 AND mode = $2 AND id = $3 RETURNING `+teamCols, teamArgs(t, id, tm)...), t)
		if err != nil {
			return translate("update team", err)
		}
		if !slices.Equal(before, tm.MemberIDs) {
			if _, err := tx.Exec(ctx, `DELETE FROM team_members WHERE org_id = $1 AND mode = $2 AND team_id = $3`,
				t.OrgID, string(t.Mode), id); err != nil {
				return fmt.Errorf("update team: %w", err)
			}
			if err := insertMembers(ctx, tx, t, id, tm.MemberIDs); err != nil {
				return err
			}
		}
		teams = []cloud.Team{out}
		if err := loadMembers(ctx, tx, t, teams); err != nil {
			return err
		}
		out = teams[0]
		et := cloud.EdgeTeam(out)
		return toSites(ctx, tx, f, t, protocol.Change{At: out.UpdatedAt, Team: &et})
	})
	if err != nil {
		return cloud.Team{}, err
	}
	return out, nil
}

// ListTeams implements cloud.Store: one query for the page of teams, one
// for all their members.
func (s *Store) ListTeams(ctx context.Context, t cloud.Tenant, f cloud.TeamFilter, p cloud.Page) ([]cloud.Team, bool, error) {
	l := newList(teamCols, "teams", t)
	if f.Query != "" {
		l.where(contains("name_search", f.Query))
	}
	if f.SiteID != "" {
		l.where("(site_id = $%d OR site_id IS NULL)", f.SiteID)
	}
	if f.VisitorsCanChoose != nil {
		l.where("visitors_can_choose = $%d", *f.VisitorsCanChoose)
	}
	if !f.IncludeArchived {
		l.sql.WriteString(" AND NOT archived")
	}
	l.page(p)
	out, more, err := collect(ctx, s.pool, l, p.Limit, func(row pgx.CollectableRow) (cloud.Team, error) {
		return scanTeam(row, t)
	})
	if err != nil {
		return nil, false, fmt.Errorf("list teams: %w", err)
	}
	if err := loadMembers(ctx, s.pool, t, out); err != nil {
		return nil, false, err
	}
	return out, more, nil
}
