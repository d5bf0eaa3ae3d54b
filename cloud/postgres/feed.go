package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/storedoc"
	"github.com/svc-vms/svc/sync/protocol"
)

// feed collects the changes one write transaction appends to its tenant's
// site feeds. Visits are noted by ID and read back at the end, so each
// goes out once, as the transaction left it (with its visitor's name as
// stored, none after an erasure); a visit noted with visitAs goes out as
// given, unread.
//
// The changes are appended last, site by site in ID order: a transaction
// takes the feed heads' row locks after every other lock it needs and in
// one order, so two transactions cannot wait for each other's heads.
type feed struct {
	t      cloud.Tenant
	states map[string]cloud.Visit // visits as the transaction left them, not to be read back
	visits []string
	seen   map[string]bool
	other  []siteChange
}

type siteChange struct {
	site string
	c    protocol.Change
}

func newFeed(t cloud.Tenant) *feed { return &feed{t: t, seen: map[string]bool{}} }

// visit notes that the transaction wrote the visit.
func (f *feed) visit(id string) {
	if !f.seen[id] {
		f.seen[id] = true
		f.visits = append(f.visits, id)
	}
}

// visitAs notes that the transaction wrote v and left it so, with its
// visitor as the transaction read it: flush need not read it back.
func (f *feed) visitAs(v cloud.Visit) {
	f.visit(v.ID)
	if f.states == nil {
		f.states = map[string]cloud.Visit{}
	}
	f.states[v.ID] = v
}

// add appends a change of another object to the site's feed.
func (f *feed) add(site string, c protocol.Change) {
	f.other = append(f.other, siteChange{site: site, c: c})
}

// queue queues in b the appends of the changes, site by site in ID
// order, reading through q the visits noted without their state.
func (f *feed) queue(ctx context.Context, q querier, b *pgx.Batch) error {
	all := slices.Clone(f.other)
	for _, id := range f.visits {
		v, ok := f.states[id]
		if !ok {
			var err error
			if v, err = getVisit(ctx, q, f.t, id, false); err != nil {
				return fmt.Errorf("feed visit %s: %w", id, err)
			}
		}
		pv := cloud.EdgeVisit(v)
		all = append(all, siteChange{site: v.SiteID, c: protocol.Change{At: v.UpdatedAt, Visit: &pv}})
	}
	bySite := map[string][]protocol.Change{}
	var sites []string
	for _, sc := range all {
		if _, ok := bySite[sc.site]; !ok {
			sites = append(sites, sc.site)
		}
		bySite[sc.site] = append(bySite[sc.site], sc.c)
	}
	slices.Sort(sites)
	for _, site := range sites {
		if err := queueChanges(b, f.t, site, bySite[site]); err != nil {
			return err
		}
	}
	return nil
}

// queueChanges queues the statement that allocates the next sequences of
// the site's feed, locking its head until the transaction ends, and
// stores the changes under them.
func queueChanges(b *pgx.Batch, t cloud.Tenant, site string, cs []protocol.Change) error {
	ats := make([]time.Time, len(cs))
	visits := make([]*string, len(cs))
	bodies := make([]string, len(cs))
	for i, c := range cs {
		body, err := storedoc.EncodeChange(c)
		if err != nil {
			return fmt.Errorf("feed of site %s: %w", site, err)
		}
		ats[i], bodies[i] = c.At, string(body)
		if id := storedoc.VisitID(c); id != "" {
			visits[i] = &id
		}
	}
	// One statement: the head's new sequence (its row locked until the
	// transaction ends) numbers the rows inserted.
	b.Queue(`WITH head AS (
			INSERT INTO site_feed_heads (org_id, mode, site_id, seq) VALUES ($1, $2, $3, $4)
			ON CONFLICT (org_id, mode, site_id) DO UPDATE SET seq = site_feed_heads.seq + excluded.seq RETURNING seq)
		INSERT INTO site_feed (org_id, mode, site_id, seq, at, visit_id, body)
		SELECT $1, $2, $3, head.seq - $4 + u.n, u.a, u.v, u.b::json
		FROM head, unnest($5::timestamptz[], $6::text[], $7::text[]) WITH ORDINALITY AS u(a, v, b, n)`,
		t.OrgID, string(t.Mode), site, len(cs), ats, visits, bodies)
	return nil
}

// writeTx runs fn in a transaction and appends what it noted to the feeds
// last before committing.
func (s *Store) writeTx(ctx context.Context, t cloud.Tenant, fn func(pgx.Tx, *feed) error) error {
	if s.bound(ctx) == nil {
		return s.Atomic(ctx, func(ctx context.Context) error { return s.writeTx(ctx, t, fn) })
	}
	return s.inTx(ctx, func(tx pgx.Tx) error {
		f := newFeed(t)
		if err := fn(tx, f); err != nil {
			return err
		}
		// The feed's head rows are locked from the append to the commit,
		// and every write at a site takes its head: the append is left to
		// the end of the transaction, after its events (Atomic), so that
		// lock is held for the append and the commit alone.
		b := s.bound(ctx)
		b.feeds = append(b.feeds, f)
		return nil
	})
}

