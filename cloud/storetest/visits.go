package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/shared/passrule"
)

// --- builders ---------------------------------------------------------------

func (e *env) newVisitType(t testing.TB, tn cloud.Tenant, opts ...func(*cloud.VisitType)) cloud.VisitType {
	t.Helper()
	at := e.tick()
	vt := cloud.VisitType{Tenant: tn, Key: ids.New("vt"), Name: "Meeting", Enabled: true, PreRegistration: true,
		Form: json.RawMessage(`{"fields":[]}`), FormVersion: 1, PassRules: passrule.Rules{Window: passrule.Window{Before: 60, After: 60}},
		CreatedAt: at, UpdatedAt: at}
	for _, o := range opts {
		o(&vt)
	}
	require.NoError(t, e.s.PutVisitType(t.Context(), vt))
	return vt
}

// newVisit stores a visit at the site with a visitor of its own, created
// in the same call; opts change the visit and the writes before they are
// stored. It returns the visit as a read should show it, Visitor filled.
func (e *env) newVisit(t testing.TB, tn cloud.Tenant, siteID string, opts ...func(*cloud.Visit, *cloud.VisitWrites)) cloud.Visit {
	t.Helper()
	at := e.tick()
	vr := cloud.Visitor{ID: ids.New(ids.Visitor), Tenant: tn, Name: "Visitor", CreatedAt: at, UpdatedAt: at}
	v := cloud.Visit{ID: ids.New(ids.Visit), Tenant: tn, Status: cloud.VisitExpected, Type: "meeting",
		Source: cloud.SourceInvitation, SiteID: siteID, Audience: cloud.AudienceDesk, VisitorID: vr.ID,
		Receiver: cloud.Receiver{Kind: cloud.ReceiverReception}, CreatedAt: at, UpdatedAt: at}
	w := cloud.VisitWrites{Visitor: &vr}
	for _, o := range opts {
		o(&v, &w)
	}
	require.NoError(t, e.s.CreateVisit(t.Context(), v, w))
	if w.Visitor != nil && w.Visitor.ID == v.VisitorID {
		v.Visitor = *w.Visitor
	}
	return v
}

// visitOf makes newVisit's visit one more visit of an existing visitor.
func visitOf(vr cloud.Visitor) func(*cloud.Visit, *cloud.VisitWrites) {
	return func(v *cloud.Visit, w *cloud.VisitWrites) {
		v.VisitorID, v.Visitor, w.Visitor = vr.ID, vr, nil
	}
}

// withVisitor sets what newVisit's new visitor holds.
func withVisitor(fn func(*cloud.Visitor)) func(*cloud.Visit, *cloud.VisitWrites) {
	return func(_ *cloud.Visit, w *cloud.VisitWrites) { fn(w.Visitor) }
}

func lead(p cloud.Person) cloud.Host {
	return cloud.Host{ID: p.ID, Name: p.Name, Role: cloud.HostRoleLead, State: cloud.HostStateInvited}
}

func coHost(p cloud.Person) cloud.Host {
	return cloud.Host{ID: p.ID, Name: p.Name, Role: cloud.HostRoleCoHost, State: cloud.HostStateInvited}
}

// hostedBy makes the people the visit's hosts, the first the lead.
func hostedBy(ps ...cloud.Person) func(*cloud.Visit, *cloud.VisitWrites) {
	return func(v *cloud.Visit, _ *cloud.VisitWrites) {
		v.Hosts, v.HostID, v.Audience = nil, "", cloud.AudienceDesk
		for i, p := range ps {
			if i == 0 {
				v.Hosts, v.HostID, v.Audience = append(v.Hosts, lead(p)), p.ID, cloud.AudiencePerson
				continue
			}
			v.Hosts, v.Audience = append(v.Hosts, coHost(p)), cloud.AudiencePeople
		}
	}
}

func (e *env) newMessage(tn cloud.Tenant, visitID string) cloud.Message {
	return cloud.Message{ID: ids.New(ids.Message), Tenant: tn, VisitID: visitID, Channel: cloud.ChannelEmail,
		To: "visitor@example.com", Subject: "Your pass", Body: "Show this code at the gate.", Status: cloud.MessageQueued,
		CreatedAt: e.tick()}
}

// passKeyID is a pass key ID as shared/passtoken makes them: 8 lower-case
// hex digits, short enough that two tenants may hold the same one.
func passKeyID(n int) string { return fmt.Sprintf("%08x", 0x5eed0000+n) }

// --- comparisons ------------------------------------------------------------

// Lists and maps a store reads back empty compare equal to nil ones; the
// tests that promise empty-not-nil check that on their own.

func normVisitType(vt cloud.VisitType) cloud.VisitType {
	vt.CreatedAt, vt.UpdatedAt = vt.CreatedAt.UTC(), vt.UpdatedAt.UTC()
	vt.PassRules = normRules(vt.PassRules)
	return vt
}

func normRules(r passrule.Rules) passrule.Rules {
	if len(r.GateIDs) == 0 {
		r.GateIDs = nil
	}
	return r
}

func normVisitor(v cloud.Visitor) cloud.Visitor {
	v.CreatedAt, v.UpdatedAt = v.CreatedAt.UTC(), v.UpdatedAt.UTC()
	return v
}

func normVisit(v cloud.Visit) cloud.Visit {
	v.CreatedAt, v.UpdatedAt = v.CreatedAt.UTC(), v.UpdatedAt.UTC()
	v.ExpectedAt, v.ExpectedUntil = utcPtr(v.ExpectedAt), utcPtr(v.ExpectedUntil)
	v.CheckedInAt, v.CheckedOutAt, v.CancelledAt = utcPtr(v.CheckedInAt), utcPtr(v.CheckedOutAt), utcPtr(v.CancelledAt)
	v.Visitor = normVisitor(v.Visitor)
	var hosts []cloud.Host
	for _, h := range v.Hosts {
		h.AskedAt, h.AnsweredAt = utcPtr(h.AskedAt), utcPtr(h.AnsweredAt)
		hosts = append(hosts, h)
	}
	v.Hosts = hosts
	if d := v.Decision; d != nil {
		c := *d
		c.DecidedAt = c.DecidedAt.UTC()
		v.Decision = &c
	}
	if r := v.RescheduledTo; r != nil {
		c := *r
		c.At = c.At.UTC()
		v.RescheduledTo = &c
	}
	v.Pass.LastSentAt = utcPtr(v.Pass.LastSentAt)
	if len(v.Pass.Channels) == 0 {
		v.Pass.Channels = nil
	}
	v.Pass.Rules = normRules(v.Pass.Rules)
	if len(v.CustomFields) == 0 {
		v.CustomFields = nil
	}
	return v
}

func normMessage(m cloud.Message) cloud.Message {
	m.CreatedAt = m.CreatedAt.UTC()
	return m
}

func normPassKey(k cloud.PassKey) cloud.PassKey {
	k.CreatedAt, k.RetiredAt = k.CreatedAt.UTC(), utcPtr(k.RetiredAt)
	return k
}

func requireVisitType(t testing.TB, want, got cloud.VisitType) {
	t.Helper()
	require.Equal(t, normVisitType(want), normVisitType(got))
}

func requireVisitor(t testing.TB, want, got cloud.Visitor) {
	t.Helper()
	require.Equal(t, normVisitor(want), normVisitor(got))
}

// requireVisit compares visits field by field; custom fields must match
// byte for byte.
func requireVisit(t testing.TB, want, got cloud.Visit, msgAndArgs ...any) {
	t.Helper()
	require.Equal(t, normVisit(want), normVisit(got), msgAndArgs...)
}

// requireEmptyNotNil checks the lists and maps of a visit read back are
// empty rather than nil: the API renders them as [] and {}.
func requireEmptyNotNil(t testing.TB, v cloud.Visit) {
	t.Helper()
	require.NotNil(t, v.Hosts, "hosts")
	require.NotNil(t, v.CustomFields, "custom fields")
	require.NotNil(t, v.Pass.Channels, "pass channels")
	require.NotNil(t, v.Pass.Rules.GateIDs, "pass rule gate IDs")
}

func visitTypeRow(vt cloud.VisitType) row { return row{vt.Key, vt.CreatedAt.UTC()} }
func visitRow(v cloud.Visit) row          { return row{v.ID, v.CreatedAt.UTC()} }
func messageRow(m cloud.Message) row      { return row{m.ID, m.CreatedAt.UTC()} }

func (e *env) listVisitTypes(t testing.TB, tn cloud.Tenant, f cloud.VisitTypeFilter) []cloud.VisitType {
	t.Helper()
	return walk(t, 2, visitTypeRow, func(p cloud.Page) ([]cloud.VisitType, bool, error) {
		return e.s.ListVisitTypes(t.Context(), tn, f, p)
	})
}

func (e *env) listVisits(t testing.TB, tn cloud.Tenant, f cloud.VisitFilter) []cloud.Visit {
	t.Helper()
	return walk(t, 2, visitRow, func(p cloud.Page) ([]cloud.Visit, bool, error) {
		return e.s.ListVisits(t.Context(), tn, f, p)
	})
}

