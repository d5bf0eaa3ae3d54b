package cloud_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/storetest/stores"
	"github.com/svc-vms/svc/shared/fakeclock"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/sync/protocol"
)

// edgeEnv is a seeded organisation with an edge at its London site.
type edgeEnv struct {
	svc     *cloud.Service
	store   cloud.Store
	clock   *fakeclock.Clock
	tenant  cloud.Tenant
	actor   cloud.Actor
	site    protocol.Site
	entry   string // the site's entry gate
	exit    string // and its exit
	other   cloud.SeedSite
	live    cloud.SeedMode // the organisation's live people and teams
	edge    cloud.Edge
	secret  string
	counter uint64
}

func newEdgeEnv(t *testing.T, store cloud.Store) *edgeEnv {
	t.Helper()
	c := fakeclock.New(time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC))
	svc := cloud.NewService(store, c.Now)
	res, err := svc.Seed(t.Context(), "Acme", cloud.PlanPro)
	require.NoError(t, err)
	tn := cloud.Tenant{OrgID: res.Organisation.ID, Mode: cloud.ModeLive}
	london := res.Live.Sites[0]
	e := &edgeEnv{svc: svc, store: store, clock: c, tenant: tn, site: cloud.EdgeSite(tn, london.ID),
		actor: cloud.Actor{Tenant: tn, KeyID: ids.New(ids.Key), Plan: cloud.PlanPro},
		entry: london.Gates[0], exit: london.Gates[1], other: res.Live.Sites[1], live: res.Live}
	e.edge, e.secret, err = svc.CreateEdge(t.Context(), tn, london.ID, "Reception")
	require.NoError(t, err)
	return e
}

// visit creates a visit expected at the site now, for "Ada Lovelace".
func (e *edgeEnv) visit(t *testing.T) cloud.Visit {
	t.Helper()
	at := e.clock.Now()
	v, err := e.svc.CreateVisit(t.Context(), e.actor, cloud.VisitInput{
		SiteID: cloud.Some(e.site.SiteID), Type: cloud.Some("meeting"), ExpectedAt: cloud.Some(&at),
		Visitor: cloud.Some(&cloud.VisitorInput{Name: cloud.Some("Ada Lovelace")}),
	})
	require.NoError(t, err)
	return v
}

// fact is a fact of the env's edge at its entry gate, scanned a minute
// before now (it reaches the cloud late).
func (e *edgeEnv) fact(kind protocol.FactKind, visitID string) protocol.Fact {
	e.counter++
	return protocol.Fact{ID: ids.New(ids.Fact), Kind: kind, EdgeID: e.edge.ID, Counter: e.counter,
		At: e.clock.Now().Add(-time.Minute), GateID: e.entry, VisitID: visitID}
}

func (e *edgeEnv) get(t *testing.T, id string) cloud.Visit {
	t.Helper()
	v, err := e.store.Visit(t.Context(), e.tenant, id)
	require.NoError(t, err)
	return v
}

func (e *edgeEnv) head(t *testing.T) uint64 {
	t.Helper()
	_, h, err := e.svc.SiteChanges(t.Context(), e.site, 1<<62, 1)
	require.NoError(t, err)
	return h
}

// changesAfter returns the site's changes after seq.
func (e *edgeEnv) changesAfter(t *testing.T, seq uint64) []protocol.Change {
	t.Helper()
	cs, _, err := e.svc.SiteChanges(t.Context(), e.site, seq, 0)
	require.NoError(t, err)
	return cs
}

func (e *edgeEnv) recorded(t *testing.T, id string) cloud.EdgeFact {
	t.Helper()
	rec, err := e.store.EdgeFact(t.Context(), e.tenant, id)
	require.NoError(t, err)
	return rec
}

// conflicts returns the audit events of conflicting facts about a visit.
func (e *edgeEnv) conflicts(t *testing.T, visitID string) []cloud.AuditEvent {
	t.Helper()
	evs, _, err := e.store.ListAuditEvents(t.Context(), e.tenant,
		cloud.AuditFilter{Action: cloud.AuditEdgeFactConflicted, ObjectID: visitID}, cloud.Page{Limit: 100})
	require.NoError(t, err)
	return evs
}

