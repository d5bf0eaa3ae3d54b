package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/sync/protocol"
)

// ApplyFact implements cloud.Store. The fact's row is inserted first: a
// second delivery of the ID, in this process or another, waits at the
// insert for the first to end and then finds the row (ON CONFLICT DO
// NOTHING), changing nothing; if the first rolled back, it applies the
// fact itself.
func (s *Store) ApplyFact(ctx context.Context, ef cloud.EdgeFact, fn func(func(string) (cloud.Visit, error), *cloud.FactWrites) error) (bool, error) {
	t, f := ef.Tenant, ef.Fact
	applied := false
	err := s.writeTx(ctx, t, func(tx pgx.Tx, fd *feed) error {
		tag, err := tx.Exec(ctx, `INSERT INTO edge_facts (id, org_id, mode, site_id, edge_id, counter, kind, at, gate_id,
				visit_id, pass_visit_id, reason, received_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) ON CONFLICT (id) DO NOTHING`,
			f.ID, t.OrgID, string(t.Mode), ef.SiteID, f.EdgeID, int64(f.Counter), string(f.Kind), f.At, f.GateID,
			null(f.VisitID), null(f.PassVisitID), null(f.Reason), ef.ReceivedAt)
		if err != nil {
			return translate("record fact", err)
		}
		if tag.RowsAffected() == 0 {
			return nil // recorded before
		}
		applied = true
		loaded := map[string][]string{} // the hosts of each visit loaded
		load := func(id string) (cloud.Visit, error) {
			v, err := getVisit(ctx, tx, t, id, true)
			if err == nil {
				loaded[id] = hostIDs(v)
			}
			return v, err
		}
		var w cloud.FactWrites
		if err := fn(load, &w); err != nil {
			return err
		}
		for _, v := range w.Visits {
			before, ok := loaded[v.ID]
			if !ok {
				cur, err := getVisit(ctx, tx, t, v.ID, true)
				if err != nil {
					return fmt.Errorf("store visit %s: %w", v.ID, err)
				}
				before = hostIDs(cur)
			}
			if err := updateVisitRow(ctx, tx, fd, t, v.ID, before, v); err != nil {
				return err
			}
		}
		if err := writeAlong(ctx, tx, fd, t, cloud.VisitWrites{Visits: w.New, Audit: w.Audit}); err != nil {
			return err
		}
		if w.Conflict != "" {
			if _, err := tx.Exec(ctx, `UPDATE edge_facts SET conflict = $2 WHERE id = $1`, f.ID, w.Conflict); err != nil {
				return fmt.Errorf("record fact: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return false, err
	}
	return applied, nil
}

// EdgeFact implements cloud.Store.
func (s *Store) EdgeFact(ctx context.Context, t cloud.Tenant, id string) (cloud.EdgeFact, error) {
	ef := cloud.EdgeFact{Tenant: t}
	f := &ef.Fact
	var kind string
	var counter int64
	var visit, pass, reason, conflict pgtype.Text
	err := s.pool.QueryRow(ctx, `SELECT site_id, id, kind, edge_id, counter, at, gate_id, visit_id, pass_visit_id, reason,
			received_at, conflict
		FROM edge_facts WHERE org_id = $1 AND mode = $2 AND id = $3`, t.OrgID, string(t.Mode), id).
		Scan(&ef.SiteID, &f.ID, &kind, &f.EdgeID, &counter, &f.At, &f.GateID, &visit, &pass, &reason, &ef.ReceivedAt, &conflict)
	if errors.Is(err, pgx.ErrNoRows) {
		return cloud.EdgeFact{}, cloud.ErrNotFound
	}
	if err != nil {
		return cloud.EdgeFact{}, fmt.Errorf("get fact: %w", err)
	}
	f.V, f.Kind, f.Counter, f.At = protocol.Version, protocol.FactKind(kind), uint64(counter), f.At.UTC()
	f.VisitID, f.PassVisitID, f.Reason = visit.String, pass.String, reason.String
	ef.ReceivedAt, ef.Conflict = ef.ReceivedAt.UTC(), conflict.String
	return ef, nil
}

const edgeCols = `id, org_id, mode, site_id, name, username, secret_hash, created_at, state, state_at, last_seen_at, seq, outbox, software`

func scanEdge(row scanner) (cloud.Edge, error) {
	var e cloud.Edge
	var mode string
	var seq int64
	var stateAt, seen pgtype.Timestamptz
	if err := row.Scan(&e.ID, &e.Tenant.OrgID, &mode, &e.SiteID, &e.Name, &e.Username, &e.SecretHash, &e.CreatedAt, &e.State,
		&stateAt, &seen, &seq, &e.Outbox, &e.Software); err != nil {
		return cloud.Edge{}, err
	}
	e.Tenant.Mode, e.CreatedAt, e.StateSince, e.LastSeenAt = cloud.Mode(mode), e.CreatedAt.UTC(), timePtr(stateAt), timePtr(seen)
	e.Seq = uint64(seq)
	return e, nil
}

// CreateEdge implements cloud.Store.
func (s *Store) CreateEdge(ctx context.Context, e cloud.Edge) error {
	state := e.State
	if state == "" {
		state = cloud.EdgeOffline
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO edges (`+edgeCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
		e.ID, e.Tenant.OrgID, string(e.Tenant.Mode), e.SiteID, e.Name, e.Username, e.SecretHash, e.CreatedAt, state,
		nullTime(e.StateSince), nullTime(e.LastSeenAt), int64(e.Seq), e.Outbox, e.Software)
	if err != nil {
		return translate("create edge", err)
	}
	return nil
}

// Edge implements cloud.Store.
func (s *Store) Edge(ctx context.Context, id string) (cloud.Edge, error) {
	e, err := scanEdge(s.pool.QueryRow(ctx, `SELECT `+edgeCols+` FROM edges WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return cloud.Edge{}, cloud.ErrNotFound
	}
	if err != nil {
		return cloud.Edge{}, fmt.Errorf("get edge: %w", err)
	}
	return e, nil
}

// ListEdges implements cloud.Store.
func (s *Store) ListEdges(ctx context.Context, t cloud.Tenant, siteID string) ([]cloud.Edge, error) {
	q := `SELECT ` + edgeCols + ` FROM edges WHERE org_id = $1 AND mode = $2`
	args := []any{t.OrgID, string(t.Mode)}
	if siteID != "" {
		q += ` AND site_id = $3`
		args = append(args, siteID)
	}
	rows, _ := s.pool.Query(ctx, q+` ORDER BY created_at, id`, args...)
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (cloud.Edge, error) { return scanEdge(row) })
	if err != nil {
		return nil, fmt.Errorf("list edges: %w", err)
	}
	if out == nil {
		out = []cloud.Edge{}
	}
	return out, nil
}

// RecordEdgeStatus implements cloud.Store.
func (s *Store) RecordEdgeStatus(ctx context.Context, t cloud.Tenant, siteID string, st protocol.Status, at time.Time) error {
	q := `UPDATE edges SET state_at = CASE WHEN state = $5 AND state_at IS NOT NULL THEN state_at ELSE $6 END, state = $5`
	args := []any{st.EdgeID, t.OrgID, string(t.Mode), siteID, st.State, at}
	if st.State == cloud.EdgeOnline {
		q += `, last_seen_at = $6, seq = $7, outbox = $8, software = $9`
		args = append(args, int64(st.Seq), st.Outbox, st.Software)
	}
	tag, err := s.pool.Exec(ctx, q+` WHERE id = $1 AND org_id = $2 AND mode = $3 AND site_id = $4`, args...)
	if err != nil {
		return fmt.Errorf("record edge status: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return cloud.ErrNotFound
	}
	return nil
}