func (e *env) listMessages(t testing.TB, tn cloud.Tenant, f cloud.MessageFilter) []cloud.Message {
	t.Helper()
	return walk(t, 2, messageRow, func(p cloud.Page) ([]cloud.Message, bool, error) {
		return e.s.ListMessages(t.Context(), tn, f, p)
	})
}

// --- visit types ------------------------------------------------------------

func testVisitTypePutAndGet(t *testing.T, e *env) {
	g1, g2 := ids.New(ids.Gate), ids.New(ids.Gate)
	full := e.newVisitType(t, e.a, func(vt *cloud.VisitType) {
		vt.Key, vt.Name = "contractor", "Contractor"
		vt.NeedsApproval = true
		// Spacing and key order a JSON normaliser would change.
		vt.Form = json.RawMessage("{ \"z\": 1,\n  \"fields\": [ {\"key\": \"company\", \"type\": \"string\"} ],\n  \"a\": \"caf\\u00e9\" }")
		vt.FormVersion = 3
		vt.PassRules = passrule.Rules{Daily: &passrule.Daily{From: 7 * 60, Until: 19*60 + 30},
			Window: passrule.Window{Before: 45, After: 15}, SingleUse: true, GateIDs: []string{g2, g1}}
		vt.UpdatedAt = vt.CreatedAt.Add(7 * time.Microsecond)
	})
	minimal := e.newVisitType(t, e.a, func(vt *cloud.VisitType) {
		vt.Key, vt.Name = "other", "Other"
		vt.Enabled, vt.PreRegistration = false, false
		vt.Form, vt.FormVersion, vt.PassRules = nil, 0, passrule.Rules{}
	})
	for _, want := range []cloud.VisitType{full, minimal} {
		got, err := e.s.VisitType(t.Context(), e.a, want.Key)
		require.NoError(t, err)
		requireVisitType(t, want, got)
		require.NotNil(t, got.PassRules.GateIDs, "gate IDs are an empty list, not nil")
	}
	_, err := e.s.VisitType(t.Context(), e.a, "meeting")
	requireNotFound(t, err)
}

func testVisitTypeReplaceKeepsCreatedAt(t *testing.T, e *env) {
	vt := e.newVisitType(t, e.a, func(vt *cloud.VisitType) { vt.Key = "meeting" })
	other := e.newVisitType(t, e.a, func(vt *cloud.VisitType) { vt.Key = "delivery" })
	want := vt
	want.Name, want.Enabled, want.PreRegistration, want.NeedsApproval = "Meeting (new)", false, false, true
	want.Form, want.FormVersion = json.RawMessage(`{"fields":[{"key":"badge"}]}`), 2
	want.PassRules = passrule.Rules{Daily: &passrule.Daily{From: 22 * 60, Until: 6 * 60}, GateIDs: []string{ids.New(ids.Gate)}}
	want.UpdatedAt = e.tick()
	put := want
	put.CreatedAt = e.tick() // a later CreatedAt is ignored
	require.NoError(t, e.s.PutVisitType(t.Context(), put))

	got, err := e.s.VisitType(t.Context(), e.a, vt.Key)
	require.NoError(t, err)
	requireVisitType(t, want, got)
	listed := e.listVisitTypes(t, e.a, cloud.VisitTypeFilter{})
	require.Equal(t, newestIDs(visitTypeRow, want, other), idsOf(visitTypeRow, listed), "replaced in place, not added")
	requireVisitType(t, want, listed[slices.IndexFunc(listed, func(x cloud.VisitType) bool { return x.Key == vt.Key })])
}

func testVisitTypePublicFilter(t *testing.T, e *env) {
	var all []cloud.VisitType
	byKey := map[string]cloud.VisitType{}
	for _, c := range []struct {
		key             string
		enabled, prereg bool
	}{{"open", true, true}, {"invite_only", true, false}, {"off", false, true}, {"off_invite_only", false, false}} {
		vt := e.newVisitType(t, e.a, func(vt *cloud.VisitType) {
			vt.Key, vt.Enabled, vt.PreRegistration = c.key, c.enabled, c.prereg
		})
		all = append(all, vt)
		byKey[vt.Key] = vt
	}
	e.newVisitType(t, e.b, func(vt *cloud.VisitType) { vt.Key = "test_mode_open" })

	require.Equal(t, newestIDs(visitTypeRow, all...), idsOf(visitTypeRow, e.listVisitTypes(t, e.a, cloud.VisitTypeFilter{})))
	public := e.listVisitTypes(t, e.a, cloud.VisitTypeFilter{Public: true})
	require.Equal(t, []string{"open"}, idsOf(visitTypeRow, public))
	requireVisitType(t, byKey["open"], public[0])

	// Opening a type to pre-registration makes it public.
	opened := byKey["invite_only"]
	opened.PreRegistration, opened.UpdatedAt = true, e.tick()
	require.NoError(t, e.s.PutVisitType(t.Context(), opened))
	require.Equal(t, newestIDs(visitTypeRow, byKey["open"], opened),
		idsOf(visitTypeRow, e.listVisitTypes(t, e.a, cloud.VisitTypeFilter{Public: true})))
}

func testVisitTypeTenantIsolation(t *testing.T, e *env) {
	a := e.newVisitType(t, e.a, func(vt *cloud.VisitType) { vt.Key, vt.Name = "meeting", "A" })
	b := e.newVisitType(t, e.b, func(vt *cloud.VisitType) { vt.Key, vt.Name = "meeting", "B" })
	c := e.newVisitType(t, e.c, func(vt *cloud.VisitType) { vt.Key, vt.Name = "meeting", "C" })
	onlyA := e.newVisitType(t, e.a, func(vt *cloud.VisitType) { vt.Key = "interview" })
	for _, want := range []cloud.VisitType{a, b, c} {
		got, err := e.s.VisitType(t.Context(), want.Tenant, "meeting")
		require.NoError(t, err)
		requireVisitType(t, want, got)
	}
	for _, other := range []cloud.Tenant{e.b, e.c} {
		_, err := e.s.VisitType(t.Context(), other, onlyA.Key)
		requireNotFound(t, err, "get in %v", other)
	}
	require.Equal(t, newestIDs(visitTypeRow, a, onlyA), idsOf(visitTypeRow, e.listVisitTypes(t, e.a, cloud.VisitTypeFilter{})))
	require.Equal(t, []string{"meeting"}, idsOf(visitTypeRow, e.listVisitTypes(t, e.b, cloud.VisitTypeFilter{})))
	require.Equal(t, []string{"meeting"}, idsOf(visitTypeRow, e.listVisitTypes(t, e.c, cloud.VisitTypeFilter{})))
}

func visitTypePager(t testing.TB, e *env) (func(time.Time) row, func(cloud.Page) ([]row, bool)) {
	return func(at time.Time) row {
			return visitTypeRow(e.newVisitType(t, e.a, func(vt *cloud.VisitType) { vt.CreatedAt, vt.UpdatedAt = at, at }))
		}, func(p cloud.Page) ([]row, bool) {
			xs, more, err := e.s.ListVisitTypes(t.Context(), e.a, cloud.VisitTypeFilter{}, p)
			return rowsOf(t, visitTypeRow, xs, more, err)
		}
}

// --- visitors ---------------------------------------------------------------

func testVisitorCreateAndGet(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	full := e.newVisit(t, e.a, s.ID, withVisitor(func(vr *cloud.Visitor) {
		vr.Name, vr.Email, vr.Phone, vr.Company = "Ada Lovelace", "Ada@Example.com", "+447700900123", "Analytical Engines"
		vr.UpdatedAt = vr.CreatedAt.Add(3 * time.Microsecond)
	})).Visitor
	minimal := e.newVisit(t, e.a, s.ID).Visitor
	for _, want := range []cloud.Visitor{full, minimal} {
		got, err := e.s.Visitor(t.Context(), e.a, want.ID)
		require.NoError(t, err)
		requireVisitor(t, want, got)
	}
	_, err := e.s.Visitor(t.Context(), e.a, ids.New(ids.Visitor))
	requireNotFound(t, err)
}

func testVisitorFindByEmail(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	ada := e.newVisit(t, e.a, s.ID, withVisitor(func(vr *cloud.Visitor) {
		vr.Name, vr.Email, vr.Phone = "Ada", "Ada.Lovelace@Example.COM", "+447700900001"
	})).Visitor
	e.newVisit(t, e.a, s.ID, withVisitor(func(vr *cloud.Visitor) { vr.Name, vr.Email = "Bob", "bob@example.com" }))
	for _, email := range []string{"ada.lovelace@example.com", "ADA.LOVELACE@EXAMPLE.COM", "Ada.Lovelace@Example.COM"} {
		got, err := e.s.FindVisitor(t.Context(), e.a, email, "")
		require.NoError(t, err, email)
		requireVisitor(t, ada, got)
		got, err = e.s.FindVisitor(t.Context(), e.a, email, "+447700900999")
		require.NoError(t, err, "%s: a given email is matched, not the phone", email)
		requireVisitor(t, ada, got)
	}
}