func TestCreateEdge_Authenticate(t *testing.T) {
	stores.Each(t, func(t *testing.T, store cloud.Store) {
		e := newEdgeEnv(t, store)
		require.True(t, ids.Valid(ids.Edge, e.edge.ID))
		require.Equal(t, e.edge.ID, e.edge.Username)
		require.True(t, strings.HasPrefix(e.secret, "svc_edge_"))
		require.Equal(t, cloud.EdgeOffline, e.edge.State)
		require.NotContains(t, string(e.edge.SecretHash), e.secret)

		got, err := e.svc.AuthenticateEdge(t.Context(), e.edge.Username, e.secret)
		require.NoError(t, err)
		require.Equal(t, e.edge.ID, got.ID)
		require.Equal(t, e.site.SiteID, got.SiteID)
		for _, c := range [][2]string{
			{e.edge.Username, e.secret + "x"},
			{e.edge.Username, ""},
			{ids.New(ids.Edge), e.secret},
			{"not an edge", e.secret},
		} {
			_, err := e.svc.AuthenticateEdge(t.Context(), c[0], c[1])
			require.ErrorIs(t, err, cloud.ErrUnauthorized, "%q", c)
		}

		var ve *cloud.ValidationError
		_, _, err = e.svc.CreateEdge(t.Context(), cloud.Tenant{OrgID: e.tenant.OrgID, Mode: cloud.ModeTest}, e.site.SiteID, "")
		require.ErrorAs(t, err, &ve, "the site is live mode's")
		require.Equal(t, "site_id", ve.Fields[0].Field)
		_, _, err = e.svc.CreateEdge(t.Context(), e.tenant, "site_x", "")
		require.ErrorAs(t, err, &ve)
		_, _, err = e.svc.CreateEdge(t.Context(), cloud.Tenant{OrgID: e.tenant.OrgID, Mode: "staging"}, e.site.SiteID, "")
		require.Error(t, err)

		_, _, err = e.svc.CreateEdge(t.Context(), e.tenant, e.site.SiteID, "")
		require.ErrorIs(t, err, cloud.ErrSiteHasEdge, "one appliance per site")
		_, err = e.svc.RevokeEdge(t.Context(), e.tenant, e.edge.ID)
		require.NoError(t, err)
		_, err = e.svc.AuthenticateEdge(t.Context(), e.edge.Username, e.secret)
		require.ErrorIs(t, err, cloud.ErrUnauthorized, "a revoked edge's credentials are refused")
		second, _, err := e.svc.CreateEdge(t.Context(), e.tenant, e.site.SiteID, "")
		require.NoError(t, err)
		require.Equal(t, cloud.DefaultEdgeName, second.Name)
		edges, err := e.svc.Edges(t.Context(), e.tenant, e.site.SiteID)
		require.NoError(t, err)
		require.Len(t, edges, 2)
	})
}

// A check-in from the gate checks the visit in at the scan time, once.
func TestApplyFact_CheckInAtScanTime(t *testing.T) {
	stores.Each(t, func(t *testing.T, store cloud.Store) {
		e := newEdgeEnv(t, store)
		v := e.visit(t)
		e.clock.Advance(10 * time.Minute)
		f := e.fact(protocol.FactCheckIn, v.ID)
		before := e.head(t)
		require.NoError(t, e.svc.ApplyFact(t.Context(), e.site, f))

		got := e.get(t, v.ID)
		require.Equal(t, cloud.VisitCheckedIn, got.Status)
		require.True(t, f.At.Equal(*got.CheckedInAt), "checked in at %v, scanned at %v", got.CheckedInAt, f.At)
		require.False(t, e.clock.Now().Equal(*got.CheckedInAt))
		require.Equal(t, e.entry, got.GateID)
		require.Equal(t, 1, got.Pass.Uses)
		require.True(t, got.NeedsSomeone, "nobody hosts it")

		rec := e.recorded(t, f.ID)
		require.Empty(t, rec.Conflict)
		require.True(t, e.clock.Now().Equal(rec.ReceivedAt))
		require.Equal(t, e.edge.ID, rec.Fact.EdgeID)
		require.Empty(t, e.conflicts(t, v.ID))

		cs := e.changesAfter(t, before)
		require.Len(t, cs, 1)
		require.Equal(t, cloud.EdgeVisit(got), *cs[0].Visit)

		e.clock.Advance(time.Minute)
		require.NoError(t, e.svc.ApplyFact(t.Context(), e.site, f), "a fact applied before is acknowledged again")
		require.Equal(t, 1, e.get(t, v.ID).Pass.Uses)
		require.Equal(t, before+1, e.head(t))
	})
}

// A fact that is not well formed, or not from an edge of its site, is
// rejected and not recorded.
func TestApplyFact_Rejected(t *testing.T) {
	stores.Each(t, func(t *testing.T, store cloud.Store) {
		e := newEdgeEnv(t, store)
		v := e.visit(t)
		elsewhere, _, err := e.svc.CreateEdge(t.Context(), e.tenant, e.other.ID, "New York")
		require.NoError(t, err)
		malformed := e.fact(protocol.FactCheckIn, v.ID)
		malformed.Counter = 0
		stranger := e.fact(protocol.FactCheckIn, v.ID)
		stranger.EdgeID = elsewhere.ID
		unknown := e.fact(protocol.FactCheckIn, v.ID)
		unknown.EdgeID = ids.New(ids.Edge)
		otherMode := e.site
		otherMode.Mode = string(cloud.ModeTest)
		cases := []struct {
			name string
			site protocol.Site
			f    protocol.Fact
		}{
			{"malformed", e.site, malformed},
			{"another site's edge", e.site, stranger},
			{"unknown edge", e.site, unknown},
			{"the site in another mode", otherMode, e.fact(protocol.FactCheckIn, v.ID)},
			{"not a site", protocol.Site{Mode: "live", OrgID: "x", SiteID: "y"}, e.fact(protocol.FactCheckIn, v.ID)},
		}
		head := e.head(t)
		for _, c := range cases {
			err := e.svc.ApplyFact(t.Context(), c.site, c.f)
			require.ErrorIs(t, err, cloud.ErrEdgeRejected, c.name)
			_, err = e.store.EdgeFact(t.Context(), e.tenant, c.f.ID)
			require.ErrorIs(t, err, cloud.ErrNotFound, c.name)
		}
		require.Equal(t, cloud.VisitExpected, e.get(t, v.ID).Status)
		require.Equal(t, head, e.head(t))
	})
}

