package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/svc-vms/svc/cloud"
)

const teamCols = `id, org_id, mode, name, site_id, lead_id, visitors_can_choose, archived, created_at, updated_at`

func scanTeam(r scanner) (cloud.Team, error) {
	var tm cloud.Team
	var mode string
	var site, lead sql.NullString
	var vcc, archived int
	var created, updated int64
	err := r.Scan(&tm.ID, &tm.Tenant.OrgID, &mode, &tm.Name, &site, &lead, &vcc, &archived, &created, &updated)
	tm.Tenant.Mode, tm.SiteID, tm.LeadID = cloud.Mode(mode), str(site), str(lead)
	tm.VisitorsCanChoose, tm.Archived, tm.CreatedAt, tm.UpdatedAt = vcc == 1, archived == 1, fromMicros(created), fromMicros(updated)
	return tm, err
}

// querier is a *sql.DB or *sql.Tx.
type querier interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}

// withMembers fills the members of every team in one query.
func withMembers(ctx context.Context, db querier, teams []cloud.Team) error {
	if len(teams) == 0 {
		return nil
	}
	index := make(map[string]int, len(teams))
	// CROSS JOIN fixes the join order SQLite's planner would otherwise
	// get wrong for a page of 25: walk team_members by primary key, fetch
	// each person by ID, instead of scanning all the tenant's people.
	args := []any{teams[0].Tenant.OrgID, string(teams[0].Tenant.Mode)}
	for i := range teams {
		index[teams[i].ID] = i
		args = append(args, teams[i].ID)
		teams[i].MemberIDs, teams[i].Members = []string{}, []cloud.Member{}
	}
	rows, err := db.QueryContext(ctx, `SELECT m.team_id, p.id, p.name, p.job_title, p.active
		FROM team_members m CROSS JOIN people p ON p.id = m.person_id
		WHERE p.org_id = ? AND p.mode = ? AND m.team_id IN (?`+strings.Repeat(", ?", len(teams)-1)+`)
		ORDER BY m.team_id, m.position`, args...)
	if err != nil {
		return fmt.Errorf("load team members: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var teamID string
		var m cloud.Member
		var title sql.NullString
		var active int
		if err := rows.Scan(&teamID, &m.ID, &m.Name, &title, &active); err != nil {
			return fmt.Errorf("load team members: %w", err)
		}
		m.JobTitle, m.Active = title.String, active == 1
		tm := &teams[index[teamID]]
		tm.MemberIDs = append(tm.MemberIDs, m.ID)
		tm.Members = append(tm.Members, m)
	}
	return rows.Err()
}

func teamArgs(tm cloud.Team) []any {
	return []any{tm.Name, cloud.Fold(tm.Name), null(tm.SiteID), null(tm.LeadID), boolInt(tm.VisitorsCanChoose), boolInt(tm.Archived), micros(tm.UpdatedAt)}
}

func writeMembers(ctx context.Context, tx *sql.Tx, tm cloud.Team) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM team_members WHERE team_id = ?`, tm.ID); err != nil {
		return err
	}
	for i, id := range tm.MemberIDs {
		res, err := tx.ExecContext(ctx, `INSERT INTO team_members (team_id, position, person_id)
			SELECT ?, ?, id FROM people WHERE id = ? AND org_id = ? AND mode = ?`, tm.ID, i, id, tm.Tenant.OrgID, string(tm.Tenant.Mode))
		if err != nil {
			return fmt.Errorf("insert team member: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return fmt.Errorf("insert team member: person %s: %w", id, cloud.ErrNotFound)
		}
	}
	return nil
}

// CreateTeam implements cloud.Store.
func (s *Store) CreateTeam(ctx context.Context, tm cloud.Team) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		args := append([]any{tm.ID, tm.Tenant.OrgID, string(tm.Tenant.Mode), micros(tm.CreatedAt)}, teamArgs(tm)...)
		if _, err := tx.ExecContext(ctx, `INSERT INTO teams (id, org_id, mode, created_at, name, name_search, site_id, lead_id, visitors_can_choose, archived, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, args...); err != nil {
			return fmt.Errorf("insert team: %w", err)
		}
		return writeMembers(ctx, tx, tm)
	})
}

// Team implements cloud.Store.
func (s *Store) Team(ctx context.Context, t cloud.Tenant, id string) (cloud.Team, error) {
	tm, err := get(ctx, s.r, scanTeam, `SELECT `+teamCols+` FROM teams WHERE id = ? AND org_id = ? AND mode = ?`, id, t.OrgID, string(t.Mode))
	if err != nil {
		return tm, err
	}
	teams := []cloud.Team{tm}
	err = withMembers(ctx, s.r, teams)
	return teams[0], err
}

// UpdateTeam implements cloud.Store.
func (s *Store) UpdateTeam(ctx context.Context, t cloud.Tenant, id string, fn func(*cloud.Team) error) (cloud.Team, error) {
	var before []string
	tm, err := update(ctx, s, func(tx *sql.Tx) (cloud.Team, error) {
		tm, err := get(ctx, tx, scanTeam, `SELECT `+teamCols+` FROM teams WHERE id = ? AND org_id = ? AND mode = ?`, id, t.OrgID, string(t.Mode))
		if err != nil {
			return tm, err
		}
		teams := []cloud.Team{tm}
		err = withMembers(ctx, tx, teams)
		before = teams[0].MemberIDs
		return teams[0], err
	}, fn, func(tx *sql.Tx, tm cloud.Team) error {
		if _, err := tx.ExecContext(ctx, `UPDATE teams SET name = ?, name_search = ?, site_id = ?, lead_id = ?, visitors_can_choose = ?, archived = ?,
			updated_at = ? WHERE id = ?`, append(teamArgs(tm), tm.ID)...); err != nil {
			return err
		}
		if sameIDs(before, tm.MemberIDs) {
			return nil
		}
		return writeMembers(ctx, tx, tm)
	})
	if err != nil {
		return tm, err
	}
	return s.Team(ctx, t, id)
}

func sameIDs(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// ListTeams implements cloud.Store.
func (s *Store) ListTeams(ctx context.Context, t cloud.Tenant, f cloud.TeamFilter, p cloud.Page) ([]cloud.Team, bool, error) {
	var q strings.Builder
	q.WriteString(`SELECT ` + teamCols + ` FROM teams WHERE org_id = ? AND mode = ?`)
	args := []any{t.OrgID, string(t.Mode)}
	if f.Query != "" {
		q.WriteString(` AND instr(name_search, ?) > 0`)
		args = append(args, f.Query)
	}
	if f.SiteID != "" {
		q.WriteString(` AND (site_id = ? OR site_id IS NULL)`)
		args = append(args, f.SiteID)
	}
	if f.VisitorsCanChoose != nil {
		q.WriteString(` AND visitors_can_choose = ?`)
		args = append(args, boolInt(*f.VisitorsCanChoose))
	}
	if !f.IncludeArchived {
		q.WriteString(` AND archived = 0`)
	}
	args = keyset(&q, args, p, "")
	teams, more, err := list(ctx, s.r, scanTeam, p.Limit, q.String(), args...)
	if err != nil {
		return nil, false, fmt.Errorf("list teams: %w", err)
	}
	return teams, more, withMembers(ctx, s.r, teams)
}