func testVisitorFindByPhone(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	ada := e.newVisit(t, e.a, s.ID, withVisitor(func(vr *cloud.Visitor) { vr.Name, vr.Phone = "Ada", "+447700900001" })).Visitor
	e.newVisit(t, e.a, s.ID, withVisitor(func(vr *cloud.Visitor) {
		vr.Name, vr.Email, vr.Phone = "Bob", "bob@example.com", "+447700900002"
	}))
	got, err := e.s.FindVisitor(t.Context(), e.a, "", "+447700900001")
	require.NoError(t, err)
	requireVisitor(t, ada, got)
	_, err = e.s.FindVisitor(t.Context(), e.a, "", "+447700900003")
	requireNotFound(t, err)
}

func testVisitorFindNewestWins(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	mk := func(name, email, phone string, at time.Time) cloud.Visitor {
		return e.newVisit(t, e.a, s.ID, withVisitor(func(vr *cloud.Visitor) {
			vr.Name, vr.Email, vr.Phone, vr.CreatedAt = name, email, phone, at
		})).Visitor
	}
	// Created out of time order, so insertion order is not the answer.
	base := e.tick()
	newest := mk("Newest", "ADA@example.com", "+447700900001", base.Add(time.Hour))
	mk("Oldest", "ada@example.com", "+447700900001", base)
	mk("Middle", "Ada@Example.com", "+447700900001", base.Add(time.Minute))
	got, err := e.s.FindVisitor(t.Context(), e.a, "ada@EXAMPLE.com", "")
	require.NoError(t, err)
	requireVisitor(t, newest, got)
	got, err = e.s.FindVisitor(t.Context(), e.a, "", "+447700900001")
	require.NoError(t, err)
	requireVisitor(t, newest, got)
}

// A record a publishable key made is never found, however new; it reads
// back marked, on its own and through its visit.
func testVisitorFindSkipsSelfRegistered(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	base := e.tick()
	known := e.newVisit(t, e.a, s.ID, withVisitor(func(vr *cloud.Visitor) {
		vr.Name, vr.Email, vr.Phone, vr.CreatedAt = "Ada", "ada@example.com", "+447700900001", base
	})).Visitor
	self := e.newVisit(t, e.a, s.ID, withVisitor(func(vr *cloud.Visitor) {
		vr.Name, vr.Email, vr.Phone, vr.SelfRegistered, vr.CreatedAt = "Not Ada", "ADA@example.com", "+447700900001", true, base.Add(time.Hour)
	}))
	got, err := e.s.FindVisitor(t.Context(), e.a, "ada@example.com", "")
	require.NoError(t, err)
	requireVisitor(t, known, got)
	got, err = e.s.FindVisitor(t.Context(), e.a, "", "+447700900001")
	require.NoError(t, err)
	requireVisitor(t, known, got)

	got, err = e.s.Visitor(t.Context(), e.a, self.VisitorID)
	require.NoError(t, err)
	require.True(t, got.SelfRegistered)
	requireVisitor(t, self.Visitor, got)
	v, err := e.s.Visit(t.Context(), e.a, self.ID)
	require.NoError(t, err)
	require.True(t, v.Visitor.SelfRegistered, "the visit's visitor is read marked too")
	_, err = e.s.FindVisitor(t.Context(), e.a, "", "+447700900002")
	requireNotFound(t, err)
	e.newVisit(t, e.a, s.ID, withVisitor(func(vr *cloud.Visitor) { vr.Phone, vr.SelfRegistered = "+447700900002", true }))
	_, err = e.s.FindVisitor(t.Context(), e.a, "", "+447700900002")
	requireNotFound(t, err, "only a self-registered record has the number")
}

func testVisitorFindNone(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	e.newVisit(t, e.a, s.ID) // no email, no phone
	e.newVisit(t, e.a, s.ID, withVisitor(func(vr *cloud.Visitor) { vr.Email, vr.Phone = "ada@example.com", "+447700900001" }))
	for _, c := range []struct{ name, email, phone string }{
		{"nothing to match", "", ""},
		{"unknown email", "bob@example.com", ""},
		{"unknown email, known phone", "bob@example.com", "+447700900001"},
		{"unknown phone", "", "+447700900002"},
		{"a substring of the email", "ada@example", ""},
	} {
		_, err := e.s.FindVisitor(t.Context(), e.a, c.email, c.phone)
		requireNotFound(t, err, c.name)
	}
}

func testVisitorUpdate(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	v := e.newVisit(t, e.a, s.ID, withVisitor(func(vr *cloud.Visitor) {
		vr.Name, vr.Email, vr.Phone, vr.Company = "Ada", "ada@example.com", "+447700900001", "Engines"
	}))
	want := v.Visitor
	want.Name, want.Email, want.Phone, want.Company, want.UpdatedAt = "Ada L.", "Ada@Lovelace.org", "", "", e.tick()
	got, err := e.s.UpdateVisitor(t.Context(), e.a, want.ID, func(x *cloud.Visitor) error {
		requireVisitor(t, v.Visitor, *x)
		x.Name, x.Email, x.Phone, x.Company, x.UpdatedAt = want.Name, want.Email, want.Phone, want.Company, want.UpdatedAt
		return nil
	})
	require.NoError(t, err)
	requireVisitor(t, want, got)
	got, err = e.s.Visitor(t.Context(), e.a, want.ID)
	require.NoError(t, err)
	requireVisitor(t, want, got)

	got, err = e.s.FindVisitor(t.Context(), e.a, "ada@lovelace.org", "")
	require.NoError(t, err, "found by the new email")
	requireVisitor(t, want, got)
	_, err = e.s.FindVisitor(t.Context(), e.a, "ada@example.com", "")
	requireNotFound(t, err, "the old email")
	_, err = e.s.FindVisitor(t.Context(), e.a, "", "+447700900001")
	requireNotFound(t, err, "the removed phone")

	visit, err := e.s.Visit(t.Context(), e.a, v.ID)
	require.NoError(t, err)
	requireVisitor(t, want, visit.Visitor)
}

func testVisitorUpdateAborts(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	vr := e.newVisit(t, e.a, s.ID, withVisitor(func(vr *cloud.Visitor) { vr.Email = "ada@example.com" })).Visitor
	_, err := e.s.UpdateVisitor(t.Context(), e.a, vr.ID, func(x *cloud.Visitor) error {
		x.Name, x.Email, x.UpdatedAt = "Changed", "changed@example.com", e.tick()
		return errAbort
	})
	require.ErrorIs(t, err, errAbort)
	got, err := e.s.Visitor(t.Context(), e.a, vr.ID)
	require.NoError(t, err)
	requireVisitor(t, vr, got)
	_, err = e.s.FindVisitor(t.Context(), e.a, "changed@example.com", "")
	requireNotFound(t, err)
}

func testVisitorUpdateUnknown(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	e.newVisit(t, e.a, s.ID)
	_, err := e.s.UpdateVisitor(t.Context(), e.a, ids.New(ids.Visitor), func(x *cloud.Visitor) error {
		t.Error("fn called for an unknown visitor")
		return nil
	})
	requireNotFound(t, err)
}

func testVisitorTenantIsolation(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	v := e.newVisit(t, e.a, s.ID, withVisitor(func(vr *cloud.Visitor) { vr.Email, vr.Phone = "ada@example.com", "+447700900001" }))
	vr := v.Visitor
	for _, other := range []cloud.Tenant{e.b, e.c} {
		_, err := e.s.Visitor(t.Context(), other, vr.ID)
		requireNotFound(t, err, "get in %v", other)
		_, err = e.s.FindVisitor(t.Context(), other, vr.Email, "")
		requireNotFound(t, err, "find by email in %v", other)
		_, err = e.s.FindVisitor(t.Context(), other, "", vr.Phone)
		requireNotFound(t, err, "find by phone in %v", other)
		_, err = e.s.UpdateVisitor(t.Context(), other, vr.ID, func(x *cloud.Visitor) error {
			t.Errorf("update in %v: fn called", other)
			x.Name = "Stolen"
			return nil
		})
		requireNotFound(t, err, "update in %v", other)
		err = e.s.EraseVisitor(t.Context(), other, vr.ID, func(x *cloud.Visit) {
			t.Errorf("erase in %v: fn called", other)
		}, func(*cloud.Booking) {
			t.Errorf("erase in %v: bfn called", other)
		})
		requireNotFound(t, err, "erase in %v", other)
	}
	got, err := e.s.Visitor(t.Context(), e.a, vr.ID)
	require.NoError(t, err)
	requireVisitor(t, vr, got)
	gotVisit, err := e.s.Visit(t.Context(), e.a, v.ID)
	require.NoError(t, err)
	requireVisit(t, v, gotVisit)
}