// lockTenantFeeds makes the transaction the only one, until it ends, that
// creates a site, creates a pass key or writes a person of the tenant:
// each then sees the other's commit, so a new site's feed starts with
// every key and person, and a new key or a person's change reaches every
// site. Person writes take turns on every site's feed head anyway.
func lockTenantFeeds(ctx context.Context, tx pgx.Tx, t cloud.Tenant) error {
	_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('svc feeds ' || $1 || ' ' || $2, 0))`, t.OrgID, string(t.Mode))
	return err
}

// keyChanges adds the tenant's keys that are not retired to a new site's
// feed, so the feed from its first change holds everything its edge needs.
func (s *Store) keyChanges(ctx context.Context, tx pgx.Tx, f *feed, site cloud.Site) error {
	keys, err := s.liveKeys(ctx, tx, site.Tenant, site.CreatedAt)
	if err != nil {
		return err
	}
	for i := range keys {
		f.add(site.ID, protocol.Change{At: site.CreatedAt, Key: &keys[i]})
	}
	return nil
}

// liveKeys are the public halves of the tenant's keys not retired at now,
// oldest first.
func (s *Store) liveKeys(ctx context.Context, q querier, t cloud.Tenant, now time.Time) ([]protocol.Key, error) {
	keys, err := s.passKeys(ctx, q, t, ` AND (retired_at IS NULL OR retired_at > $3) ORDER BY created_at, id`, now)
	if err != nil {
		return nil, err
	}
	out := make([]protocol.Key, 0, len(keys))
	for _, k := range keys {
		pk, err := cloud.EdgeKey(k)
		if err != nil {
			return nil, err
		}
		out = append(out, pk)
	}
	return out, nil
}

// readTx runs fn in a read-only REPEATABLE READ transaction: every query
// sees one snapshot.
//
// Inside Atomic it reads in Atomic's transaction (READ COMMITTED, so each
// statement sees its own snapshot there).
func (s *Store) readTx(ctx context.Context, fn func(pgx.Tx) error) error {
	if b := s.bound(ctx); b != nil {
		return fn(b.tx)
	}
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

func siteExists(ctx context.Context, q querier, t cloud.Tenant, id string) error {
	var ok bool
	if err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM sites WHERE org_id = $1 AND mode = $2 AND id = $3)`,
		t.OrgID, string(t.Mode), id).Scan(&ok); err != nil {
		return err
	}
	if !ok {
		return cloud.ErrNotFound
	}
	return nil
}

func head(ctx context.Context, q querier, t cloud.Tenant, site string) (uint64, error) {
	var seq int64
	err := q.QueryRow(ctx, `SELECT seq FROM site_feed_heads WHERE org_id = $1 AND mode = $2 AND site_id = $3`,
		t.OrgID, string(t.Mode), site).Scan(&seq)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return uint64(seq), err
}

// changesAfter reads up to limit changes of the site's feed after seq.
func changesAfter(ctx context.Context, q querier, t cloud.Tenant, site string, after uint64, limit int) ([]protocol.Change, error) {
	rows, _ := q.Query(ctx, `SELECT seq, at, body FROM site_feed WHERE org_id = $1 AND mode = $2 AND site_id = $3 AND seq > $4
		ORDER BY seq LIMIT $5`, t.OrgID, string(t.Mode), site, int64(after), limit)
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (protocol.Change, error) {
		var seq int64
		var at time.Time
		var body []byte
		if err := row.Scan(&seq, &at, &body); err != nil {
			return protocol.Change{}, err
		}
		return storedoc.DecodeChange(uint64(seq), at, body)
	})
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = []protocol.Change{}
	}
	return out, nil
}

func changeLimit(limit int) int {
	if limit < 1 || limit > protocol.MaxChanges {
		return protocol.MaxChanges
	}
	return limit
}

// SiteChanges implements cloud.Store.
func (s *Store) SiteChanges(ctx context.Context, t cloud.Tenant, siteID string, after uint64, limit int) ([]protocol.Change, uint64, error) {
	var out []protocol.Change
	var h uint64
	err := s.readTx(ctx, func(tx pgx.Tx) error {
		if err := siteExists(ctx, tx, t, siteID); err != nil {
			return err
		}
		var err error
		if h, err = head(ctx, tx, t, siteID); err != nil {
			return err
		}
		out, err = changesAfter(ctx, tx, t, siteID, after, changeLimit(limit))
		return err
	})
	if errors.Is(err, cloud.ErrNotFound) {
		return nil, 0, err
	}
	if err != nil {
		return nil, 0, fmt.Errorf("site changes: %w", err)
	}
	return out, h, nil
}

