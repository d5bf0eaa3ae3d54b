package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/svc-vms/svc/cloud"
)

const eventCols = `id, org_id, mode, type, object_type, object_id, request_id, data, created_at`

// insertEvents writes the events and audit entries recorded for the write
// ctx goes with (cloud.TakeEvents, cloud.TakeAudit), in its transaction,
// and queues each event's webhook deliveries.
func insertEvents(ctx context.Context, tx *sql.Tx) error {
	for evs := cloud.TakeEvents(ctx); len(evs) > 0; {
		n := min(len(evs), maxEventsAtOnce)
		if err := insertEventRows(ctx, tx, evs[:n]); err != nil {
			return err
		}
		evs = evs[n:]
	}
	if err := scrubEvents(ctx, tx); err != nil {
		return err
	}
	for _, a := range cloud.TakeAudit(ctx) {
		if _, err := tx.ExecContext(ctx, qInsertAudit, a.ID, a.Tenant.OrgID, string(a.Tenant.Mode), a.Action, a.ActorKind, null(a.ActorID),
			a.ObjectType, a.ObjectID, null(a.RequestID), auditDetail(a.Detail), micros(a.CreatedAt)); err != nil {
			return fmt.Errorf("insert audit event %s: %w", a.Action, err)
		}
	}
	return nil
}

// maxEventsAtOnce is the most events one statement inserts: a request
// records a few (POST /visits two), a batch of an edge's facts more.
const maxEventsAtOnce = 32

// insertEventRows inserts the events in one statement and queues their
// webhook deliveries in another: two statements per request however many
// events it records (one pair per event was a twelfth of POST /visits'
// CPU, every statement opening the cursors of the table and its indexes
// again).
func insertEventRows(ctx context.Context, tx *sql.Tx, evs []cloud.Event) error {
	rows := make([]any, 0, 9*len(evs))
	deliveries := make([]any, 0, 5*len(evs))
	for _, e := range evs {
		rows = append(rows, e.ID, e.Tenant.OrgID, string(e.Tenant.Mode), e.Type, e.ObjectType, e.ObjectID, null(e.RequestID),
			string(e.Data), micros(e.CreatedAt))
		deliveries = append(deliveries, e.ID, e.Type, micros(e.CreatedAt), e.Tenant.OrgID, string(e.Tenant.Mode))
	}
	if _, err := tx.ExecContext(ctx, eventInserts[len(evs)], rows...); err != nil {
		return fmt.Errorf("insert events %s…: %w", evs[0].Type, err)
	}
	if _, err := tx.ExecContext(ctx, fanOuts[len(evs)], deliveries...); err != nil {
		return fmt.Errorf("queue webhook deliveries of %s…: %w", evs[0].Type, err)
	}
	return nil
}

// eventInserts and fanOuts are insertEventRows' statements by the number
// of events.
var eventInserts, fanOuts = func() (ins, fan [maxEventsAtOnce + 1]string) {
	for n := 1; n <= maxEventsAtOnce; n++ {
		ins[n] = `INSERT INTO events (` + eventCols + `) VALUES ` + rowsOf(n, 9)
		fan[n] = fanOut(n)
	}
	return ins, fan
}()

// rowsOf is the VALUES list of n rows of k placeholders each.
func rowsOf(n, k int) string {
	row := "(" + strings.Repeat("?, ", k-1) + "?)"
	return strings.Repeat(row+", ", n-1) + row
}

func scanEvent(r scanner) (cloud.Event, error) {
	var e cloud.Event
	var mode, data string
	var request sql.NullString
	var created int64
	if err := r.Scan(&e.ID, &e.Tenant.OrgID, &mode, &e.Type, &e.ObjectType, &e.ObjectID, &request, &data, &created); err != nil {
		return cloud.Event{}, err
	}
	e.Tenant.Mode, e.RequestID, e.Data, e.CreatedAt = cloud.Mode(mode), request.String, []byte(data), fromMicros(created)
	return e, nil
}

// ListEvents implements cloud.Store.
func (s *Store) ListEvents(ctx context.Context, t cloud.Tenant, f cloud.EventFilter, p cloud.Page) ([]cloud.Event, bool, error) {
	var q strings.Builder
	q.WriteString(`SELECT ` + eventCols + ` FROM events WHERE org_id = ? AND mode = ?`)
	args := []any{t.OrgID, string(t.Mode)}
	if f.Type != "" {
		q.WriteString(` AND type = ?`)
		args = append(args, f.Type)
	}
	if f.ObjectID != "" {
		q.WriteString(` AND object_id = ?`)
		args = append(args, f.ObjectID)
	}
	if f.CreatedGTE != nil {
		q.WriteString(` AND created_at >= ?`)
		args = append(args, micros(*f.CreatedGTE))
	}
	if f.CreatedLT != nil {
		q.WriteString(` AND created_at < ?`)
		args = append(args, micros(*f.CreatedLT))
	}
	if f.CreatedAfter != nil {
		q.WriteString(` AND created_at > ?`)
		args = append(args, micros(*f.CreatedAfter))
	}
	args = keyset(&q, args, p, "")
	out, more, err := list(ctx, s.r, scanEvent, p.Limit, q.String(), args...)
	if err != nil {
		return nil, false, fmt.Errorf("list events: %w", err)
	}
	return out, more, nil
}

// Event implements cloud.Store.
func (s *Store) Event(ctx context.Context, t cloud.Tenant, id string) (cloud.Event, error) {
	e, err := scanEvent(s.r.QueryRowContext(ctx, `SELECT `+eventCols+` FROM events WHERE id = ? AND org_id = ? AND mode = ?`,
		id, t.OrgID, string(t.Mode)))
	if err == sql.ErrNoRows {
		return cloud.Event{}, cloud.ErrNotFound
	}
	if err != nil {
		return cloud.Event{}, fmt.Errorf("get event: %w", err)
	}
	return e, nil
}

// scrubEvents rewrites the earlier events of the objects an erasure
// changed (cloud.TakeScrubs), so no event keeps the erased personal data.
func scrubEvents(ctx context.Context, tx *sql.Tx) error {
	t, scrubs, err := cloud.TakeScrubs(ctx)
	if err != nil {
		return fmt.Errorf("scrub events: %w", err)
	}
	for objectID, erased := range scrubs {
		rows, err := tx.QueryContext(ctx, `SELECT id, data FROM events WHERE org_id = ? AND mode = ? AND object_id = ?`,
			t.OrgID, string(t.Mode), objectID)
		if err != nil {
			return fmt.Errorf("scrub events: %w", err)
		}
		type row struct{ id, data string }
		var found []row
		for rows.Next() {
			var r row
			if err := rows.Scan(&r.id, &r.data); err != nil {
				rows.Close()
				return fmt.Errorf("scrub events: %w", err)
			}
			found = append(found, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("scrub events: %w", err)
		}
		for _, r := range found {
			data, err := cloud.ScrubEventData([]byte(r.data), erased)
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `UPDATE events SET data = ? WHERE id = ?`, string(data), r.id); err != nil {
				return fmt.Errorf("scrub events: %w", err)
			}
		}
	}
	return nil
}
