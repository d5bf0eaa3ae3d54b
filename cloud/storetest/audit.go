package storetest

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/shared/ids"
)

// --- builders ---------------------------------------------------------------

// auditDetail is a detail that a store which re-encodes JSON carelessly
// would not give back equal in meaning: nesting, null, a number with a
// trailing zero, escapes and text beyond ASCII.
const auditDetail = "{\"reason\": \"wrong_gate\",  \"gate_id\": \"gate_x\",\n \"nested\": {\"z\": null, \"list\": [1, 2.50, \"x\"], \"empty\": {}}," +
	` "note": "caf\u00e9 — ünïcödé <b>&amp;</b>", "flag": true}`

// newAuditEvent is an event about the object by a key, every field set.
func (e *env) newAuditEvent(tn cloud.Tenant, objectID string) cloud.AuditEvent {
	return cloud.AuditEvent{ID: ids.New(ids.AuditEvent), Tenant: tn, Action: cloud.AuditPassRulesOverridden,
		ActorKind: cloud.ActorKey, ActorID: ids.New(ids.Key), ObjectType: "visit", ObjectID: objectID,
		RequestID: ids.New("req"), Detail: json.RawMessage(auditDetail), CreatedAt: e.tick()}
}

// audited adds events to what newVisit writes, each about the new visit.
func audited(es ...*cloud.AuditEvent) func(*cloud.Visit, *cloud.VisitWrites) {
	return func(v *cloud.Visit, w *cloud.VisitWrites) {
		for _, ev := range es {
			ev.ObjectID = v.ID
			w.Audit = append(w.Audit, *ev)
		}
	}
}

// audit adds events to the visit in one UpdateVisit that changes nothing
// else.
func (e *env) audit(t testing.TB, tn cloud.Tenant, visitID string, es ...cloud.AuditEvent) {
	t.Helper()
	_, err := e.s.UpdateVisit(t.Context(), tn, visitID, func(_ *cloud.Visit, w *cloud.VisitWrites) error {
		w.Audit = append(w.Audit, es...)
		return nil
	})
	require.NoError(t, err)
}

// --- comparisons ------------------------------------------------------------

func auditRow(a cloud.AuditEvent) row { return row{a.ID, a.CreatedAt.UTC()} }

// requireAuditEvent compares events field by field, the details as JSON:
// equal in meaning, an event written without one reading back as {}.
func requireAuditEvent(t testing.TB, want, got cloud.AuditEvent, msgAndArgs ...any) {
	t.Helper()
	wantDetail := string(want.Detail)
	if wantDetail == "" {
		wantDetail = `{}`
	}
	require.JSONEq(t, wantDetail, string(got.Detail), msgAndArgs...)
	want.Detail, got.Detail = nil, nil
	want.CreatedAt, got.CreatedAt = want.CreatedAt.UTC(), got.CreatedAt.UTC()
	require.Equal(t, want, got, msgAndArgs...)
}

// requireAuditEvents checks a list holds want, newest first, each equal.
func requireAuditEvents(t testing.TB, want, got []cloud.AuditEvent, msgAndArgs ...any) {
	t.Helper()
	require.Equal(t, newestIDs(auditRow, want...), idsOf(auditRow, got), msgAndArgs...)
	for _, g := range got {
		w := want[slices.IndexFunc(want, func(x cloud.AuditEvent) bool { return x.ID == g.ID })]
		requireAuditEvent(t, w, g, msgAndArgs...)
	}
}

func (e *env) listAuditEvents(t testing.TB, tn cloud.Tenant, f cloud.AuditFilter) []cloud.AuditEvent {
	t.Helper()
	return walk(t, 2, auditRow, func(p cloud.Page) ([]cloud.AuditEvent, bool, error) {
		return e.s.ListAuditEvents(t.Context(), tn, f, p)
	})
}

// --- audit events -----------------------------------------------------------

