package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/storedoc"
	"github.com/svc-vms/svc/sync/protocol"
)

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

// ApplyFacts implements cloud.Store in a few round trips and statements
// whatever the number of facts: the facts' rows inserted in one statement,
// the visits they name read and locked in one query, the visits updated
// in one statement sent in one pipeline with the rest (new visitors, new
// visits, hosts, messages, audit events, conflicts), then the feed.
//
// Each fact's row is inserted first: a second delivery of the ID, in
// this process or another, waits at the insert for the first to end and
// then finds the row (ON CONFLICT DO NOTHING), changing nothing; if the
// first rolled back, it applies the fact itself. Two batches must not
// wait for each other, so every batch takes its locks in one order: the
// facts' rows in ID order, then the visits in ID order (ORDER BY under
// FOR UPDATE locks in that order), then the feed heads (feed.flush). A
// visit read later, off the facts' own (a re-entry's chain), may break
// the order; PostgreSQL then ends one of the two with a deadlock error,
// which is transient.
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
	applied := make([]bool, len(facts))
	err := s.writeTx(ctx, t, func(tx pgx.Tx, fd *feed) error {
		// The rows go in ID order; of equal IDs the first in the batch's
		// order is the one applied.
		order := make([]int, len(facts))
		for i := range order {
			order[i] = i
		}
		slices.SortStableFunc(order, func(a, b int) int { return strings.Compare(facts[a].Fact.ID, facts[b].Fact.ID) })
		var c factCols
		for _, i := range order {
			c.add(facts[i])
		}
		rs, _ := tx.Query(ctx, `INSERT INTO edge_facts (id, org_id, mode, site_id, edge_id, counter, kind, at, gate_id,
				visit_id, pass_visit_id, reason, received_at)
			SELECT u.id, $1, $2, u.site_id, u.edge_id, u.counter, u.kind, u.at, u.gate_id, u.visit_id, u.pass_visit_id,
				u.reason, u.received_at
			FROM unnest($3::text[], $4::text[], $5::text[], $6::bigint[], $7::text[], $8::timestamptz[], $9::text[],
				$10::text[], $11::text[], $12::text[], $13::timestamptz[])
				WITH ORDINALITY AS u(id, site_id, edge_id, counter, kind, at, gate_id, visit_id, pass_visit_id, reason, received_at, n)
			ORDER BY u.n
			ON CONFLICT (id) DO NOTHING RETURNING id`,
			t.OrgID, string(t.Mode), c.id, c.site, c.edge, c.counter, c.kind, c.at, c.gate, c.visit, c.pass, c.reason, c.received)
		inserted, err := pgx.CollectRows(rs, pgx.RowTo[string])
		if err != nil {
			return translate("record facts", err)
		}
		now := make(map[string]bool, len(inserted))
		for _, id := range inserted {
			now[id] = true
		}
		for i, ef := range facts {
			if now[ef.Fact.ID] {
				applied[i] = true
				delete(now, ef.Fact.ID)
			}
		}

		if !slices.Contains(applied, true) {
			return nil
		}
		named := cloud.NamedVisits(facts, applied) // the visits the applied facts name
		b := cloud.NewFactBatch(func(id string) (cloud.Visit, error) { return getVisit(ctx, tx, t, id, true) })
		if len(named) > 0 {
			rs, _ := tx.Query(ctx, `SELECT `+visitCols+` FROM `+visitFrom+`
				WHERE v.org_id = $1 AND v.mode = $2 AND v.id = ANY($3) ORDER BY v.id FOR UPDATE OF v`,
				t.OrgID, string(t.Mode), named)
			vs, err := pgx.CollectRows(rs, func(row pgx.CollectableRow) (cloud.Visit, error) { return scanVisit(row, t) })
			if err != nil {
				return fmt.Errorf("get visits: %w", err)
			}
			b.Preloaded(vs...)
		}
		for i, ef := range facts {
			if !applied[i] {
				continue
			}
			if err := b.Apply(ef.Fact.ID, func(load func(string) (cloud.Visit, error), w *cloud.FactWrites) error {
				return fn(i, load, w)
			}); err != nil {
				return err
			}
		}

		var writes pgx.Batch
		for _, v := range b.Visitors {
			writes.Queue(qInsertVisitor, append(visitorArgs(t, v.ID, v), v.SelfRegistered)...)
		}
		var updates visitUpdates
		for _, bv := range b.Written() {
			v := bv.Visit
			after := hostIDs(v)
			if bv.New() {
				args, err := visitArgs(t, v.ID, v)
				if err != nil {
					return err
				}
				writes.Queue(qInsertVisit, args...)
				if len(after) > 0 {
					writes.Queue(qInsertHosts, t.OrgID, string(t.Mode), v.ID, after)
				}
			} else {
				if err := updates.add(v); err != nil {
					return err
				}
				if before := hostIDs(*bv.Loaded); !slices.Equal(before, after) {
					writes.Queue(qDeleteHosts, t.OrgID, string(t.Mode), v.ID)
					if len(after) > 0 {
						writes.Queue(qInsertHosts, t.OrgID, string(t.Mode), v.ID, after)
					}
				}
			}
			fd.visitAs(v)
		}
		if len(updates.id) > 0 {
			u := updates
			writes.Queue(`UPDATE visits v SET status = u.status, type = u.type, site_id = u.site_id, host_id = u.host_id,
					visitor_id = u.visitor_id, booking_id = u.booking_id, expected_at = u.expected_at, doc = u.doc::json,
					updated_at = u.updated_at, edge_until = u.edge_until, remind_from = u.remind_from
				FROM unnest($3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[],
					$10::timestamptz[], $11::text[], $12::timestamptz[], $13::timestamptz[], $14::timestamptz[])
					AS u(id, status, type, site_id, host_id, visitor_id, booking_id, expected_at, doc, updated_at, edge_until,
						remind_from)
				WHERE v.org_id = $1 AND v.mode = $2 AND v.id = u.id`,
				t.OrgID, string(t.Mode), u.id, u.status, u.typ, u.site, u.host, u.visitor, u.booking, u.expected, u.doc,
				u.updated, u.edgeUntil, u.remindFrom)
		}
		for _, m := range b.Messages {
			writes.Queue(qInsertMessage, messageArgs(t, m)...)
		}
		for _, a := range b.Audit {
			writes.Queue(qInsertAudit, auditArgs(t, a)...)
		}
		for _, c := range b.Conflicts {
			writes.Queue(`UPDATE edge_facts SET conflict = $2 WHERE id = $1`, c.FactID, c.Conflict)
		}
		return sendBatch(ctx, tx, &writes, "apply facts", nil)
	})
	if err != nil {
		return nil, err
	}
	return applied, nil
}

