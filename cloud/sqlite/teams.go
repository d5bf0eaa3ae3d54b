package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/sync/protocol"
)

const teamCols = `id, org_id, mode, name, site_id, lead_id, visitors_can_choose, archived, created_at, updated_at`

// teamRow holds the scan targets of one teams row, allocated once per
// query rather than once per row.
type teamRow struct {
	tm               cloud.Team
	mode             string
	site, lead       sql.NullString
	vcc, archived    bool
	created, updated int64
	dest             []any
}

func newTeamRow() *teamRow {
	r := &teamRow{}
	r.dest = []any{&r.tm.ID, &r.tm.Tenant.OrgID, &r.mode, &r.tm.Name, &r.site, &r.lead, &r.vcc, &r.archived, &r.created, &r.updated}
	return r
}

func (r *teamRow) scan(s scanner) (cloud.Team, error) {
	r.tm = cloud.Team{}
	err := s.Scan(r.dest...)
	tm := r.tm
	tm.Tenant.Mode, tm.SiteID, tm.LeadID = cloud.Mode(r.mode), r.site.String, r.lead.String
	tm.VisitorsCanChoose, tm.Archived, tm.CreatedAt, tm.UpdatedAt = r.vcc, r.archived, fromMicros(r.created), fromMicros(r.updated)
	return tm, err
}

func scanTeam(s scanner) (cloud.Team, error) { return newTeamRow().scan(s) }

// querier is a *sql.DB or *sql.Tx.
type querier interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}

