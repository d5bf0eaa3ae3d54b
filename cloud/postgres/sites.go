package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/sync/protocol"
)

const siteCols = `id, name, timezone, addr_line1, addr_line2, addr_city, addr_region, addr_postal_code, addr_country, created_at, updated_at, attendance_zone, wait_limit_minutes`

// scanSite reads siteCols. A site has an address when addr_line1 is not
// NULL: Line1 and Country are stored as given, the other parts "" as NULL.
func scanSite(row scanner, t cloud.Tenant) (cloud.Site, error) {
	site := cloud.Site{Tenant: t}
	var line1, line2, city, region, postal, country pgtype.Text
	var zone []byte
	err := row.Scan(&site.ID, &site.Name, &site.Timezone, &line1, &line2, &city, &region, &postal, &country,
		&site.CreatedAt, &site.UpdatedAt, &zone, &site.WaitLimitMinutes)
	if err != nil {
		return cloud.Site{}, err
	}
	if zone != nil {
		site.Zone = new(cloud.AttendanceZone)
		if err := json.Unmarshal(zone, site.Zone); err != nil {
			return cloud.Site{}, fmt.Errorf("site %s: attendance zone: %w", site.ID, err)
		}
	}
	if line1.Valid {
		site.Address = &cloud.Address{Line1: line1.String, Line2: line2.String, City: city.String,
			Region: region.String, PostalCode: postal.String, Country: country.String}
	}
	site.CreatedAt, site.UpdatedAt = site.CreatedAt.UTC(), site.UpdatedAt.UTC()
	return site, nil
}

// addressArgs are the six addr_ column values of a.
func addressArgs(a *cloud.Address) []any {
	if a == nil {
		return []any{nil, nil, nil, nil, nil, nil}
	}
	return []any{a.Line1, null(a.Line2), null(a.City), null(a.Region), null(a.PostalCode), a.Country}
}

