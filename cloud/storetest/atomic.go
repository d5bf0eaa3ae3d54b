package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/shared/ids"
)

// Atomic: one write request's reads and writes in one transaction
// (docs/decisions.md, "One transaction per write request (issue 20)").

func atomicTests() []test {
	return []test{
		{"CommitsEveryWriteOnce", testAtomicCommitsOnce},
		{"AllOrNothing", testAtomicAllOrNothing},
		{"FailedWriteFailsTheWhole", testAtomicFailedWriteFails},
		{"ReadsAfterAWriteSeeIt", testAtomicReadsSeeWrites},
		{"NoWriteNoCommit", testAtomicNoWrite},
		{"ReadsAheadAnswerAsReads", testAtomicReadsAhead},
		{"AWriteDropsTheReadsAhead", testAtomicReadsAheadThenWrite},
	}
}

func (e *env) atomicVisit(t testing.TB) (cloud.Visit, cloud.Visitor) {
	s := e.newSite(t, e.a)
	at := e.tick()
	vr := cloud.Visitor{ID: ids.New(ids.Visitor), Tenant: e.a, Name: "Ada", Email: ids.New("x") + "@example.com", CreatedAt: at, UpdatedAt: at}
	v := cloud.Visit{ID: ids.New(ids.Visit), Tenant: e.a, Status: cloud.VisitExpected, Type: "meeting", SiteID: s.ID,
		VisitorID: vr.ID, CreatedAt: at, UpdatedAt: at}
	return v, vr
}

// testAtomicCommitsOnce makes two writes in one Atomic call: both are
// there after it, the request's reply is stored once and counted as one
// commit that carried it.
func testAtomicCommitsOnce(t *testing.T, e *env) {
	v1, vr := e.atomicVisit(t)
	v2, _ := e.atomicVisit(t)
	v2.VisitorID = vr.ID
	rec := e.rec(e.a, "6b1f3c1e-8d4a-4c8e-9a6f-0e2d5b7c9a11", e.tick(), response(`{"id":"`+v1.ID+`"}`))
	ctx, reply := withReply(t.Context(), rec)
	err := e.s.Atomic(ctx, func(ctx context.Context) error {
		if err := e.s.CreateVisit(ctx, v1, cloud.VisitWrites{Visitor: &vr}); err != nil {
			return err
		}
		return e.s.CreateVisit(ctx, v2, cloud.VisitWrites{})
	})
	require.NoError(t, err)
	for _, id := range []string{v1.ID, v2.ID} {
		_, err := e.s.Visit(t.Context(), e.a, id)
		require.NoError(t, err)
	}
	require.True(t, reply.Stored())
	all, without := reply.Commits()
	require.Equal(t, 1, all, "one commit")
	require.Equal(t, 0, without, "which carried the response")
	e.requireRecord(t, rec)
}

// testAtomicAllOrNothing: fn's error rolls back the writes it made.
func testAtomicAllOrNothing(t *testing.T, e *env) {
	v, vr := e.atomicVisit(t)
	rec := e.rec(e.a, "7c2f3c1e-8d4a-4c8e-9a6f-0e2d5b7c9a12", e.tick(), response(`{}`))
	ctx, reply := withReply(t.Context(), rec)
	boom := errors.New("boom")
	err := e.s.Atomic(ctx, func(ctx context.Context) error {
		if err := e.s.CreateVisit(ctx, v, cloud.VisitWrites{Visitor: &vr}); err != nil {
			return err
		}
		return boom
	})
	require.ErrorIs(t, err, boom)
	_, err = e.s.Visit(t.Context(), e.a, v.ID)
	requireNotFound(t, err, "the visit")
	_, err = e.s.Visitor(t.Context(), e.a, vr.ID)
	requireNotFound(t, err, "the visitor")
	require.False(t, reply.Stored())
	all, _ := reply.Commits()
	require.Zero(t, all)
	e.requireNoRecord(t, e.a, rec.Key)
}

// testAtomicFailedWriteFails: a write that fails inside fn fails the
// whole, even when fn goes on and returns nil.
func testAtomicFailedWriteFails(t *testing.T, e *env) {
	v, vr := e.atomicVisit(t)
	v2, _ := e.atomicVisit(t)
	v2.VisitorID = vr.ID
	m := e.newMessage(e.a, v2.ID)
	err := e.s.Atomic(t.Context(), func(ctx context.Context) error {
		if err := e.s.CreateVisit(ctx, v, cloud.VisitWrites{Visitor: &vr}); err != nil {
			return err
		}
		_ = e.s.CreateVisit(ctx, v2, cloud.VisitWrites{Messages: []cloud.Message{m, m}}) // the second insert fails
		return nil
	})
	require.Error(t, err)
	_, err = e.s.Visit(t.Context(), e.a, v.ID)
	requireNotFound(t, err, "the first visit")
}

