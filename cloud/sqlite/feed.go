package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/storedoc"
	"github.com/svc-vms/svc/sync/protocol"
)

// feed collects the changes one write transaction appends to its tenant's
// site feeds. Visits are noted by ID and read back at the end, so each
// goes out once, as the transaction left it (with its visitor's name as
// stored, none after an erasure); a visit noted with visitAs goes out as
// given, unread. It also holds the transaction's prepared statements.
type feed struct {
	t      cloud.Tenant
	st     *txStmts              // the transaction's prepared statements
	heads  map[feedHead]int64    // the writer's heads of the open transaction (writer.heads)
	states map[string]siteChange // changes of visits as the transaction left them, not to be read back
	visits []string
	seen   map[string]bool
	other  []siteChange
}

type siteChange struct {
	site string
	c    protocol.Change
	body []byte // c encoded, when it was before the writer's turn (visitChange); else nil
}

// visitChange is the change that puts v on its site's feed, encoded: a
// write that knows the visit it leaves before it writes (a new visit with
// a new visitor) makes it before it takes the writer's turn, and notes it
// with visitChanged.
func visitChange(v cloud.Visit) (siteChange, error) {
	sc := changeOf(v)
	b, err := storedoc.EncodeChange(sc.c)
	if err != nil {
		return siteChange{}, fmt.Errorf("feed visit %s: %w", v.ID, err)
	}
	sc.body = b
	return sc, nil
}

// changeOf is the change that puts v on its site's feed, not encoded.
func changeOf(v cloud.Visit) siteChange {
	pv := cloud.EdgeVisit(v)
	return siteChange{site: v.SiteID, c: protocol.Change{At: v.UpdatedAt, Visit: &pv}}
}

func newFeed(t cloud.Tenant, st *txStmts, heads map[feedHead]int64) *feed {
	return &feed{t: t, st: st, heads: heads, seen: map[string]bool{}}
}

// visit notes that the transaction wrote the visit.
func (f *feed) visit(id string) {
	if !f.seen[id] {
		f.seen[id] = true
		f.visits = append(f.visits, id)
	}
}

// visitAs notes that the transaction wrote v and left it so, with its
// visitor as the transaction read it: flush need not read it back.
func (f *feed) visitAs(v cloud.Visit) { f.visitChanged(changeOf(v)) }

// visitChanged is visitAs with the visit's change made already.
func (f *feed) visitChanged(sc siteChange) {
	id := sc.c.Visit.ID
	f.visit(id)
	if f.states == nil {
		f.states = map[string]siteChange{}
	}
	f.states[id] = sc
}

// add appends a change of another object to the site's feed.
func (f *feed) add(site string, c protocol.Change) {
	f.other = append(f.other, siteChange{site: site, c: c})
}

// flush appends the changes, site by site in ID order.
func (f *feed) flush(ctx context.Context) error {
	all := slices.Clone(f.other)
	for _, id := range f.visits {
		if sc, ok := f.states[id]; ok {
			all = append(all, sc)
			continue
		}
		v, err := getVisit(ctx, f.st, f.t, id)
		if err != nil {
			return fmt.Errorf("feed visit %s: %w", id, err)
		}
		all = append(all, changeOf(v))
	}
	bySite := map[string][]siteChange{}
	var sites []string
	for _, sc := range all {
		if _, ok := bySite[sc.site]; !ok {
			sites = append(sites, sc.site)
		}
		bySite[sc.site] = append(bySite[sc.site], sc)
	}
	slices.Sort(sites)
	for _, site := range sites {
		if err := appendChanges(ctx, f.st, f.heads, f.t, site, bySite[site]); err != nil {
			return err
		}
	}
	return nil
}

// The feed's statements, prepared on the writer (hotWrites).
const (
	qFeedHead = `INSERT INTO site_feed_heads (org_id, mode, site_id, seq) VALUES (?, ?, ?, ?)
		ON CONFLICT (org_id, mode, site_id) DO UPDATE SET seq = site_feed_heads.seq + excluded.seq RETURNING seq`
	qFeedRow     = `INSERT INTO site_feed (org_id, mode, site_id, seq, at, visit_id, body) VALUES (?, ?, ?, ?, ?, ?, ?)`
	qFeedAdvance = `UPDATE site_feed_heads SET seq = ? WHERE org_id = ? AND mode = ? AND site_id = ? AND seq = ?`
	qFeedCursor  = `INSERT INTO site_feed_cursors (org_id, mode, site_id, published_seq) VALUES (?, ?, ?, ?)
		ON CONFLICT (org_id, mode, site_id) DO UPDATE SET published_seq = excluded.published_seq`
)