// factCols are facts as the columns of one INSERT ... unnest.
type factCols struct {
	id, site, edge, kind, gate []string
	visit, pass, reason        []*string
	counter                    []int64
	at, received               []time.Time
}

func (c *factCols) add(ef cloud.EdgeFact) {
	f := ef.Fact
	c.id, c.site, c.edge, c.kind, c.gate = append(c.id, f.ID), append(c.site, ef.SiteID), append(c.edge, f.EdgeID),
		append(c.kind, string(f.Kind)), append(c.gate, f.GateID)
	c.visit, c.pass, c.reason = append(c.visit, nullPtr(f.VisitID)), append(c.pass, nullPtr(f.PassVisitID)), append(c.reason, nullPtr(f.Reason))
	c.counter, c.at, c.received = append(c.counter, int64(f.Counter)), append(c.at, f.At), append(c.received, ef.ReceivedAt)
}

// visitUpdates are visits as the columns of one UPDATE ... FROM unnest.
type visitUpdates struct {
	id, status, typ, site, doc []string
	host, visitor, booking     []*string
	expected, edgeUntil        []*time.Time
	remindFrom                 []*time.Time
	updated                    []time.Time
}

func (c *visitUpdates) add(v cloud.Visit) error {
	doc, err := storedoc.EncodeVisit(v)
	if err != nil {
		return err
	}
	c.id, c.status, c.typ, c.site, c.doc = append(c.id, v.ID), append(c.status, string(v.Status)), append(c.typ, v.Type),
		append(c.site, v.SiteID), append(c.doc, string(doc))
	c.host, c.visitor, c.booking = append(c.host, nullPtr(v.HostID)), append(c.visitor, nullPtr(v.VisitorID)), append(c.booking, nullPtr(v.BookingID))
	c.expected, c.edgeUntil, c.updated = append(c.expected, v.ExpectedAt), append(c.edgeUntil, cloud.EdgeUntil(v)), append(c.updated, v.UpdatedAt)
	c.remindFrom = append(c.remindFrom, cloud.RemindFrom(v))
	return nil
}

