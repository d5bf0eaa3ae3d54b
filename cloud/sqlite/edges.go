package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/sync/protocol"
)

// Statements prepared on the writer (hotWrites).
const (
	qInsertFact = `INSERT INTO edge_facts (id, org_id, mode, site_id, edge_id, counter, kind, at, gate_id,
			visit_id, pass_visit_id, reason, received_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`
	qFactConflict = `UPDATE edge_facts SET conflict = ? WHERE id = ?`
)

// factChunk is how many fact rows qInsertFacts inserts in one statement.
const factChunk = 32

// qInsertFacts inserts factChunk facts' rows and returns the IDs of those
// it inserted: a batch's rows in a statement per factChunk rather than
// one each.
var qInsertFacts = `INSERT INTO edge_facts (id, org_id, mode, site_id, edge_id, counter, kind, at, gate_id,
		visit_id, pass_visit_id, reason, received_at)
	VALUES ` + strings.Repeat(`(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?), `, factChunk-1) + `(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT (id) DO NOTHING RETURNING id`

// factArgs are the arguments of a fact's row, in qInsertFact's order.
func factArgs(ef cloud.EdgeFact) []any {
	f := ef.Fact
	return []any{f.ID, ef.Tenant.OrgID, string(ef.Tenant.Mode), ef.SiteID, f.EdgeID, int64(f.Counter), string(f.Kind), micros(f.At), f.GateID,
		null(f.VisitID), null(f.PassVisitID), null(f.Reason), micros(ef.ReceivedAt)}
}