// appendChanges allocates the next sequences of the site's feed and
// stores the changes under them. heads are the writer's (writer.heads).
func appendChanges(ctx context.Context, tx *txStmts, heads map[feedHead]int64, t cloud.Tenant, site string, cs []siteChange) error {
	for i := range cs {
		if cs[i].body != nil {
			continue
		}
		b, err := storedoc.EncodeChange(cs[i].c)
		if err != nil {
			return fmt.Errorf("feed of site %s: %w", site, err)
		}
		cs[i].body = b
	}
	last, err := allocate(ctx, tx, heads, feedHead{t: t, site: site}, int64(len(cs)))
	if err != nil {
		return fmt.Errorf("feed of site %s: allocate: %w", site, err)
	}
	first := last - int64(len(cs)) + 1
	for i, sc := range cs {
		if _, err := tx.ExecContext(ctx, qFeedRow, t.OrgID, string(t.Mode), site, first+int64(i), micros(sc.c.At),
			null(storedoc.VisitID(sc.c)), string(sc.body)); err != nil {
			return fmt.Errorf("feed of site %s: %w", site, err)
		}
	}
	return nil
}

// feedHead names a site's feed.
type feedHead struct {
	t    cloud.Tenant
	site string
}

// allocate advances the feed's head by n in the writer's open transaction
// and returns the new head. The transaction's first append to a feed
// upserts its head and reads it back (RETURNING); heads then holds it, and
// the next append in the same transaction sets it with a plain UPDATE
// that names the head it expects, without RETURNING: a quarter of the
// feed's cost in the writer's turn, most of every batch's appends. An
// UPDATE that finds the head elsewhere (as heads never should) changes
// nothing, and the upsert is made as for a first append.
func allocate(ctx context.Context, tx *txStmts, heads map[feedHead]int64, k feedHead, n int64) (int64, error) {
	if prev, ok := heads[k]; ok {
		res, err := tx.ExecContext(ctx, qFeedAdvance, prev+n, k.t.OrgID, string(k.t.Mode), k.site, prev)
		if err != nil {
			return 0, err
		}
		if done, err := res.RowsAffected(); err != nil {
			return 0, err
		} else if done == 1 {
			heads[k] = prev + n
			return prev + n, nil
		}
	}
	var last int64
	if err := tx.QueryRowContext(ctx, qFeedHead, k.t.OrgID, string(k.t.Mode), k.site, n).Scan(&last); err != nil {
		return 0, err
	}
	if heads != nil {
		heads[k] = last
	}
	return last, nil
}

// writeTx runs fn in a write transaction and appends what it noted to the
// feeds before committing.
func (s *Store) writeTx(ctx context.Context, t cloud.Tenant, fn func(*sql.Tx, *feed) error) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		f := newFeed(t, s.ws.in(tx), s.writer.heads)
		if err := fn(tx, f); err != nil {
			return err
		}
		return f.flush(ctx)
	})
}

// keyChanges adds the tenant's keys that are not retired to a new site's
// feed, so the feed from its first change holds everything its edge needs.
func (s *Store) keyChanges(ctx context.Context, tx *sql.Tx, f *feed, site cloud.Site) error {
	keys, err := s.passKeys(ctx, tx, site.Tenant, ` AND (retired_at IS NULL OR retired_at > ?) ORDER BY created_at, id`,
		micros(site.CreatedAt))
	if err != nil {
		return err
	}
	for _, k := range keys {
		pk, err := cloud.EdgeKey(k)
		if err != nil {
			return err
		}
		f.add(site.ID, protocol.Change{At: site.CreatedAt, Key: &pk})
	}
	return nil
}

