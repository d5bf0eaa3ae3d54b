package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/storedoc"
	"github.com/svc-vms/svc/sync/protocol"
)

// visitCols and visitFrom read a visit with its visitor, who may have been
// erased.
const (
	visitCols = `v.id, v.status, v.type, v.site_id, v.host_id, v.visitor_id, v.booking_id, v.expected_at, v.doc,
		v.created_at, v.updated_at, r.id, r.name, r.email, r.phone, r.company, r.self_registered, r.created_at, r.updated_at`
	visitFrom = `visits v LEFT JOIN visitors r ON r.org_id = v.org_id AND r.mode = v.mode AND r.id = v.visitor_id`
)

// Statements shared by the single writes and the batches of facts.
const (
	qInsertVisit = `INSERT INTO visits (org_id, mode, id, status, type, site_id, host_id, visitor_id, booking_id,
			expected_at, doc, created_at, updated_at, edge_until, remind_from)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`
	qUpdateVisit = `UPDATE visits SET status = $4, type = $5, site_id = $6, host_id = $7, visitor_id = $8,
			booking_id = $9, expected_at = $10, doc = $11, updated_at = $12, edge_until = $13, remind_from = $14
		WHERE org_id = $1 AND mode = $2 AND id = $3`
	qInsertHosts = `INSERT INTO visit_hosts (org_id, mode, visit_id, person_id) SELECT $1, $2, $3, unnest($4::text[])`
	qDeleteHosts = `DELETE FROM visit_hosts WHERE org_id = $1 AND mode = $2 AND visit_id = $3`
	qInsertAudit = `INSERT INTO audit_events (org_id, mode, id, action, actor_kind, actor_id, object_type, object_id,
				request_id, detail, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`
)

// qInsertMessage stores an outbox message; messageArgs are its arguments.
const qInsertMessage = `INSERT INTO messages (org_id, mode, id, visit_id, channel, to_addr, subject, body, status, created_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`

// messageArgs are qInsertMessage's arguments for m in the tenant t.
func messageArgs(t cloud.Tenant, m cloud.Message) []any {
	return []any{t.OrgID, string(t.Mode), m.ID, null(m.VisitID), m.Channel, m.To, m.Subject, m.Body, m.Status, m.CreatedAt}
}

// auditArgs are qInsertAudit's arguments for a in the tenant t.
func auditArgs(t cloud.Tenant, a cloud.AuditEvent) []any {
	return []any{t.OrgID, string(t.Mode), a.ID, a.Action, a.ActorKind,
		null(a.ActorID), a.ObjectType, a.ObjectID, null(a.RequestID), auditDetail(a.Detail), a.CreatedAt}
}

func scanVisit(row scanner, t cloud.Tenant) (cloud.Visit, error) {
	v := cloud.Visit{Tenant: t}
	var status string
	var host, visitor, booking pgtype.Text
	var expected pgtype.Timestamptz
	var doc []byte
	var rID, rName, rEmail, rPhone, rCompany pgtype.Text
	var rSelf pgtype.Bool
	var rCreated, rUpdated pgtype.Timestamptz
	err := row.Scan(&v.ID, &status, &v.Type, &v.SiteID, &host, &visitor, &booking, &expected, &doc, &v.CreatedAt, &v.UpdatedAt,
		&rID, &rName, &rEmail, &rPhone, &rCompany, &rSelf, &rCreated, &rUpdated)
	if err != nil {
		return cloud.Visit{}, err
	}
	v.Status, v.HostID, v.VisitorID, v.BookingID = cloud.VisitStatus(status), host.String, visitor.String, booking.String
	v.ExpectedAt, v.CreatedAt, v.UpdatedAt = timePtr(expected), v.CreatedAt.UTC(), v.UpdatedAt.UTC()
	if rID.Valid {
		v.Visitor = cloud.Visitor{ID: rID.String, Tenant: t, Name: rName.String, Email: rEmail.String, Phone: rPhone.String,
			Company: rCompany.String, SelfRegistered: rSelf.Bool, CreatedAt: rCreated.Time.UTC(), UpdatedAt: rUpdated.Time.UTC()}
	}
	if err := storedoc.DecodeVisit(doc, &v); err != nil {
		return cloud.Visit{}, err
	}
	return v, nil
}