// nullPtr is "" as NULL, in an array.
func nullPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// sendBatch runs the queued statements in one round trip, handing each
// one's tag to each (when set) in order.
func sendBatch(ctx context.Context, tx pgx.Tx, b *pgx.Batch, op string, each func(int, pgconn.CommandTag)) error {
	if b.Len() == 0 {
		return nil
	}
	br := tx.SendBatch(ctx, b)
	for k := range b.Len() {
		tag, err := br.Exec()
		if err != nil {
			br.Close()
			return translate(op, err)
		}
		if each != nil {
			each(k, tag)
		}
	}
	if err := br.Close(); err != nil {
		return translate(op, err)
	}
	return nil
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

const edgeCols = `id, org_id, mode, site_id, name, username, secret_hash, created_at, state, state_at, last_seen_at, seq, outbox, software, revoked_at`

// edgeRead are the columns scanEdge reads: edgeCols, the badge key, which
// an edge is made without, what the fleet shows (issue 17), the state last
// announced, its site's feed head, and its hardware from the cloud with
// what the appliance said of it.
const edgeRead = edgeCols + `, badge_key, badge_key_at, identity_key, skew_ms, outbox_oldest, cache_counts, disk_free, announced,
	(SELECT h.seq FROM site_feed_heads h WHERE h.org_id = edges.org_id AND h.mode = edges.mode AND h.site_id = edges.site_id),
	hardware, hardware_error`

func scanEdge(row scanner) (cloud.Edge, error) {
	var e cloud.Edge
	var mode string
	var seq int64
	var stateAt, seen, revoked, badgeAt, oldest pgtype.Timestamptz
	var skew, disk, head pgtype.Int8
	var counts, hw, hwErr pgtype.Text
	if err := row.Scan(&e.ID, &e.Tenant.OrgID, &mode, &e.SiteID, &e.Name, &e.Username, &e.SecretHash, &e.CreatedAt, &e.State,
		&stateAt, &seen, &seq, &e.Outbox, &e.Software, &revoked, &e.BadgeKey, &badgeAt,
		&e.IdentityKey, &skew, &oldest, &counts, &disk, &e.Announced, &head, &hw, &hwErr); err != nil {
		return cloud.Edge{}, err
	}
	e.Tenant.Mode, e.CreatedAt, e.StateSince, e.LastSeenAt = cloud.Mode(mode), e.CreatedAt.UTC(), timePtr(stateAt), timePtr(seen)
	e.RevokedAt, e.BadgeKeyAt, e.OutboxOldest = timePtr(revoked), timePtr(badgeAt), timePtr(oldest)
	e.Seq, e.Head = uint64(seq), uint64(head.Int64)
	if skew.Valid {
		d := time.Duration(skew.Int64) * time.Millisecond
		e.Skew = &d
	}
	if disk.Valid {
		v := uint64(disk.Int64)
		e.DiskFree = &v
	}
	var err error
	if e.Cache, err = cloud.DecodeCacheCounts(counts.String); err != nil {
		return e, err
	}
	e.Hardware, err = cloud.DecodeHardware(hw.String)
	e.HardwareError = hwErr.String
	return e, err
}

// CreateEdge implements cloud.Store.
func (s *Store) CreateEdge(ctx context.Context, e cloud.Edge) error {
	return s.inTx(ctx, func(tx pgx.Tx) error { return insertEdge(ctx, tx, e) })
}

// insertEdge makes e, one active edge per site, in tx.
func insertEdge(ctx context.Context, tx pgx.Tx, e cloud.Edge) error {
	state := e.State
	if state == "" {
		state = cloud.EdgeOffline
	}
	// The site's row is locked so that two edges made at once for one
	// site are made one after the other, and the second sees the first.
	// The edges are read by a statement of their own, after the lock:
	// a statement's snapshot is taken when it starts, so one that read
	// them while waiting for the lock would miss the first edge.
	var one int
	err := tx.QueryRow(ctx, `SELECT 1 FROM sites WHERE org_id = $1 AND mode = $2 AND id = $3 FOR UPDATE`,
		e.Tenant.OrgID, string(e.Tenant.Mode), e.SiteID).Scan(&one)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return fmt.Errorf("create edge: site %s: %w", e.SiteID, cloud.ErrNotFound)
	case err != nil:
		return translate("create edge", err)
	}
	var active bool
	err = tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM edges WHERE org_id = $1 AND mode = $2 AND site_id = $3 AND revoked_at IS NULL)`,
		e.Tenant.OrgID, string(e.Tenant.Mode), e.SiteID).Scan(&active)
	switch {
	case err != nil:
		return translate("create edge", err)
	case active:
		return fmt.Errorf("create edge: site %s: %w", e.SiteID, cloud.ErrSiteHasEdge)
	}
	_, err = tx.Exec(ctx, `INSERT INTO edges (`+edgeCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
		e.ID, e.Tenant.OrgID, string(e.Tenant.Mode), e.SiteID, e.Name, e.Username, e.SecretHash, e.CreatedAt, state,
		nullTime(e.StateSince), nullTime(e.LastSeenAt), int64(e.Seq), e.Outbox, e.Software, nullTime(e.RevokedAt))
	if err != nil {
		return translate("create edge", err)
	}
	if e.IdentityKey != nil || e.Skew != nil {
		if _, err := tx.Exec(ctx, `UPDATE edges SET identity_key = $2, skew_ms = $3 WHERE id = $1`,
			e.ID, e.IdentityKey, skewMillis(e.Skew)); err != nil {
			return translate("create edge", err)
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

// RevokeEdge implements cloud.Store. The update locks the edge's row, so
// a CertifyBadgeKey under way finishes first (and its key is retired
// here) or waits and finds the edge revoked.
func (s *Store) RevokeEdge(ctx context.Context, t cloud.Tenant, id string, at time.Time) (cloud.Edge, error) {
	var e cloud.Edge
	err := s.writeTx(ctx, t, func(tx pgx.Tx, f *feed) error {
		tag, err := tx.Exec(ctx, `UPDATE edges SET revoked_at = $4, announced = 'offline' WHERE id = $1 AND org_id = $2 AND mode = $3 AND revoked_at IS NULL`,
			id, t.OrgID, string(t.Mode), at)
		if err != nil {
			return err
		}
		e, err = scanEdge(tx.QueryRow(ctx, `SELECT `+edgeRead+` FROM edges WHERE id = $1 AND org_id = $2 AND mode = $3`, id, t.OrgID, string(t.Mode)))
		if errors.Is(err, pgx.ErrNoRows) {
			return cloud.ErrNotFound
		}
		if err != nil {
			return err
		}
		if k, ok := cloud.EdgeBadgeKey(e); ok && tag.RowsAffected() > 0 {
			f.add(e.SiteID, protocol.Change{At: at, Key: &k}) // retired, now
		}
		return nil
	})
	if err != nil && !errors.Is(err, cloud.ErrNotFound) {
		return cloud.Edge{}, fmt.Errorf("revoke edge: %w", err)
	}
	return e, err
}

// UpdateEdge implements cloud.Store. The edge's row is locked, as
// RevokeEdge locks it, so the two take turns.
func (s *Store) UpdateEdge(ctx context.Context, t cloud.Tenant, id string, at time.Time, fn func(*cloud.Edge) error) (cloud.Edge, error) {
	err := s.writeTx(ctx, t, func(tx pgx.Tx, f *feed) error {
		e, err := scanEdge(tx.QueryRow(ctx, `SELECT `+edgeRead+` FROM edges WHERE id = $1 AND org_id = $2 AND mode = $3 FOR UPDATE`,
			id, t.OrgID, string(t.Mode)))
		if errors.Is(err, pgx.ErrNoRows) {
			return cloud.ErrNotFound
		}
		if err != nil {
			return translate("update edge", err)
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
		if _, err := tx.Exec(ctx, `UPDATE edges SET name = $2, hardware = $3 WHERE id = $1`, id, e.Name, null(after)); err != nil {
			return translate("update edge", err)
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

// CertifyBadgeKey implements cloud.Store. It takes the tenant's feed lock
// (so no pass key is made meanwhile with the same ID) and then the edge's
// row, as RevokeEdge does, so the two take turns.
func (s *Store) CertifyBadgeKey(ctx context.Context, t cloud.Tenant, siteID, edgeID string, pub []byte, at time.Time) error {
	k, ok := cloud.EdgeBadgeKey(cloud.Edge{SiteID: siteID, BadgeKey: pub})
	if !ok {
		return fmt.Errorf("certify badge key: %d bytes, not an Ed25519 public key", len(pub))
	}
	err := s.writeTx(ctx, t, func(tx pgx.Tx, f *feed) error {
		if err := lockTenantFeeds(ctx, tx, t); err != nil {
			return err
		}
		e, err := scanEdge(tx.QueryRow(ctx, `SELECT `+edgeRead+` FROM edges WHERE id = $1 AND org_id = $2 AND mode = $3 AND site_id = $4
			AND revoked_at IS NULL FOR UPDATE`, edgeID, t.OrgID, string(t.Mode), siteID))
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return fmt.Errorf("edge %s: %w", edgeID, cloud.ErrNotFound)
		case err != nil:
			return err
		case bytes.Equal(e.BadgeKey, pub):
			return nil
		case e.BadgeKey != nil:
			return fmt.Errorf("edge %s has another badge key: %w", edgeID, cloud.ErrConflict)
		}
		var taken bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pass_keys WHERE org_id = $1 AND mode = $2 AND id = $3)`,
			t.OrgID, string(t.Mode), k.ID).Scan(&taken); err != nil {
			return err
		}
		if taken {
			return fmt.Errorf("key ID %s is a pass key's: %w", k.ID, cloud.ErrConflict)
		}
		if _, err := tx.Exec(ctx, `UPDATE edges SET badge_key = $2, badge_key_at = $3 WHERE id = $1`, edgeID, pub, at); err != nil {
			return err
		}
		f.add(siteID, protocol.Change{At: at, Key: &k})
		return nil
	})
	if err != nil && !errors.Is(err, cloud.ErrNotFound) && !errors.Is(err, cloud.ErrConflict) {
		return translate("certify badge key", err)
	}
	if err != nil {
		return fmt.Errorf("certify badge key: %w", err)
	}
	return nil
}