// withMembers fills the members of every team in one query.
//
// The query numbers the page's teams in a VALUES list and returns that
// number instead of the team's ID, and the rows come out grouped by team,
// so each team's members are a window of two shared slices: about half
// the allocations of scanning a text ID per row and appending per team.
// CROSS JOIN fixes the join order SQLite's planner would otherwise get
// wrong for a page of 25: walk team_members by primary key, fetch each
// person by ID, instead of scanning all the tenant's people.
func withMembers(ctx context.Context, db querier, teams []cloud.Team) error {
	if len(teams) == 0 {
		return nil
	}
	args := make([]any, 0, 2*len(teams)+2)
	for i := range teams {
		args = append(args, i, teams[i].ID)
	}
	args = append(args, teams[0].Tenant.OrgID, string(teams[0].Tenant.Mode))
	rows, err := db.QueryContext(ctx, `WITH page(i, team_id) AS (VALUES (?, ?)`+strings.Repeat(", (?, ?)", len(teams)-1)+`)
		SELECT page.i, p.id, p.name, p.job_title, p.active
		FROM page CROSS JOIN team_members m ON m.team_id = page.team_id CROSS JOIN people p ON p.id = m.person_id
		WHERE p.org_id = ? AND p.mode = ?
		ORDER BY page.i, m.position`, args...)
	if err != nil {
		return fmt.Errorf("load team members: %w", err)
	}
	defer rows.Close()
	var (
		ids     = make([]string, 0, 4*len(teams))
		members = make([]cloud.Member, 0, 4*len(teams))
		owner   = make([]int, 0, 4*len(teams))
		i       int
		m       cloud.Member
		title   sql.NullString
		active  bool
	)
	for rows.Next() {
		if err := rows.Scan(&i, &m.ID, &m.Name, &title, &active); err != nil {
			return fmt.Errorf("load team members: %w", err)
		}
		if i < 0 || i >= len(teams) {
			return fmt.Errorf("load team members: page index %d out of range", i)
		}
		m.JobTitle, m.Active = title.String, active
		ids, members, owner = append(ids, m.ID), append(members, m), append(owner, i)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("load team members: %w", err)
	}
	// owner is sorted: cut the shared slices into each team's window, with
	// the capacity clipped so an append to one team cannot touch the next.
	from := 0
	for t := range teams {
		to := from
		for to < len(owner) && owner[to] == t {
			to++
		}
		teams[t].MemberIDs, teams[t].Members = ids[from:to:to], members[from:to:to]
		from = to
	}
	return nil
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

// CreateTeam implements cloud.Store: the team goes out on the feed of
// every site of the tenant, for the reception kiosks.
func (s *Store) CreateTeam(ctx context.Context, tm cloud.Team) error {
	return s.writeTx(ctx, tm.Tenant, func(tx *sql.Tx, f *feed) error {
		args := append([]any{tm.ID, tm.Tenant.OrgID, string(tm.Tenant.Mode), micros(tm.CreatedAt)}, teamArgs(tm)...)
		if _, err := tx.ExecContext(ctx, `INSERT INTO teams (id, org_id, mode, created_at, name, name_search, site_id, lead_id, visitors_can_choose, archived, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, args...); err != nil {
			return fmt.Errorf("insert team: %w", err)
		}
		if err := writeMembers(ctx, tx, tm); err != nil {
			return err
		}
		return teamToSites(ctx, tx, f, tm)
	})
}

// teamToSites adds tm to the feed of every site of its tenant.
func teamToSites(ctx context.Context, tx *sql.Tx, f *feed, tm cloud.Team) error {
	et := cloud.EdgeTeam(tm)
	if err := toSites(ctx, tx, f, tm.Tenant, protocol.Change{At: tm.UpdatedAt, Team: &et}); err != nil {
		return fmt.Errorf("sites of team %s: %w", tm.ID, err)
	}
	return nil
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

// UpdateTeam implements cloud.Store: the team goes out on the feed of
// every site of the tenant, as fn left it.
func (s *Store) UpdateTeam(ctx context.Context, t cloud.Tenant, id string, fn func(*cloud.Team) error) (cloud.Team, error) {
	var before []string
	var tm cloud.Team
	err := s.writeTx(ctx, t, func(tx *sql.Tx, f *feed) error {
		var err error
		tm, err = s.updateTeam(ctx, tx, id, t, &before, fn)
		if err != nil {
			return err
		}
		return teamToSites(ctx, tx, f, tm)
	})
	if err != nil {
		return tm, err
	}
	return s.Team(ctx, t, id)
}

// updateTeam reads, changes and writes a team in tx.
func (s *Store) updateTeam(ctx context.Context, tx *sql.Tx, id string, t cloud.Tenant, before *[]string, fn func(*cloud.Team) error) (cloud.Team, error) {
	read := func(tx *sql.Tx) (cloud.Team, error) {
		tm, err := get(ctx, tx, scanTeam, `SELECT `+teamCols+` FROM teams WHERE id = ? AND org_id = ? AND mode = ?`, id, t.OrgID, string(t.Mode))
		if err != nil {
			return tm, err
		}
		teams := []cloud.Team{tm}
		err = withMembers(ctx, tx, teams)
		*before = teams[0].MemberIDs
		return teams[0], err
	}
	tm, err := read(tx)
	if err != nil {
		return tm, err
	}
	if err := fn(&tm); err != nil {
		return tm, err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE teams SET name = ?, name_search = ?, site_id = ?, lead_id = ?, visitors_can_choose = ?, archived = ?,
		updated_at = ? WHERE id = ?`, append(teamArgs(tm), tm.ID)...); err != nil {
		return tm, err
	}
	if sameIDs(*before, tm.MemberIDs) {
		return tm, nil
	}
	return tm, writeMembers(ctx, tx, tm)
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
	var conds strings.Builder
	var args []any
	if f.SiteID != "" {
		conds.WriteString(` AND (site_id = ? OR site_id IS NULL)`)
		args = append(args, f.SiteID)
	}
	if f.VisitorsCanChoose != nil {
		conds.WriteString(` AND visitors_can_choose = ?`)
		args = append(args, boolInt(*f.VisitorsCanChoose))
	}
	if !f.IncludeArchived {
		conds.WriteString(` AND archived = 0`)
	}
	n := nameSearch{table: "teams", key: "team_id", cols: teamCols, query: f.Query,
		match: ` AND instr(name_search, ?) > 0`, matchArgs: []any{f.Query}}
	teams, more, err := searchList(ctx, s, n, newTeamRow().scan, t, conds.String(), args, p)
	if err != nil {
		return nil, false, fmt.Errorf("list teams: %w", err)
	}
	return teams, more, withMembers(ctx, s.r, teams)
}