// visitArgs are $1..$15: org_id, mode, id, status, type, site_id, host_id,
// visitor_id, booking_id, expected_at, doc, created_at, updated_at,
// edge_until, remind_from.
func visitArgs(t cloud.Tenant, id string, v cloud.Visit) ([]any, error) {
	doc, err := storedoc.EncodeVisit(v)
	if err != nil {
		return nil, err
	}
	return []any{t.OrgID, string(t.Mode), id, string(v.Status), v.Type, v.SiteID, null(v.HostID), null(v.VisitorID),
		null(v.BookingID), nullTime(v.ExpectedAt), doc, v.CreatedAt, v.UpdatedAt, nullTime(cloud.EdgeUntil(v)),
		nullTime(cloud.RemindFrom(v))}, nil
}

// hostIDs are the people the host filter finds v by: the lead and every
// entry of Hosts, once each, sorted.
func hostIDs(v cloud.Visit) []string {
	out := make([]string, 0, len(v.Hosts)+1)
	if v.HostID != "" {
		out = append(out, v.HostID)
	}
	for _, h := range v.Hosts {
		if h.ID != "" {
			out = append(out, h.ID)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func insertHosts(ctx context.Context, q querier, t cloud.Tenant, visitID string, hosts []string) error {
	if len(hosts) == 0 {
		return nil
	}
	_, err := q.Exec(ctx, qInsertHosts, t.OrgID, string(t.Mode), visitID, hosts)
	if err != nil {
		return translate("store visit hosts", err)
	}
	return nil
}

// insertVisit stores a new visit and its hosts in the tenant t, noting it
// for the feed.
func insertVisit(ctx context.Context, q querier, f *feed, t cloud.Tenant, v cloud.Visit) error {
	args, err := visitArgs(t, v.ID, v)
	if err != nil {
		return err
	}
	if _, err := q.Exec(ctx, qInsertVisit, args...); err != nil {
		return translate("create visit", err)
	}
	f.visit(v.ID)
	return insertHosts(ctx, q, t, v.ID, hostIDs(v))
}

// updateVisitRow stores v over the visit id of the tenant, whose hosts
// were before, noting it for the feed; the ID, tenant and creation time
// stay as they are.
func updateVisitRow(ctx context.Context, q querier, f *feed, t cloud.Tenant, id string, before []string, v cloud.Visit) error {
	args, err := visitArgs(t, id, v)
	if err != nil {
		return err
	}
	args = slices.Delete(args, 11, 12) // created_at is not updated
	if _, err := q.Exec(ctx, qUpdateVisit, args...); err != nil {
		return translate("update visit", err)
	}
	f.visit(id)
	after := hostIDs(v)
	if slices.Equal(before, after) {
		return nil
	}
	if _, err := q.Exec(ctx, qDeleteHosts, t.OrgID, string(t.Mode), id); err != nil {
		return fmt.Errorf("update visit hosts: %w", err)
	}
	return insertHosts(ctx, q, t, id, after)
}

// writeAlong stores what w holds beside its visitor, in the tenant t of
// the visit it goes with, whatever the Tenant fields in w say.
func writeAlong(ctx context.Context, q querier, f *feed, t cloud.Tenant, w cloud.VisitWrites) error {
	for _, v := range w.Visits {
		if err := insertVisit(ctx, q, f, t, v); err != nil {
			return err
		}
	}
	for _, m := range w.Messages {
		if _, err := q.Exec(ctx, qInsertMessage, messageArgs(t, m)...); err != nil {
			return translate("create message", err)
		}
	}
	for _, a := range w.Audit {
		if _, err := q.Exec(ctx, qInsertAudit, auditArgs(t, a)...); err != nil {
			return translate("create audit event", err)
		}
	}
	return nil
}

// getVisit reads a visit, locking it when lock is set.
func getVisit(ctx context.Context, q querier, t cloud.Tenant, id string, lock bool) (cloud.Visit, error) {
	query := `SELECT ` + visitCols + ` FROM ` + visitFrom + ` WHERE v.org_id = $1 AND v.mode = $2 AND v.id = $3`
	if lock {
		query += ` FOR UPDATE OF v`
	}
	v, err := scanVisit(q.QueryRow(ctx, query, t.OrgID, string(t.Mode), id), t)
	if errors.Is(err, pgx.ErrNoRows) {
		return cloud.Visit{}, cloud.ErrNotFound
	}
	if err != nil {
		return cloud.Visit{}, fmt.Errorf("get visit: %w", err)
	}
	return v, nil
}

// CreateVisit implements cloud.Store: the new visitor first, then the
// visit, the other new visits, the messages and the audit events, all in
// the visit's tenant.
//
// Its rows (visitor, visit, hosts, messages, audit) go in one batch: one
// round trip where they were one each. A new visit with a new visitor goes
// on the feed unread (feed.visitAs).
func (s *Store) CreateVisit(ctx context.Context, v cloud.Visit, w cloud.VisitWrites) error {
	t := v.Tenant
	return s.writeTx(ctx, t, func(tx pgx.Tx, f *feed) error {
		var b pgx.Batch
		if w.Visitor != nil {
			b.Queue(qInsertVisitor, append(visitorArgs(t, w.Visitor.ID, *w.Visitor), w.Visitor.SelfRegistered)...)
		}
		for _, vt := range append([]cloud.Visit{v}, w.Visits...) {
			args, err := visitArgs(t, vt.ID, vt)
			if err != nil {
				return err
			}
			b.Queue(qInsertVisit, args...)
			// A new visit with a new visitor goes on the feed as given:
			// one round trip and query fewer than reading it back.
			if sv, ok := w.WithNewVisitor(vt); ok && vt.ID == v.ID {
				f.visitAs(sv)
			} else {
				f.visit(vt.ID)
			}
			if hosts := hostIDs(vt); len(hosts) > 0 {
				b.Queue(qInsertHosts, t.OrgID, string(t.Mode), vt.ID, hosts)
			}
		}
		for _, m := range w.Messages {
			b.Queue(qInsertMessage, messageArgs(t, m)...)
		}
		for _, a := range w.Audit {
			b.Queue(qInsertAudit, auditArgs(t, a)...)
		}
		if p, ok := tx.(*pipeTx); ok {
			// Nothing here reads the rows back: they go with the
			// commit, a round trip fewer (docs/decisions.md, "The
			// visit's rows in the commit's round trip").
			p.deferWrites(&b)
			return nil
		}
		return sendBatch(ctx, tx, &b, "create visit", nil)
	})
}

// Visit implements cloud.Store.
func (s *Store) Visit(ctx context.Context, t cloud.Tenant, id string) (cloud.Visit, error) {
	return getVisit(ctx, s.pool, t, id, false)
}

// UpdateVisit implements cloud.Store. The visit's row is locked (SELECT
// ... FOR UPDATE) before fn sees it, so concurrent updates take turns,
// each seeing the last one's result. The visit returned is read back after
// the writes, so its Visitor is the one it now points at.
func (s *Store) UpdateVisit(ctx context.Context, t cloud.Tenant, id string, fn func(*cloud.Visit, *cloud.VisitWrites) error) (cloud.Visit, error) {
	var out cloud.Visit
	err := s.writeTx(ctx, t, func(tx pgx.Tx, f *feed) error {
		v, err := getVisit(ctx, tx, t, id, true)
		if err != nil {
			return err
		}
		before := hostIDs(v)
		var w cloud.VisitWrites
		if err := fn(&v, &w); err != nil {
			return err
		}
		if w.Visitor != nil {
			if err := insertVisitor(ctx, tx, t, *w.Visitor); err != nil {
				return err
			}
		}
		if err := updateVisitRow(ctx, tx, f, t, id, before, v); err != nil {
			return err
		}
		if err := writeAlong(ctx, tx, f, t, w); err != nil {
			return err
		}
		out, err = getVisit(ctx, tx, t, id, false)
		return err
	})
	if err != nil {
		return cloud.Visit{}, err
	}
	return out, nil
}

// visitWaitingWith is a visit's receiver (the waiting_with filter): the
// expression of the index visits_waiting_list (migration 0051), which
// serves the filter only while the two are the same expression.
const visitWaitingWith = `(CASE v.doc->'receiver'->>'kind' WHEN 'person' THEN v.doc->'receiver'->>'person_id'
	WHEN 'team' THEN v.doc->'receiver'->>'team_id' ELSE 'reception' END)`

// ListVisits implements cloud.Store.
func (s *Store) ListVisits(ctx context.Context, t cloud.Tenant, f cloud.VisitFilter, p cloud.Page) ([]cloud.Visit, bool, error) {
	l := newListOn(visitCols, visitFrom, "v.", "id", t)
	if f.HostID != "" {
		// A host's visits are read from visit_hosts, newest first
		// (migration 0052), in the order of the visits.
		l = newListOn(visitCols, `visit_hosts h JOIN visits v ON v.org_id = h.org_id AND v.mode = h.mode AND v.id = h.visit_id`+
			strings.TrimPrefix(visitFrom, `visits v`), "h.", "visit_id", t)
		l.where("h.person_id = $%d", f.HostID)
		// A host with more than about 260 visits made the prepared
		// statement's generic plan (LIMIT as a parameter) dearer than a
		// custom one, so each request planned it again: 0.4-0.5 ms of a
		// 1 ms request at 1,000 visits, none at 50 (docs/performance.md,
		// "The PostgreSQL host filter"). The plan is the same for every
		// host: visit_hosts_person_list in order, then each visit by key.
		l.fixedLimit = true
	}
	if len(f.Status) > 0 {
		statuses := make([]string, len(f.Status))
		for i, st := range f.Status {
			statuses[i] = string(st)
		}
		l.whereIn("v.status", statuses)
	}
	if f.Type != "" {
		l.where("v.type = $%d", f.Type)
	}
	if f.SiteID != "" {
		l.where("v.site_id = $%d", f.SiteID)
	}
	if f.VisitorID != "" {
		l.where("v.visitor_id = $%d", f.VisitorID)
	}
	if f.ExpectedFrom != nil {
		l.where("v.expected_at >= $%d", *f.ExpectedFrom)
	}
	if f.ExpectedBefore != nil {
		l.where("v.expected_at < $%d", *f.ExpectedBefore)
	}
	l.sortRows = sortWindow(f.ExpectedFrom, f.ExpectedBefore)
	if f.CreatedAfter != nil {
		l.where("v.created_at > $%d", *f.CreatedAfter)
	}
	if f.WaitingWith != "" {
		l.where(`v.host_id IS NULL AND `+visitWaitingWith+` = $%d`, f.WaitingWith)
	}
	l.page(p)
	out, more, err := collect(ctx, s.pool, l, p.Limit, func(row pgx.CollectableRow) (cloud.Visit, error) {
		return scanVisit(row, t)
	})
	if err != nil {
		return nil, false, fmt.Errorf("list visits: %w", err)
	}
	return out, more, nil
}

// OverdueWaits implements cloud.Store. The index visits_remind holds
// only visits waiting now; the range on it stops at the shortest limit,
// and the join to each visit's site keeps those past their own.
func (s *Store) OverdueWaits(ctx context.Context, from, now time.Time, limit int) ([]cloud.OverdueWait, error) {
	rows, _ := s.pool.Query(ctx, `SELECT v.org_id, v.mode, v.id, v.remind_from, s.name,
			CASE WHEN s.wait_limit_minutes > 0 THEN s.wait_limit_minutes ELSE $4::integer END
		FROM visits v JOIN sites s ON s.org_id = v.org_id AND s.mode = v.mode AND s.id = v.site_id
		WHERE v.remind_from > $1::timestamptz AND v.remind_from <= $2::timestamptz
			AND v.remind_from <= $3::timestamptz - make_interval(mins => CASE WHEN s.wait_limit_minutes > 0 THEN s.wait_limit_minutes ELSE $4 END)
		ORDER BY v.remind_from, v.id LIMIT $5`,
		from, now.Add(-cloud.MinWaitLimitMinutes*time.Minute), now, cloud.DefaultWaitLimitMinutes, limit)
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (cloud.OverdueWait, error) {
		var w cloud.OverdueWait
		var mode string
		err := row.Scan(&w.Tenant.OrgID, &mode, &w.VisitID, &w.Since, &w.SiteName, &w.WaitLimitMinutes)
		w.Tenant.Mode, w.Since = cloud.Mode(mode), w.Since.UTC()
		return w, err
	})
	if err != nil {
		return nil, fmt.Errorf("overdue waits: %w", err)
	}
	return out, nil
}

const messageCols = `id, visit_id, channel, to_addr, subject, body, status, created_at`

func scanMessage(row scanner, t cloud.Tenant) (cloud.Message, error) {
	m := cloud.Message{Tenant: t}
	var visit pgtype.Text
	if err := row.Scan(&m.ID, &visit, &m.Channel, &m.To, &m.Subject, &m.Body, &m.Status, &m.CreatedAt); err != nil {
		return cloud.Message{}, err
	}
	m.VisitID, m.CreatedAt = visit.String, m.CreatedAt.UTC()
	return m, nil
}

// ListMessages implements cloud.Store.
func (s *Store) ListMessages(ctx context.Context, t cloud.Tenant, f cloud.MessageFilter, p cloud.Page) ([]cloud.Message, bool, error) {
	l := newList(messageCols, "messages", t)
	if f.VisitID != "" {
		l.where("visit_id = $%d", f.VisitID)
	}
	if f.CreatedAfter != nil {
		l.where("created_at > $%d", *f.CreatedAfter)
	}
	l.page(p)
	out, more, err := collect(ctx, s.pool, l, p.Limit, func(row pgx.CollectableRow) (cloud.Message, error) {
		return scanMessage(row, t)
	})
	if err != nil {
		return nil, false, fmt.Errorf("list messages: %w", err)
	}
	return out, more, nil
}

const auditCols = `id, action, actor_kind, actor_id, object_type, object_id, request_id, detail, created_at`

// auditDetail is the text stored for an event's detail: as written, or an
// empty object when there is none.
func auditDetail(d json.RawMessage) []byte {
	if len(d) == 0 {
		return []byte(`{}`)
	}
	return d
}

func scanAuditEvent(row scanner, t cloud.Tenant) (cloud.AuditEvent, error) {
	a := cloud.AuditEvent{Tenant: t}
	var actor, request pgtype.Text
	var detail []byte
	if err := row.Scan(&a.ID, &a.Action, &a.ActorKind, &actor, &a.ObjectType, &a.ObjectID, &request, &detail, &a.CreatedAt); err != nil {
		return cloud.AuditEvent{}, err
	}
	a.ActorID, a.RequestID, a.Detail, a.CreatedAt = actor.String, request.String, detail, a.CreatedAt.UTC()
	return a, nil
}

// ListAuditEvents implements cloud.Store.
func (s *Store) ListAuditEvents(ctx context.Context, t cloud.Tenant, f cloud.AuditFilter, p cloud.Page) ([]cloud.AuditEvent, bool, error) {
	l := newList(auditCols, "audit_events", t)
	if f.Action != "" {
		l.where("action = $%d", f.Action)
	}
	if f.ObjectID != "" {
		l.where("object_id = $%d", f.ObjectID)
	}
	if f.CreatedAfter != nil {
		l.where("created_at > $%d", *f.CreatedAfter)
	}
	l.page(p)
	out, more, err := collect(ctx, s.pool, l, p.Limit, func(row pgx.CollectableRow) (cloud.AuditEvent, error) {
		return scanAuditEvent(row, t)
	})
	if err != nil {
		return nil, false, fmt.Errorf("list audit events: %w", err)
	}
	return out, more, nil
}

// CreatePassKey implements cloud.Store, under the tenant's feed lock
// (lockTenantFeeds).
func (s *Store) CreatePassKey(ctx context.Context, k cloud.PassKey) error {
	return s.writeTx(ctx, k.Tenant, func(tx pgx.Tx, f *feed) error {
		if err := lockTenantFeeds(ctx, tx, k.Tenant); err != nil {
			return fmt.Errorf("create pass key: %w", err)
		}
		return s.insertPassKey(ctx, tx, f, k, nil)
	})
}

// RotatePassKey implements cloud.Store, under the tenant's feed lock
// (lockTenantFeeds).
func (s *Store) RotatePassKey(ctx context.Context, k cloud.PassKey, retireAt time.Time) ([]cloud.PassKey, error) {
	t := k.Tenant
	var retiring []cloud.PassKey
	err := s.writeTx(ctx, t, func(tx pgx.Tx, f *feed) (err error) {
		if err := lockTenantFeeds(ctx, tx, t); err != nil {
			return fmt.Errorf("rotate pass key: %w", err)
		}
		if retiring, err = s.passKeys(ctx, tx, t, ` AND retired_at IS NULL ORDER BY created_at, id FOR UPDATE`); err != nil {
			return fmt.Errorf("rotate pass key: %w", err)
		}
		if _, err := tx.Exec(ctx, `UPDATE pass_keys SET retired_at = $3 WHERE org_id = $1 AND mode = $2 AND retired_at IS NULL`,
			t.OrgID, string(t.Mode), retireAt); err != nil {
			return fmt.Errorf("rotate pass key: %w", err)
		}
		for i := range retiring {
			retiring[i].RetiredAt = &retireAt
		}
		return s.insertPassKey(ctx, tx, f, k, retiring)
	})
	if err != nil {
		return nil, err
	}
	return retiring, nil
}

// insertPassKey stores k, its private key sealed, and puts it on every
// site's feed of its tenant, after the keys in before (which changed in
// the same transaction). The caller holds the tenant's feed lock.
func (s *Store) insertPassKey(ctx context.Context, tx pgx.Tx, f *feed, k cloud.PassKey, before []cloud.PassKey) error {
	t := k.Tenant
	private := storedoc.PassKeyPrivate.Seal(s.kek, k.Private, t.OrgID, string(t.Mode), k.ID)
	if _, err := tx.Exec(ctx, `INSERT INTO pass_keys (org_id, mode, id, private, created_at, retired_at) VALUES ($1, $2, $3, $4, $5, $6)`,
		t.OrgID, string(t.Mode), k.ID, private, k.CreatedAt, nullTime(k.RetiredAt)); err != nil {
		return translate("create pass key", err)
	}
	rows, _ := tx.Query(ctx, `SELECT id FROM sites WHERE org_id = $1 AND mode = $2`, t.OrgID, string(t.Mode))
	sites, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(sites) == 0 {
		return err
	}
	var changes []protocol.Change
	for _, b := range append(slices.Clone(before), k) {
		pk, err := cloud.EdgeKey(b)
		if err != nil {
			return fmt.Errorf("create pass key: %w", err)
		}
		changes = append(changes, protocol.Change{At: k.CreatedAt, Key: &pk})
	}
	for _, site := range sites {
		for _, ch := range changes {
			f.add(site, ch)
		}
	}
	return nil
}

// PassKeys implements cloud.Store.
func (s *Store) PassKeys(ctx context.Context, t cloud.Tenant) ([]cloud.PassKey, error) {
	out, err := s.passKeys(ctx, s.pool, t, ` ORDER BY created_at DESC, id DESC`)
	if err != nil {
		return nil, fmt.Errorf("list pass keys: %w", err)
	}
	return out, nil
}

// passKeys reads the tenant's pass keys, their private keys opened; rest
// adds conditions (from $3) and the order to the query.
func (s *Store) passKeys(ctx context.Context, q querier, t cloud.Tenant, rest string, args ...any) ([]cloud.PassKey, error) {
	rows, _ := q.Query(ctx, `SELECT id, private, created_at, retired_at FROM pass_keys WHERE org_id = $1 AND mode = $2`+rest,
		append([]any{t.OrgID, string(t.Mode)}, args...)...)
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (cloud.PassKey, error) {
		k := cloud.PassKey{Tenant: t}
		var retired pgtype.Timestamptz
		if err := row.Scan(&k.ID, &k.Private, &k.CreatedAt, &retired); err != nil {
			return cloud.PassKey{}, err
		}
		k.CreatedAt, k.RetiredAt = k.CreatedAt.UTC(), timePtr(retired)
		var err error
		k.Private, err = storedoc.PassKeyPrivate.Open(s.kek, k.Private, t.OrgID, string(t.Mode), k.ID)
		return k, err
	})
}

// PassesUntil implements cloud.Store.
func (s *Store) PassesUntil(ctx context.Context, t cloud.Tenant) (*time.Time, error) {
	var until pgtype.Timestamptz
	err := s.pool.QueryRow(ctx, `SELECT max(edge_until) FROM visits WHERE org_id = $1 AND mode = $2
		AND status IN ('expected', 'checked_in', 'checked_out')`, t.OrgID, string(t.Mode)).Scan(&until)
	if err != nil {
		return nil, fmt.Errorf("passes until: %w", err)
	}
	return timePtr(until), nil
}