// A batch applies each fact as ApplyFact would, in one transaction: a
// rejected fact does not fail the others, a fact applied before and a
// second copy in the batch are acknowledged without effect, a conflict is
// recorded with its fact and audited, and a visit checked in and out in
// one batch goes out on the feed once, as the check-out left it.
func TestApplyFacts_Batch(t *testing.T) {
	stores.Each(t, func(t *testing.T, store cloud.Store) {
		e := newEdgeEnv(t, store)
		v1, v2, cancelled := e.visit(t), e.visit(t), e.visit(t)
		_, err := e.svc.Cancel(t.Context(), e.actor, cancelled.ID)
		require.NoError(t, err)
		earlier := e.fact(protocol.FactCheckIn, v2.ID)
		require.NoError(t, e.svc.ApplyFact(t.Context(), e.site, earlier))
		e.clock.Advance(10 * time.Minute)
		before := e.head(t)

		in, out := e.fact(protocol.FactCheckIn, v1.ID), e.fact(protocol.FactCheckOut, v1.ID)
		out.At = in.At.Add(30 * time.Second)
		stranger := e.fact(protocol.FactCheckIn, v2.ID)
		stranger.EdgeID = ids.New(ids.Edge)
		late := e.fact(protocol.FactCheckIn, cancelled.ID)
		batch := []protocol.Fact{in, stranger, earlier, late, out, in}
		errs, err := e.svc.ApplyFacts(t.Context(), e.site, batch)
		require.NoError(t, err)
		require.Len(t, errs, len(batch))
		for i, err := range errs {
			if i == 1 {
				require.ErrorIs(t, err, cloud.ErrEdgeRejected, "the unknown edge's fact")
				continue
			}
			require.NoError(t, err, "fact %d", i)
		}
		_, err = e.store.EdgeFact(t.Context(), e.tenant, stranger.ID)
		require.ErrorIs(t, err, cloud.ErrNotFound, "a rejected fact is not recorded")

		got := e.get(t, v1.ID)
		require.Equal(t, cloud.VisitCheckedOut, got.Status)
		require.True(t, in.At.Equal(*got.CheckedInAt))
		require.True(t, out.At.Equal(*got.CheckedOutAt))
		require.Equal(t, 1, got.Pass.Uses, "the second copy of the check-in did nothing")
		require.Empty(t, e.recorded(t, in.ID).Conflict)
		require.Empty(t, e.recorded(t, out.ID).Conflict)
		require.Equal(t, 1, e.get(t, v2.ID).Pass.Uses, "the fact applied before did nothing")

		require.Equal(t, cloud.VisitCancelled, e.get(t, cancelled.ID).Status)
		require.Equal(t, cloud.ConflictEnded, e.recorded(t, late.ID).Conflict)
		evs := e.conflicts(t, cancelled.ID)
		require.Len(t, evs, 1)
		var detail map[string]any
		require.NoError(t, json.Unmarshal(evs[0].Detail, &detail))
		require.Equal(t, late.ID, detail["fact_id"])
		require.Empty(t, e.conflicts(t, v1.ID))

		cs := e.changesAfter(t, before)
		require.Len(t, cs, 2, "each visit the batch touched goes out once")
		require.Equal(t, cloud.EdgeVisit(got), *cs[0].Visit)
		require.Equal(t, "cancelled", cs[1].Visit.Status)

		errs, err = e.svc.ApplyFacts(t.Context(), e.site, batch)
		require.NoError(t, err)
		require.ErrorIs(t, errs[1], cloud.ErrEdgeRejected)
		require.Equal(t, before+2, e.head(t), "a batch applied before writes nothing")
	})
}

// A check-in of a cancelled visit is recorded and flagged, the visit stays
// cancelled, and goes out again so the edge converges.
func TestApplyFact_ConflictWithCancelledVisit(t *testing.T) {
	stores.Each(t, func(t *testing.T, store cloud.Store) {
		e := newEdgeEnv(t, store)
		v := e.visit(t)
		_, err := e.svc.Cancel(t.Context(), e.actor, v.ID)
		require.NoError(t, err)
		before := e.head(t)
		f := e.fact(protocol.FactCheckIn, v.ID)
		require.NoError(t, e.svc.ApplyFact(t.Context(), e.site, f))

		got := e.get(t, v.ID)
		require.Equal(t, cloud.VisitCancelled, got.Status, "the cloud's ending wins")
		require.Nil(t, got.CheckedInAt)
		require.Zero(t, got.Pass.Uses)
		require.Equal(t, cloud.ConflictEnded, e.recorded(t, f.ID).Conflict)

		evs := e.conflicts(t, v.ID)
		require.Len(t, evs, 1)
		ev := evs[0]
		require.Equal(t, cloud.ActorEdge, ev.ActorKind)
		require.Equal(t, e.edge.ID, ev.ActorID)
		require.Equal(t, "visit", ev.ObjectType)
		var detail map[string]any
		require.NoError(t, json.Unmarshal(ev.Detail, &detail))
		require.Equal(t, f.ID, detail["fact_id"])
		require.Equal(t, "check_in", detail["kind"])
		require.Equal(t, cloud.ConflictEnded, detail["conflict"])
		require.Equal(t, "cancelled", detail["status"])

		cs := e.changesAfter(t, before)
		require.Len(t, cs, 1, "the visit goes out again")
		require.Equal(t, "cancelled", cs[0].Visit.Status)
	})
}