// insertFacts inserts the facts' rows, those whose IDs are not recorded
// yet, and returns which it inserted: of equal IDs in facts, the first.
func insertFacts(ctx context.Context, st *txStmts, facts []cloud.EdgeFact) ([]bool, error) {
	inserted := map[string]bool{}
	rest := facts
	for len(rest) >= factChunk {
		args := make([]any, 0, 13*factChunk)
		for _, ef := range rest[:factChunk] {
			args = append(args, factArgs(ef)...)
		}
		ids, err := all(ctx, st, func(r scanner) (id string, err error) { return id, r.Scan(&id) }, qInsertFacts, args...)
		if err != nil {
			return nil, fmt.Errorf("record facts: %w", err)
		}
		for _, id := range ids {
			inserted[id] = true
		}
		rest = rest[factChunk:]
	}
	for _, ef := range rest {
		res, err := st.ExecContext(ctx, qInsertFact, factArgs(ef)...)
		if err != nil {
			return nil, fmt.Errorf("record fact: %w", err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return nil, fmt.Errorf("record fact: %w", err)
		}
		if n > 0 {
			inserted[ef.Fact.ID] = true
		}
	}
	applied := make([]bool, len(facts))
	for i, ef := range facts {
		if inserted[ef.Fact.ID] {
			applied[i] = true
			delete(inserted, ef.Fact.ID) // a second fact of the ID is recorded before
		}
	}
	return applied, nil
}

// ApplyFact implements cloud.Store, as a batch of one.
func (s *Store) ApplyFact(ctx context.Context, ef cloud.EdgeFact, fn func(func(string) (cloud.Visit, error), *cloud.FactWrites) error) (bool, error) {
	applied, err := s.ApplyFacts(ctx, []cloud.EdgeFact{ef}, func(_ int, load func(string) (cloud.Visit, error), w *cloud.FactWrites) error {
		return fn(load, w)
	})
	if err != nil {
		return false, err
	}
	return applied[0], nil
}

// ApplyFacts implements cloud.Store. Each fact's row is inserted first: a
// second delivery finds it and changes nothing. The one writer connection
// makes two batches take turns.
func (s *Store) ApplyFacts(ctx context.Context, facts []cloud.EdgeFact, fn func(int, func(string) (cloud.Visit, error), *cloud.FactWrites) error) ([]bool, error) {
	if len(facts) == 0 {
		return nil, nil
	}
	t := facts[0].Tenant
	for _, ef := range facts {
		if ef.Tenant != t {
			return nil, fmt.Errorf("apply facts: facts of tenants %v and %v in one batch", t, ef.Tenant)
		}
	}
	var applied []bool
	err := s.writeTx(ctx, t, func(tx *sql.Tx, fd *feed) error {
		// Each fact's row is inserted first: one recorded before is
		// skipped.
		var err error
		if applied, err = insertFacts(ctx, fd.st, facts); err != nil {
			return err
		}
		b := cloud.NewFactBatch(func(id string) (cloud.Visit, error) { return getVisit(ctx, fd.st, t, id) })
		// The visits the applied facts name are read in one statement
		// rather than one each as the facts come to them.
		if named := cloud.NamedVisits(facts, applied); len(named) > 1 {
			vs, err := getVisits(ctx, fd.st, t, named)
			if err != nil {
				return fmt.Errorf("get visits: %w", err)
			}
			b.Preloaded(vs...)
		}
		for i, ef := range facts {
			if !applied[i] {
				continue // recorded before
			}
			if err := b.Apply(ef.Fact.ID, func(load func(string) (cloud.Visit, error), w *cloud.FactWrites) error {
				return fn(i, load, w)
			}); err != nil {
				return err
			}
		}
		for _, v := range b.Visitors {
			if err := insertVisitor(ctx, tx, t, v); err != nil {
				return err
			}
		}
		for _, bv := range b.Written() {
			var err error
			if bv.New() {
				err = insertVisit(ctx, tx, fd, t, bv.Visit)
			} else {
				err = updateVisitRow(ctx, tx, fd, t, keysOf(*bv.Loaded), bv.Visit)
			}
			if err != nil {
				return err
			}
			fd.visitAs(bv.Visit)
		}
		if err := writeAlong(ctx, tx, fd, t, cloud.VisitWrites{Messages: b.Messages, Audit: b.Audit}); err != nil {
			return err
		}
		for _, c := range b.Conflicts {
			if _, err := fd.st.ExecContext(ctx, qFactConflict, c.Conflict, c.FactID); err != nil {
				return fmt.Errorf("record fact: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return applied, nil
}

// EdgeFact implements cloud.Store.
func (s *Store) EdgeFact(ctx context.Context, t cloud.Tenant, id string) (cloud.EdgeFact, error) {
	return get(ctx, s.r, scanEdgeFact, `SELECT org_id, mode, site_id, id, kind, edge_id, counter, at, gate_id, visit_id,
			pass_visit_id, reason, received_at, conflict
		FROM edge_facts WHERE id = ? AND org_id = ? AND mode = ?`, id, t.OrgID, string(t.Mode))
}

func scanEdgeFact(r scanner) (cloud.EdgeFact, error) {
	var ef cloud.EdgeFact
	var mode, kind string
	var counter, at, received int64
	var visit, pass, reason, conflict sql.NullString
	f := &ef.Fact
	err := r.Scan(&ef.Tenant.OrgID, &mode, &ef.SiteID, &f.ID, &kind, &f.EdgeID, &counter, &at, &f.GateID, &visit, &pass,
		&reason, &received, &conflict)
	ef.Tenant.Mode, f.V, f.Kind, f.Counter, f.At = cloud.Mode(mode), protocol.Version, protocol.FactKind(kind), uint64(counter), fromMicros(at)
	f.VisitID, f.PassVisitID, f.Reason = str(visit), str(pass), str(reason)
	ef.ReceivedAt, ef.Conflict = fromMicros(received), str(conflict)
	return ef, err
}

const edgeCols = `id, org_id, mode, site_id, name, username, secret_hash, created_at, state, state_at, last_seen_at, seq, outbox, software, revoked_at`

// edgeRead are the columns scanEdge reads: edgeCols, the badge key, which
// an edge is made without, what the fleet shows (issue 17), the state last
// announced, its site's feed head, and its hardware from the cloud with
// what the appliance said of it.
const edgeRead = edgeCols + `, badge_key, badge_key_at, identity_key, skew_ms, outbox_oldest, cache_counts, disk_free, announced,
	(SELECT h.seq FROM site_feed_heads h WHERE h.org_id = edges.org_id AND h.mode = edges.mode AND h.site_id = edges.site_id),
	hardware, hardware_error`

func scanEdge(r scanner) (cloud.Edge, error) {
	var e cloud.Edge
	var mode string
	var created, seq int64
	var stateAt, seen, revoked, badgeAt, skew, oldest, disk, head sql.NullInt64
	var counts, hw, hwErr sql.NullString
	err := r.Scan(&e.ID, &e.Tenant.OrgID, &mode, &e.SiteID, &e.Name, &e.Username, &e.SecretHash, &created, &e.State,
		&stateAt, &seen, &seq, &e.Outbox, &e.Software, &revoked, &e.BadgeKey, &badgeAt,
		&e.IdentityKey, &skew, &oldest, &counts, &disk, &e.Announced, &head, &hw, &hwErr)
	e.Tenant.Mode, e.CreatedAt, e.StateSince, e.LastSeenAt = cloud.Mode(mode), fromMicros(created), fromNullMicros(stateAt), fromNullMicros(seen)
	e.RevokedAt, e.BadgeKeyAt = fromNullMicros(revoked), fromNullMicros(badgeAt)
	e.Seq, e.Head = uint64(seq), uint64(head.Int64)
	e.OutboxOldest = fromNullMicros(oldest)
	if skew.Valid {
		d := time.Duration(skew.Int64) * time.Millisecond
		e.Skew = &d
	}
	if disk.Valid {
		v := uint64(disk.Int64)
		e.DiskFree = &v
	}
	if err == nil {
		e.Cache, err = cloud.DecodeCacheCounts(counts.String)
	}
	if err == nil {
		e.Hardware, err = cloud.DecodeHardware(hw.String)
		e.HardwareError = hwErr.String
	}
	return e, err
}

// CreateEdge implements cloud.Store.
func (s *Store) CreateEdge(ctx context.Context, e cloud.Edge) error {
	return s.tx(ctx, func(tx *sql.Tx) error { return insertEdge(ctx, tx, e) })
}

// insertEdge makes e, one active edge per site, in tx.
func insertEdge(ctx context.Context, tx *sql.Tx, e cloud.Edge) error {
	state := e.State
	if state == "" {
		state = cloud.EdgeOffline
	}
	var active int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM edges WHERE org_id = ? AND mode = ? AND site_id = ? AND revoked_at IS NULL`,
		e.Tenant.OrgID, string(e.Tenant.Mode), e.SiteID).Scan(&active); err != nil {
		return fmt.Errorf("insert edge: %w", err)
	}
	if active > 0 {
		return fmt.Errorf("insert edge: site %s: %w", e.SiteID, cloud.ErrSiteHasEdge)
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO edges (`+edgeCols+`)
		SELECT ?, ?, ?, id, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ? FROM sites WHERE id = ? AND org_id = ? AND mode = ?`,
		e.ID, e.Tenant.OrgID, string(e.Tenant.Mode), e.Name, e.Username, e.SecretHash, micros(e.CreatedAt), state,
		nullMicros(e.StateSince), nullMicros(e.LastSeenAt), int64(e.Seq), e.Outbox, e.Software, nullMicros(e.RevokedAt),
		e.SiteID, e.Tenant.OrgID, string(e.Tenant.Mode))
	if isUniqueViolation(err) {
		return fmt.Errorf("insert edge: %w: %w", cloud.ErrConflict, err)
	}
	if err != nil {
		return fmt.Errorf("insert edge: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return fmt.Errorf("insert edge: site %s: %w", e.SiteID, cloud.ErrNotFound)
	}
	if e.IdentityKey != nil || e.Skew != nil {
		if _, err := tx.ExecContext(ctx, `UPDATE edges SET identity_key = ?, skew_ms = ? WHERE id = ?`,
			e.IdentityKey, skewMillis(e.Skew), e.ID); err != nil {
			return fmt.Errorf("insert edge: %w", err)
		}
	}
	return nil
}

// skewMillis is a skew as stored: milliseconds, or NULL.
func skewMillis(d *time.Duration) any {
	if d == nil {
		return nil
	}
	return d.Milliseconds()
}

// RevokeEdge implements cloud.Store.
func (s *Store) RevokeEdge(ctx context.Context, t cloud.Tenant, id string, at time.Time) (cloud.Edge, error) {
	var e cloud.Edge
	err := s.writeTx(ctx, t, func(tx *sql.Tx, f *feed) error {
		res, err := tx.ExecContext(ctx, `UPDATE edges SET revoked_at = ?, announced = 'offline' WHERE id = ? AND org_id = ? AND mode = ? AND revoked_at IS NULL`,
			micros(at), id, t.OrgID, string(t.Mode))
		if err != nil {
			return fmt.Errorf("revoke edge: %w", err)
		}
		e, err = scanEdge(tx.QueryRowContext(ctx, `SELECT `+edgeRead+` FROM edges WHERE id = ? AND org_id = ? AND mode = ?`, id, t.OrgID, string(t.Mode)))
		if errors.Is(err, sql.ErrNoRows) {
			return cloud.ErrNotFound
		}
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("revoke edge: %w", err)
		} else if k, ok := cloud.EdgeBadgeKey(e); ok && n > 0 {
			f.add(e.SiteID, protocol.Change{At: at, Key: &k}) // retired, now
		}
		return nil
	})
	return e, err
}

// UpdateEdge implements cloud.Store. The one writer connection makes it
// and RevokeEdge take turns.
func (s *Store) UpdateEdge(ctx context.Context, t cloud.Tenant, id string, at time.Time, fn func(*cloud.Edge) error) (cloud.Edge, error) {
	err := s.writeTx(ctx, t, func(tx *sql.Tx, f *feed) error {
		e, err := scanEdge(tx.QueryRowContext(ctx, `SELECT `+edgeRead+` FROM edges WHERE id = ? AND org_id = ? AND mode = ?`, id, t.OrgID, string(t.Mode)))
		if errors.Is(err, sql.ErrNoRows) {
			return cloud.ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("update edge: %w", err)
		}
		before, err := cloud.EncodeHardware(e.Hardware)
		if err != nil {
			return err
		}
		if err := fn(&e); err != nil {
			return err
		}
		after, err := cloud.EncodeHardware(e.Hardware)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE edges SET name = ?, hardware = ? WHERE id = ?`, e.Name, null(after), id); err != nil {
			return fmt.Errorf("update edge: %w", err)
		}
		if after != before {
			f.add(e.SiteID, cloud.HardwareChange(e, at))
		}
		return nil
	})
	if err != nil {
		return cloud.Edge{}, err
	}
	return s.Edge(ctx, id) // with the feed head the change moved
}

// CertifyBadgeKey implements cloud.Store. The one writer connection makes
// it and RevokeEdge take turns, so an edge revoked meanwhile is seen.
func (s *Store) CertifyBadgeKey(ctx context.Context, t cloud.Tenant, siteID, edgeID string, pub []byte, at time.Time) error {
	k, ok := cloud.EdgeBadgeKey(cloud.Edge{SiteID: siteID, BadgeKey: pub})
	if !ok {
		return fmt.Errorf("certify badge key: %d bytes, not an Ed25519 public key", len(pub))
	}
	return s.writeTx(ctx, t, func(tx *sql.Tx, f *feed) error {
		e, err := scanEdge(tx.QueryRowContext(ctx, `SELECT `+edgeRead+` FROM edges WHERE id = ? AND org_id = ? AND mode = ? AND site_id = ?
			AND revoked_at IS NULL`, edgeID, t.OrgID, string(t.Mode), siteID))
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("certify badge key: edge %s: %w", edgeID, cloud.ErrNotFound)
		case err != nil:
			return fmt.Errorf("certify badge key: %w", err)
		case bytes.Equal(e.BadgeKey, pub):
			return nil
		case e.BadgeKey != nil:
			return fmt.Errorf("certify badge key: edge %s has another badge key: %w", edgeID, cloud.ErrConflict)
		}
		var taken int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM pass_keys WHERE org_id = ? AND mode = ? AND id = ?`,
			t.OrgID, string(t.Mode), k.ID).Scan(&taken); err != nil {
			return fmt.Errorf("certify badge key: %w", err)
		}
		if taken > 0 {
			return fmt.Errorf("certify badge key: key ID %s is a pass key's: %w", k.ID, cloud.ErrConflict)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE edges SET badge_key = ?, badge_key_at = ? WHERE id = ?`, pub, micros(at), edgeID); err != nil {
			return fmt.Errorf("certify badge key: %w", err)
		}
		f.add(siteID, protocol.Change{At: at, Key: &k})
		return nil
	})
}

// EdgesRevoked implements cloud.Store.
func (s *Store) EdgesRevoked(ctx context.Context, ids []string) (map[string]bool, error) {
	out := make(map[string]bool, len(ids))
	for chunk := range slices.Chunk(ids, 500) {
		q := `SELECT id, revoked_at IS NOT NULL FROM edges WHERE id IN (?` + strings.Repeat(", ?", len(chunk)-1) + `)`
		args := make([]any, len(chunk))
		for i, id := range chunk {
			args[i] = id
		}
		rows, err := s.r.QueryContext(ctx, q, args...)
		if err != nil {
			return nil, fmt.Errorf("edges revoked: %w", err)
		}
		for rows.Next() {
			var id string
			var revoked bool
			if err := rows.Scan(&id, &revoked); err != nil {
				rows.Close()
				return nil, fmt.Errorf("edges revoked: %w", err)
			}
			out[id] = revoked
		}
		if err := rows.Close(); err != nil {
			return nil, fmt.Errorf("edges revoked: %w", err)
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("edges revoked: %w", err)
		}
	}
	return out, nil
}

// Edge implements cloud.Store.
func (s *Store) Edge(ctx context.Context, id string) (cloud.Edge, error) {
	return get(ctx, s.r, scanEdge, `SELECT `+edgeRead+` FROM edges WHERE id = ?`, id)
}

// ListEdges implements cloud.Store.
func (s *Store) ListEdges(ctx context.Context, t cloud.Tenant, siteID string) ([]cloud.Edge, error) {
	q := `SELECT ` + edgeRead + ` FROM edges WHERE org_id = ? AND mode = ?`
	args := []any{t.OrgID, string(t.Mode)}
	if siteID != "" {
		q += ` AND site_id = ?`
		args = append(args, siteID)
	}
	out, err := all(ctx, s.r, scanEdge, q+` ORDER BY created_at, id`, args...)
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
	q := `UPDATE edges SET state_at = CASE WHEN state = ? AND state_at IS NOT NULL THEN state_at ELSE ? END, state = ?`
	args := []any{st.State, micros(at), st.State}
	if st.State == cloud.EdgeOnline {
		q += `, last_seen_at = ?, seq = ?, outbox = ?, software = ?, skew_ms = ?, outbox_oldest = ?, cache_counts = ?, disk_free = ?, hardware_error = ?`
		var disk any
		if st.DiskFree != nil {
			disk = int64(min(*st.DiskFree, 1<<62))
		}
		skew := st.At.Sub(at)
		args = append(args, micros(at), int64(st.Seq), st.Outbox, st.Software, skew.Milliseconds(), nullMicros(st.OutboxOldest),
			null(cloud.EncodeCacheCounts(st.Cache)), disk, null(st.HardwareError))
	}
	res, err := s.w.ExecContext(ctx, q+` WHERE id = ? AND org_id = ? AND mode = ? AND site_id = ?`,
		append(args, st.EdgeID, t.OrgID, string(t.Mode), siteID)...)
	if err != nil {
		return fmt.Errorf("record edge status: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return cloud.ErrNotFound
	}
	return nil
}

// AnnounceEdge implements cloud.Store.
func (s *Store) AnnounceEdge(ctx context.Context, t cloud.Tenant, id, from, to string) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE edges SET announced = ? WHERE id = ? AND org_id = ? AND mode = ? AND announced = ?`,
			to, id, t.OrgID, string(t.Mode), from)
		if err != nil {
			return fmt.Errorf("announce edge: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil || n > 0 {
			return err
		}
		var announced string
		err = tx.QueryRowContext(ctx, `SELECT announced FROM edges WHERE id = ? AND org_id = ? AND mode = ?`, id, t.OrgID, string(t.Mode)).Scan(&announced)
		if errors.Is(err, sql.ErrNoRows) {
			return cloud.ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("announce edge: %w", err)
		}
		return fmt.Errorf("announce edge: edge %s is announced %s, not %s: %w", id, announced, from, cloud.ErrConflict)
	})
}

// EdgesToAnnounce implements cloud.Store.
func (s *Store) EdgesToAnnounce(ctx context.Context, cutoff time.Time, limit int) ([]cloud.Edge, error) {
	out, err := all(ctx, s.r, scanEdge, `SELECT `+edgeRead+` FROM edges WHERE (state = 'online' OR announced = 'online') AND CASE
			WHEN announced = 'online' THEN revoked_at IS NOT NULL OR (state = 'online' AND last_seen_at < ?1) OR (state <> 'online' AND state_at <= ?1)
			ELSE state = 'online' AND last_seen_at >= ?1 AND revoked_at IS NULL END
		ORDER BY last_seen_at, id LIMIT ?2`, micros(cutoff), limit)
	if err != nil {
		return nil, fmt.Errorf("edges to announce: %w", err)
	}
	return out, nil
}