// CreateVisit writes the visit's audit events with it, every field as
// written; an event without actor, request or detail reads back without
// them and with the detail {}.
func testAuditCreateWrites(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	full := e.newAuditEvent(e.a, "")
	bare := cloud.AuditEvent{ID: ids.New(ids.AuditEvent), Tenant: e.a, Action: "visitor.erased", ActorKind: cloud.ActorSystem,
		ObjectType: "visitor", CreatedAt: e.tick()}
	emptyDetail := e.newAuditEvent(e.a, "")
	emptyDetail.Detail = json.RawMessage{}
	v := e.newVisit(t, e.a, s.ID, audited(&full, &bare, &emptyDetail))
	requireAuditEvents(t, []cloud.AuditEvent{full, bare, emptyDetail}, e.listAuditEvents(t, e.a, cloud.AuditFilter{}))
	_, err := e.s.Visit(t.Context(), e.a, v.ID)
	require.NoError(t, err, "the visit the events were written with")
}

// UpdateVisit writes the events fn adds with the change fn makes, each
// update adding to the trail.
func testAuditUpdateWrites(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	v := e.newVisit(t, e.a, s.ID)
	first := e.newAuditEvent(e.a, v.ID)
	at := e.tick()
	got, err := e.s.UpdateVisit(t.Context(), e.a, v.ID, func(x *cloud.Visit, w *cloud.VisitWrites) error {
		x.Status, x.CheckedInAt, x.UpdatedAt = cloud.VisitCheckedIn, ptr(at), at
		w.Audit = append(w.Audit, first)
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, cloud.VisitCheckedIn, got.Status)
	requireAuditEvents(t, []cloud.AuditEvent{first}, e.listAuditEvents(t, e.a, cloud.AuditFilter{}))

	// An event about another object, by a person, from no request.
	second := cloud.AuditEvent{ID: ids.New(ids.AuditEvent), Tenant: e.a, Action: "visitor.erased", ActorKind: cloud.ActorPerson,
		ActorID: ids.New(ids.Person), ObjectType: "visitor", ObjectID: v.VisitorID, Detail: json.RawMessage(`{"visits":1}`),
		CreatedAt: e.tick()}
	third := e.newAuditEvent(e.a, v.ID)
	third.ActorKind, third.ActorID, third.RequestID = cloud.ActorEdge, ids.New(ids.Gate), ""
	e.audit(t, e.a, v.ID, second, third)
	requireAuditEvents(t, []cloud.AuditEvent{first, second, third}, e.listAuditEvents(t, e.a, cloud.AuditFilter{}))
}

// A CreateVisit that fails part-way, its audit events written or not yet,
// leaves none of them behind.
func testAuditCreateAllOrNothing(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	for _, c := range []struct {
		name  string
		audit func(v cloud.Visit) []cloud.AuditEvent
	}{
		{"the same event twice", func(v cloud.Visit) []cloud.AuditEvent {
			ev := e.newAuditEvent(e.a, v.ID)
			return []cloud.AuditEvent{ev, ev} // the second insert fails
		}},
		{"a detail that is not JSON", func(v cloud.Visit) []cloud.AuditEvent {
			bad := e.newAuditEvent(e.a, v.ID)
			bad.Detail = json.RawMessage(`{"reason": `)
			return []cloud.AuditEvent{e.newAuditEvent(e.a, v.ID), bad}
		}},
		{"a detail that is not an object", func(v cloud.Visit) []cloud.AuditEvent {
			bad := e.newAuditEvent(e.a, v.ID)
			bad.Detail = json.RawMessage(`["wrong_gate"]`)
			return []cloud.AuditEvent{e.newAuditEvent(e.a, v.ID), bad}
		}},
	} {
		at := e.tick()
		vr := cloud.Visitor{ID: ids.New(ids.Visitor), Tenant: e.a, Name: "Ada", CreatedAt: at, UpdatedAt: at}
		v := cloud.Visit{ID: ids.New(ids.Visit), Tenant: e.a, Status: cloud.VisitExpected, Type: "meeting", SiteID: s.ID,
			VisitorID: vr.ID, CreatedAt: at, UpdatedAt: at}
		err := e.s.CreateVisit(t.Context(), v, cloud.VisitWrites{Visitor: &vr, Messages: []cloud.Message{e.newMessage(e.a, v.ID)},
			Audit: c.audit(v)})
		assertError(t, err, c.name)
		_, err = e.s.Visit(t.Context(), e.a, v.ID)
		requireNotFound(t, err, "%s: the visit", c.name)
		_, err = e.s.Visitor(t.Context(), e.a, vr.ID)
		requireNotFound(t, err, "%s: the visitor", c.name)
		require.Empty(t, e.listMessages(t, e.a, cloud.MessageFilter{}), "%s: the messages", c.name)
		require.Empty(t, e.listAuditEvents(t, e.a, cloud.AuditFilter{}), "%s: the audit events", c.name)
	}
}

// An UpdateVisit whose fn aborts, or whose writes fail, leaves neither
// the change nor its audit events.
func testAuditUpdateAllOrNothing(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	v := e.newVisit(t, e.a, s.ID)
	kept := e.newAuditEvent(e.a, v.ID)
	e.audit(t, e.a, v.ID, kept)
	v, err := e.s.Visit(t.Context(), e.a, v.ID)
	require.NoError(t, err)

	_, err = e.s.UpdateVisit(t.Context(), e.a, v.ID, func(x *cloud.Visit, w *cloud.VisitWrites) error {
		x.Status, x.UpdatedAt = cloud.VisitCheckedIn, e.tick()
		w.Audit = append(w.Audit, e.newAuditEvent(e.a, v.ID))
		return errAbort
	})
	require.ErrorIs(t, err, errAbort)
	requireAuditEvents(t, []cloud.AuditEvent{kept}, e.listAuditEvents(t, e.a, cloud.AuditFilter{}), "fn aborts")

	_, err = e.s.UpdateVisit(t.Context(), e.a, v.ID, func(x *cloud.Visit, w *cloud.VisitWrites) error {
		x.Status, x.UpdatedAt = cloud.VisitCheckedIn, e.tick()
		w.Audit = append(w.Audit, e.newAuditEvent(e.a, v.ID), kept) // kept is stored already: its insert fails
		return nil
	})
	require.Error(t, err, "an event stored already")
	requireAuditEvents(t, []cloud.AuditEvent{kept}, e.listAuditEvents(t, e.a, cloud.AuditFilter{}), "the writes fail")

	got, err := e.s.Visit(t.Context(), e.a, v.ID)
	require.NoError(t, err)
	requireVisit(t, v, got)
}

func testAuditListFilters(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	v1, v2 := e.newVisit(t, e.a, s.ID), e.newVisit(t, e.a, s.ID)
	const erased = "visitor.erased"
	event := func(tn cloud.Tenant, action, objectID string) cloud.AuditEvent {
		ev := e.newAuditEvent(tn, objectID)
		ev.Action = action
		return ev
	}
	a1 := event(e.a, cloud.AuditPassRulesOverridden, v1.ID)
	a2 := event(e.a, erased, v1.ID)
	a3 := event(e.a, cloud.AuditPassRulesOverridden, v2.ID)
	a4 := event(e.a, erased, v2.VisitorID)
	e.audit(t, e.a, v1.ID, a1, a2)
	e.audit(t, e.a, v2.ID, a3, a4)
	// Another tenant's events that every filter below would match.
	vb := e.newVisit(t, e.b, s.ID)
	e.audit(t, e.b, vb.ID, event(e.b, cloud.AuditPassRulesOverridden, v1.ID), event(e.b, erased, v2.VisitorID))

	for _, c := range []struct {
		name string
		f    cloud.AuditFilter
		want []cloud.AuditEvent
	}{
		{"none", cloud.AuditFilter{}, []cloud.AuditEvent{a1, a2, a3, a4}},
		{"action", cloud.AuditFilter{Action: cloud.AuditPassRulesOverridden}, []cloud.AuditEvent{a1, a3}},
		{"action, exactly", cloud.AuditFilter{Action: "visit"}, nil},
		{"action nobody did", cloud.AuditFilter{Action: "key.revoked"}, nil},
		{"object", cloud.AuditFilter{ObjectID: v1.ID}, []cloud.AuditEvent{a1, a2}},
		{"object, exactly", cloud.AuditFilter{ObjectID: v1.ID[:len(v1.ID)-1]}, nil},
		{"object of nothing", cloud.AuditFilter{ObjectID: ids.New(ids.Visit)}, nil},
		{"created after, exclusive", cloud.AuditFilter{CreatedAfter: ptr(a2.CreatedAt)}, []cloud.AuditEvent{a3, a4}},
		{"created after the last", cloud.AuditFilter{CreatedAfter: ptr(a4.CreatedAt)}, nil},
		{"action and object", cloud.AuditFilter{Action: erased, ObjectID: v2.VisitorID}, []cloud.AuditEvent{a4}},
		{"action and object that exclude each other", cloud.AuditFilter{Action: erased, ObjectID: v2.ID}, nil},
		{"every field", cloud.AuditFilter{Action: cloud.AuditPassRulesOverridden, ObjectID: v2.ID, CreatedAfter: ptr(a1.CreatedAt)},
			[]cloud.AuditEvent{a3}},
	} {
		requireAuditEvents(t, c.want, e.listAuditEvents(t, e.a, c.f), c.name)
	}
}

// Each tenant sees its own trail: not the other organisation's, nor the
// other mode's, even about an object with the same ID.
func testAuditTenantIsolation(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	mine := e.newAuditEvent(e.a, "")
	v := e.newVisit(t, e.a, s.ID, audited(&mine))
	test := e.newAuditEvent(e.b, v.ID)
	vb := e.newVisit(t, e.b, s.ID)
	e.audit(t, e.b, vb.ID, test)
	theirs := e.newAuditEvent(e.c, v.ID)
	vc := e.newVisit(t, e.c, s.ID)
	e.audit(t, e.c, vc.ID, theirs)

	for _, c := range []struct {
		tn   cloud.Tenant
		want cloud.AuditEvent
	}{{e.a, mine}, {e.b, test}, {e.c, theirs}} {
		for _, f := range []cloud.AuditFilter{{}, {ObjectID: v.ID}, {Action: cloud.AuditPassRulesOverridden},
			{CreatedAfter: ptr(e.now.Add(-24 * time.Hour))}} {
			requireAuditEvents(t, []cloud.AuditEvent{c.want}, e.listAuditEvents(t, c.tn, f), "list in %v with %+v", c.tn, f)
		}
	}
	// A tenant with nothing in its trail.
	d := cloud.Tenant{OrgID: e.org2.ID, Mode: cloud.ModeTest}
	require.Empty(t, e.listAuditEvents(t, d, cloud.AuditFilter{}))
}

func auditPager(t testing.TB, e *env) (func(time.Time) row, func(cloud.Page) ([]row, bool)) {
	s := e.newSite(t, e.a)
	v := e.newVisit(t, e.a, s.ID)
	return func(at time.Time) row {
			ev := e.newAuditEvent(e.a, v.ID)
			ev.CreatedAt = at
			e.audit(t, e.a, v.ID, ev)
			return auditRow(ev)
		}, func(p cloud.Page) ([]row, bool) {
			xs, more, err := e.s.ListAuditEvents(t.Context(), e.a, cloud.AuditFilter{}, p)
			return rowsOf(t, auditRow, xs, more, err)
		}
}