// Check-out, then re-entries on the same pass: each new visit is a copy
// of the newest visit of the pass, checked in at the scan time.
func TestApplyFact_CheckOutAndReEntry(t *testing.T) {
	stores.Each(t, func(t *testing.T, store cloud.Store) {
		e := newEdgeEnv(t, store)
		v := e.visit(t)
		in := e.fact(protocol.FactCheckIn, v.ID)
		require.NoError(t, e.svc.ApplyFact(t.Context(), e.site, in))
		e.clock.Advance(time.Hour)
		out := e.fact(protocol.FactCheckOut, v.ID)
		out.GateID = e.exit
		require.NoError(t, e.svc.ApplyFact(t.Context(), e.site, out))
		got := e.get(t, v.ID)
		require.Equal(t, cloud.VisitCheckedOut, got.Status)
		require.True(t, out.At.Equal(*got.CheckedOutAt))
		require.True(t, in.At.Equal(*got.CheckedInAt))

		e.clock.Advance(time.Hour)
		before := e.head(t)
		re := e.fact(protocol.FactReEntry, ids.New(ids.Visit))
		re.PassVisitID = v.ID
		require.NoError(t, e.svc.ApplyFact(t.Context(), e.site, re))
		holder := e.get(t, v.ID)
		require.Equal(t, re.VisitID, holder.ReenteredAs)
		require.Equal(t, cloud.VisitCheckedOut, holder.Status)
		first := e.get(t, re.VisitID)
		require.Equal(t, cloud.VisitCheckedIn, first.Status)
		require.True(t, re.At.Equal(*first.CheckedInAt))
		require.Equal(t, v.ID, first.Pass.ForVisitID)
		require.Equal(t, 2, first.Pass.Uses)
		require.Equal(t, holder.VisitorID, first.VisitorID)
		require.Equal(t, "Ada Lovelace", first.Visitor.Name)
		require.Equal(t, holder.Type, first.Type)
		require.Equal(t, e.entry, first.GateID)
		require.Empty(t, e.recorded(t, re.ID).Conflict)
		cs := e.changesAfter(t, before)
		require.Len(t, cs, 2)
		require.Equal(t, v.ID, cs[0].Visit.ID)
		require.Equal(t, re.VisitID, cs[0].Visit.ReenteredAs)
		require.Equal(t, re.VisitID, cs[1].Visit.ID)
		require.Equal(t, v.ID, cs[1].Visit.ForVisitID)

		// Out again, and in again on the holder's pass: the new visit is
		// made from the first re-entry, the newest.
		out2 := e.fact(protocol.FactCheckOut, re.VisitID)
		require.NoError(t, e.svc.ApplyFact(t.Context(), e.site, out2))
		re2 := e.fact(protocol.FactReEntry, ids.New(ids.Visit))
		re2.PassVisitID = v.ID
		require.NoError(t, e.svc.ApplyFact(t.Context(), e.site, re2))
		require.Equal(t, re2.VisitID, e.get(t, re.VisitID).ReenteredAs)
		require.Equal(t, re.VisitID, e.get(t, v.ID).ReenteredAs, "the holder keeps its first re-entry")
		second := e.get(t, re2.VisitID)
		require.Equal(t, v.ID, second.Pass.ForVisitID)
		require.Equal(t, 3, second.Pass.Uses)
		require.Empty(t, e.recorded(t, re2.ID).Conflict)

		// A re-entry from a visit still checked in is made and flagged.
		re3 := e.fact(protocol.FactReEntry, ids.New(ids.Visit))
		re3.PassVisitID = v.ID
		require.NoError(t, e.svc.ApplyFact(t.Context(), e.site, re3))
		require.Equal(t, cloud.ConflictNotCheckedOut, e.recorded(t, re3.ID).Conflict)
		require.Equal(t, cloud.VisitCheckedIn, e.get(t, re3.VisitID).Status)
		require.Len(t, e.conflicts(t, re3.VisitID), 1)

		// A re-entry whose new visit ID is taken makes nothing.
		dup := e.fact(protocol.FactReEntry, re3.VisitID)
		dup.PassVisitID = v.ID
		require.NoError(t, e.svc.ApplyFact(t.Context(), e.site, dup))
		require.Equal(t, cloud.ConflictVisitExists, e.recorded(t, dup.ID).Conflict)
	})
}