// FeedHead implements cloud.Store.
func (s *Store) FeedHead(ctx context.Context, t cloud.Tenant, siteID string) (uint64, error) {
	h, err := head(ctx, s.pool, t, siteID)
	if err != nil {
		return 0, fmt.Errorf("feed head: %w", err)
	}
	return h, nil
}

// SiteSnapshot implements cloud.Store, in one REPEATABLE READ transaction:
// the head and the objects are those of one moment, and a write commits
// its objects with its feed entries.
func (s *Store) SiteSnapshot(ctx context.Context, t cloud.Tenant, siteID string, now time.Time) (cloud.EdgeSnapshot, error) {
	snap := cloud.EdgeSnapshot{Site: cloud.EdgeSite(t, siteID)}
	err := s.readTx(ctx, func(tx pgx.Tx) error {
		site, err := scanSite(tx.QueryRow(ctx, `SELECT `+siteCols+` FROM sites WHERE org_id = $1 AND mode = $2 AND id = $3`,
			t.OrgID, string(t.Mode), siteID), t)
		if errors.Is(err, pgx.ErrNoRows) {
			return cloud.ErrNotFound
		}
		if err != nil {
			return err
		}
		snap.Settings = cloud.EdgeSettings(site)
		if snap.Seq, err = head(ctx, tx, t, siteID); err != nil {
			return err
		}
		rows, _ := tx.Query(ctx, `SELECT `+gateCols+` FROM gates WHERE org_id = $1 AND mode = $2 AND site_id = $3
			ORDER BY created_at, id`, t.OrgID, string(t.Mode), siteID)
		if snap.Gates, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (protocol.Gate, error) {
			g, err := scanGate(row, t)
			return cloud.EdgeGate(g), err
		}); err != nil {
			return err
		}
		if snap.Keys, err = s.liveKeys(ctx, tx, t, now); err != nil {
			return err
		}
		rows, _ = tx.Query(ctx, `SELECT `+edgeRead+` FROM edges WHERE org_id = $1 AND mode = $2 AND site_id = $3
			AND revoked_at IS NULL AND badge_key IS NOT NULL ORDER BY created_at, id`, t.OrgID, string(t.Mode), siteID)
		edges, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (cloud.Edge, error) { return scanEdge(row) })
		if err != nil {
			return err
		}
		for _, e := range edges {
			if k, ok := cloud.EdgeBadgeKey(e); ok {
				snap.Keys = append(snap.Keys, k)
			}
		}
		rows, _ = tx.Query(ctx, `SELECT `+edgeRead+` FROM edges WHERE org_id = $1 AND mode = $2 AND site_id = $3
			AND revoked_at IS NULL AND hardware IS NOT NULL`, t.OrgID, string(t.Mode), siteID)
		hw, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (cloud.Edge, error) { return scanEdge(row) })
		if err != nil {
			return err
		}
		for _, e := range hw { // one edge at most: a site has one that is not revoked
			snap.Hardware = cloud.EdgeHardware(e)
		}
		rows, _ = tx.Query(ctx, `SELECT `+visitCols+` FROM `+visitFrom+`
			WHERE v.org_id = $1 AND v.mode = $2 AND v.site_id = $3 AND (v.edge_until IS NULL OR v.edge_until >= $4)
			ORDER BY v.created_at, v.id`, t.OrgID, string(t.Mode), siteID, now.Add(-cloud.EdgeHorizon))
		if snap.Visits, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (protocol.Visit, error) {
			v, err := scanVisit(row, t)
			return cloud.EdgeVisit(v), err
		}); err != nil {
			return err
		}
		if snap.People, _, err = tenantPeople(ctx, tx, t); err != nil {
			return err
		}
		snap.Teams, _, snap.VisitTypes, _, err = tenantKiosk(ctx, tx, t)
		return err
	})
	if errors.Is(err, cloud.ErrNotFound) {
		return cloud.EdgeSnapshot{}, err
	}
	if err != nil {
		return cloud.EdgeSnapshot{}, fmt.Errorf("site snapshot: %w", err)
	}
	if snap.Gates == nil {
		snap.Gates = []protocol.Gate{}
	}
	if snap.Keys == nil {
		snap.Keys = []protocol.Key{}
	}
	if snap.Visits == nil {
		snap.Visits = []protocol.Visit{}
	}
	if snap.People == nil {
		snap.People = []protocol.Person{}
	}
	if snap.Teams == nil {
		snap.Teams = []protocol.Team{}
	}
	if snap.VisitTypes == nil {
		snap.VisitTypes = []protocol.VisitType{}
	}
	return snap, nil
}