// testAtomicReadsSeeWrites: inside Atomic a read after a write sees it;
// outside, nothing is seen until the commit.
func testAtomicReadsSeeWrites(t *testing.T, e *env) {
	v, vr := e.atomicVisit(t)
	err := e.s.Atomic(t.Context(), func(ctx context.Context) error {
		if err := e.s.CreateVisit(ctx, v, cloud.VisitWrites{Visitor: &vr}); err != nil {
			return err
		}
		got, err := e.s.Visit(ctx, e.a, v.ID)
		require.NoError(t, err, "inside, the visit written")
		require.Equal(t, v.ID, got.ID)
		found, err := e.s.FindVisitor(ctx, e.a, vr.Email, "")
		require.NoError(t, err, "inside, the visitor written")
		require.Equal(t, vr.ID, found.ID)
		_, err = e.s.Visit(t.Context(), e.a, v.ID)
		requireNotFound(t, err, "outside, before the commit")
		return nil
	})
	require.NoError(t, err)
	_, err = e.s.Visit(t.Context(), e.a, v.ID)
	require.NoError(t, err, "after the commit")
}

// testAtomicNoWrite: an Atomic call that only reads commits nothing and
// returns fn's answer.
func testAtomicNoWrite(t *testing.T, e *env) {
	rec := e.rec(e.a, "8d3f3c1e-8d4a-4c8e-9a6f-0e2d5b7c9a13", e.tick(), response(`{}`))
	ctx, reply := withReply(t.Context(), rec)
	err := e.s.Atomic(ctx, func(ctx context.Context) error {
		_, err := e.s.Visit(ctx, e.a, ids.New(ids.Visit))
		return err
	})
	requireNotFound(t, err, "fn's error")
	all, _ := reply.Commits()
	require.Zero(t, all)
	require.NoError(t, e.s.Atomic(t.Context(), func(context.Context) error { return nil }))
}

// testAtomicReadsAhead: inside Atomic, the reads named to ReadAhead
// answer as they do without it, a missing row included, and again when
// asked a second time.
func testAtomicReadsAhead(t *testing.T, e *env) {
	v, vr := e.atomicVisit(t)
	require.NoError(t, e.s.CreateVisit(t.Context(), v, cloud.VisitWrites{Visitor: &vr}))
	p1, p2 := e.newPerson(t, e.a), e.newPerson(t, e.a)
	vt := e.newVisitType(t, e.a)
	people := []string{p1.ID, ids.New(ids.Person), p2.ID}
	site, err := e.s.Site(t.Context(), e.a, v.SiteID)
	require.NoError(t, err)
	found, err := e.s.People(t.Context(), e.a, people)
	require.NoError(t, err)
	typ, err := e.s.VisitType(t.Context(), e.a, vt.Key)
	require.NoError(t, err)
	visitor, err := e.s.FindVisitor(t.Context(), e.a, vr.Email, "")
	require.NoError(t, err)
	err = e.s.Atomic(t.Context(), func(ctx context.Context) error {
		e.s.ReadAhead(ctx, e.a, cloud.ReadsAhead{Site: v.SiteID, People: people, VisitType: vt.Key, VisitorEmail: vr.Email})
		for range 2 {
			got, err := e.s.Site(ctx, e.a, v.SiteID)
			require.NoError(t, err)
			require.Equal(t, site, got)
			gotPeople, err := e.s.People(ctx, e.a, people)
			require.NoError(t, err)
			require.ElementsMatch(t, found, gotPeople)
			gotType, err := e.s.VisitType(ctx, e.a, vt.Key)
			require.NoError(t, err)
			require.Equal(t, typ, gotType)
			gotVisitor, err := e.s.FindVisitor(ctx, e.a, vr.Email, "")
			require.NoError(t, err)
			require.Equal(t, visitor, gotVisitor)
		}
		e.s.ReadAhead(ctx, e.a, cloud.ReadsAhead{Site: ids.New(ids.Site), VisitType: "no-such-type", VisitorPhone: "+15550100999"})
		_, err := e.s.VisitType(ctx, e.a, "no-such-type")
		requireNotFound(t, err, "a type read ahead that is not there")
		_, err = e.s.FindVisitor(ctx, e.a, "", "+15550100999")
		requireNotFound(t, err, "a visitor read ahead that is not there")
		return nil
	})
	require.NoError(t, err)
}

// testAtomicReadsAheadThenWrite: a write after ReadAhead drops what was
// read ahead, so a read after the write sees the write.
func testAtomicReadsAheadThenWrite(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	err := e.s.Atomic(t.Context(), func(ctx context.Context) error {
		e.s.ReadAhead(ctx, e.a, cloud.ReadsAhead{Site: s.ID})
		if _, err := e.s.UpdateSite(ctx, e.a, s.ID, func(st *cloud.Site) error { st.Name = "Renamed"; return nil }); err != nil {
			return err
		}
		got, err := e.s.Site(ctx, e.a, s.ID)
		require.NoError(t, err)
		require.Equal(t, "Renamed", got.Name, "the read after the write sees it")
		return nil
	})
	require.NoError(t, err)
}