// Facts of one visit arriving out of order leave it as in order, the
// check-out flagged as it found the visit not checked in.
func TestApplyFact_OutOfOrder(t *testing.T) {
	stores.Each(t, func(t *testing.T, store cloud.Store) {
		e := newEdgeEnv(t, store)
		v := e.visit(t)
		in := e.fact(protocol.FactCheckIn, v.ID)
		e.clock.Advance(time.Hour)
		out := e.fact(protocol.FactCheckOut, v.ID)
		out.GateID = e.exit
		require.NoError(t, e.svc.ApplyFact(t.Context(), e.site, out))
		require.Equal(t, cloud.ConflictNotCheckedIn, e.recorded(t, out.ID).Conflict)
		got := e.get(t, v.ID)
		require.Equal(t, cloud.VisitCheckedOut, got.Status)
		require.Nil(t, got.CheckedInAt)

		require.NoError(t, e.svc.ApplyFact(t.Context(), e.site, in))
		require.Empty(t, e.recorded(t, in.ID).Conflict)
		got = e.get(t, v.ID)
		require.Equal(t, cloud.VisitCheckedOut, got.Status)
		require.True(t, in.At.Equal(*got.CheckedInAt))
		require.True(t, out.At.Equal(*got.CheckedOutAt))
		require.Equal(t, 1, got.Pass.Uses)
		require.Equal(t, e.entry, got.GateID)
	})
}

// A check-in of a visit the desk has checked in counts the use and is
// flagged; the first admission's time stays.
func TestApplyFact_AlreadyCheckedIn(t *testing.T) {
	stores.Each(t, func(t *testing.T, store cloud.Store) {
		e := newEdgeEnv(t, store)
		v := e.visit(t)
		_, err := e.svc.CheckIn(t.Context(), e.actor, v.ID, cloud.CheckInInput{})
		require.NoError(t, err)
		desk := e.get(t, v.ID).CheckedInAt
		e.clock.Advance(time.Hour)
		f := e.fact(protocol.FactCheckIn, v.ID)
		require.NoError(t, e.svc.ApplyFact(t.Context(), e.site, f))
		got := e.get(t, v.ID)
		require.Equal(t, cloud.VisitCheckedIn, got.Status)
		require.Equal(t, 2, got.Pass.Uses)
		require.True(t, desk.Equal(*got.CheckedInAt))
		require.Equal(t, cloud.ConflictAlreadyCheckedIn, e.recorded(t, f.ID).Conflict)
	})
}

// A fact about a visit the site does not have, or through a gate that is
// not the site's, is recorded and flagged.
func TestApplyFact_UnknownVisitOrGate(t *testing.T) {
	stores.Each(t, func(t *testing.T, store cloud.Store) {
		e := newEdgeEnv(t, store)
		head := e.head(t)
		ghost := e.fact(protocol.FactCheckIn, ids.New(ids.Visit))
		require.NoError(t, e.svc.ApplyFact(t.Context(), e.site, ghost))
		require.Equal(t, cloud.ConflictUnknownVisit, e.recorded(t, ghost.ID).Conflict)
		require.Len(t, e.conflicts(t, ghost.VisitID), 1)
		require.Equal(t, head, e.head(t), "no visit to send")

		v := e.visit(t)
		f := e.fact(protocol.FactCheckIn, v.ID)
		f.GateID = e.other.Gates[0]
		require.NoError(t, e.svc.ApplyFact(t.Context(), e.site, f))
		require.Equal(t, cloud.ConflictUnknownGate, e.recorded(t, f.ID).Conflict)
		got := e.get(t, v.ID)
		require.Equal(t, cloud.VisitCheckedIn, got.Status, "the visitor came in all the same")
		require.Empty(t, got.GateID)
	})
}

// A refused scan is recorded and changes nothing.
func TestApplyFact_Refused(t *testing.T) {
	stores.Each(t, func(t *testing.T, store cloud.Store) {
		e := newEdgeEnv(t, store)
		v := e.visit(t)
		head := e.head(t)
		f := e.fact(protocol.FactRefused, v.ID)
		f.Reason = "expired"
		require.NoError(t, e.svc.ApplyFact(t.Context(), e.site, f))
		rec := e.recorded(t, f.ID)
		require.Equal(t, "expired", rec.Fact.Reason)
		require.Empty(t, rec.Conflict)
		require.Equal(t, head, e.head(t))
		require.Equal(t, cloud.VisitExpected, e.get(t, v.ID).Status)
	})
}