func testVisitorErase(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	p := e.newPerson(t, e.a)
	first := e.newVisit(t, e.a, s.ID, hostedBy(p), withVisitor(func(vr *cloud.Visitor) {
		vr.Name, vr.Email, vr.Phone = "Ada", "ada@example.com", "+447700900001"
	}), func(v *cloud.Visit, _ *cloud.VisitWrites) {
		v.Purpose, v.VehiclePlate = "Interview", "AB12 CDE"
		v.CustomFields = map[string]json.RawMessage{"nda": json.RawMessage(`true`)}
	})
	ada := first.Visitor
	second := e.newVisit(t, e.a, s.ID, visitOf(ada), func(v *cloud.Visit, w *cloud.VisitWrites) {
		v.Purpose = "Second round"
		host := e.newMessage(e.a, v.ID) // a notice to the host about Ada's visit
		host.To = "host@example.com"
		w.Messages = append(w.Messages, host)
	})
	other := e.newVisit(t, e.a, s.ID, withVisitor(func(vr *cloud.Visitor) { vr.Name, vr.Email = "Bob", "bob@example.com" }),
		func(v *cloud.Visit, w *cloud.VisitWrites) {
			v.Purpose = "Delivery"
			m := e.newMessage(e.a, v.ID)
			m.To = "bob@example.com"
			w.Messages = append(w.Messages, m)
		})
	theirs := e.newVisit(t, e.b, s.ID, visitOf(ada)) // the same visitor ID in another tenant's visit
	bt := e.newBookingType(t, e.a)
	booked := e.newBooking(t, e.a, bt, 0, bookingOf(ada), func(b *cloud.Booking, _ *cloud.BookingWrites) {
		b.Purpose, b.DeclineReason = "Interview", "Sorry, Ada"
		b.CustomFields = map[string]json.RawMessage{"nda": json.RawMessage(`true`)}
	})
	rebooked := e.newBooking(t, e.a, bt, 1, bookingOf(ada), status(cloud.BookingCancelled, nil))
	otherBooking := e.newBooking(t, e.a, bt, 2, bookingOf(other.Visitor), func(b *cloud.Booking, _ *cloud.BookingWrites) {
		b.Purpose = "Delivery"
	})
	theirBooking := e.newBooking(t, e.b, bt, 0, bookingOf(ada), func(b *cloud.Booking, _ *cloud.BookingWrites) {
		b.Purpose, b.Visitor = "Test mode", cloud.Visitor{} // the visitor ID is another tenant's
	})

	// A message about no visit (a declined booking) sent to Ada's number.
	sms := e.newMessage(e.a, "")
	sms.Channel, sms.To = cloud.ChannelSMS, "+447700900001"
	_, err := e.s.UpdateVisit(t.Context(), e.a, other.ID, func(_ *cloud.Visit, w *cloud.VisitWrites) error {
		w.Messages = append(w.Messages, sms)
		return nil
	})
	require.NoError(t, err)
	require.Len(t, e.listMessages(t, e.a, cloud.MessageFilter{}), 3)

	erasedAt := e.tick()
	var seen, seenBookings []string
	err = e.s.EraseVisitor(t.Context(), e.a, ada.ID, func(v *cloud.Visit) {
		seen = append(seen, v.ID)
		v.Purpose, v.VehiclePlate, v.CustomFields, v.UpdatedAt = "", "", nil, erasedAt
	}, func(b *cloud.Booking) {
		seenBookings = append(seenBookings, b.ID)
		b.Purpose, b.DeclineReason, b.CustomFields, b.UpdatedAt = "", "", nil, erasedAt
	})
	require.NoError(t, err)
	require.ElementsMatch(t, []string{first.ID, second.ID}, seen, "fn sees each of the visitor's visits once")
	require.ElementsMatch(t, []string{booked.ID, rebooked.ID}, seenBookings, "bfn sees each of the visitor's bookings once")

	_, err = e.s.Visitor(t.Context(), e.a, ada.ID)
	requireNotFound(t, err, "the visitor is deleted")
	_, err = e.s.FindVisitor(t.Context(), e.a, "ada@example.com", "")
	requireNotFound(t, err, "the visitor is not found by email")
	for _, before := range []cloud.Visit{first, second} {
		want := before
		want.Visitor = cloud.Visitor{}
		want.Purpose, want.VehiclePlate, want.CustomFields, want.UpdatedAt = "", "", nil, erasedAt
		got, err := e.s.Visit(t.Context(), e.a, before.ID)
		require.NoError(t, err)
		requireVisit(t, want, got, "visit %s after the erasure", before.ID)
	}
	got, err := e.s.Visit(t.Context(), e.a, other.ID)
	require.NoError(t, err)
	requireVisit(t, other, got, "another visitor's visit is untouched")
	got, err = e.s.Visit(t.Context(), e.b, theirs.ID)
	require.NoError(t, err)
	require.Equal(t, theirs.Purpose, got.Purpose, "another tenant's visit is untouched")
	for _, before := range []cloud.Booking{booked, rebooked} {
		want := before
		want.Visitor = cloud.Visitor{}
		want.Purpose, want.DeclineReason, want.CustomFields, want.UpdatedAt = "", "", nil, erasedAt
		e.requireStoredBooking(t, want, "booking %s after the erasure keeps its visitor ID", before.ID)
	}
	e.requireStoredBooking(t, otherBooking, "another visitor's booking is untouched")
	msgs := e.listMessages(t, e.a, cloud.MessageFilter{})
	require.Len(t, msgs, 1, "messages about the visitor's visits and to the visitor's address or number are deleted")
	require.Equal(t, "bob@example.com", msgs[0].To)
	e.requireStoredBooking(t, theirBooking, "another tenant's booking is untouched")

	err = e.s.EraseVisitor(t.Context(), e.a, ada.ID, func(*cloud.Visit) { t.Error("fn called on a second erasure") },
		func(*cloud.Booking) { t.Error("bfn called on a second erasure") })
	requireNotFound(t, err, "erasing twice")
}

func testVisitorEraseUnknown(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	v := e.newVisit(t, e.a, s.ID)
	err := e.s.EraseVisitor(t.Context(), e.a, ids.New(ids.Visitor), func(*cloud.Visit) { t.Error("fn called") },
		func(*cloud.Booking) { t.Error("bfn called") })
	requireNotFound(t, err)
	got, err := e.s.Visit(t.Context(), e.a, v.ID)
	require.NoError(t, err)
	requireVisit(t, v, got)
}

// --- visits -----------------------------------------------------------------

// fullVisit sets every field of a visit, pointers included.
func (e *env) fullVisit(t testing.TB, tn cloud.Tenant) cloud.Visit {
	t.Helper()
	s := e.newSite(t, tn)
	g1, g2 := e.newGate(t, tn, s.ID), e.newGate(t, tn, s.ID)
	p1 := e.newPerson(t, tn, named[cloud.Person]("Lead"))
	p2 := e.newPerson(t, tn, named[cloud.Person]("Co-host"))
	p3 := e.newPerson(t, tn, named[cloud.Person]("Asked"))
	team := e.newTeam(t, tn, named[cloud.Team]("Engineering"))
	t1, t2, t3, t4, t5, t6, t7 := e.tick(), e.tick(), e.tick(), e.tick(), e.tick(), e.tick(), e.tick()
	return e.newVisit(t, tn, s.ID, withVisitor(func(vr *cloud.Visitor) {
		vr.Name, vr.Email, vr.Phone, vr.Company = "Ada Lovelace", "ada@example.com", "+447700900123", "Engines Ltd"
	}), func(v *cloud.Visit, _ *cloud.VisitWrites) {
		v.Status, v.Type, v.Source = cloud.VisitCheckedIn, "contractor", cloud.SourcePreRegistration
		v.GateID, v.HostID, v.Audience = g1.ID, p1.ID, cloud.AudiencePeople
		v.Hosts = []cloud.Host{
			{ID: p1.ID, Name: p1.Name, Role: cloud.HostRoleLead, State: cloud.HostStateAnswered,
				Answer: cloud.HostAnswerComing, AnswerMinutes: ptr(5), AskedAt: ptr(t1), AnsweredAt: ptr(t2)},
			{ID: p2.ID, Name: p2.Name, Role: cloud.HostRoleCoHost, State: cloud.HostStateInvited},
			{ID: p3.ID, Name: p3.Name, Role: cloud.HostRoleAsked, State: cloud.HostStateNotified, AskedAt: ptr(t2)},
		}
		v.Team, v.AskedFor, v.NeedsSomeone = &cloud.Ref{ID: team.ID, Name: team.Name}, &cloud.Ref{ID: p3.ID, Name: p3.Name}, true
		v.Purpose, v.VehiclePlate = "Quarterly review — ünïcödé", "AB12 CDE"
		v.ExpectedAt, v.ExpectedUntil = ptr(t3), ptr(t5)
		v.CheckedInAt, v.CheckedOutAt, v.CancelledAt = ptr(t4), ptr(t5), ptr(t6)
		v.Decision = &cloud.Decision{Outcome: cloud.OutcomeApproved, DecidedAt: t2, DecidedBy: ids.New(ids.Key), Reason: "Known contractor"}
		v.BookingID = ids.New(ids.Booking)
		v.RescheduledTo = &cloud.Rescheduled{VisitID: ids.New(ids.Visit), BookingID: ids.New(ids.Booking), At: t6}
		v.Pass = cloud.Pass{Channels: []string{cloud.ChannelSMS, cloud.ChannelEmail}, LastSentAt: ptr(t3),
			Rules: passrule.Rules{Daily: &passrule.Daily{From: 7 * 60, Until: 19 * 60}, Window: passrule.Window{Before: 30, After: 15},
				SingleUse: true, GateIDs: []string{g2.ID, g1.ID}},
			ForVisitID: ids.New(ids.Visit), Uses: 3, Revoked: true}
		v.CustomFields = map[string]json.RawMessage{
			"badge":  json.RawMessage("{\"b\": 1,  \"a\": [1, 2.50, \"x\"],\n \"nested\": {\"z\": null, \"y\": {}}}"),
			"note":   json.RawMessage(`"caf\u00e9 <b>&amp;</b>"`),
			"count":  json.RawMessage(`12.50`),
			"agreed": json.RawMessage(`true`),
			"none":   json.RawMessage(`null`),
		}
		v.Receiver = cloud.Receiver{Kind: cloud.ReceiverTeam, TeamID: team.ID}
		v.UpdatedAt = t7
	})
}