// CreateSite implements cloud.Store, under the tenant's feed lock
// (lockTenantFeeds): the site's feed starts with its settings, the
// tenant's keys, people, teams and visit types.
func (s *Store) CreateSite(ctx context.Context, site cloud.Site) error {
	args := append([]any{site.Tenant.OrgID, string(site.Tenant.Mode), site.ID, site.Name, site.Timezone},
		addressArgs(site.Address)...)
	zone, err := jsonOrNull(site.Zone)
	if err != nil {
		return fmt.Errorf("create site: %w", err)
	}
	args = append(args, site.CreatedAt, site.UpdatedAt, zone, site.WaitLimitMinutes)
	return s.writeTx(ctx, site.Tenant, func(tx pgx.Tx, f *feed) error {
		if err := lockTenantFeeds(ctx, tx, site.Tenant); err != nil {
			return fmt.Errorf("create site: %w", err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO sites (org_id, mode, `+siteCols+`)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`, args...); err != nil {
			return translate("create site", err)
		}
		settings := cloud.EdgeSettings(site)
		f.add(site.ID, protocol.Change{At: site.UpdatedAt, Settings: &settings})
		if err := s.keyChanges(ctx, tx, f, site); err != nil {
			return fmt.Errorf("create site: %w", err)
		}
		people, at, err := tenantPeople(ctx, tx, site.Tenant)
		if err != nil {
			return fmt.Errorf("create site: %w", err)
		}
		for i := range people {
			f.add(site.ID, protocol.Change{At: at[i], Person: &people[i]})
		}
		teams, tat, types, vat, err := tenantKiosk(ctx, tx, site.Tenant)
		if err != nil {
			return fmt.Errorf("create site: %w", err)
		}
		for i := range teams {
			f.add(site.ID, protocol.Change{At: tat[i], Team: &teams[i]})
		}
		for i := range types {
			f.add(site.ID, protocol.Change{At: vat[i], VisitType: &types[i]})
		}
		return nil
	})
}

// Site implements cloud.Store.
func (s *Store) Site(ctx context.Context, t cloud.Tenant, id string) (cloud.Site, error) {
	return readByKey(ctx, s, aheadSite, t, id, qSite, siteRead)
}

const qSite = `SELECT ` + siteCols + ` FROM sites WHERE org_id = $1 AND mode = $2 AND id = $3`

// siteRead reads qSite's row as Site returns it.
func siteRead(t cloud.Tenant) func(pgx.Row) (cloud.Site, error) {
	return oneRow(scanSite, t, "get site")
}

// UpdateSite implements cloud.Store.
func (s *Store) UpdateSite(ctx context.Context, t cloud.Tenant, id string, fn func(*cloud.Site) error) (cloud.Site, error) {
	var out cloud.Site
	err := s.writeTx(ctx, t, func(tx pgx.Tx, f *feed) error {
		site, err := scanSite(tx.QueryRow(ctx, `SELECT `+siteCols+` FROM sites WHERE org_id = $1 AND mode = $2 AND id = $3 FOR UPDATE`,
			t.OrgID, string(t.Mode), id), t)
		if errors.Is(err, pgx.ErrNoRows) {
			return cloud.ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("update site: %w", err)
		}
		if err := fn(&site); err != nil {
			return err
		}
		args := append([]any{t.OrgID, string(t.Mode), id, site.Name, site.Timezone}, addressArgs(site.Address)...)
		zone, err := jsonOrNull(site.Zone)
		if err != nil {
			return fmt.Errorf("update site: %w", err)
		}
		args = append(args, site.CreatedAt, site.UpdatedAt, zone, site.WaitLimitMinutes)
		out, err = scanSite(tx.QueryRow(ctx, `UPDATE sites SET name = $4, timezone = $5,
				addr_line1 = $6, addr_line2 = $7, addr_city = $8, addr_region = $9, addr_postal_code = $10, addr_country = $11,
				created_at = $12, updated_at = $13, attendance_zone = $14, wait_limit_minutes = $15
			WHERE org_id = $1 AND mode = $2 AND id = $3 RETURNING `+siteCols, args...), t)
		if err != nil {
			return translate("update site", err)
		}
		settings := cloud.EdgeSettings(out)
		f.add(id, protocol.Change{At: out.UpdatedAt, Settings: &settings})
		return nil
	})
	if err != nil {
		return cloud.Site{}, err
	}
	return out, nil
}

// ListSites implements cloud.Store.
func (s *Store) ListSites(ctx context.Context, t cloud.Tenant, _ cloud.SiteFilter, p cloud.Page) ([]cloud.Site, bool, error) {
	l := newList(siteCols, "sites", t)
	l.page(p)
	out, more, err := collect(ctx, s.pool, l, p.Limit, func(row pgx.CollectableRow) (cloud.Site, error) {
		return scanSite(row, t)
	})
	if err != nil {
		return nil, false, fmt.Errorf("list sites: %w", err)
	}
	return out, more, nil
}

const gateCols = `id, site_id, name, direction, created_at, updated_at`

func scanGate(row scanner, t cloud.Tenant) (cloud.Gate, error) {
	g := cloud.Gate{Tenant: t}
	var dir string
	if err := row.Scan(&g.ID, &g.SiteID, &g.Name, &dir, &g.CreatedAt, &g.UpdatedAt); err != nil {
		return cloud.Gate{}, err
	}
	g.Direction, g.CreatedAt, g.UpdatedAt = cloud.Direction(dir), g.CreatedAt.UTC(), g.UpdatedAt.UTC()
	return g, nil
}

// CreateGate implements cloud.Store. A site missing from the tenant
// returns an error wrapping ErrNotFound.
func (s *Store) CreateGate(ctx context.Context, g cloud.Gate) error {
	return s.writeTx(ctx, g.Tenant, func(tx pgx.Tx, f *feed) error {
		if _, err := tx.Exec(ctx, `INSERT INTO gates (org_id, mode, `+gateCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			g.Tenant.OrgID, string(g.Tenant.Mode), g.ID, g.SiteID, g.Name, string(g.Direction), g.CreatedAt, g.UpdatedAt); err != nil {
			return translate("create gate", err)
		}
		pg := cloud.EdgeGate(g)
		f.add(g.SiteID, protocol.Change{At: g.UpdatedAt, Gate: &pg})
		return nil
	})
}

// Gate implements cloud.Store.
func (s *Store) Gate(ctx context.Context, t cloud.Tenant, id string) (cloud.Gate, error) {
	g, err := scanGate(s.pool.QueryRow(ctx, `SELECT `+gateCols+` FROM gates WHERE org_id = $1 AND mode = $2 AND id = $3`,
		t.OrgID, string(t.Mode), id), t)
	if errors.Is(err, pgx.ErrNoRows) {
		return cloud.Gate{}, cloud.ErrNotFound
	}
	if err != nil {
		return cloud.Gate{}, fmt.Errorf("get gate: %w", err)
	}
	return g, nil
}

// UpdateGate implements cloud.Store.
func (s *Store) UpdateGate(ctx context.Context, t cloud.Tenant, id string, fn func(*cloud.Gate) error) (cloud.Gate, error) {
	var out cloud.Gate
	err := s.writeTx(ctx, t, func(tx pgx.Tx, f *feed) error {
		g, err := scanGate(tx.QueryRow(ctx, `SELECT `+gateCols+` FROM gates WHERE org_id = $1 AND mode = $2 AND id = $3 FOR UPDATE`,
			t.OrgID, string(t.Mode), id), t)
		if errors.Is(err, pgx.ErrNoRows) {
			return cloud.ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("update gate: %w", err)
		}
		from := g.SiteID
		if err := fn(&g); err != nil {
			return err
		}
		out, err = scanGate(tx.QueryRow(ctx, `UPDATE gates SET site_id = $4, name = $5, direction = $6, created_at = $7, updated_at = $8
			WHERE org_id = $1 AND mode = $2 AND id = $3 RETURNING `+gateCols,
			t.OrgID, string(t.Mode), id, g.SiteID, g.Name, string(g.Direction), g.CreatedAt, g.UpdatedAt), t)
		if err != nil {
			return translate("update gate", err)
		}
		pg := cloud.EdgeGate(out)
		if from != out.SiteID {
			// Moved: the old site's edge forgets it.
			gone := pg
			gone.Removed = true
			f.add(from, protocol.Change{At: out.UpdatedAt, Gate: &gone})
		}
		f.add(out.SiteID, protocol.Change{At: out.UpdatedAt, Gate: &pg})
		return nil
	})
	if err != nil {
		return cloud.Gate{}, err
	}
	return out, nil
}

// ListGates implements cloud.Store.
func (s *Store) ListGates(ctx context.Context, t cloud.Tenant, f cloud.GateFilter, p cloud.Page) ([]cloud.Gate, bool, error) {
	l := newList(gateCols, "gates", t)
	if f.SiteID != "" {
		l.where("site_id = $%d", f.SiteID)
	}
	l.page(p)
	out, more, err := collect(ctx, s.pool, l, p.Limit, func(row pgx.CollectableRow) (cloud.Gate, error) {
		return scanGate(row, t)
	})
	if err != nil {
		return nil, false, fmt.Errorf("list gates: %w", err)
	}
	return out, more, nil
}