// The same fact through several callers at once is applied once.
func TestApplyFact_Concurrent(t *testing.T) {
	stores.Each(t, func(t *testing.T, store cloud.Store) {
		e := newEdgeEnv(t, store)
		v := e.visit(t)
		f := e.fact(protocol.FactCheckIn, v.ID)
		var wg sync.WaitGroup
		errs := make(chan error, 6)
		for range 6 {
			wg.Go(func() { errs <- e.svc.ApplyFact(t.Context(), e.site, f) })
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		require.Equal(t, 1, e.get(t, v.ID).Pass.Uses)
	})
}

// OnChange hears of every committed write that may feed a site, and not
// of a fact applied before.
func TestOnChange(t *testing.T) {
	stores.Each(t, func(t *testing.T, store cloud.Store) {
		e := newEdgeEnv(t, store)
		var n atomic.Int32
		e.svc.OnChange(func() { n.Add(1) })
		v := e.visit(t)
		require.Equal(t, int32(1), n.Load())
		f := e.fact(protocol.FactCheckIn, v.ID)
		require.NoError(t, e.svc.ApplyFact(t.Context(), e.site, f))
		require.Equal(t, int32(2), n.Load())
		require.NoError(t, e.svc.ApplyFact(t.Context(), e.site, f))
		require.Equal(t, int32(2), n.Load(), "nothing new")
		_, err := e.svc.Cancel(t.Context(), e.actor, v.ID)
		require.Error(t, err)
		require.Equal(t, int32(2), n.Load(), "a write that failed")
		_, err = e.svc.CreateGate(t.Context(), e.tenant, cloud.GateInput{SiteID: cloud.Some(e.site.SiteID),
			Name: cloud.Some("Side door"), Direction: cloud.Some(cloud.DirectionBoth)})
		require.NoError(t, err)
		require.Equal(t, int32(3), n.Load())
	})
}

// OnChange hears of a write made in one transaction (Service.atomic, as
// CreateVisit makes it) once the transaction has committed: a publisher
// woken by it finds the write's change on the feed.
func TestOnChange_AfterTheCommit(t *testing.T) {
	stores.Each(t, func(t *testing.T, store cloud.Store) {
		e := newEdgeEnv(t, store)
		var heads []uint64
		e.svc.OnChange(func() {
			h, err := store.FeedHead(t.Context(), e.tenant, e.site.SiteID)
			require.NoError(t, err)
			heads = append(heads, h)
		})
		e.visit(t)
		h, err := store.FeedHead(t.Context(), e.tenant, e.site.SiteID)
		require.NoError(t, err)
		require.Equal(t, []uint64{h}, heads, "one notice, after the visit's change committed")
	})
}

func TestRecordEdgeStatus(t *testing.T) {
	stores.Each(t, func(t *testing.T, store cloud.Store) {
		e := newEdgeEnv(t, store)
		st := protocol.Status{EdgeID: e.edge.ID, State: cloud.EdgeOnline, At: e.clock.Now(), Seq: 12, Outbox: 2, Software: "0.4.0"}
		require.NoError(t, e.svc.RecordEdgeStatus(t.Context(), e.site, st))
		edges, err := e.svc.Edges(t.Context(), e.tenant, e.site.SiteID)
		require.NoError(t, err)
		require.Equal(t, cloud.EdgeOnline, edges[0].State)
		require.Equal(t, uint64(12), edges[0].Seq)
		require.True(t, e.clock.Now().Equal(*edges[0].LastSeenAt))

		// Silent for as long as EdgeSilentAfter: still online. A moment
		// longer, and it is offline since then, though no will arrived.
		seen := e.clock.Now()
		e.clock.Advance(cloud.EdgeSilentAfter)
		edges, err = e.svc.Edges(t.Context(), e.tenant, e.site.SiteID)
		require.NoError(t, err)
		require.Equal(t, cloud.EdgeOnline, edges[0].State)
		e.clock.Advance(time.Second)
		edges, err = e.svc.Edges(t.Context(), e.tenant, e.site.SiteID)
		require.NoError(t, err)
		require.Equal(t, cloud.EdgeOffline, edges[0].State, "silent too long")
		require.True(t, seen.Add(cloud.EdgeSilentAfter).Equal(*edges[0].StateSince), "offline since %v", edges[0].StateSince)
		require.True(t, seen.Equal(*edges[0].LastSeenAt), "last contact unchanged")
		st.At = e.clock.Now()
		require.NoError(t, e.svc.RecordEdgeStatus(t.Context(), e.site, st))
		edges, err = e.svc.Edges(t.Context(), e.tenant, e.site.SiteID)
		require.NoError(t, err)
		require.Equal(t, cloud.EdgeOnline, edges[0].State, "heard from again")

		elsewhere := cloud.EdgeSite(e.tenant, e.other.ID)
		require.ErrorIs(t, e.svc.RecordEdgeStatus(t.Context(), elsewhere, st), cloud.ErrEdgeRejected)
		bad := st
		bad.State = "asleep"
		require.ErrorIs(t, e.svc.RecordEdgeStatus(t.Context(), e.site, bad), cloud.ErrEdgeRejected)
	})
}

func TestSiteSnapshot(t *testing.T) {
	stores.Each(t, func(t *testing.T, store cloud.Store) {
		e := newEdgeEnv(t, store)
		v := e.visit(t)
		snap, err := e.svc.SiteSnapshot(t.Context(), e.site)
		require.NoError(t, err)
		require.Empty(t, snap.Keys, "no pass signed yet, no key")
		_, err = e.svc.PassToken(t.Context(), e.actor, v.ID)
		require.NoError(t, err)
		keys, err := e.svc.PassKeySet(t.Context(), e.tenant)
		require.NoError(t, err)
		snap, err = e.svc.SiteSnapshot(t.Context(), e.site)
		require.NoError(t, err)
		require.Equal(t, e.head(t), snap.Seq)
		require.Len(t, snap.Gates, 2)
		require.Len(t, snap.Keys, 1, "signing the first pass made the tenant's first key")
		require.Equal(t, []byte(keys[snap.Keys[0].ID]), snap.Keys[0].Public, "the key passes are verified with")
		require.Len(t, snap.Visits, 1)
		require.Equal(t, cloud.EdgeVisit(e.get(t, v.ID)), snap.Visits[0])
		require.Equal(t, "Europe/London", snap.Settings.Timezone)

		_, err = e.svc.SiteSnapshot(t.Context(), protocol.Site{Mode: "live", OrgID: "x", SiteID: "y"})
		require.ErrorIs(t, err, cloud.ErrNotFound)
		_, err = e.svc.SiteSnapshot(t.Context(), cloud.EdgeSite(e.tenant, ids.New(ids.Site)))
		require.ErrorIs(t, err, cloud.ErrNotFound)
		_, _, err = e.svc.SiteChanges(t.Context(), cloud.EdgeSite(e.tenant, ids.New(ids.Site)), 0, 0)
		require.True(t, errors.Is(err, cloud.ErrNotFound))
	})
}

// A punch fact becomes one attendance event (source gate, the scan time,
// the fact's ID), however often it is applied, and changes no visit; a
// punch by nobody of the organisation is recorded with its conflict and
// makes none.
func TestApplyFact_Punch(t *testing.T) {
	stores.Each(t, func(t *testing.T, store cloud.Store) {
		e := newEdgeEnv(t, store)
		p, err := e.svc.CreatePerson(t.Context(), e.tenant, cloud.PersonInput{Name: cloud.Some("Ada Lovelace")})
		require.NoError(t, err)
		head := e.head(t)
		f := e.fact(protocol.FactPunch, "")
		f.PersonID, f.Direction = p.ID, protocol.DirectionIn
		require.NoError(t, e.svc.ApplyFact(t.Context(), e.site, f))
		require.NoError(t, e.svc.ApplyFact(t.Context(), e.site, f), "again: applied before")
		rec := e.recorded(t, f.ID)
		require.Equal(t, protocol.FactPunch, rec.Fact.Kind)
		require.Empty(t, rec.Conflict)
		require.Equal(t, head, e.head(t), "no feed change")
		punches, _, err := store.ListPunches(t.Context(), e.tenant, cloud.PunchFilter{PersonID: p.ID}, cloud.Page{Limit: 10})
		require.NoError(t, err)
		require.Len(t, punches, 1, "one attendance event for the fact, applied twice")
		require.Equal(t, cloud.SourceGate, punches[0].Source)
		require.Equal(t, cloud.PunchIn, punches[0].Kind)
		require.Equal(t, f.ID, punches[0].FactID)
		require.Equal(t, f.EdgeID, punches[0].EdgeID)
		require.True(t, f.At.UTC().Truncate(time.Microsecond).Equal(punches[0].OccurredAt))

		nobody := e.fact(protocol.FactPunch, "")
		nobody.PersonID, nobody.Direction = ids.New(ids.Person), protocol.DirectionOut
		require.NoError(t, e.svc.ApplyFact(t.Context(), e.site, nobody))
		require.Equal(t, cloud.ConflictUnknownPerson, e.recorded(t, nobody.ID).Conflict)
		all, _, err := store.ListPunches(t.Context(), e.tenant, cloud.PunchFilter{}, cloud.Page{Limit: 10})
		require.NoError(t, err)
		require.Len(t, all, 1)

		refused := e.fact(protocol.FactRefused, "")
		refused.PersonID, refused.Reason = p.ID, protocol.ReasonPassReplaced
		require.NoError(t, e.svc.ApplyFact(t.Context(), e.site, refused))
		require.Equal(t, protocol.ReasonPassReplaced, e.recorded(t, refused.ID).Fact.Reason)
	})
}

// A snapshot holds every person of the tenant, active or not.
func TestSiteSnapshot_People(t *testing.T) {
	stores.Each(t, func(t *testing.T, store cloud.Store) {
		e := newEdgeEnv(t, store)
		snap, err := e.svc.SiteSnapshot(t.Context(), e.site)
		require.NoError(t, err)
		people, _, err := store.ListPeople(t.Context(), e.tenant, cloud.PersonFilter{}, cloud.Page{Limit: 100})
		require.NoError(t, err)
		require.Len(t, snap.People, len(people), "the seed's people")
		var want []protocol.Person
		inactive := 0
		for _, p := range people {
			want = append(want, cloud.EdgePerson(p))
			if !p.Active {
				inactive++
			}
		}
		require.ElementsMatch(t, want, snap.People)
		require.Positive(t, inactive, "deactivated people too")
	})
}

// voids is the relay_failed refusal a gate records when its relay did not
// open after it recorded admit: same visit, same scan time.
func (e *edgeEnv) voids(admit protocol.Fact) protocol.Fact {
	f := e.fact(protocol.FactRefused, admit.VisitID)
	f.Reason, f.Voids, f.At, f.GateID, f.PassVisitID = protocol.ReasonRelayFailed, admit.ID, admit.At, admit.GateID, admit.PassVisitID
	return f
}

// voided returns the audit events of voided admits about an object.
func (e *edgeEnv) voided(t *testing.T, objectID string) []cloud.AuditEvent {
	t.Helper()
	evs, _, err := e.store.ListAuditEvents(t.Context(), e.tenant,
		cloud.AuditFilter{Action: cloud.AuditEdgeAdmitVoided, ObjectID: objectID}, cloud.Page{Limit: 100})
	require.NoError(t, err)
	return evs
}

// A relay that failed after its gate recorded an admit: the refusal that
// voids it puts the visit back as it was, and is audited. Applied in one
// batch with the admit, as an edge coming back online sends them.
func TestApplyFact_VoidedAdmits(t *testing.T) {
	stores.Each(t, func(t *testing.T, store cloud.Store) {
		e := newEdgeEnv(t, store)

		// A check-in voided: expected again, the use given back.
		v := e.visit(t)
		in := e.fact(protocol.FactCheckIn, v.ID)
		void := e.voids(in)
		errs, err := e.svc.ApplyFacts(t.Context(), e.site, []protocol.Fact{in, void})
		require.NoError(t, err)
		require.Empty(t, slices.DeleteFunc(errs, func(err error) bool { return err == nil }))
		got := e.get(t, v.ID)
		require.Equal(t, cloud.VisitExpected, got.Status)
		require.Nil(t, got.CheckedInAt)
		require.Zero(t, got.Pass.Uses)
		require.Empty(t, e.recorded(t, void.ID).Conflict)
		audit := e.voided(t, v.ID)
		require.Len(t, audit, 1)
		require.Contains(t, string(audit[0].Detail), in.ID)

		// Checked in for real, then a check-out voided: still in.
		in2 := e.fact(protocol.FactCheckIn, v.ID)
		require.NoError(t, e.svc.ApplyFact(t.Context(), e.site, in2))
		e.clock.Advance(time.Hour)
		out := e.fact(protocol.FactCheckOut, v.ID)
		out.GateID = e.exit
		require.NoError(t, e.svc.ApplyFact(t.Context(), e.site, out))
		require.NoError(t, e.svc.ApplyFact(t.Context(), e.site, e.voids(out)))
		got = e.get(t, v.ID)
		require.Equal(t, cloud.VisitCheckedIn, got.Status)
		require.Nil(t, got.CheckedOutAt)
		require.True(t, in2.At.Equal(*got.CheckedInAt))

		// Out for real, then a re-entry voided: its visit is cancelled and
		// the holder names no re-entry.
		e.clock.Advance(time.Hour)
		out2 := e.fact(protocol.FactCheckOut, v.ID)
		require.NoError(t, e.svc.ApplyFact(t.Context(), e.site, out2))
		re := e.fact(protocol.FactReEntry, ids.New(ids.Visit))
		re.PassVisitID = v.ID
		require.NoError(t, e.svc.ApplyFact(t.Context(), e.site, re))
		require.Equal(t, re.VisitID, e.get(t, v.ID).ReenteredAs)
		require.NoError(t, e.svc.ApplyFact(t.Context(), e.site, e.voids(re)))
		require.Equal(t, cloud.VisitCancelled, e.get(t, re.VisitID).Status)
		require.Empty(t, e.get(t, v.ID).ReenteredAs)
		require.Equal(t, cloud.VisitCheckedOut, e.get(t, v.ID).Status)

		// A void of an admit the visit no longer shows changes nothing and
		// is flagged.
		late := e.voids(in2)
		require.NoError(t, e.svc.ApplyFact(t.Context(), e.site, late))
		require.Equal(t, cloud.ConflictNotVoided, e.recorded(t, late.ID).Conflict)
		require.Equal(t, cloud.VisitCheckedOut, e.get(t, v.ID).Status)
	})
}

// A passage, a personal pass held to a reader again within the repeat
// window, is recorded and makes no punch.
func TestApplyFact_Passage(t *testing.T) {
	stores.Each(t, func(t *testing.T, store cloud.Store) {
		e := newEdgeEnv(t, store)
		f := e.fact(protocol.FactPassage, "")
		f.PersonID, f.Direction = ids.New(ids.Person), protocol.DirectionIn
		require.NoError(t, e.svc.ApplyFact(t.Context(), e.site, f))
		rec := e.recorded(t, f.ID)
		require.Equal(t, protocol.FactPassage, rec.Fact.Kind)
		require.Empty(t, rec.Conflict)
		punches, _, err := e.store.ListPunches(t.Context(), e.tenant, cloud.PunchFilter{PersonID: f.PersonID}, cloud.Page{Limit: 10})
		require.NoError(t, err)
		require.Empty(t, punches)
	})
}

// A revoked edge can no longer write to the cloud or read its site: its
// facts and statuses are refused, and so would its resyncs be.
func TestRevokedEdge_Refused(t *testing.T) {
	stores.Each(t, func(t *testing.T, store cloud.Store) {
		e := newEdgeEnv(t, store)
		v := e.visit(t)
		require.NoError(t, e.svc.SiteEdge(t.Context(), e.site, e.edge.ID))
		_, err := e.svc.RevokeEdge(t.Context(), e.tenant, e.edge.ID)
		require.NoError(t, err)
		f := e.fact(protocol.FactCheckIn, v.ID)
		require.ErrorIs(t, e.svc.ApplyFact(t.Context(), e.site, f), cloud.ErrEdgeRejected)
		require.Equal(t, cloud.VisitExpected, e.get(t, v.ID).Status, "nothing applied")
		require.ErrorIs(t, e.svc.SiteEdge(t.Context(), e.site, e.edge.ID), cloud.ErrEdgeRejected)
		err = e.svc.RecordEdgeStatus(t.Context(), e.site, protocol.Status{EdgeID: e.edge.ID, State: "online", At: e.clock.Now(), Software: "test"})
		require.ErrorIs(t, err, cloud.ErrEdgeRejected)
		_, err = e.svc.RevokeEdge(t.Context(), cloud.Tenant{OrgID: e.tenant.OrgID, Mode: cloud.ModeTest}, e.edge.ID)
		require.ErrorIs(t, err, cloud.ErrNotFound, "another mode's edge")
	})
}