// PublishFeeds implements cloud.Store. Each site is claimed in a
// transaction of its own by locking its cursor row FOR UPDATE SKIP
// LOCKED: another caller, in this process or another, passes over it
// meanwhile. A call takes each site once, so a busy site does not keep
// the others waiting. A writer holds a feed's head until it commits, and heads are
// allocated in order, so what is visible of a feed has no gaps.
func (s *Store) PublishFeeds(ctx context.Context, limit int, fn func(protocol.Site, []protocol.Change) error) (int, error) {
	if limit < 1 {
		limit = 1
	}
	// Every feed needs a cursor row to lock.
	if _, err := s.pool.Exec(ctx, `INSERT INTO site_feed_cursors (org_id, mode, site_id, published_seq)
		SELECT h.org_id, h.mode, h.site_id, 0 FROM site_feed_heads h
		WHERE NOT EXISTS (SELECT 1 FROM site_feed_cursors c WHERE c.org_id = h.org_id AND c.mode = h.mode AND c.site_id = h.site_id)
		ON CONFLICT DO NOTHING`); err != nil {
		return 0, fmt.Errorf("publish feeds: %w", err)
	}
	n := 0
	done := []string{} // the feeds this call has published, each once a call
	for range limit {
		claimed := false
		var fnErr error
		err := s.inTx(ctx, func(tx pgx.Tx) error {
			var t cloud.Tenant
			var mode, site string
			var published int64
			err := tx.QueryRow(ctx, `SELECT c.org_id, c.mode, c.site_id, c.published_seq FROM site_feed_cursors c
				JOIN site_feed_heads h ON h.org_id = c.org_id AND h.mode = c.mode AND h.site_id = c.site_id
				WHERE h.seq > c.published_seq AND c.org_id || ' ' || c.mode || ' ' || c.site_id <> ALL($1::text[])
				ORDER BY c.org_id, c.mode, c.site_id LIMIT 1
				FOR UPDATE OF c SKIP LOCKED`, done).Scan(&t.OrgID, &mode, &site, &published)
			if errors.Is(err, pgx.ErrNoRows) {
				return nil
			}
			if err != nil {
				return err
			}
			claimed, t.Mode = true, cloud.Mode(mode)
			done = append(done, t.OrgID+" "+mode+" "+site)
			for {
				cs, err := changesAfter(ctx, tx, t, site, uint64(published), protocol.MaxChanges)
				if err != nil || len(cs) == 0 {
					return err
				}
				ps := cloud.EdgeSite(t, site)
				if err := fn(ps, cs); err != nil {
					fnErr = fmt.Errorf("publish feed of %s: %w", ps.Prefix(), err)
					return nil // keep what was published before it
				}
				published = int64(cs[len(cs)-1].Seq)
				if _, err := tx.Exec(ctx, `UPDATE site_feed_cursors SET published_seq = $4
					WHERE org_id = $1 AND mode = $2 AND site_id = $3`, t.OrgID, string(t.Mode), site, published); err != nil {
					return err
				}
				n += len(cs)
				if len(cs) < protocol.MaxChanges {
					return nil
				}
			}
		})
		if err != nil {
			return n, fmt.Errorf("publish feeds: %w", err)
		}
		if fnErr != nil {
			return n, fnErr
		}
		if !claimed {
			break
		}
	}
	return n, nil
}

// scrubVisitorName removes the visitor's name from the feed's earlier
// changes of the visits, in an erasure's transaction.
func scrubVisitorName(ctx context.Context, tx pgx.Tx, t cloud.Tenant, visitIDs []string) error {
	if len(visitIDs) == 0 {
		return nil
	}
	type row struct {
		site string
		seq  int64
		body []byte
	}
	rows, _ := tx.Query(ctx, `SELECT site_id, seq, body FROM site_feed WHERE org_id = $1 AND mode = $2 AND visit_id = ANY($3)`, t.OrgID, string(t.Mode), visitIDs)
	found, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
		var x row
		return x, r.Scan(&x.site, &x.seq, &x.body)
	})
	if err != nil {
		return err
	}
	for _, r := range found {
		scrubbed, err := storedoc.ScrubVisitorName(r.body)
		if err != nil {
			return err
		}
		if string(scrubbed) == string(r.body) {
			continue
		}
		if _, err := tx.Exec(ctx, `UPDATE site_feed SET body = $5 WHERE org_id = $1 AND mode = $2 AND site_id = $3 AND seq = $4`,
			t.OrgID, string(t.Mode), r.site, r.seq, string(scrubbed)); err != nil {
			return err
		}
	}
	return nil
}