func testVisitCreateAndGet(t *testing.T, e *env) {
	full := e.fullVisit(t, e.a)
	got, err := e.s.Visit(t.Context(), e.a, full.ID)
	require.NoError(t, err)
	requireVisit(t, full, got)
	for k, raw := range full.CustomFields {
		require.Equal(t, string(raw), string(got.CustomFields[k]), "custom field %s byte for byte", k)
	}

	s := e.newSite(t, e.a)
	at := e.tick()
	minimal := cloud.Visit{ID: ids.New(ids.Visit), Tenant: e.a, Status: cloud.VisitExpected, Type: "meeting", SiteID: s.ID,
		CreatedAt: at, UpdatedAt: at}
	require.NoError(t, e.s.CreateVisit(t.Context(), minimal, cloud.VisitWrites{}))
	got, err = e.s.Visit(t.Context(), e.a, minimal.ID)
	require.NoError(t, err)
	requireVisit(t, minimal, got)
	requireEmptyNotNil(t, got)
	listed := e.listVisits(t, e.a, cloud.VisitFilter{})
	require.Equal(t, newestIDs(visitRow, full, minimal), idsOf(visitRow, listed))
	for _, v := range listed {
		requireVisit(t, map[string]cloud.Visit{full.ID: full, minimal.ID: minimal}[v.ID], v, "listed %s", v.ID)
	}
	requireEmptyNotNil(t, listed[slices.IndexFunc(listed, func(v cloud.Visit) bool { return v.ID == minimal.ID })])

	_, err = e.s.Visit(t.Context(), e.a, ids.New(ids.Visit))
	requireNotFound(t, err)
}

// CreateVisit writes the visit, its new visitor, further visits and
// messages together.
func testVisitCreateWrites(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	p := e.newPerson(t, e.a)
	var w cloud.VisitWrites
	v := e.newVisit(t, e.a, s.ID, func(v *cloud.Visit, ww *cloud.VisitWrites) {
		extra := cloud.Visit{ID: ids.New(ids.Visit), Tenant: e.a, Status: cloud.VisitExpected, Type: "meeting", SiteID: s.ID,
			VisitorID: v.VisitorID, HostID: p.ID, Hosts: []cloud.Host{lead(p)}, CreatedAt: v.CreatedAt, UpdatedAt: v.UpdatedAt}
		ww.Visits = []cloud.Visit{extra}
		ww.Messages = []cloud.Message{e.newMessage(e.a, v.ID), e.newMessage(e.a, extra.ID)}
		w = *ww
	})
	got, err := e.s.Visitor(t.Context(), e.a, v.VisitorID)
	require.NoError(t, err)
	requireVisitor(t, *w.Visitor, got)
	extra := w.Visits[0]
	extra.Visitor = *w.Visitor
	gotExtra, err := e.s.Visit(t.Context(), e.a, extra.ID)
	require.NoError(t, err)
	requireVisit(t, extra, gotExtra)
	require.Equal(t, []string{extra.ID}, idsOf(visitRow, e.listVisits(t, e.a, cloud.VisitFilter{HostID: p.ID})))
	msgs := e.listMessages(t, e.a, cloud.MessageFilter{})
	require.Equal(t, newestIDs(messageRow, w.Messages...), idsOf(messageRow, msgs))
}

// A CreateVisit that fails part-way leaves nothing behind.
func testVisitCreateAllOrNothing(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	at := e.tick()
	vr := cloud.Visitor{ID: ids.New(ids.Visitor), Tenant: e.a, Name: "Ada", Email: "ada@example.com", CreatedAt: at, UpdatedAt: at}
	v := cloud.Visit{ID: ids.New(ids.Visit), Tenant: e.a, Status: cloud.VisitExpected, Type: "meeting", SiteID: s.ID,
		VisitorID: vr.ID, CreatedAt: at, UpdatedAt: at}
	extra := v
	extra.ID = ids.New(ids.Visit)
	m := e.newMessage(e.a, v.ID)
	err := e.s.CreateVisit(t.Context(), v, cloud.VisitWrites{Visitor: &vr, Visits: []cloud.Visit{extra},
		Messages: []cloud.Message{m, m}}) // the same message twice: the second insert fails
	require.Error(t, err)
	_, err = e.s.Visit(t.Context(), e.a, v.ID)
	requireNotFound(t, err, "the visit")
	_, err = e.s.Visit(t.Context(), e.a, extra.ID)
	requireNotFound(t, err, "the further visit")
	_, err = e.s.Visitor(t.Context(), e.a, vr.ID)
	requireNotFound(t, err, "the visitor")
	require.Empty(t, e.listMessages(t, e.a, cloud.MessageFilter{}), "the messages")
}

func testVisitUpdate(t *testing.T, e *env) {
	before := e.fullVisit(t, e.a)
	p := e.newPerson(t, e.a, named[cloud.Person]("New lead"))
	want := before
	want.Status, want.Type, want.GateID = cloud.VisitCheckedOut, "meeting", ""
	want.HostID, want.Hosts, want.Audience = p.ID, []cloud.Host{lead(p)}, cloud.AudiencePerson
	want.Team, want.AskedFor, want.NeedsSomeone = nil, nil, false
	want.ExpectedAt, want.ExpectedUntil, want.CancelledAt = ptr(e.tick()), nil, nil
	want.CheckedOutAt, want.Decision, want.RescheduledTo, want.BookingID = ptr(e.tick()), nil, nil, ""
	want.Pass = cloud.Pass{Channels: []string{cloud.ChannelEmail}, Rules: passrule.Rules{Window: passrule.Window{Before: 5}}, Uses: 4}
	want.CustomFields = map[string]json.RawMessage{"badge": json.RawMessage(`{"a":  2}`)}
	want.Receiver = cloud.Receiver{Kind: cloud.ReceiverPerson, PersonID: p.ID}
	want.UpdatedAt = e.tick()
	got, err := e.s.UpdateVisit(t.Context(), e.a, before.ID, func(x *cloud.Visit, w *cloud.VisitWrites) error {
		requireVisit(t, before, *x, "fn sees the visit as stored")
		require.Equal(t, cloud.VisitWrites{}, *w, "fn starts with nothing to write")
		*x = want
		return nil
	})
	require.NoError(t, err)
	requireVisit(t, want, got)
	got, err = e.s.Visit(t.Context(), e.a, before.ID)
	require.NoError(t, err)
	requireVisit(t, want, got)
}

func testVisitUpdateAborts(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	p := e.newPerson(t, e.a)
	v := e.newVisit(t, e.a, s.ID, hostedBy(p))
	at := e.tick()
	vr := cloud.Visitor{ID: ids.New(ids.Visitor), Tenant: e.a, Name: "New", Email: "new@example.com", CreatedAt: at, UpdatedAt: at}
	extra := cloud.Visit{ID: ids.New(ids.Visit), Tenant: e.a, Status: cloud.VisitExpected, Type: "meeting", SiteID: s.ID,
		VisitorID: vr.ID, CreatedAt: at, UpdatedAt: at}
	_, err := e.s.UpdateVisit(t.Context(), e.a, v.ID, func(x *cloud.Visit, w *cloud.VisitWrites) error {
		x.Status, x.HostID, x.Hosts, x.Purpose, x.UpdatedAt = cloud.VisitCancelled, "", nil, "Changed", e.tick()
		x.VisitorID = vr.ID
		w.Visitor = &vr
		w.Visits = append(w.Visits, extra)
		w.Messages = append(w.Messages, e.newMessage(e.a, v.ID))
		return errAbort
	})
	require.ErrorIs(t, err, errAbort)
	got, err := e.s.Visit(t.Context(), e.a, v.ID)
	require.NoError(t, err)
	requireVisit(t, v, got)
	_, err = e.s.Visit(t.Context(), e.a, extra.ID)
	requireNotFound(t, err, "the new visit of an aborted update")
	_, err = e.s.Visitor(t.Context(), e.a, vr.ID)
	requireNotFound(t, err, "the new visitor of an aborted update")
	require.Empty(t, e.listMessages(t, e.a, cloud.MessageFilter{}), "the messages of an aborted update")
	require.Equal(t, []string{v.ID}, idsOf(visitRow, e.listVisits(t, e.a, cloud.VisitFilter{HostID: p.ID})),
		"the hosts of an aborted update")
}

