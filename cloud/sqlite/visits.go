package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/storedoc"
	"github.com/svc-vms/svc/sync/protocol"
)

// visitCols and visitFrom read a visit with its visitor, who may have been
// erased.
const (
	visitCols = `v.id, v.org_id, v.mode, v.status, v.type, v.site_id, v.host_id, v.visitor_id, v.booking_id, v.expected_at,
		v.doc, v.created_at, v.updated_at, r.id, r.name, r.email, r.phone, r.company, r.self_registered, r.created_at, r.updated_at`
	visitFrom = ` FROM visits v LEFT JOIN visitors r ON r.id = v.visitor_id AND r.org_id = v.org_id AND r.mode = v.mode`
)

// Statements prepared on the writer (hotWrites).
const (
	qGetVisit = `SELECT ` + visitCols + visitFrom + ` WHERE v.id = ? AND v.org_id = ? AND v.mode = ?`
	// qGetVisits reads the visits whose IDs the JSON array holds: a batch
	// of facts' visits in one statement (ApplyFacts). The unary + keeps
	// the tenant's columns from choosing an index: SQLite, not knowing
	// the list's length, would read the tenant's visits through theirs
	// rather than search the primary key once per ID (TestGetVisitsPlan).
	qGetVisits   = `SELECT ` + visitCols + visitFrom + ` WHERE v.id IN (SELECT value FROM json_each(?)) AND +v.org_id = ? AND +v.mode = ?`
	qInsertVisit = `INSERT INTO visits (id, org_id, mode, created_at, status, type, site_id, host_id, visitor_id,
			booking_id, expected_at, doc, updated_at, edge_until, remind_from)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	qInsertAudit = `INSERT INTO audit_events (id, org_id, mode, action, actor_kind, actor_id, object_type,
				object_id, request_id, detail, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
)

func scanVisit(r scanner) (cloud.Visit, error) {
	var v cloud.Visit
	var mode, status string
	var host, visitor, booking sql.NullString
	var expected sql.NullInt64
	var doc []byte
	var created, updated int64
	var rID, rName, rEmail, rPhone, rCompany sql.NullString
	var rSelf sql.NullBool
	var rCreated, rUpdated sql.NullInt64
	err := r.Scan(&v.ID, &v.Tenant.OrgID, &mode, &status, &v.Type, &v.SiteID, &host, &visitor, &booking, &expected,
		&doc, &created, &updated, &rID, &rName, &rEmail, &rPhone, &rCompany, &rSelf, &rCreated, &rUpdated)
	if err != nil {
		return v, err
	}
	v.Tenant.Mode, v.Status, v.HostID, v.VisitorID, v.BookingID = cloud.Mode(mode), cloud.VisitStatus(status), str(host), str(visitor), str(booking)
	v.ExpectedAt, v.CreatedAt, v.UpdatedAt = fromNullMicros(expected), fromMicros(created), fromMicros(updated)
	if rID.Valid {
		v.Visitor = cloud.Visitor{ID: rID.String, Tenant: v.Tenant, Name: rName.String, Email: rEmail.String,
			Phone: rPhone.String, Company: rCompany.String, SelfRegistered: rSelf.Bool, CreatedAt: fromMicros(rCreated.Int64),
			UpdatedAt: fromMicros(rUpdated.Int64)}
	}
	return v, storedoc.DecodeVisit(doc, &v)
}

// visitArgs are the values of status, type, site_id, host_id, visitor_id,
// booking_id, expected_at, doc, updated_at, edge_until and remind_from.
func visitArgs(v cloud.Visit) ([]any, error) {
	doc, err := storedoc.EncodeVisit(v)
	if err != nil {
		return nil, err
	}
	return []any{string(v.Status), v.Type, v.SiteID, null(v.HostID), null(v.VisitorID), null(v.BookingID),
		nullMicros(v.ExpectedAt), string(doc), micros(v.UpdatedAt), nullMicros(cloud.EdgeUntil(v)),
		nullMicros(cloud.RemindFrom(v))}, nil
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

// writeHosts stores the visit's hosts, each row with the visit's creation
// time (created, as stored) for the host filter's order (migrations 0052
// and 0053).
func writeHosts(ctx context.Context, tx *sql.Tx, visitID string, created int64, hosts []string) error {
	for _, id := range hosts {
		if _, err := tx.ExecContext(ctx, `INSERT INTO visit_hosts (visit_id, person_id, created_at) VALUES (?, ?, ?)`,
			visitID, id, created); err != nil {
			return fmt.Errorf("insert visit host: %w", err)
		}
	}
	return nil
}

// insertVisit stores a new visit and its hosts in the tenant t, noting it
// for the feed.
func insertVisit(ctx context.Context, tx *sql.Tx, f *feed, t cloud.Tenant, v cloud.Visit) error {
	args, err := visitArgs(v)
	if err != nil {
		return err
	}
	return insertVisitRow(ctx, tx, f, t, v, args)
}

// insertVisitRow is insertVisit with v's visitArgs made.
func insertVisitRow(ctx context.Context, tx *sql.Tx, f *feed, t cloud.Tenant, v cloud.Visit, args []any) error {
	args = append([]any{v.ID, t.OrgID, string(t.Mode), micros(v.CreatedAt)}, args...)
	if _, err := f.st.ExecContext(ctx, qInsertVisit, args...); err != nil {
		return fmt.Errorf("insert visit: %w", err)
	}
	f.visit(v.ID)
	return writeHosts(ctx, tx, v.ID, micros(v.CreatedAt), hostIDs(v))
}

// updateVisitRow stores v over the visit of the tenant that was before,
// noting it for the feed; the ID, tenant and creation time stay as they
// are. It sets only the indexed columns whose values changed (and the
// document and update time, always): SQLite rewrites every index over a
// column an UPDATE sets, whether its value changed or not, and a fact
// changes a visit's status and document, not where it is or who it is
// for.
func updateVisitRow(ctx context.Context, tx *sql.Tx, f *feed, t cloud.Tenant, before visitKeys, v cloud.Visit) error {
	doc, err := storedoc.EncodeVisit(v)
	if err != nil {
		return err
	}
	after := keysOf(v)
	cols := after.changed(before)
	args := make([]any, 0, 14)
	if cols&colStatus != 0 {
		args = append(args, after.status)
	}
	if cols&colPlace != 0 {
		args = append(args, after.typ, after.site, after.host, after.visitor, after.booking, after.expected)
	}
	if cols&colEdgeUntil != 0 {
		args = append(args, after.edgeUntil)
	}
	if cols&colRemindFrom != 0 {
		args = append(args, after.remindFrom)
	}
	args = append(args, string(doc), micros(v.UpdatedAt), before.id, t.OrgID, string(t.Mode))
	if _, err := f.st.ExecContext(ctx, qUpdateVisit[cols], args...); err != nil {
		return fmt.Errorf("update visit: %w", err)
	}
	f.visit(before.id)
	if slices.Equal(before.hosts, after.hosts) {
		return nil
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM visit_hosts WHERE visit_id = ?`, before.id); err != nil {
		return fmt.Errorf("update visit hosts: %w", err)
	}
	return writeHosts(ctx, tx, before.id, before.created, after.hosts)
}

// visitKeys are a visit's ID and the values of its indexed columns, as
// stored, and its hosts: what updateVisitRow compares; and its creation
// time, which its hosts' rows carry.
type visitKeys struct {
	id, status, typ, site           string
	created                         int64
	host, visitor, booking          any // string or nil
	expected, edgeUntil, remindFrom any // micros or nil
	hosts                           []string
}

func keysOf(v cloud.Visit) visitKeys {
	return visitKeys{id: v.ID, created: micros(v.CreatedAt), status: string(v.Status), typ: v.Type, site: v.SiteID, host: null(v.HostID),
		visitor: null(v.VisitorID), booking: null(v.BookingID), expected: nullMicros(v.ExpectedAt),
		edgeUntil: nullMicros(cloud.EdgeUntil(v)), remindFrom: nullMicros(cloud.RemindFrom(v)), hosts: hostIDs(v)}
}

// The column groups of a visit's UPDATE besides doc and updated_at (a
// qUpdateVisit index).
const (
	colStatus     = 1 << iota // status
	colPlace                  // type, site_id, host_id, visitor_id, booking_id, expected_at
	colEdgeUntil              // edge_until
	colRemindFrom             // remind_from
	colAll        = 1<<iota - 1
)

// changed returns the column groups whose values differ from before's.
func (k visitKeys) changed(before visitKeys) int {
	var cols int
	if k.status != before.status {
		cols |= colStatus
	}
	if k.typ != before.typ || k.site != before.site || k.host != before.host || k.visitor != before.visitor ||
		k.booking != before.booking || k.expected != before.expected {
		cols |= colPlace
	}
	if k.edgeUntil != before.edgeUntil {
		cols |= colEdgeUntil
	}
	if k.remindFrom != before.remindFrom {
		cols |= colRemindFrom
	}
	return cols
}

// qUpdateVisit are the visit UPDATEs, one for each set of column groups,
// prepared on the writer (hotWrites).
var qUpdateVisit = func() (qs [colAll + 1]string) {
	for cols := range qs {
		var set []string
		if cols&colStatus != 0 {
			set = append(set, "status = ?")
		}
		if cols&colPlace != 0 {
			set = append(set, "type = ?", "site_id = ?", "host_id = ?", "visitor_id = ?", "booking_id = ?", "expected_at = ?")
		}
		if cols&colEdgeUntil != 0 {
			set = append(set, "edge_until = ?")
		}
		if cols&colRemindFrom != 0 {
			set = append(set, "remind_from = ?")
		}
		set = append(set, "doc = ?", "updated_at = ?")
		qs[cols] = `UPDATE visits SET ` + strings.Join(set, ", ") + ` WHERE id = ? AND org_id = ? AND mode = ?`
	}
	return qs
}()

// writeAlong stores what w holds, in the tenant t of the visit it goes
// with, whatever the Tenant fields in w say.
func writeAlong(ctx context.Context, tx *sql.Tx, f *feed, t cloud.Tenant, w cloud.VisitWrites) error {
	for _, v := range w.Visits {
		if err := insertVisit(ctx, tx, f, t, v); err != nil {
			return err
		}
	}
	for _, m := range w.Messages {
		if _, err := tx.ExecContext(ctx, `INSERT INTO messages (id, org_id, mode, visit_id, channel, to_addr, subject, body, status, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, m.ID, t.OrgID, string(t.Mode), null(m.VisitID), m.Channel, m.To,
			m.Subject, m.Body, m.Status, micros(m.CreatedAt)); err != nil {
			return fmt.Errorf("insert message: %w", err)
		}
	}
	for _, a := range w.Audit {
		if _, err := f.st.ExecContext(ctx, qInsertAudit, a.ID, t.OrgID, string(t.Mode), a.Action, a.ActorKind, null(a.ActorID),
			a.ObjectType, a.ObjectID, null(a.RequestID), auditDetail(a.Detail), micros(a.CreatedAt)); err != nil {
			return fmt.Errorf("insert audit event: %w", err)
		}
	}
	return nil
}

func getVisit(ctx context.Context, db interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, t cloud.Tenant, id string) (cloud.Visit, error) {
	return get(ctx, db, scanVisit, qGetVisit, id, t.OrgID, string(t.Mode))
}

// getVisits returns those of the visits ids names that the tenant has, in
// no particular order.
func getVisits(ctx context.Context, db querier, t cloud.Tenant, ids []string) ([]cloud.Visit, error) {
	list, err := json.Marshal(ids)
	if err != nil {
		return nil, err
	}
	return all(ctx, db, scanVisit, qGetVisits, string(list), t.OrgID, string(t.Mode))
}

// visitsOf returns every visit of a visitor.
func visitsOf(ctx context.Context, db querier, t cloud.Tenant, visitorID string) ([]cloud.Visit, error) {
	rows, err := db.QueryContext(ctx, `SELECT `+visitCols+visitFrom+` WHERE v.org_id = ? AND v.mode = ? AND v.visitor_id = ?`,
		t.OrgID, string(t.Mode), visitorID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []cloud.Visit
	for rows.Next() {
		v, err := scanVisit(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// CreateVisit implements cloud.Store: the new visitor first, then the
// visit, the other new visits, the messages and the audit events, all in
// the visit's tenant.
func (s *Store) CreateVisit(ctx context.Context, v cloud.Visit, w cloud.VisitWrites) error {
	t := v.Tenant
	// The visit's document, and its change on the feed when it is known
	// before the write, are encoded before the writer's turn begins (at
	// the first write), not in it: the turn is what bounds the rate of
	// writes.
	args, err := visitArgs(v)
	if err != nil {
		return fmt.Errorf("create visit: %w", err)
	}
	// A new visit with a new visitor goes on the feed as given (a read
	// back was a twelfth of POST /visits' CPU).
	sv, given := w.WithNewVisitor(v)
	var change siteChange
	if given {
		if change, err = visitChange(sv); err != nil {
			return fmt.Errorf("create visit: %w", err)
		}
	}
	err = s.writeTx(ctx, t, func(tx *sql.Tx, f *feed) error {
		if w.Visitor != nil {
			if err := insertVisitor(ctx, tx, t, *w.Visitor); err != nil {
				return err
			}
		}
		if err := insertVisitRow(ctx, tx, f, t, v, args); err != nil {
			return err
		}
		if given {
			f.visitChanged(change)
		}
		return writeAlong(ctx, tx, f, t, w)
	})
	if err != nil {
		return fmt.Errorf("create visit: %w", err)
	}
	return nil
}

// Visit implements cloud.Store.
func (s *Store) Visit(ctx context.Context, t cloud.Tenant, id string) (cloud.Visit, error) {
	return getVisit(ctx, s.r, t, id)
}

// UpdateVisit implements cloud.Store. The one writer connection makes
// concurrent updates take turns. The visit returned is read back after
// the writes, so its Visitor is the one it now points at.
func (s *Store) UpdateVisit(ctx context.Context, t cloud.Tenant, id string, fn func(*cloud.Visit, *cloud.VisitWrites) error) (cloud.Visit, error) {
	var out cloud.Visit
	err := s.writeTx(ctx, t, func(tx *sql.Tx, f *feed) error {
		v, err := getVisit(ctx, tx, t, id)
		if err != nil {
			return err
		}
		before := keysOf(v)
		var w cloud.VisitWrites
		if err := fn(&v, &w); err != nil {
			return err
		}
		if w.Visitor != nil {
			if err := insertVisitor(ctx, tx, t, *w.Visitor); err != nil {
				return err
			}
		}
		if err := updateVisitRow(ctx, tx, f, t, before, v); err != nil {
			return err
		}
		if err := writeAlong(ctx, tx, f, t, w); err != nil {
			return err
		}
		out, err = getVisit(ctx, tx, t, id)
		return err
	})
	return out, err
}

// visitWaitingWith is a visit's receiver (the waiting_with filter): the
// expression of the index visits_waiting_list (migration 0051), which
// serves the filter only while the two are the same expression.
const visitWaitingWith = `(CASE json_extract(v.doc, '$.receiver.kind') WHEN 'person' THEN json_extract(v.doc, '$.receiver.person_id')
	WHEN 'team' THEN json_extract(v.doc, '$.receiver.team_id') ELSE 'reception' END)`

// ListVisits implements cloud.Store.
func (s *Store) ListVisits(ctx context.Context, t cloud.Tenant, f cloud.VisitFilter, p cloud.Page) ([]cloud.Visit, bool, error) {
	var q strings.Builder
	// A host's visits are read from visit_hosts, newest first (migration
	// 0052): CROSS JOIN keeps that order of the tables.
	from, order, key := visitFrom, "v.", "id"
	if f.HostID != "" {
		from, order, key = ` FROM visit_hosts h CROSS JOIN visits v ON v.id = h.visit_id`+strings.TrimPrefix(visitFrom, ` FROM visits v`), "h.", "visit_id"
	}
	q.WriteString(`SELECT ` + visitCols + from + ` WHERE v.org_id = ? AND v.mode = ?`)
	args := []any{t.OrgID, string(t.Mode)}
	if len(f.Status) > 0 {
		statuses := make([]string, len(f.Status))
		for i, st := range f.Status {
			statuses[i] = string(st)
		}
		args = whereIn(&q, args, "v.status", statuses)
	}
	for _, c := range []struct {
		cond, arg string
	}{{` AND v.type = ?`, f.Type}, {` AND v.site_id = ?`, f.SiteID}, {` AND v.visitor_id = ?`, f.VisitorID},
		{` AND h.person_id = ?`, f.HostID}} {
		if c.arg != "" {
			q.WriteString(c.cond)
			args = append(args, c.arg)
		}
	}
	if f.ExpectedFrom != nil {
		q.WriteString(` AND v.expected_at >= ?`)
		args = append(args, micros(*f.ExpectedFrom))
	}
	if f.ExpectedBefore != nil {
		q.WriteString(` AND v.expected_at < ?`)
		args = append(args, micros(*f.ExpectedBefore))
	}
	if f.CreatedAfter != nil {
		q.WriteString(` AND v.created_at > ?`)
		args = append(args, micros(*f.CreatedAfter))
	}
	if f.WaitingWith != "" {
		q.WriteString(` AND v.host_id IS NULL AND ` + visitWaitingWith + ` = ?`)
		args = append(args, f.WaitingWith)
	}
	args = keysetOn(&q, args, p, order, key)
	out, more, err := list(ctx, s.r, scanVisit, p.Limit, q.String(), args...)
	if err != nil {
		return nil, false, fmt.Errorf("list visits: %w", err)
	}
	return out, more, nil
}

// OverdueWaits implements cloud.Store. The index visits_remind holds
// only visits waiting now; the range on it stops at the shortest limit,
// and the join to each visit's site keeps those past their own.
func (s *Store) OverdueWaits(ctx context.Context, from, now time.Time, limit int) ([]cloud.OverdueWait, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT v.org_id, v.mode, v.id, v.remind_from, s.name,
			CASE WHEN s.wait_limit_minutes > 0 THEN s.wait_limit_minutes ELSE ? END AS lim
		FROM visits v JOIN sites s ON s.id = v.site_id AND s.org_id = v.org_id AND s.mode = v.mode
		WHERE v.remind_from IS NOT NULL AND v.remind_from > ? AND v.remind_from <= ?
			AND v.remind_from <= ? - (CASE WHEN s.wait_limit_minutes > 0 THEN s.wait_limit_minutes ELSE ? END) * 60000000
		ORDER BY v.remind_from, v.id LIMIT ?`,
		cloud.DefaultWaitLimitMinutes, micros(from), micros(now.Add(-cloud.MinWaitLimitMinutes*time.Minute)),
		micros(now), cloud.DefaultWaitLimitMinutes, limit)
	if err != nil {
		return nil, fmt.Errorf("overdue waits: %w", err)
	}
	defer rows.Close()
	var out []cloud.OverdueWait
	for rows.Next() {
		var w cloud.OverdueWait
		var mode string
		var since int64
		if err := rows.Scan(&w.Tenant.OrgID, &mode, &w.VisitID, &since, &w.SiteName, &w.WaitLimitMinutes); err != nil {
			return nil, fmt.Errorf("overdue waits: %w", err)
		}
		w.Tenant.Mode, w.Since = cloud.Mode(mode), fromMicros(since)
		out = append(out, w)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("overdue waits: %w", err)
	}
	return out, nil
}

const messageCols = `id, org_id, mode, visit_id, channel, to_addr, subject, body, status, created_at`

func scanMessage(r scanner) (cloud.Message, error) {
	var m cloud.Message
	var mode string
	var visit sql.NullString
	var created int64
	err := r.Scan(&m.ID, &m.Tenant.OrgID, &mode, &visit, &m.Channel, &m.To, &m.Subject, &m.Body, &m.Status, &created)
	m.Tenant.Mode, m.VisitID, m.CreatedAt = cloud.Mode(mode), str(visit), fromMicros(created)
	return m, err
}

// ListMessages implements cloud.Store.
func (s *Store) ListMessages(ctx context.Context, t cloud.Tenant, f cloud.MessageFilter, p cloud.Page) ([]cloud.Message, bool, error) {
	var q strings.Builder
	q.WriteString(`SELECT ` + messageCols + ` FROM messages WHERE org_id = ? AND mode = ?`)
	args := []any{t.OrgID, string(t.Mode)}
	if f.VisitID != "" {
		q.WriteString(` AND visit_id = ?`)
		args = append(args, f.VisitID)
	}
	if f.CreatedAfter != nil {
		q.WriteString(` AND created_at > ?`)
		args = append(args, micros(*f.CreatedAfter))
	}
	args = keyset(&q, args, p, "")
	out, more, err := list(ctx, s.r, scanMessage, p.Limit, q.String(), args...)
	if err != nil {
		return nil, false, fmt.Errorf("list messages: %w", err)
	}
	return out, more, nil
}

const auditCols = `id, org_id, mode, action, actor_kind, actor_id, object_type, object_id, request_id, detail, created_at`

// auditDetail is the text stored for an event's detail: as written, or an
// empty object when there is none.
func auditDetail(d json.RawMessage) string {
	if len(d) == 0 {
		return `{}`
	}
	return string(d)
}

func scanAuditEvent(r scanner) (cloud.AuditEvent, error) {
	var a cloud.AuditEvent
	var mode, detail string
	var actor, request sql.NullString
	var created int64
	err := r.Scan(&a.ID, &a.Tenant.OrgID, &mode, &a.Action, &a.ActorKind, &actor, &a.ObjectType, &a.ObjectID, &request,
		&detail, &created)
	a.Tenant.Mode, a.ActorID, a.RequestID = cloud.Mode(mode), str(actor), str(request)
	a.Detail, a.CreatedAt = json.RawMessage(detail), fromMicros(created)
	return a, err
}

// ListAuditEvents implements cloud.Store.
func (s *Store) ListAuditEvents(ctx context.Context, t cloud.Tenant, f cloud.AuditFilter, p cloud.Page) ([]cloud.AuditEvent, bool, error) {
	var q strings.Builder
	q.WriteString(`SELECT ` + auditCols + ` FROM audit_events WHERE org_id = ? AND mode = ?`)
	args := []any{t.OrgID, string(t.Mode)}
	for _, c := range []struct {
		cond, arg string
	}{{` AND action = ?`, f.Action}, {` AND object_id = ?`, f.ObjectID}} {
		if c.arg != "" {
			q.WriteString(c.cond)
			args = append(args, c.arg)
		}
	}
	if f.CreatedAfter != nil {
		q.WriteString(` AND created_at > ?`)
		args = append(args, micros(*f.CreatedAfter))
	}
	args = keyset(&q, args, p, "")
	out, more, err := list(ctx, s.r, scanAuditEvent, p.Limit, q.String(), args...)
	if err != nil {
		return nil, false, fmt.Errorf("list audit events: %w", err)
	}
	return out, more, nil
}

// CreatePassKey implements cloud.Store.
func (s *Store) CreatePassKey(ctx context.Context, k cloud.PassKey) error {
	err := s.writeTx(ctx, k.Tenant, func(tx *sql.Tx, f *feed) error {
		return s.insertPassKey(ctx, tx, f, k, nil)
	})
	if err != nil {
		return fmt.Errorf("insert pass key: %w", err)
	}
	return nil
}

// RotatePassKey implements cloud.Store.
func (s *Store) RotatePassKey(ctx context.Context, k cloud.PassKey, retireAt time.Time) ([]cloud.PassKey, error) {
	var retiring []cloud.PassKey
	err := s.writeTx(ctx, k.Tenant, func(tx *sql.Tx, f *feed) (err error) {
		t := k.Tenant
		retiring, err = s.passKeys(ctx, tx, t, ` AND retired_at IS NULL`)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE pass_keys SET retired_at = ? WHERE org_id = ? AND mode = ? AND retired_at IS NULL`,
			micros(retireAt), t.OrgID, string(t.Mode)); err != nil {
			return err
		}
		for i := range retiring {
			retiring[i].RetiredAt = &retireAt
		}
		return s.insertPassKey(ctx, tx, f, k, retiring)
	})
	if err != nil {
		return nil, fmt.Errorf("rotate pass key: %w", err)
	}
	return retiring, nil
}

// insertPassKey stores k, its private key sealed, and puts it on every
// site's feed of its tenant, after the keys in before (which changed in
// the same transaction).
func (s *Store) insertPassKey(ctx context.Context, tx *sql.Tx, f *feed, k cloud.PassKey, before []cloud.PassKey) error {
	t := k.Tenant
	private := storedoc.PassKeyPrivate.Seal(s.kek, k.Private, t.OrgID, string(t.Mode), k.ID)
	if _, err := tx.ExecContext(ctx, `INSERT INTO pass_keys (org_id, mode, id, private, created_at, retired_at) VALUES (?, ?, ?, ?, ?, ?)`,
		t.OrgID, string(t.Mode), k.ID, private, micros(k.CreatedAt), nullMicros(k.RetiredAt)); err != nil {
		return err
	}
	sites, err := all(ctx, tx, func(r scanner) (string, error) {
		var id string
		return id, r.Scan(&id)
	}, `SELECT id FROM sites WHERE org_id = ? AND mode = ?`, t.OrgID, string(t.Mode))
	if err != nil || len(sites) == 0 {
		return err
	}
	var changes []protocol.Change
	for _, b := range append(slices.Clone(before), k) {
		pk, err := cloud.EdgeKey(b)
		if err != nil {
			return err
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
	keys, err := s.passKeys(ctx, s.r, t, ` ORDER BY created_at DESC, id DESC`)
	if err != nil {
		return nil, fmt.Errorf("list pass keys: %w", err)
	}
	return keys, nil
}

// passKeys reads the tenant's pass keys, their private keys opened; rest
// adds conditions and the order to the query.
func (s *Store) passKeys(ctx context.Context, q querier, t cloud.Tenant, rest string, args ...any) ([]cloud.PassKey, error) {
	keys, err := all(ctx, q, func(r scanner) (cloud.PassKey, error) {
		k := cloud.PassKey{Tenant: t}
		var created int64
		var retired sql.NullInt64
		if err := r.Scan(&k.ID, &k.Private, &created, &retired); err != nil {
			return k, err
		}
		k.CreatedAt, k.RetiredAt = fromMicros(created), fromNullMicros(retired)
		var err error
		k.Private, err = storedoc.PassKeyPrivate.Open(s.kek, k.Private, t.OrgID, string(t.Mode), k.ID)
		return k, err
	}, `SELECT id, private, created_at, retired_at FROM pass_keys WHERE org_id = ? AND mode = ?`+rest,
		append([]any{t.OrgID, string(t.Mode)}, args...)...)
	if keys == nil {
		keys = []cloud.PassKey{}
	}
	return keys, err
}

// PassesUntil implements cloud.Store.
func (s *Store) PassesUntil(ctx context.Context, t cloud.Tenant) (*time.Time, error) {
	var until sql.NullInt64
	err := s.r.QueryRowContext(ctx, `SELECT max(edge_until) FROM visits WHERE org_id = ? AND mode = ?
		AND status IN ('expected', 'checked_in', 'checked_out')`, t.OrgID, string(t.Mode)).Scan(&until)
	if err != nil {
		return nil, fmt.Errorf("passes until: %w", err)
	}
	return fromNullMicros(until), nil
}