// all runs a query and returns every row.
func all[T any](ctx context.Context, db querier, scan func(scanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := db.QueryContext(ctx, query, args...)
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

// readTx runs fn in a read transaction: one consistent view of the file.
// Inside Atomic, once its transaction has begun, it reads in it.
func (s *Store) readTx(ctx context.Context, fn func(*sql.Tx) error) error {
	if b := s.bound(ctx); b != nil && b.tx != nil {
		return fn(b.tx)
	}
	tx, err := s.r.DB.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	return fn(tx)
}

func siteExists(ctx context.Context, tx *sql.Tx, t cloud.Tenant, id string) error {
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM sites WHERE id = ? AND org_id = ? AND mode = ?`, id, t.OrgID, string(t.Mode)).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		return cloud.ErrNotFound
	}
	return nil
}

func head(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, t cloud.Tenant, site string) (uint64, error) {
	var seq int64
	err := q.QueryRowContext(ctx, `SELECT seq FROM site_feed_heads WHERE org_id = ? AND mode = ? AND site_id = ?`,
		t.OrgID, string(t.Mode), site).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return uint64(seq), err
}

// changesAfter reads up to limit changes of the site's feed after seq.
func changesAfter(ctx context.Context, q querier, t cloud.Tenant, site string, after uint64, limit int) ([]protocol.Change, error) {
	rows, err := q.QueryContext(ctx, `SELECT seq, at, body FROM site_feed WHERE org_id = ? AND mode = ? AND site_id = ? AND seq > ?
		ORDER BY seq LIMIT ?`, t.OrgID, string(t.Mode), site, int64(after), limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []protocol.Change{}
	for rows.Next() {
		var seq, at int64
		var body string
		if err := rows.Scan(&seq, &at, &body); err != nil {
			return nil, err
		}
		c, err := storedoc.DecodeChange(uint64(seq), fromMicros(at), []byte(body))
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
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
	err := s.readTx(ctx, func(tx *sql.Tx) error {
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
	if err != nil {
		return nil, 0, fmt.Errorf("site changes: %w", err)
	}
	return out, h, nil
}

// FeedHead implements cloud.Store.
func (s *Store) FeedHead(ctx context.Context, t cloud.Tenant, siteID string) (uint64, error) {
	h, err := head(ctx, s.r, t, siteID)
	if err != nil {
		return 0, fmt.Errorf("feed head: %w", err)
	}
	return h, nil
}

// SiteSnapshot implements cloud.Store, in one read transaction.
func (s *Store) SiteSnapshot(ctx context.Context, t cloud.Tenant, siteID string, now time.Time) (cloud.EdgeSnapshot, error) {
	snap := cloud.EdgeSnapshot{Site: cloud.EdgeSite(t, siteID), Gates: []protocol.Gate{}, Keys: []protocol.Key{}, Visits: []protocol.Visit{},
		People: []protocol.Person{}, Teams: []protocol.Team{}, VisitTypes: []protocol.VisitType{}}
	err := s.readTx(ctx, func(tx *sql.Tx) error {
		site, err := get(ctx, tx, scanSite, `SELECT `+siteCols+` FROM sites WHERE id = ? AND org_id = ? AND mode = ?`,
			siteID, t.OrgID, string(t.Mode))
		if err != nil {
			return err
		}
		snap.Settings = cloud.EdgeSettings(site)
		if snap.Seq, err = head(ctx, tx, t, siteID); err != nil {
			return err
		}
		gates, err := all(ctx, tx, scanGate, `SELECT `+gateCols+` FROM gates WHERE org_id = ? AND mode = ? AND site_id = ?
			ORDER BY created_at, id`, t.OrgID, string(t.Mode), siteID)
		if err != nil {
			return err
		}
		for _, g := range gates {
			snap.Gates = append(snap.Gates, cloud.EdgeGate(g))
		}
		keys, err := s.passKeys(ctx, tx, t, ` AND (retired_at IS NULL OR retired_at > ?) ORDER BY created_at, id`, micros(now))
		if err != nil {
			return err
		}
		for _, k := range keys {
			pk, err := cloud.EdgeKey(k)
			if err != nil {
				return err
			}
			snap.Keys = append(snap.Keys, pk)
		}
		edges, err := all(ctx, tx, scanEdge, `SELECT `+edgeRead+` FROM edges WHERE org_id = ? AND mode = ? AND site_id = ?
			AND revoked_at IS NULL AND badge_key IS NOT NULL ORDER BY created_at, id`, t.OrgID, string(t.Mode), siteID)
		if err != nil {
			return err
		}
		for _, e := range edges {
			if k, ok := cloud.EdgeBadgeKey(e); ok {
				snap.Keys = append(snap.Keys, k)
			}
		}
		hw, err := all(ctx, tx, scanEdge, `SELECT `+edgeRead+` FROM edges WHERE org_id = ? AND mode = ? AND site_id = ?
			AND revoked_at IS NULL AND hardware IS NOT NULL`, t.OrgID, string(t.Mode), siteID)
		if err != nil {
			return err
		}
		for _, e := range hw { // one edge at most: a site has one that is not revoked
			snap.Hardware = cloud.EdgeHardware(e)
		}
		visits, err := all(ctx, tx, scanVisit, `SELECT `+visitCols+visitFrom+`
			WHERE v.org_id = ? AND v.mode = ? AND v.site_id = ? AND (v.edge_until IS NULL OR v.edge_until >= ?)
			ORDER BY v.created_at, v.id`, t.OrgID, string(t.Mode), siteID, micros(now.Add(-cloud.EdgeHorizon)))
		if err != nil {
			return err
		}
		for _, v := range visits {
			snap.Visits = append(snap.Visits, cloud.EdgeVisit(v))
		}
		people, err := all(ctx, tx, scanPerson, `SELECT `+personCols+` FROM people WHERE org_id = ? AND mode = ? ORDER BY created_at, id`,
			t.OrgID, string(t.Mode))
		if err != nil {
			return err
		}
		for _, p := range people {
			snap.People = append(snap.People, cloud.EdgePerson(p))
		}
		teams, err := all(ctx, tx, scanTeam, `SELECT `+teamCols+` FROM teams WHERE org_id = ? AND mode = ? ORDER BY created_at, id`,
			t.OrgID, string(t.Mode))
		if err != nil {
			return err
		}
		for _, tm := range teams {
			snap.Teams = append(snap.Teams, cloud.EdgeTeam(tm))
		}
		types, err := all(ctx, tx, scanVisitType, `SELECT `+visitTypeCols+` FROM visit_types WHERE org_id = ? AND mode = ? ORDER BY key`,
			t.OrgID, string(t.Mode))
		if err != nil {
			return err
		}
		for _, vt := range types {
			snap.VisitTypes = append(snap.VisitTypes, cloud.EdgeVisitType(vt))
		}
		return nil
	})
	if err != nil {
		return cloud.EdgeSnapshot{}, fmt.Errorf("site snapshot: %w", err)
	}
	return snap, nil
}

// PublishFeeds implements cloud.Store. One process owns a SQLite file, so
// a mutex keeps two callers apart; fn runs outside any transaction, so a
// slow broker holds up no writer.
func (s *Store) PublishFeeds(ctx context.Context, limit int, fn func(protocol.Site, []protocol.Change) error) (int, error) {
	s.publishMu.Lock()
	defer s.publishMu.Unlock()
	if limit < 1 {
		limit = 1
	}
	type due struct {
		t         cloud.Tenant
		site      string
		published uint64
	}
	rows, err := s.r.QueryContext(ctx, `SELECT h.org_id, h.mode, h.site_id, coalesce(c.published_seq, 0) FROM site_feed_heads h
		LEFT JOIN site_feed_cursors c ON c.org_id = h.org_id AND c.mode = h.mode AND c.site_id = h.site_id
		WHERE h.seq > coalesce(c.published_seq, 0) ORDER BY h.org_id, h.mode, h.site_id LIMIT ?`, limit)
	if err != nil {
		return 0, fmt.Errorf("publish feeds: %w", err)
	}
	var sites []due
	for rows.Next() {
		var d due
		var mode string
		var pub int64
		if err := rows.Scan(&d.t.OrgID, &mode, &d.site, &pub); err != nil {
			rows.Close()
			return 0, fmt.Errorf("publish feeds: %w", err)
		}
		d.t.Mode, d.published = cloud.Mode(mode), uint64(pub)
		sites = append(sites, d)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("publish feeds: %w", err)
	}
	n := 0
	for _, d := range sites {
		for {
			cs, err := changesAfter(ctx, s.r, d.t, d.site, d.published, protocol.MaxChanges)
			if err != nil {
				return n, fmt.Errorf("publish feeds: %w", err)
			}
			if len(cs) == 0 {
				break
			}
			site := cloud.EdgeSite(d.t, d.site)
			if err := fn(site, cs); err != nil {
				return n, fmt.Errorf("publish feed of %s: %w", site.Prefix(), err)
			}
			d.published = cs[len(cs)-1].Seq
			if _, err := s.ws.m[qFeedCursor].ExecContext(ctx, d.t.OrgID, string(d.t.Mode), d.site, int64(d.published)); err != nil {
				return n, fmt.Errorf("publish feeds: %w", err)
			}
			n += len(cs)
			if len(cs) < protocol.MaxChanges {
				break
			}
		}
	}
	return n, nil
}

// scrubVisitorName removes the visitor's name from the feed's earlier
// changes of the visits, in an erasure's transaction.
func scrubVisitorName(ctx context.Context, tx *sql.Tx, t cloud.Tenant, visitIDs []string) error {
	for _, id := range visitIDs {
		rows, err := tx.QueryContext(ctx, `SELECT site_id, seq, body FROM site_feed WHERE org_id = ? AND mode = ? AND visit_id = ?`,
			t.OrgID, string(t.Mode), id)
		if err != nil {
			return err
		}
		type row struct {
			site string
			seq  int64
			body []byte
		}
		var found []row
		for rows.Next() {
			var r row
			var body string
			if err := rows.Scan(&r.site, &r.seq, &body); err != nil {
				rows.Close()
				return err
			}
			r.body = []byte(body)
			found = append(found, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, r := range found {
			scrubbed, err := storedoc.ScrubVisitorName(r.body)
			if err != nil {
				return err
			}
			if len(scrubbed) == len(r.body) && string(scrubbed) == string(r.body) {
				continue
			}
			if _, err := tx.ExecContext(ctx, `UPDATE site_feed SET body = ? WHERE org_id = ? AND mode = ? AND site_id = ? AND seq = ?`,
				string(scrubbed), t.OrgID, string(t.Mode), r.site, r.seq); err != nil {
				return err
			}
		}
	}
	return nil
}