// A reschedule: the visit closes and points at a new visit, which is
// written with a new visitor and the pass message in the same update.
func testVisitUpdateWrites(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	p := e.newPerson(t, e.a)
	v := e.newVisit(t, e.a, s.ID, hostedBy(p))
	at := e.tick()
	vr := cloud.Visitor{ID: ids.New(ids.Visitor), Tenant: e.a, Name: "Replacement", Phone: "+447700900009", CreatedAt: at, UpdatedAt: at}
	next := v
	next.ID, next.VisitorID, next.Visitor, next.CreatedAt, next.UpdatedAt = ids.New(ids.Visit), vr.ID, vr, at, at
	next.ExpectedAt = ptr(at.Add(24 * time.Hour))
	next.Pass.ForVisitID = v.ID
	msg := e.newMessage(e.a, next.ID)

	want := v
	want.Status, want.CancelledAt, want.UpdatedAt = cloud.VisitCancelled, ptr(at), at
	want.RescheduledTo = &cloud.Rescheduled{VisitID: next.ID, At: at}
	want.Pass.Revoked = true
	want.VisitorID, want.Visitor = vr.ID, vr
	got, err := e.s.UpdateVisit(t.Context(), e.a, v.ID, func(x *cloud.Visit, w *cloud.VisitWrites) error {
		x.Status, x.CancelledAt, x.UpdatedAt, x.RescheduledTo = want.Status, want.CancelledAt, want.UpdatedAt, want.RescheduledTo
		x.Pass.Revoked, x.VisitorID = true, vr.ID
		w.Visitor = &vr
		w.Visits = append(w.Visits, next)
		w.Messages = append(w.Messages, msg)
		return nil
	})
	require.NoError(t, err)
	requireVisit(t, want, got, "the visit returned carries the visitor it now points at")
	got, err = e.s.Visit(t.Context(), e.a, v.ID)
	require.NoError(t, err)
	requireVisit(t, want, got)
	got, err = e.s.Visit(t.Context(), e.a, next.ID)
	require.NoError(t, err)
	requireVisit(t, next, got)
	gotVisitor, err := e.s.Visitor(t.Context(), e.a, vr.ID)
	require.NoError(t, err)
	requireVisitor(t, vr, gotVisitor)
	msgs := e.listMessages(t, e.a, cloud.MessageFilter{})
	require.Len(t, msgs, 1)
	require.Equal(t, normMessage(msg), normMessage(msgs[0]))
	require.ElementsMatch(t, []string{v.ID, next.ID}, idsOf(visitRow, e.listVisits(t, e.a, cloud.VisitFilter{HostID: p.ID})))
}

func testVisitUpdateUnknown(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	v := e.newVisit(t, e.a, s.ID)
	for _, c := range []struct {
		name string
		tn   cloud.Tenant
		id   string
	}{{"unknown ID", e.a, ids.New(ids.Visit)}, {"test mode", e.b, v.ID}, {"another organisation", e.c, v.ID}} {
		_, err := e.s.UpdateVisit(t.Context(), c.tn, c.id, func(x *cloud.Visit, w *cloud.VisitWrites) error {
			t.Errorf("%s: fn called", c.name)
			x.Purpose = "Stolen"
			w.Messages = append(w.Messages, e.newMessage(c.tn, c.id))
			return nil
		})
		requireNotFound(t, err, c.name)
	}
	got, err := e.s.Visit(t.Context(), e.a, v.ID)
	require.NoError(t, err)
	requireVisit(t, v, got)
}

// Concurrent updates of one visit take turns: none is lost, and each sees
// the one before.
func testVisitUpdateConcurrent(t *testing.T, e *env) {
	const workers = 8
	s := e.newSite(t, e.a)
	v := e.newVisit(t, e.a, s.ID)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		errs  []error
		uses  []int
		start = make(chan struct{})
	)
	for w := range workers {
		wg.Go(func() {
			<-start
			got, err := e.s.UpdateVisit(t.Context(), e.a, v.ID, func(x *cloud.Visit, wr *cloud.VisitWrites) error {
				x.Pass.Uses++
				wr.Messages = append(wr.Messages, e.newMessage(e.a, v.ID))
				return nil
			})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("worker %d: %w", w, err))
				return
			}
			uses = append(uses, got.Pass.Uses)
		})
	}
	close(start)
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	got, err := e.s.Visit(t.Context(), e.a, v.ID)
	require.NoError(t, err)
	require.Equal(t, workers, got.Pass.Uses, "increments were lost")
	slices.Sort(uses)
	require.Equal(t, []int{1, 2, 3, 4, 5, 6, 7, 8}, uses, "each update saw the one before")
	require.Len(t, e.listMessages(t, e.a, cloud.MessageFilter{VisitID: v.ID}), workers)
}