// EdgesRevoked implements cloud.Store.
func (s *Store) EdgesRevoked(ctx context.Context, ids []string) (map[string]bool, error) {
	rows, _ := s.pool.Query(ctx, `SELECT id, revoked_at IS NOT NULL FROM edges WHERE id = ANY($1)`, ids)
	out := make(map[string]bool, len(ids))
	var id string
	var revoked bool
	_, err := pgx.ForEachRow(rows, []any{&id, &revoked}, func() error {
		out[id] = revoked
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("edges revoked: %w", err)
	}
	return out, nil
}

// Edge implements cloud.Store.
func (s *Store) Edge(ctx context.Context, id string) (cloud.Edge, error) {
	e, err := scanEdge(s.pool.QueryRow(ctx, `SELECT `+edgeRead+` FROM edges WHERE id = $1`, id))
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
	q := `SELECT ` + edgeRead + ` FROM edges WHERE org_id = $1 AND mode = $2`
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
		q += `, last_seen_at = $6, seq = $7, outbox = $8, software = $9, skew_ms = $10, outbox_oldest = $11, cache_counts = $12, disk_free = $13,
			hardware_error = $14`
		var disk any
		if st.DiskFree != nil {
			disk = int64(min(*st.DiskFree, 1<<62))
		}
		args = append(args, int64(st.Seq), st.Outbox, st.Software, st.At.Sub(at).Milliseconds(), nullTime(st.OutboxOldest),
			null(cloud.EncodeCacheCounts(st.Cache)), disk, null(st.HardwareError))
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

// AnnounceEdge implements cloud.Store.
func (s *Store) AnnounceEdge(ctx context.Context, t cloud.Tenant, id, from, to string) error {
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE edges SET announced = $5 WHERE id = $1 AND org_id = $2 AND mode = $3 AND announced = $4`,
			id, t.OrgID, string(t.Mode), from, to)
		if err != nil || tag.RowsAffected() > 0 {
			return err
		}
		var announced string
		err = tx.QueryRow(ctx, `SELECT announced FROM edges WHERE id = $1 AND org_id = $2 AND mode = $3`, id, t.OrgID, string(t.Mode)).Scan(&announced)
		if errors.Is(err, pgx.ErrNoRows) {
			return cloud.ErrNotFound
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("edge %s is announced %s, not %s: %w", id, announced, from, cloud.ErrConflict)
	})
	if err != nil {
		return fmt.Errorf("announce edge: %w", classify(err))
	}
	return nil
}

// EdgesToAnnounce implements cloud.Store.
func (s *Store) EdgesToAnnounce(ctx context.Context, cutoff time.Time, limit int) ([]cloud.Edge, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+edgeRead+` FROM edges WHERE (state = 'online' OR announced = 'online') AND CASE
			WHEN announced = 'online' THEN revoked_at IS NOT NULL OR (state = 'online' AND last_seen_at < $1) OR (state <> 'online' AND state_at <= $1)
			ELSE state = 'online' AND last_seen_at >= $1 AND revoked_at IS NULL END
		ORDER BY last_seen_at, id LIMIT $2`, cutoff, limit)
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (cloud.Edge, error) { return scanEdge(row) })
	if err != nil {
		return nil, fmt.Errorf("edges to announce: %w", classify(err))
	}
	return out, nil
}