// testVisitListHostPages checks a host's visits, lead or co-host, come
// newest first over several pages, as every list's do, and that a change
// of a visit's hosts moves it in or out of the list, not in its order.
func testVisitListHostPages(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	p, other := e.newPerson(t, e.a), e.newPerson(t, e.a)
	var want []cloud.Visit
	for i := range 5 {
		hosts := hostedBy(p)
		if i%2 == 1 {
			hosts = hostedBy(other, p)
		}
		want = append(want, e.newVisit(t, e.a, s.ID, hosts))
	}
	e.newVisit(t, e.a, s.ID, hostedBy(other))
	require.Equal(t, newestIDs(visitRow, want...), idsOf(visitRow, e.listVisits(t, e.a, cloud.VisitFilter{HostID: p.ID})))
	// The oldest visit is handed to another host only, then back.
	_, err := e.s.UpdateVisit(t.Context(), e.a, want[0].ID, func(v *cloud.Visit, w *cloud.VisitWrites) error {
		hostedBy(other)(v, w)
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, newestIDs(visitRow, want[1:]...), idsOf(visitRow, e.listVisits(t, e.a, cloud.VisitFilter{HostID: p.ID})))
	_, err = e.s.UpdateVisit(t.Context(), e.a, want[0].ID, func(v *cloud.Visit, w *cloud.VisitWrites) error {
		hostedBy(p)(v, w)
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, newestIDs(visitRow, want...), idsOf(visitRow, e.listVisits(t, e.a, cloud.VisitFilter{HostID: p.ID})))
}

func testVisitListFilters(t *testing.T, e *env) {
	s1, s2 := e.newSite(t, e.a), e.newSite(t, e.a)
	p1, p2, p3 := e.newPerson(t, e.a), e.newPerson(t, e.a), e.newPerson(t, e.a)
	base := e.now.Add(time.Hour)
	expect := func(d time.Duration) func(*cloud.Visit, *cloud.VisitWrites) {
		return func(v *cloud.Visit, _ *cloud.VisitWrites) { v.ExpectedAt = ptr(base.Add(d)) }
	}
	set := func(st cloud.VisitStatus, typ string) func(*cloud.Visit, *cloud.VisitWrites) {
		return func(v *cloud.Visit, _ *cloud.VisitWrites) { v.Status, v.Type = st, typ }
	}
	v1 := e.newVisit(t, e.a, s1.ID, set(cloud.VisitExpected, "meeting"), hostedBy(p1), expect(time.Hour))
	ada := v1.Visitor
	v2 := e.newVisit(t, e.a, s2.ID, set(cloud.VisitCheckedIn, "delivery"), hostedBy(p2, p3), expect(2*time.Hour))
	v3 := e.newVisit(t, e.a, s1.ID, set(cloud.VisitCancelled, "meeting"), visitOf(ada))
	v4 := e.newVisit(t, e.a, s2.ID, set(cloud.VisitExpected, "interview"), hostedBy(p3), expect(3*time.Hour))
	// Another tenant's visit that every filter below would match.
	e.newVisit(t, e.b, s1.ID, set(cloud.VisitExpected, "meeting"), hostedBy(p1, p3), expect(2*time.Hour), visitOf(ada))

	at := func(d time.Duration) *time.Time { return ptr(base.Add(d)) }
	for _, c := range []struct {
		name string
		f    cloud.VisitFilter
		want []cloud.Visit
	}{
		{"none", cloud.VisitFilter{}, []cloud.Visit{v1, v2, v3, v4}},
		{"status", cloud.VisitFilter{Status: []cloud.VisitStatus{cloud.VisitExpected}}, []cloud.Visit{v1, v4}},
		{"statuses", cloud.VisitFilter{Status: []cloud.VisitStatus{cloud.VisitCheckedIn, cloud.VisitExpected}}, []cloud.Visit{v1, v2, v4}},
		{"status nobody has", cloud.VisitFilter{Status: []cloud.VisitStatus{cloud.VisitNoShow}}, nil},
		{"type", cloud.VisitFilter{Type: "meeting"}, []cloud.Visit{v1, v3}},
		{"site", cloud.VisitFilter{SiteID: s2.ID}, []cloud.Visit{v2, v4}},
		{"lead host", cloud.VisitFilter{HostID: p1.ID}, []cloud.Visit{v1}},
		{"lead or co-host", cloud.VisitFilter{HostID: p3.ID}, []cloud.Visit{v2, v4}},
		{"host of nothing", cloud.VisitFilter{HostID: ids.New(ids.Person)}, nil},
		{"visitor", cloud.VisitFilter{VisitorID: ada.ID}, []cloud.Visit{v1, v3}},
		{"expected from, inclusive", cloud.VisitFilter{ExpectedFrom: at(2 * time.Hour)}, []cloud.Visit{v2, v4}},
		{"expected before, exclusive", cloud.VisitFilter{ExpectedBefore: at(2 * time.Hour)}, []cloud.Visit{v1}},
		{"expected between", cloud.VisitFilter{ExpectedFrom: at(time.Hour), ExpectedBefore: at(3 * time.Hour)}, []cloud.Visit{v1, v2}},
		{"created after, exclusive", cloud.VisitFilter{CreatedAfter: ptr(v2.CreatedAt)}, []cloud.Visit{v3, v4}},
		{"status, site and host", cloud.VisitFilter{Status: []cloud.VisitStatus{cloud.VisitExpected}, SiteID: s2.ID, HostID: p3.ID},
			[]cloud.Visit{v4}},
		{"type, visitor and expected", cloud.VisitFilter{Type: "meeting", VisitorID: ada.ID, ExpectedFrom: at(0)}, []cloud.Visit{v1}},
		{"type and site that exclude each other", cloud.VisitFilter{Type: "delivery", SiteID: s1.ID}, nil},
		{"every field", cloud.VisitFilter{Status: []cloud.VisitStatus{cloud.VisitCheckedIn}, Type: "delivery", SiteID: s2.ID,
			HostID: p2.ID, VisitorID: v2.VisitorID, ExpectedFrom: at(time.Hour), ExpectedBefore: at(3 * time.Hour),
			CreatedAfter: ptr(v1.CreatedAt)}, []cloud.Visit{v2}},
	} {
		got := e.listVisits(t, e.a, c.f)
		require.Equal(t, newestIDs(visitRow, c.want...), idsOf(visitRow, got), c.name)
		for _, v := range got {
			want := c.want[slices.IndexFunc(c.want, func(x cloud.Visit) bool { return x.ID == v.ID })]
			requireVisit(t, want, v, "%s: %s", c.name, v.ID)
		}
	}
}

// The host filter finds a visit by any of its hosts, and follows updates
// of the host list.
func testVisitListWaitingWith(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	p := e.newPerson(t, e.a)
	tm := ids.New(ids.Team)
	desk := e.newVisit(t, e.a, s.ID) // newVisit's visits wait with reception
	toPerson := e.newVisit(t, e.a, s.ID, func(v *cloud.Visit, _ *cloud.VisitWrites) {
		v.Receiver = cloud.Receiver{Kind: cloud.ReceiverPerson, PersonID: p.ID}
	})
	toTeam := e.newVisit(t, e.a, s.ID, func(v *cloud.Visit, _ *cloud.VisitWrites) {
		v.Receiver = cloud.Receiver{Kind: cloud.ReceiverTeam, TeamID: tm}
	})
	e.newVisit(t, e.a, s.ID, hostedBy(p)) // taken: waits with nobody
	waiting := func(with string) []string {
		return idsOf(visitRow, e.listVisits(t, e.a, cloud.VisitFilter{WaitingWith: with}))
	}
	require.Equal(t, []string{desk.ID}, waiting(cloud.Reception))
	require.Equal(t, []string{toPerson.ID}, waiting(p.ID), "a visit handed to a person, not one the person hosts")
	require.Equal(t, []string{toTeam.ID}, waiting(tm))
	require.Empty(t, waiting(ids.New(ids.Team)))

	_, err := e.s.UpdateVisit(t.Context(), e.a, desk.ID, func(v *cloud.Visit, _ *cloud.VisitWrites) error {
		v.Receiver = cloud.Receiver{Kind: cloud.ReceiverTeam, TeamID: tm}
		return nil
	})
	require.NoError(t, err)
	require.Empty(t, waiting(cloud.Reception), "moved to the team")
	require.ElementsMatch(t, []string{desk.ID, toTeam.ID}, waiting(tm))
}

func testVisitListHostFilter(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	p1, p2, p3 := e.newPerson(t, e.a), e.newPerson(t, e.a), e.newPerson(t, e.a)
	v := e.newVisit(t, e.a, s.ID, hostedBy(p1, p2))
	hosted := func(p cloud.Person) []string {
		return idsOf(visitRow, e.listVisits(t, e.a, cloud.VisitFilter{HostID: p.ID}))
	}
	require.Equal(t, []string{v.ID}, hosted(p1), "the lead")
	require.Equal(t, []string{v.ID}, hosted(p2), "a co-host")
	require.Empty(t, hosted(p3))

	update := func(ps ...cloud.Person) {
		_, err := e.s.UpdateVisit(t.Context(), e.a, v.ID, func(x *cloud.Visit, _ *cloud.VisitWrites) error {
			hostedBy(ps...)(x, nil)
			return nil
		})
		require.NoError(t, err)
	}
	update(p1)
	require.Equal(t, []string{v.ID}, hosted(p1))
	require.Empty(t, hosted(p2), "a co-host removed")

	update(p3, p1)
	require.Equal(t, []string{v.ID}, hosted(p3), "a new lead")
	require.Equal(t, []string{v.ID}, hosted(p1), "the old lead, now a co-host")

	update()
	require.Empty(t, hosted(p1), "nobody hosts the visit")
	require.Empty(t, hosted(p3), "nobody hosts the visit")
}

func testVisitTenantIsolation(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	p := e.newPerson(t, e.a)
	v := e.newVisit(t, e.a, s.ID, hostedBy(p))
	vb := e.newVisit(t, e.b, e.newSite(t, e.b).ID)
	vc := e.newVisit(t, e.c, e.newSite(t, e.c).ID)
	for _, other := range []cloud.Tenant{e.b, e.c} {
		_, err := e.s.Visit(t.Context(), other, v.ID)
		requireNotFound(t, err, "get in %v", other)
		for _, f := range []cloud.VisitFilter{{SiteID: s.ID}, {HostID: p.ID}, {VisitorID: v.VisitorID}} {
			require.Empty(t, e.listVisits(t, other, f), "list in %v with %+v", other, f)
		}
	}
	require.Equal(t, []string{v.ID}, idsOf(visitRow, e.listVisits(t, e.a, cloud.VisitFilter{})))
	require.Equal(t, []string{vb.ID}, idsOf(visitRow, e.listVisits(t, e.b, cloud.VisitFilter{})))
	require.Equal(t, []string{vc.ID}, idsOf(visitRow, e.listVisits(t, e.c, cloud.VisitFilter{})))
	got, err := e.s.Visit(t.Context(), e.a, v.ID)
	require.NoError(t, err)
	requireVisit(t, v, got)
}

// A visit never shows another tenant's visitor, even one with its ID.
func testVisitVisitorOfTenant(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	vb := e.newVisit(t, e.b, s.ID, withVisitor(func(vr *cloud.Visitor) { vr.Name = "Test-mode visitor" }))
	at := e.tick()
	v := cloud.Visit{ID: ids.New(ids.Visit), Tenant: e.a, Status: cloud.VisitExpected, Type: "meeting", SiteID: s.ID,
		VisitorID: vb.VisitorID, CreatedAt: at, UpdatedAt: at}
	require.NoError(t, e.s.CreateVisit(t.Context(), v, cloud.VisitWrites{}))
	got, err := e.s.Visit(t.Context(), e.a, v.ID)
	require.NoError(t, err)
	requireVisit(t, v, got)
	require.Equal(t, cloud.Visitor{}, got.Visitor)
}

func visitPager(t testing.TB, e *env) (func(time.Time) row, func(cloud.Page) ([]row, bool)) {
	s := e.newSite(t, e.a)
	return func(at time.Time) row {
			return visitRow(e.newVisit(t, e.a, s.ID, func(v *cloud.Visit, _ *cloud.VisitWrites) { v.CreatedAt, v.UpdatedAt = at, at }))
		}, func(p cloud.Page) ([]row, bool) {
			xs, more, err := e.s.ListVisits(t.Context(), e.a, cloud.VisitFilter{}, p)
			return rowsOf(t, visitRow, xs, more, err)
		}
}

// --- messages ---------------------------------------------------------------

func testMessageListAndFilter(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	v1 := e.newVisit(t, e.a, s.ID)
	var m1, m2, m3 cloud.Message
	v2 := e.newVisit(t, e.a, s.ID, func(v *cloud.Visit, w *cloud.VisitWrites) {
		m1 = e.newMessage(e.a, v.ID)
		m2 = e.newMessage(e.a, v.ID)
		m2.Channel, m2.To, m2.Subject, m2.Body, m2.Status = cloud.ChannelSMS, "+447700900001", "", "Pass: https://x.example/p/1", cloud.MessageHeld
		w.Messages = []cloud.Message{m1, m2}
	})
	_, err := e.s.UpdateVisit(t.Context(), e.a, v1.ID, func(_ *cloud.Visit, w *cloud.VisitWrites) error {
		m3 = e.newMessage(e.a, "") // about no visit in particular
		m3.Subject, m3.Body = "Welcome — ünïcödé", "Line one\nLine two"
		w.Messages = append(w.Messages, m3)
		return nil
	})
	require.NoError(t, err)

	all := e.listMessages(t, e.a, cloud.MessageFilter{})
	require.Equal(t, newestIDs(messageRow, m1, m2, m3), idsOf(messageRow, all))
	for _, got := range all {
		want := map[string]cloud.Message{m1.ID: m1, m2.ID: m2, m3.ID: m3}[got.ID]
		require.Equal(t, normMessage(want), normMessage(got))
	}
	require.Equal(t, newestIDs(messageRow, m1, m2), idsOf(messageRow, e.listMessages(t, e.a, cloud.MessageFilter{VisitID: v2.ID})))
	require.Empty(t, e.listMessages(t, e.a, cloud.MessageFilter{VisitID: v1.ID}))
	require.Empty(t, e.listMessages(t, e.a, cloud.MessageFilter{VisitID: ids.New(ids.Visit)}))
	after := m2.CreatedAt
	require.Equal(t, []string{m3.ID}, idsOf(messageRow, e.listMessages(t, e.a, cloud.MessageFilter{CreatedAfter: &after})),
		"CreatedAfter keeps only later messages")
}

func testMessageTenantIsolation(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	var mine cloud.Message
	v := e.newVisit(t, e.a, s.ID, func(v *cloud.Visit, w *cloud.VisitWrites) {
		mine = e.newMessage(e.a, v.ID)
		w.Messages = []cloud.Message{mine}
	})
	var theirs cloud.Message
	e.newVisit(t, e.c, s.ID, func(v *cloud.Visit, w *cloud.VisitWrites) {
		theirs = e.newMessage(e.c, v.ID)
		w.Messages = []cloud.Message{theirs}
	})
	require.Equal(t, []string{mine.ID}, idsOf(messageRow, e.listMessages(t, e.a, cloud.MessageFilter{})))
	require.Equal(t, []string{theirs.ID}, idsOf(messageRow, e.listMessages(t, e.c, cloud.MessageFilter{})))
	require.Empty(t, e.listMessages(t, e.b, cloud.MessageFilter{}))
	for _, other := range []cloud.Tenant{e.b, e.c} {
		require.Empty(t, e.listMessages(t, other, cloud.MessageFilter{VisitID: v.ID}), "list in %v by visit", other)
	}
}

func messagePager(t testing.TB, e *env) (func(time.Time) row, func(cloud.Page) ([]row, bool)) {
	s := e.newSite(t, e.a)
	v := e.newVisit(t, e.a, s.ID)
	return func(at time.Time) row {
			m := e.newMessage(e.a, v.ID)
			m.CreatedAt = at
			_, err := e.s.UpdateVisit(t.Context(), e.a, v.ID, func(_ *cloud.Visit, w *cloud.VisitWrites) error {
				w.Messages = append(w.Messages, m)
				return nil
			})
			require.NoError(t, err)
			return messageRow(m)
		}, func(p cloud.Page) ([]row, bool) {
			xs, more, err := e.s.ListMessages(t.Context(), e.a, cloud.MessageFilter{VisitID: v.ID}, p)
			return rowsOf(t, messageRow, xs, more, err)
		}
}

// --- pass keys --------------------------------------------------------------

var passKeySeq atomic.Int32

func (e *env) newPassKey(t testing.TB, tn cloud.Tenant, opts ...func(*cloud.PassKey)) cloud.PassKey {
	t.Helper()
	k := cloud.PassKey{ID: passKeyID(int(passKeySeq.Add(1))), Tenant: tn, CreatedAt: e.tick(),
		Private: []byte(fmt.Sprintf("ed25519 private key %d: 64 bytes in real life\x00\xff", passKeySeq.Load()))}
	for _, o := range opts {
		o(&k)
	}
	require.NoError(t, e.s.CreatePassKey(t.Context(), k))
	return k
}

func testPassKeyCreateAndList(t *testing.T, e *env) {
	keys, err := e.s.PassKeys(t.Context(), e.a)
	require.NoError(t, err)
	require.NotNil(t, keys, "no keys is an empty list, not nil")
	require.Empty(t, keys, "a tenant starts with no keys")

	base := e.tick()
	// Created out of time order, so insertion order is not the answer.
	middle := e.newPassKey(t, e.a, func(k *cloud.PassKey) { k.CreatedAt = base.Add(time.Hour) })
	oldest := e.newPassKey(t, e.a, func(k *cloud.PassKey) {
		k.CreatedAt, k.RetiredAt = base, ptr(base.Add(2*time.Hour+time.Microsecond))
	})
	newest := e.newPassKey(t, e.a, func(k *cloud.PassKey) { k.CreatedAt = base.Add(3 * time.Hour) })
	keys, err = e.s.PassKeys(t.Context(), e.a)
	require.NoError(t, err)
	require.Len(t, keys, 3)
	for i, want := range []cloud.PassKey{newest, middle, oldest} {
		require.Equal(t, normPassKey(want), normPassKey(keys[i]), "key %d", i)
	}
}

func testPassKeyTenantIsolation(t *testing.T, e *env) {
	a := e.newPassKey(t, e.a)
	// Key IDs are short: another tenant may draw the same one.
	c := e.newPassKey(t, e.c, func(k *cloud.PassKey) { k.ID, k.Private = a.ID, []byte("another key") })
	for tn, want := range map[cloud.Tenant][]cloud.PassKey{e.a: {a}, e.b: nil, e.c: {c}} {
		keys, err := e.s.PassKeys(t.Context(), tn)
		require.NoError(t, err)
		require.Len(t, keys, len(want), "keys of %v", tn)
		for i := range want {
			require.Equal(t, normPassKey(want[i]), normPassKey(keys[i]), "keys of %v", tn)
		}
	}
}

// PassesUntil is the latest EdgeUntil of the visits whose pass works, the
// bound a rotated key retires by.
func testPassesUntil(t *testing.T, e *env) {
	until, err := e.s.PassesUntil(t.Context(), e.a)
	require.NoError(t, err)
	require.Nil(t, until, "no visits")
	site := e.newSite(t, e.a)
	at := func(d time.Duration) *time.Time { return ptr(e.now.Add(d).Truncate(time.Millisecond)) }
	expected := func(end *time.Time, st cloud.VisitStatus) func(*cloud.Visit, *cloud.VisitWrites) {
		return func(v *cloud.Visit, _ *cloud.VisitWrites) { v.ExpectedAt, v.ExpectedUntil, v.Status = at(0), end, st }
	}
	e.newVisit(t, e.a, site.ID, expected(at(48*time.Hour), cloud.VisitExpected))
	e.newVisit(t, e.a, site.ID, expected(at(72*time.Hour), cloud.VisitCheckedOut))
	e.newVisit(t, e.a, site.ID, expected(at(900*time.Hour), cloud.VisitCancelled))
	e.newVisit(t, e.a, site.ID, expected(at(800*time.Hour), cloud.VisitAwaitingApproval))
	e.newVisit(t, e.c, e.newSite(t, e.c).ID, expected(at(1000*time.Hour), cloud.VisitExpected))
	until, err = e.s.PassesUntil(t.Context(), e.a)
	require.NoError(t, err)
	require.NotNil(t, until)
	require.Equal(t, *at(72 * time.Hour), until.UTC(), "cancelled and unapproved visits have no pass; other tenants do not count")
	e.newVisit(t, e.a, site.ID, func(v *cloud.Visit, _ *cloud.VisitWrites) {
		v.Status, v.CheckedInAt = cloud.VisitCheckedIn, at(100*time.Hour)
	})
	until, err = e.s.PassesUntil(t.Context(), e.a)
	require.NoError(t, err)
	require.Equal(t, *at(124 * time.Hour), until.UTC(), "a walk-in's pass lasts its day: EdgeUntil")
}
