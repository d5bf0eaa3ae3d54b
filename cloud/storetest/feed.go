package storetest

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/shared/passrule"
	"github.com/svc-vms/svc/sync/protocol"
)

func feedTests() []test {
	return []test{
		{"VisitWrites", testFeedVisitWrites},
		{"SitesAndGates", testFeedSitesAndGates},
		{"PassKeysReachEverySite", testFeedPassKeys},
		{"RotatePassKey", testFeedRotatePassKey},
		{"BadPassKeyWritesNothing", testFeedBadPassKey},
		{"BookingWrites", testFeedBookingWrites},
		{"ErasureLeavesNoName", testFeedErasure},
		{"RolledBackWritesNothing", testFeedRollback},
		{"InvalidChangeFailsTheWrite", testFeedInvalidChange},
		{"ChangesPaging", testFeedPaging},
		{"FeedHead", testFeedHead},
		{"ConcurrentWritersNoGaps", testFeedConcurrentWriters},
		{"Snapshot", testSnapshot},
		{"SnapshotConsistent", testSnapshotConsistent},
		{"PublishOnceInOrder", testPublishOnceInOrder},
		{"PublishRetriesFailedBatch", testPublishRetry},
		{"PublishBatchesOfMaxChanges", testPublishBatches},
		{"PublishEachSiteOncePerCall", testPublishEachSiteOnce},
		{"PeopleReachEverySite", testFeedPeople},
		{"PersonWriteAbortedWritesNothing", testFeedPersonRollback},
		{"PeopleAndNewSitesConcurrent", testFeedPeopleConcurrentSites},
		{"SnapshotPeople", testSnapshotPeople},
		{"KioskTeamsAndTypesReachEverySite", testFeedKiosk},
	}
}

// --- helpers ----------------------------------------------------------------

// changes returns every change of the site's feed after seq, and its head.
func (e *env) changes(t testing.TB, tn cloud.Tenant, site string, after uint64) ([]protocol.Change, uint64) {
	t.Helper()
	var out []protocol.Change
	var head uint64
	for {
		cs, h, err := e.s.SiteChanges(t.Context(), tn, site, after, 0)
		require.NoError(t, err)
		head = h
		out = append(out, cs...)
		if len(cs) == 0 {
			return out, head
		}
		after = cs[len(cs)-1].Seq
	}
}

// head is the site's last sequence.
func (e *env) head(t testing.TB, tn cloud.Tenant, site string) uint64 {
	t.Helper()
	_, h, err := e.s.SiteChanges(t.Context(), tn, site, 1<<62, 1)
	require.NoError(t, err)
	return h
}

// requireRun checks the changes are numbered from..from+len-1 and each
// holds one object the protocol accepts, as a Batch would carry them.
func requireRun(t testing.TB, from uint64, cs []protocol.Change) {
	t.Helper()
	for i, c := range cs {
		require.Equal(t, from+uint64(i), c.Seq, "change %d", i)
	}
	for len(cs) > 0 {
		n := min(len(cs), protocol.MaxChanges)
		_, err := protocol.Encode(&protocol.Batch{Changes: cs[:n]})
		require.NoError(t, err, "the changes make a valid batch")
		cs = cs[n:]
	}
}

// requireVisitChange checks c carries the visit as a read of it shows it.
func (e *env) requireVisitChange(t testing.TB, tn cloud.Tenant, c protocol.Change, visitID string, msgAndArgs ...any) {
	t.Helper()
	require.NotNil(t, c.Visit, msgAndArgs...)
	v, err := e.s.Visit(t.Context(), tn, visitID)
	require.NoError(t, err)
	require.Equal(t, cloud.EdgeVisit(v), *c.Visit, msgAndArgs...)
	require.True(t, v.UpdatedAt.Equal(c.At), "a change's time is its object's update time")
}

// lastOfVisit returns the last change of the visit among cs.
func lastOfVisit(cs []protocol.Change, id string) *protocol.Visit {
	var out *protocol.Visit
	for _, c := range cs {
		if c.Visit != nil && c.Visit.ID == id {
			out = c.Visit
		}
	}
	return out
}

// newEdKey stores a real Ed25519 pass key of the tenant.
func (e *env) newEdKey(t testing.TB, tn cloud.Tenant, opts ...func(*cloud.PassKey)) cloud.PassKey {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(nil)
	require.NoError(t, err)
	return e.newPassKey(t, tn, append([]func(*cloud.PassKey){func(k *cloud.PassKey) { k.Private = priv }}, opts...)...)
}

// --- the feed ---------------------------------------------------------------

// FeedHead is the head SiteChanges reads, after every write committed; 0
// for a site the tenant does not have.
func testFeedHead(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	h, err := e.s.FeedHead(t.Context(), e.a, s.ID)
	require.NoError(t, err)
	require.Equal(t, e.head(t, e.a, s.ID), h)
	require.NotZero(t, h, "a new site's settings are on its feed")
	e.newVisit(t, e.a, s.ID)
	h2, err := e.s.FeedHead(t.Context(), e.a, s.ID)
	require.NoError(t, err)
	require.Equal(t, e.head(t, e.a, s.ID), h2)
	require.Greater(t, h2, h, "the visit's change moved the head")
	for _, tc := range []struct {
		name string
		tn   cloud.Tenant
		site string
	}{{"another tenant's site", e.b, s.ID}, {"no such site", e.a, ids.New(ids.Site)}} {
		h, err := e.s.FeedHead(t.Context(), tc.tn, tc.site)
		require.NoError(t, err, tc.name)
		require.Zero(t, h, tc.name)
	}
}

// Every visit a write touches goes out once, as the write left it: the
// new visit, the visit updated and the visits made with it.
func testFeedVisitWrites(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	p := e.newPerson(t, e.a, named[cloud.Person]("Grace Hopper"))
	v := e.newVisit(t, e.a, s.ID, hostedBy(p), withVisitor(func(vr *cloud.Visitor) { vr.Name = "Ada Lovelace" }))
	cs, head := e.changes(t, e.a, s.ID, 0)
	require.Len(t, cs, 3, "the site's settings, the host (every site follows every person), then the visit")
	requireRun(t, 1, cs)
	require.Equal(t, uint64(3), head)
	require.NotNil(t, cs[0].Settings)
	require.Equal(t, p.ID, cs[1].Person.ID)
	cs = cs[1:]
	e.requireVisitChange(t, e.a, cs[1], v.ID)
	require.Equal(t, "Ada Lovelace", cs[1].Visit.VisitorName)
	require.Equal(t, "Grace Hopper", cs[1].Visit.HostName)
	require.Equal(t, v.ID, cs[1].Visit.ForVisitID, "a pass naming no holder is the visit's own")

	var next cloud.Visit
	_, err := e.s.UpdateVisit(t.Context(), e.a, v.ID, func(x *cloud.Visit, w *cloud.VisitWrites) error {
		at := e.tick()
		x.Status, x.CheckedInAt, x.Pass.Uses, x.UpdatedAt = cloud.VisitCheckedIn, &at, 1, at
		x.Pass.Rules = passrule.Rules{Window: passrule.Window{Before: 15, After: 30}, SingleUse: true, GateIDs: []string{ids.New(ids.Gate)}}
		next = cloud.Visit{ID: ids.New(ids.Visit), Tenant: e.a, Status: cloud.VisitExpected, Type: "meeting", SiteID: s.ID,
			VisitorID: x.VisitorID, Pass: cloud.Pass{ForVisitID: x.ID}, CreatedAt: at, UpdatedAt: at}
		w.Visits = append(w.Visits, next)
		return nil
	})
	require.NoError(t, err)
	cs, head = e.changes(t, e.a, s.ID, 3)
	require.Len(t, cs, 2)
	requireRun(t, 4, cs)
	require.Equal(t, uint64(5), head)
	e.requireVisitChange(t, e.a, cs[0], v.ID)
	require.Equal(t, string(cloud.VisitCheckedIn), cs[0].Visit.Status)
	require.True(t, cs[0].Visit.Rules.SingleUse)
	e.requireVisitChange(t, e.a, cs[1], next.ID)
	require.Equal(t, v.ID, cs[1].Visit.ForVisitID)
	require.Equal(t, "Ada Lovelace", cs[1].Visit.VisitorName, "the new visit's visitor is read from the store")
}

// Sites and gates go out on their own site's feed; each site numbers its
// feed from 1, and another tenant's site is not found.
func testFeedSitesAndGates(t *testing.T, e *env) {
	s1 := e.newSite(t, e.a, func(s *cloud.Site) { s.Timezone = "America/New_York" })
	s2 := e.newSite(t, e.a)
	g := e.newGate(t, e.a, s1.ID, named[cloud.Gate]("Main entrance"), func(g *cloud.Gate) { g.Direction = cloud.DirectionEntry })
	_, err := e.s.UpdateGate(t.Context(), e.a, g.ID, func(x *cloud.Gate) error {
		x.Name, x.Direction, x.UpdatedAt = "North entrance", cloud.DirectionBoth, e.tick()
		return nil
	})
	require.NoError(t, err)
	_, err = e.s.UpdateSite(t.Context(), e.a, s1.ID, func(x *cloud.Site) error {
		x.Timezone, x.UpdatedAt = "Asia/Tokyo", e.tick()
		return nil
	})
	require.NoError(t, err)

	cs, head := e.changes(t, e.a, s1.ID, 0)
	requireRun(t, 1, cs)
	require.Equal(t, uint64(4), head)
	require.Equal(t, &protocol.Settings{Timezone: "America/New_York", OfflineLimitMinutes: cloud.DefaultOfflineLimitMinutes,
		SiteName: s1.Name, WaitLimitMinutes: cloud.DefaultWaitLimitMinutes}, cs[0].Settings)
	require.Equal(t, &protocol.Gate{ID: g.ID, Name: "Main entrance", Direction: "entry"}, cs[1].Gate)
	require.Equal(t, &protocol.Gate{ID: g.ID, Name: "North entrance", Direction: "both"}, cs[2].Gate)
	require.Equal(t, &protocol.Settings{Timezone: "Asia/Tokyo", OfflineLimitMinutes: cloud.DefaultOfflineLimitMinutes,
		SiteName: s1.Name, WaitLimitMinutes: cloud.DefaultWaitLimitMinutes}, cs[3].Settings)
	require.True(t, s1.CreatedAt.Equal(cs[0].At))

	cs, head = e.changes(t, e.a, s2.ID, 0)
	require.Len(t, cs, 1, "the other site's feed holds its own settings only")
	require.Equal(t, uint64(1), cs[0].Seq)
	require.Equal(t, uint64(1), head)

	for _, tn := range []cloud.Tenant{e.b, e.c} {
		_, _, err := e.s.SiteChanges(t.Context(), tn, s1.ID, 0, 10)
		requireNotFound(t, err, "site of another tenant")
		_, err = e.s.SiteSnapshot(t.Context(), tn, s1.ID, e.now)
		requireNotFound(t, err, "snapshot of another tenant's site")
	}
}

// A new pass key goes out on every site of its tenant; a new site's feed
// starts with the tenant's keys that are not retired.
func testFeedPassKeys(t *testing.T, e *env) {
	s1, s2 := e.newSite(t, e.a), e.newSite(t, e.a)
	theirs := e.newSite(t, e.c)
	k := e.newEdKey(t, e.a)
	want, err := cloud.EdgeKey(k)
	require.NoError(t, err)
	require.Len(t, want.Public, ed25519.PublicKeySize)
	for _, s := range []cloud.Site{s1, s2} {
		cs, _ := e.changes(t, e.a, s.ID, 0)
		require.Len(t, cs, 2)
		require.Equal(t, &want, cs[1].Key, "site %s", s.ID)
	}
	cs, _ := e.changes(t, e.c, theirs.ID, 0)
	require.Len(t, cs, 1, "another tenant's site gets no key")

	retired := e.newEdKey(t, e.a, func(k *cloud.PassKey) { k.RetiredAt = ptr(e.tick()) })
	s3 := e.newSite(t, e.a)
	cs, _ = e.changes(t, e.a, s3.ID, 0)
	require.Len(t, cs, 2, "settings and the one key not retired")
	requireRun(t, 1, cs)
	require.NotNil(t, cs[0].Settings)
	require.Equal(t, &want, cs[1].Key)
	cs, _ = e.changes(t, e.a, s1.ID, 2)
	require.Len(t, cs, 1, "a retired key goes out with its retire time")
	require.Equal(t, retired.ID, cs[0].Key.ID)
	require.Equal(t, retired.RetiredAt.Unix(), cs[0].Key.RetireAt)
	require.False(t, cs[0].Key.Verifies(*retired.RetiredAt))
}

// A rotation sets every key still signing to retire, and sends each
// with its retire time, then the new key, on every site of the tenant;
// until then the old key is in snapshots, after it is not.
func testFeedRotatePassKey(t *testing.T, e *env) {
	s1, s2 := e.newSite(t, e.a), e.newSite(t, e.a)
	theirs := e.newSite(t, e.c)
	oldest := e.newEdKey(t, e.a, func(k *cloud.PassKey) { k.RetiredAt = ptr(e.now.Add(time.Hour)) }) // set to retire before
	old := e.newEdKey(t, e.a)
	e.newEdKey(t, e.c)
	_, priv, err := ed25519.GenerateKey(nil)
	require.NoError(t, err)
	retireAt := e.now.Add(48 * time.Hour).Truncate(time.Second)
	k := cloud.PassKey{ID: passKeyID(int(passKeySeq.Add(1))), Tenant: e.a, Private: priv, CreatedAt: e.tick()}
	retiring, err := e.s.RotatePassKey(t.Context(), k, retireAt)
	require.NoError(t, err)
	require.Len(t, retiring, 1, "only the key still signing is set to retire")
	require.Equal(t, old.ID, retiring[0].ID)
	require.Equal(t, retireAt, retiring[0].RetiredAt.UTC())

	keys, err := e.s.PassKeys(t.Context(), e.a)
	require.NoError(t, err)
	require.Len(t, keys, 3)
	require.Equal(t, normPassKey(k), normPassKey(keys[0]), "the new key is the newest and signs")
	require.Equal(t, retireAt, keys[1].RetiredAt.UTC())
	require.Equal(t, old.Private, keys[1].Private)
	require.Equal(t, oldest.RetiredAt.UTC(), keys[2].RetiredAt.UTC(), "a key already retiring keeps its time")

	for _, s := range []cloud.Site{s1, s2} {
		cs, _ := e.changes(t, e.a, s.ID, 3) // settings, then the two keys made before
		requireRun(t, 4, cs)
		require.Len(t, cs, 2, "site %s", s.ID)
		require.Equal(t, old.ID, cs[0].Key.ID)
		require.Equal(t, retireAt.Unix(), cs[0].Key.RetireAt, "the old key goes out again with its retire time")
		require.Equal(t, k.ID, cs[1].Key.ID)
		require.Zero(t, cs[1].Key.RetireAt)
	}
	cs, _ := e.changes(t, e.c, theirs.ID, 0)
	require.Len(t, cs, 2, "another tenant's site gets its own key only")

	snapKeys := func(now time.Time) []string {
		snap, err := e.s.SiteSnapshot(t.Context(), e.a, s1.ID, now)
		require.NoError(t, err)
		var out []string
		for _, k := range snap.Keys {
			out = append(out, k.ID)
		}
		return out
	}
	require.Equal(t, []string{old.ID, k.ID}, snapKeys(e.now.Add(2*time.Hour)), "oldest has retired, old has not")
	require.Equal(t, []string{k.ID}, snapKeys(retireAt), "old retires at its time")
}

// A key that is no Ed25519 key cannot go out: with sites to send it to,
// it is not stored.
func testFeedBadPassKey(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	bad := cloud.PassKey{ID: passKeyID(999), Tenant: e.a, Private: []byte("short"), CreatedAt: e.tick()}
	require.Error(t, e.s.CreatePassKey(t.Context(), bad))
	keys, err := e.s.PassKeys(t.Context(), e.a)
	require.NoError(t, err)
	require.Empty(t, keys)
	require.Equal(t, uint64(1), e.head(t, e.a, s.ID))
}

// Visits a booking write makes or stores again go out too.
func testFeedBookingWrites(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	v := e.newVisit(t, e.a, s.ID)
	bt := e.newBookingType(t, e.a)
	var made cloud.Visit
	b := e.newBooking(t, e.a, bt, 0, func(b *cloud.Booking, w *cloud.BookingWrites) {
		at := e.tick()
		made = cloud.Visit{ID: ids.New(ids.Visit), Tenant: e.a, Status: cloud.VisitExpected, Type: "meeting", SiteID: s.ID,
			BookingID: b.ID, CreatedAt: at, UpdatedAt: at}
		w.NewVisits = append(w.NewVisits, made)
	})
	after := e.head(t, e.a, s.ID)
	_, err := e.s.UpdateBooking(t.Context(), e.a, b.ID, e.now, func(_ *cloud.Booking, w *cloud.BookingWrites) error {
		x := v
		x.Status, x.CancelledAt, x.UpdatedAt = cloud.VisitCancelled, ptr(e.tick()), e.tick()
		w.Visits = append(w.Visits, x)
		return nil
	})
	require.NoError(t, err)
	cs, _ := e.changes(t, e.a, s.ID, 0)
	require.NotNil(t, lastOfVisit(cs[:after], made.ID), "the visit the booking made")
	later, _ := e.changes(t, e.a, s.ID, after)
	require.Len(t, later, 1)
	e.requireVisitChange(t, e.a, later[0], v.ID)
	require.Equal(t, string(cloud.VisitCancelled), later[0].Visit.Status)
}

// Erasing a visitor sends its visits again without the name, and takes
// the name out of the feed's earlier changes.
func testFeedErasure(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	v := e.newVisit(t, e.a, s.ID, withVisitor(func(vr *cloud.Visitor) { vr.Name = "Ada Lovelace" }))
	keep := e.newVisit(t, e.a, s.ID, withVisitor(func(vr *cloud.Visitor) { vr.Name = "Bob Babbage" }))
	before := e.head(t, e.a, s.ID)
	require.NoError(t, e.s.EraseVisitor(t.Context(), e.a, v.VisitorID, func(x *cloud.Visit) { x.UpdatedAt = e.tick() },
		func(*cloud.Booking) {}))
	cs, head := e.changes(t, e.a, s.ID, 0)
	require.Equal(t, before+1, head, "one change: the erased visitor's visit")
	requireRun(t, 1, cs)
	e.requireVisitChange(t, e.a, cs[len(cs)-1], v.ID)
	for _, c := range cs {
		if c.Visit != nil && c.Visit.ID == v.ID {
			require.Empty(t, c.Visit.VisitorName, "change %d still names the erased visitor", c.Seq)
		}
	}
	require.Equal(t, "Bob Babbage", lastOfVisit(cs, keep.ID).VisitorName, "other visitors keep their names")
}

// A write that does not commit appends nothing.
func testFeedRollback(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	v := e.newVisit(t, e.a, s.ID)
	head := e.head(t, e.a, s.ID)
	_, err := e.s.UpdateVisit(t.Context(), e.a, v.ID, func(x *cloud.Visit, w *cloud.VisitWrites) error {
		x.Status = cloud.VisitCancelled
		w.Visits = append(w.Visits, cloud.Visit{ID: ids.New(ids.Visit), Tenant: e.a, Status: cloud.VisitExpected, Type: "meeting",
			SiteID: s.ID, CreatedAt: e.tick(), UpdatedAt: e.tick()})
		return errAbort
	})
	require.ErrorIs(t, err, errAbort)
	require.Error(t, e.s.CreateVisit(t.Context(), v, cloud.VisitWrites{}), "a visit ID used twice")
	_, err = e.s.UpdateSite(t.Context(), e.a, s.ID, func(*cloud.Site) error { return errAbort })
	require.ErrorIs(t, err, errAbort)
	require.Equal(t, head, e.head(t, e.a, s.ID))
	cs, _ := e.changes(t, e.a, s.ID, 0)
	require.Len(t, cs, int(head))
}

// A change the protocol would refuse fails the write that makes it: no
// change without its feed entry.
func testFeedInvalidChange(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	head := e.head(t, e.a, s.ID)
	at := e.tick()
	v := cloud.Visit{ID: ids.New(ids.Visit), Tenant: e.a, Status: cloud.VisitExpected, Type: "meeting", SiteID: s.ID,
		Pass: cloud.Pass{Rules: passrule.Rules{GateIDs: []string{"not a gate"}}}, CreatedAt: at, UpdatedAt: at}
	require.ErrorIs(t, e.s.CreateVisit(t.Context(), v, cloud.VisitWrites{}), protocol.ErrInvalid)
	_, err := e.s.Visit(t.Context(), e.a, v.ID)
	requireNotFound(t, err, "the visit was not stored")
	require.Equal(t, head, e.head(t, e.a, s.ID))
}

// SiteChanges pages through the feed after a sequence.
func testFeedPaging(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	for range 4 {
		e.newVisit(t, e.a, s.ID)
	}
	cs, head, err := e.s.SiteChanges(t.Context(), e.a, s.ID, 2, 2)
	require.NoError(t, err)
	require.Equal(t, uint64(5), head)
	require.Len(t, cs, 2)
	requireRun(t, 3, cs)
	cs, _, err = e.s.SiteChanges(t.Context(), e.a, s.ID, 4, 0)
	require.NoError(t, err)
	require.Len(t, cs, 1, "a limit of 0 is the protocol's")
	cs, head, err = e.s.SiteChanges(t.Context(), e.a, s.ID, 5, 10)
	require.NoError(t, err)
	require.NotNil(t, cs)
	require.Empty(t, cs)
	require.Equal(t, uint64(5), head)
	cs, head, err = e.s.SiteChanges(t.Context(), e.a, s.ID, 9, 10)
	require.NoError(t, err)
	require.Empty(t, cs, "after the head: nothing")
	require.Equal(t, uint64(5), head)
}

// Writers at one site at once: every write gets its own sequences, with
// no gap and none twice, and each visit's last change is its last write.
func testFeedConcurrentWriters(t *testing.T, e *env) {
	const workers, each = 8, 10
	s, other := e.newSite(t, e.a), e.newSite(t, e.a)
	visits := make([]cloud.Visit, workers)
	for i := range visits {
		site := s.ID
		if i%4 == 3 {
			site = other.ID // some transactions write to both sites' feeds
		}
		visits[i] = e.newVisit(t, e.a, site)
	}
	start := e.head(t, e.a, s.ID)
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for w := range workers {
		wg.Go(func() {
			for range each {
				_, err := e.s.UpdateVisit(t.Context(), e.a, visits[w].ID, func(x *cloud.Visit, vw *cloud.VisitWrites) error {
					x.Pass.Uses++
					x.UpdatedAt = e.tick()
					if w%4 == 3 {
						// And one more visit at the first site, in the
						// same transaction.
						vw.Visits = append(vw.Visits, cloud.Visit{ID: ids.New(ids.Visit), Tenant: e.a, Status: cloud.VisitExpected,
							Type: "meeting", SiteID: s.ID, CreatedAt: x.UpdatedAt, UpdatedAt: x.UpdatedAt})
					}
					return nil
				})
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	cs, head := e.changes(t, e.a, s.ID, 0)
	requireRun(t, 1, cs)
	require.Equal(t, uint64(len(cs)), head)
	require.Equal(t, start+workers*each, head, "one change per write at the first site")
	ocs, _ := e.changes(t, e.a, other.ID, 0)
	requireRun(t, 1, ocs)
	for i, v := range visits {
		feed := cs
		if i%4 == 3 {
			feed = ocs
		}
		last := lastOfVisit(feed, v.ID)
		require.NotNil(t, last)
		require.Equal(t, each, last.Uses, "visit %d", i)
	}
}

// --- snapshots --------------------------------------------------------------

// A snapshot holds the site's settings, gates and the tenant's live keys,
// and every visit whose pass could still admit, whatever its status.
func testSnapshot(t *testing.T, e *env) {
	now := e.now.Add(30 * 24 * time.Hour)
	s := e.newSite(t, e.a, func(s *cloud.Site) { s.Timezone = "Europe/Paris" })
	elsewhere := e.newSite(t, e.a)
	g1 := e.newGate(t, e.a, s.ID)
	g2 := e.newGate(t, e.a, s.ID, func(g *cloud.Gate) { g.Direction = cloud.DirectionExit })
	e.newGate(t, e.a, elsewhere.ID)
	k := e.newEdKey(t, e.a)
	e.newEdKey(t, e.a, func(k *cloud.PassKey) { k.RetiredAt = ptr(e.tick()) })
	e.newEdKey(t, e.c)

	expected := func(until time.Time, st cloud.VisitStatus) func(*cloud.Visit, *cloud.VisitWrites) {
		return func(v *cloud.Visit, _ *cloud.VisitWrites) {
			v.ExpectedAt, v.ExpectedUntil, v.Status = ptr(until.Add(-time.Hour)), ptr(until), st
		}
	}
	walkIn := func(at time.Time) func(*cloud.Visit, *cloud.VisitWrites) {
		return func(v *cloud.Visit, _ *cloud.VisitWrites) { v.CheckedInAt, v.Status = ptr(at), cloud.VisitCheckedIn }
	}
	in := []cloud.Visit{
		e.newVisit(t, e.a, s.ID, expected(now.Add(time.Hour), cloud.VisitExpected)),
		e.newVisit(t, e.a, s.ID, expected(now.Add(-cloud.EdgeHorizon+time.Minute), cloud.VisitCheckedOut)),
		e.newVisit(t, e.a, s.ID, expected(now.Add(-time.Hour), cloud.VisitCancelled)),
		e.newVisit(t, e.a, s.ID, walkIn(now.Add(-2*time.Hour))),
		e.newVisit(t, e.a, s.ID), // no times at all
	}
	out := []cloud.Visit{
		e.newVisit(t, e.a, s.ID, expected(now.Add(-cloud.EdgeHorizon-time.Minute), cloud.VisitExpected)),
		e.newVisit(t, e.a, s.ID, walkIn(now.Add(-cloud.EdgeHorizon-25*time.Hour))),
		e.newVisit(t, e.a, elsewhere.ID, expected(now.Add(time.Hour), cloud.VisitExpected)),
		e.newVisit(t, e.b, s.ID, expected(now.Add(time.Hour), cloud.VisitExpected)),
	}
	snap, err := e.s.SiteSnapshot(t.Context(), e.a, s.ID, now)
	require.NoError(t, err)
	require.Equal(t, cloud.EdgeSite(e.a, s.ID), snap.Site)
	require.Equal(t, e.head(t, e.a, s.ID), snap.Seq)
	require.Equal(t, protocol.Settings{Timezone: "Europe/Paris", OfflineLimitMinutes: cloud.DefaultOfflineLimitMinutes,
		SiteName: s.Name, WaitLimitMinutes: cloud.DefaultWaitLimitMinutes}, snap.Settings)
	require.ElementsMatch(t, []protocol.Gate{cloud.EdgeGate(g1), cloud.EdgeGate(g2)}, snap.Gates)
	key, err := cloud.EdgeKey(k)
	require.NoError(t, err)
	require.Equal(t, []protocol.Key{key}, snap.Keys)
	var want []protocol.Visit
	for _, v := range in {
		got, err := e.s.Visit(t.Context(), e.a, v.ID)
		require.NoError(t, err)
		want = append(want, cloud.EdgeVisit(got))
	}
	require.ElementsMatch(t, want, snap.Visits)
	for _, v := range out {
		require.Nil(t, lastOfVisit(toChanges(snap.Visits), v.ID), "visit %s is not the snapshot's", v.ID)
	}
	for i := range snap.Visits {
		require.NoError(t, protocol.Validate(&snap.Visits[i]))
	}

	empty := e.newSite(t, e.b)
	snap, err = e.s.SiteSnapshot(t.Context(), e.b, empty.ID, now)
	require.NoError(t, err)
	require.Equal(t, uint64(1), snap.Seq)
	require.NotNil(t, snap.Gates)
	require.NotNil(t, snap.Keys)
	require.NotNil(t, snap.Visits)
	require.Empty(t, snap.Visits)
}

func toChanges(vs []protocol.Visit) []protocol.Change {
	out := make([]protocol.Change, len(vs))
	for i := range vs {
		out[i] = protocol.Change{Visit: &vs[i]}
	}
	return out
}

// A snapshot taken while writers change the site is the state at its
// sequence: each of its visits is the visit's last change up to Seq, and
// nothing after Seq is in it.
func testSnapshotConsistent(t *testing.T, e *env) {
	const workers, each, snapshots = 4, 15, 10
	s := e.newSite(t, e.a)
	visits := make([]cloud.Visit, workers)
	for i := range visits {
		visits[i] = e.newVisit(t, e.a, s.ID)
	}
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for w := range workers {
		wg.Go(func() {
			for range each {
				_, err := e.s.UpdateVisit(t.Context(), e.a, visits[w].ID, func(x *cloud.Visit, vw *cloud.VisitWrites) error {
					x.Pass.Uses++
					x.UpdatedAt = e.tick()
					vw.Visits = append(vw.Visits, cloud.Visit{ID: ids.New(ids.Visit), Tenant: e.a, Status: cloud.VisitExpected,
						Type: "meeting", SiteID: s.ID, CreatedAt: x.UpdatedAt, UpdatedAt: x.UpdatedAt})
					return nil
				})
				errs <- err
			}
		})
	}
	var snaps []cloud.EdgeSnapshot
	for range snapshots {
		snap, err := e.s.SiteSnapshot(t.Context(), e.a, s.ID, e.now)
		require.NoError(t, err)
		snaps = append(snaps, snap)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	all, _ := e.changes(t, e.a, s.ID, 0)
	for _, snap := range snaps {
		upTo := all[:snap.Seq]
		state := map[string]protocol.Visit{}
		for _, c := range upTo {
			if c.Visit != nil {
				state[c.Visit.ID] = *c.Visit
			}
		}
		require.Len(t, snap.Visits, len(state), "snapshot at %d: the visits the feed made up to it", snap.Seq)
		for _, v := range snap.Visits {
			require.Equal(t, state[v.ID], v, "snapshot at %d", snap.Seq)
		}
	}
}

// --- publishing -------------------------------------------------------------

type published struct {
	mu    sync.Mutex
	bySeq map[protocol.Site][]uint64
	calls int
}

func (p *published) fn(site protocol.Site, cs []protocol.Change) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bySeq == nil {
		p.bySeq = map[protocol.Site][]uint64{}
	}
	for _, c := range cs {
		p.bySeq[site] = append(p.bySeq[site], c.Seq)
	}
	p.calls++
	if len(cs) == 0 || len(cs) > protocol.MaxChanges {
		return fmt.Errorf("a batch of %d changes", len(cs))
	}
	return nil
}

// Two publishers at once, while a writer writes: every change is handed
// over once, each site's in order.
func testPublishOnceInOrder(t *testing.T, e *env) {
	sites := []cloud.Site{e.newSite(t, e.a), e.newSite(t, e.a), e.newSite(t, e.b), e.newSite(t, e.c)}
	var visits []cloud.Visit
	for _, s := range sites {
		visits = append(visits, e.newVisit(t, s.Tenant, s.ID))
	}
	var p published
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Go(func() {
		defer close(done)
		for i := range 40 {
			v := visits[i%len(visits)]
			_, err := e.s.UpdateVisit(t.Context(), v.Tenant, v.ID, func(x *cloud.Visit, _ *cloud.VisitWrites) error {
				x.Pass.Uses++
				return nil
			})
			if err != nil {
				t.Error(err)
				return
			}
		}
	})
	errs := make(chan error, 2)
	for range 2 {
		wg.Go(func() {
			for {
				writing := true
				select {
				case <-done:
					writing = false
				default:
				}
				n, err := e.s.PublishFeeds(t.Context(), 2, p.fn)
				if err != nil {
					errs <- err
					return
				}
				if n == 0 && !writing {
					errs <- nil
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	n, err := e.s.PublishFeeds(t.Context(), 10, p.fn)
	require.NoError(t, err)
	require.Zero(t, n, "everything was published")
	for _, s := range sites {
		head := e.head(t, s.Tenant, s.ID)
		want := make([]uint64, head)
		for i := range want {
			want[i] = uint64(i + 1)
		}
		require.Equal(t, want, p.bySeq[cloud.EdgeSite(s.Tenant, s.ID)], "site %s: each change once, in order", s.ID)
	}
	require.Len(t, p.bySeq, len(sites))
}

// A batch fn refuses stays unpublished and is handed over again.
func testPublishRetry(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	e.newVisit(t, e.a, s.ID)
	broken := errors.New("broker gone")
	n, err := e.s.PublishFeeds(t.Context(), 10, func(protocol.Site, []protocol.Change) error { return broken })
	require.ErrorIs(t, err, broken)
	require.Zero(t, n)
	var p published
	n, err = e.s.PublishFeeds(t.Context(), 10, p.fn)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Equal(t, []uint64{1, 2}, p.bySeq[cloud.EdgeSite(e.a, s.ID)])
	e.newVisit(t, e.a, s.ID)
	n, err = e.s.PublishFeeds(t.Context(), 10, p.fn)
	require.NoError(t, err)
	require.Equal(t, 1, n, "only what came after")
	require.Equal(t, []uint64{1, 2, 3}, p.bySeq[cloud.EdgeSite(e.a, s.ID)])
}

// More than protocol.MaxChanges changes go out in several calls, in
// order, none larger than the protocol allows.
func testPublishBatches(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	e.newVisit(t, e.a, s.ID, func(v *cloud.Visit, w *cloud.VisitWrites) {
		for range protocol.MaxChanges + 20 {
			w.Visits = append(w.Visits, cloud.Visit{ID: ids.New(ids.Visit), Tenant: e.a, Status: cloud.VisitExpected, Type: "meeting",
				SiteID: s.ID, CreatedAt: v.CreatedAt, UpdatedAt: v.UpdatedAt})
		}
	})
	head := e.head(t, e.a, s.ID)
	require.Equal(t, uint64(protocol.MaxChanges+22), head)
	cs, _, err := e.s.SiteChanges(t.Context(), e.a, s.ID, 0, protocol.MaxChanges+100)
	require.NoError(t, err)
	require.Len(t, cs, protocol.MaxChanges, "SiteChanges gives at most MaxChanges")
	var p published
	n, err := e.s.PublishFeeds(t.Context(), 1, p.fn)
	require.NoError(t, err)
	require.Equal(t, int(head), n)
	require.Equal(t, 2, p.calls)
	got := p.bySeq[cloud.EdgeSite(e.a, s.ID)]
	require.Len(t, got, int(head))
	require.True(t, slices.IsSorted(got))
	require.Equal(t, uint64(1), got[0])
}

// --- facts ------------------------------------------------------------------

func factTests() []test {
	return []test{
		{"AppliedOnce", testFactAppliedOnce},
		{"WritesAndFeed", testFactWrites},
		{"AbortRecordsNothing", testFactAborts},
		{"ConcurrentSameFact", testFactConcurrent},
		{"TenantIsolation", testFactTenantIsolation},
		{"BatchAppliesEachIDOnce", testFactBatchOnce},
		{"BatchReadsItsOwnWrites", testFactBatchSameVisit},
		{"BatchConflictsAndNewVisits", testFactBatchConflicts},
		{"BatchAbortsWhole", testFactBatchAborts},
		{"NewVisitorAndMessagesOnce", testFactVisitorAndMessages},
		{"LargeBatchOnce", testFactLargeBatchOnce},
	}
}

// A batch of more facts than a store records in one statement applies each
// fact ID once, as testFactBatchOnce's: one recorded earlier, a second of
// one ID within the first facts and one among the last are skipped.
func testFactLargeBatchOnce(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	received := e.tick()
	var batch []cloud.EdgeFact
	for range 70 {
		v := e.newVisit(t, e.a, s.ID)
		batch = append(batch, cloud.EdgeFact{Tenant: e.a, SiteID: s.ID, Fact: e.newFact(protocol.FactCheckIn, v.ID), ReceivedAt: received})
	}
	var calls []int
	earlier := batch[5:6]
	_, err := e.s.ApplyFacts(t.Context(), earlier, checkIn(earlier, &calls))
	require.NoError(t, err)
	batch[20], batch[68] = batch[10], batch[0] // seconds of an ID
	want := make([]bool, len(batch))
	var wantCalls []int
	for i := range batch {
		if i != 5 && i != 20 && i != 68 {
			want[i] = true
			wantCalls = append(wantCalls, i)
		}
	}
	calls = nil
	applied, err := e.s.ApplyFacts(t.Context(), batch, checkIn(batch, &calls))
	require.NoError(t, err)
	require.Equal(t, want, applied)
	require.Equal(t, wantCalls, calls)
	for _, ef := range batch {
		got, err := e.s.Visit(t.Context(), e.a, ef.Fact.VisitID)
		require.NoError(t, err)
		require.Equal(t, 1, got.Pass.Uses, "visit %s checked in once", got.ID)
	}
}

// checkIn is a fn for ApplyFacts that checks in the visit facts[i] names.
func checkIn(facts []cloud.EdgeFact, calls *[]int) func(int, func(string) (cloud.Visit, error), *cloud.FactWrites) error {
	return func(i int, load func(string) (cloud.Visit, error), w *cloud.FactWrites) error {
		*calls = append(*calls, i)
		f := facts[i].Fact
		x, err := load(f.VisitID)
		if err != nil {
			return err
		}
		x.Status, x.CheckedInAt, x.Pass.Uses = cloud.VisitCheckedIn, &f.At, x.Pass.Uses+1
		w.Visits = append(w.Visits, x)
		return nil
	}
}

func (e *env) newFact(kind protocol.FactKind, visitID string) protocol.Fact {
	return protocol.Fact{V: protocol.Version, ID: ids.New(ids.Fact), Kind: kind, EdgeID: ids.New(ids.Edge), Counter: 7,
		At: e.tick(), GateID: ids.New(ids.Gate), VisitID: visitID}
}

// A fact ID is applied once: the second call neither calls fn nor writes.
func testFactAppliedOnce(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	v := e.newVisit(t, e.a, s.ID)
	f := e.newFact(protocol.FactCheckIn, v.ID)
	received := e.tick()
	ef := cloud.EdgeFact{Tenant: e.a, SiteID: s.ID, Fact: f, ReceivedAt: received}
	calls := 0
	fn := func(load func(string) (cloud.Visit, error), w *cloud.FactWrites) error {
		calls++
		x, err := load(v.ID)
		if err != nil {
			return err
		}
		x.Status, x.CheckedInAt, x.Pass.Uses = cloud.VisitCheckedIn, &f.At, x.Pass.Uses+1
		w.Visits = append(w.Visits, x)
		return nil
	}
	applied, err := e.s.ApplyFact(t.Context(), ef, fn)
	require.NoError(t, err)
	require.True(t, applied)
	head := e.head(t, e.a, s.ID)
	applied, err = e.s.ApplyFact(t.Context(), ef, fn)
	require.NoError(t, err)
	require.False(t, applied)
	require.Equal(t, 1, calls)
	require.Equal(t, head, e.head(t, e.a, s.ID), "a fact applied before writes nothing")
	got, err := e.s.Visit(t.Context(), e.a, v.ID)
	require.NoError(t, err)
	require.Equal(t, 1, got.Pass.Uses)

	rec, err := e.s.EdgeFact(t.Context(), e.a, f.ID)
	require.NoError(t, err)
	require.True(t, f.At.Equal(rec.Fact.At))
	require.True(t, received.Equal(rec.ReceivedAt))
	rec.Fact.At, f.At, rec.ReceivedAt = rec.Fact.At.UTC(), f.At.UTC(), received
	require.Equal(t, cloud.EdgeFact{Tenant: e.a, SiteID: s.ID, Fact: f, ReceivedAt: received}, rec)
}

// What fn decides is written with the fact: visits stored again, new
// visits, audit events and the conflict; every visit written goes out.
func testFactWrites(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	holder := e.newVisit(t, e.a, s.ID, withVisitor(func(vr *cloud.Visitor) { vr.Name = "Ada" }))
	f := e.newFact(protocol.FactReEntry, ids.New(ids.Visit))
	f.PassVisitID = holder.ID
	ev := e.newAuditEvent(e.a, f.VisitID)
	ev.Action, ev.ActorKind, ev.ActorID = cloud.AuditEdgeFactConflicted, cloud.ActorEdge, f.EdgeID
	before := e.head(t, e.a, s.ID)
	_, err := e.s.ApplyFact(t.Context(), cloud.EdgeFact{Tenant: e.a, SiteID: s.ID, Fact: f, ReceivedAt: e.tick()},
		func(load func(string) (cloud.Visit, error), w *cloud.FactWrites) error {
			_, err := load(f.VisitID)
			if !errors.Is(err, cloud.ErrNotFound) {
				return fmt.Errorf("load of a missing visit: %v", err)
			}
			h, err := load(holder.ID)
			if err != nil {
				return err
			}
			next := h
			next.ID, next.Status, next.CheckedInAt, next.Pass.ForVisitID = f.VisitID, cloud.VisitCheckedIn, &f.At, h.ID
			h.ReenteredAs = f.VisitID
			w.Visits = append(w.Visits, h)
			w.New = append(w.New, next)
			w.Audit = append(w.Audit, ev)
			w.Conflict = cloud.ConflictNotCheckedOut
			return nil
		})
	require.NoError(t, err)
	got, err := e.s.Visit(t.Context(), e.a, holder.ID)
	require.NoError(t, err)
	require.Equal(t, f.VisitID, got.ReenteredAs)
	next, err := e.s.Visit(t.Context(), e.a, f.VisitID)
	require.NoError(t, err)
	require.Equal(t, cloud.VisitCheckedIn, next.Status)
	require.Equal(t, "Ada", next.Visitor.Name)
	events := e.listAuditEvents(t, e.a, cloud.AuditFilter{ObjectID: f.VisitID})
	require.Len(t, events, 1)
	requireAuditEvent(t, ev, events[0])
	rec, err := e.s.EdgeFact(t.Context(), e.a, f.ID)
	require.NoError(t, err)
	require.Equal(t, cloud.ConflictNotCheckedOut, rec.Conflict)
	cs, _ := e.changes(t, e.a, s.ID, before)
	require.Len(t, cs, 2)
	requireRun(t, before+1, cs)
	e.requireVisitChange(t, e.a, cs[0], holder.ID)
	e.requireVisitChange(t, e.a, cs[1], f.VisitID)
}

// fn's error rolls everything back: the fact is not recorded and may be
// applied later.
func testFactAborts(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	f := e.newFact(protocol.FactRefused, "")
	f.Reason = string(passrule.Expired)
	ef := cloud.EdgeFact{Tenant: e.a, SiteID: s.ID, Fact: f, ReceivedAt: e.tick()}
	_, err := e.s.ApplyFact(t.Context(), ef, func(_ func(string) (cloud.Visit, error), w *cloud.FactWrites) error {
		w.Conflict = "never"
		return errAbort
	})
	require.ErrorIs(t, err, errAbort)
	_, err = e.s.EdgeFact(t.Context(), e.a, f.ID)
	requireNotFound(t, err)
	applied, err := e.s.ApplyFact(t.Context(), ef, func(func(string) (cloud.Visit, error), *cloud.FactWrites) error { return nil })
	require.NoError(t, err)
	require.True(t, applied)
	rec, err := e.s.EdgeFact(t.Context(), e.a, f.ID)
	require.NoError(t, err)
	require.Empty(t, rec.Conflict)
	require.Equal(t, string(passrule.Expired), rec.Fact.Reason)
	require.Empty(t, rec.Fact.VisitID)
}

// The same fact applied by many callers at once is applied once.
func testFactConcurrent(t *testing.T, e *env) {
	const callers = 8
	s := e.newSite(t, e.a)
	v := e.newVisit(t, e.a, s.ID)
	f := e.newFact(protocol.FactCheckIn, v.ID)
	ef := cloud.EdgeFact{Tenant: e.a, SiteID: s.ID, Fact: f, ReceivedAt: e.tick()}
	var wg sync.WaitGroup
	results := make(chan error, callers)
	appliedN := make(chan bool, callers)
	for range callers {
		wg.Go(func() {
			applied, err := e.s.ApplyFact(t.Context(), ef, func(load func(string) (cloud.Visit, error), w *cloud.FactWrites) error {
				x, err := load(v.ID)
				if err != nil {
					return err
				}
				x.Pass.Uses++
				w.Visits = append(w.Visits, x)
				return nil
			})
			results <- err
			appliedN <- applied
		})
	}
	wg.Wait()
	close(results)
	close(appliedN)
	n := 0
	for err := range results {
		require.NoError(t, err)
	}
	for a := range appliedN {
		if a {
			n++
		}
	}
	require.Equal(t, 1, n, "one caller applied the fact")
	got, err := e.s.Visit(t.Context(), e.a, v.ID)
	require.NoError(t, err)
	require.Equal(t, 1, got.Pass.Uses)
}

// A fact is its tenant's: another tenant neither finds it nor loads its
// visits through it.
func testFactTenantIsolation(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	v := e.newVisit(t, e.a, s.ID)
	f := e.newFact(protocol.FactCheckIn, v.ID)
	_, err := e.s.ApplyFact(t.Context(), cloud.EdgeFact{Tenant: e.c, SiteID: s.ID, Fact: f, ReceivedAt: e.tick()},
		func(load func(string) (cloud.Visit, error), _ *cloud.FactWrites) error {
			_, err := load(v.ID)
			requireNotFound(t, err, "another tenant's visit")
			return nil
		})
	require.NoError(t, err)
	_, err = e.s.EdgeFact(t.Context(), e.a, f.ID)
	requireNotFound(t, err)
	_, err = e.s.EdgeFact(t.Context(), e.c, f.ID)
	require.NoError(t, err)
}

// --- edges ------------------------------------------------------------------

func edgeTests() []test {
	return []test{
		{"CreateAndGet", testEdgeCreateAndGet},
		{"CreateNeedsSiteOfTenant", testEdgeNeedsSite},
		{"UsernameUnique", testEdgeUsernameUnique},
		{"List", testEdgeList},
		{"Status", testEdgeStatus},
		{"OnePerSite", testEdgeOnePerSite},
		{"Revoke", testEdgeRevoke},
		{"Hardware", testEdgeHardware},
		{"HardwareSnapshot", testEdgeHardwareSnapshot},
		{"HardwareError", testEdgeHardwareError},
	}
}

func (e *env) newEdge(t testing.TB, tn cloud.Tenant, siteID string) cloud.Edge {
	t.Helper()
	id := ids.New(ids.Edge)
	ed := cloud.Edge{ID: id, Tenant: tn, SiteID: siteID, Name: "Reception edge", Username: id,
		SecretHash: cloud.HashKey("secret " + id), CreatedAt: e.tick(), State: cloud.EdgeOffline}
	require.NoError(t, e.s.CreateEdge(t.Context(), ed))
	return ed
}

func normEdge(ed cloud.Edge) cloud.Edge {
	ed.CreatedAt = ed.CreatedAt.UTC()
	ed.StateSince, ed.LastSeenAt, ed.RevokedAt = utcPtr(ed.StateSince), utcPtr(ed.LastSeenAt), utcPtr(ed.RevokedAt)
	return ed
}

func testEdgeCreateAndGet(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	want := e.newEdge(t, e.a, s.ID)
	got, err := e.s.Edge(t.Context(), want.ID)
	require.NoError(t, err)
	_, head, err := e.s.SiteChanges(t.Context(), e.a, s.ID, 1<<62, 1)
	require.NoError(t, err)
	require.Equal(t, head, got.Head, "the edge is read with its site's feed head")
	want.Head = head
	want.Announced = cloud.EdgeOffline // an edge is made announced offline
	require.Equal(t, normEdge(want), normEdge(got))
	_, err = e.s.Edge(t.Context(), ids.New(ids.Edge))
	requireNotFound(t, err)
}

func testEdgeNeedsSite(t *testing.T, e *env) {
	theirs := e.newSite(t, e.c)
	for _, site := range []string{ids.New(ids.Site), theirs.ID} {
		id := ids.New(ids.Edge)
		err := e.s.CreateEdge(t.Context(), cloud.Edge{ID: id, Tenant: e.a, SiteID: site, Name: "x", Username: id,
			SecretHash: []byte{1}, CreatedAt: e.tick(), State: cloud.EdgeOffline})
		requireNotFound(t, err)
	}
}

// A site has one edge that is not revoked; a revoked one can be replaced.
// Two made at once for one site: one of them is made.
func testEdgeOnePerSite(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	first := e.newEdge(t, e.a, s.ID)
	second := func() error {
		id := ids.New(ids.Edge)
		return e.s.CreateEdge(t.Context(), cloud.Edge{ID: id, Tenant: e.a, SiteID: s.ID, Name: "x", Username: id,
			SecretHash: []byte{1}, CreatedAt: e.tick(), State: cloud.EdgeOffline})
	}
	require.ErrorIs(t, second(), cloud.ErrSiteHasEdge)
	_, err := e.s.RevokeEdge(t.Context(), e.a, first.ID, e.tick())
	require.NoError(t, err)
	require.NoError(t, second(), "the revoked edge's site takes a new one")
	require.ErrorIs(t, second(), cloud.ErrSiteHasEdge)

	race := e.newSite(t, e.a)
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			id := ids.New(ids.Edge)
			errs <- e.s.CreateEdge(t.Context(), cloud.Edge{ID: id, Tenant: e.a, SiteID: race.ID, Name: "x", Username: id,
				SecretHash: []byte{1}, CreatedAt: e.tick(), State: cloud.EdgeOffline})
		})
	}
	wg.Wait()
	close(errs)
	made := 0
	for err := range errs {
		if err == nil {
			made++
		} else {
			require.ErrorIs(t, err, cloud.ErrSiteHasEdge)
		}
	}
	require.Equal(t, 1, made, "one edge for the site, however many are made at once")
}

// RevokeEdge marks the tenant's edge revoked once; another tenant's edge
// is not found; EdgesRevoked says of each edge asked, of any tenant,
// whether it is.
func testEdgeRevoke(t *testing.T, e *env) {
	s, s2 := e.newSite(t, e.a), e.newSite(t, e.a)
	ed, kept := e.newEdge(t, e.a, s.ID), e.newEdge(t, e.a, s2.ID)
	at := e.tick()
	got, err := e.s.RevokeEdge(t.Context(), e.a, ed.ID, at)
	require.NoError(t, err)
	require.NotNil(t, got.RevokedAt)
	require.True(t, at.Equal(*got.RevokedAt))
	again, err := e.s.RevokeEdge(t.Context(), e.a, ed.ID, e.tick())
	require.NoError(t, err)
	require.True(t, at.Equal(*again.RevokedAt), "revoking twice keeps the first time")
	stored, err := e.s.Edge(t.Context(), ed.ID)
	require.NoError(t, err)
	require.True(t, at.Equal(*stored.RevokedAt))
	_, err = e.s.RevokeEdge(t.Context(), e.b, kept.ID, e.tick())
	requireNotFound(t, err)
	_, err = e.s.RevokeEdge(t.Context(), e.a, ids.New(ids.Edge), e.tick())
	requireNotFound(t, err)
	theirs := e.newEdge(t, e.b, e.newSite(t, e.b).ID)
	none := ids.New(ids.Edge)
	states, err := e.s.EdgesRevoked(t.Context(), []string{ed.ID, kept.ID, theirs.ID, none})
	require.NoError(t, err)
	require.Equal(t, map[string]bool{ed.ID: true, kept.ID: false, theirs.ID: false}, states, "an ID of no edge is left out")
	states, err = e.s.EdgesRevoked(t.Context(), nil)
	require.NoError(t, err)
	require.Empty(t, states)
}

func testEdgeUsernameUnique(t *testing.T, e *env) {
	s, other := e.newSite(t, e.a), e.newSite(t, e.a)
	first := e.newEdge(t, e.a, s.ID)
	id := ids.New(ids.Edge)
	err := e.s.CreateEdge(t.Context(), cloud.Edge{ID: id, Tenant: e.a, SiteID: other.ID, Name: "x", Username: first.Username,
		SecretHash: []byte{1}, CreatedAt: e.tick(), State: cloud.EdgeOffline})
	require.ErrorIs(t, err, cloud.ErrConflict)
}

func testEdgeList(t *testing.T, e *env) {
	s1, s2 := e.newSite(t, e.a), e.newSite(t, e.a)
	a := e.newEdge(t, e.a, s1.ID)
	b := e.newEdge(t, e.a, s2.ID)
	_, err := e.s.RevokeEdge(t.Context(), e.a, a.ID, e.tick())
	require.NoError(t, err)
	c := e.newEdge(t, e.a, s1.ID)
	theirs := e.newSite(t, e.c)
	e.newEdge(t, e.c, theirs.ID)
	ids := func(es []cloud.Edge) []string {
		var out []string
		for _, x := range es {
			out = append(out, x.ID)
		}
		return out
	}
	got, err := e.s.ListEdges(t.Context(), e.a, s1.ID)
	require.NoError(t, err)
	require.Equal(t, []string{a.ID, c.ID}, ids(got), "oldest first, revoked included")
	got, err = e.s.ListEdges(t.Context(), e.a, "")
	require.NoError(t, err)
	require.Equal(t, []string{a.ID, b.ID, c.ID}, ids(got))
	got, err = e.s.ListEdges(t.Context(), e.b, "")
	require.NoError(t, err)
	require.NotNil(t, got)
	require.Empty(t, got)
}

func testEdgeStatus(t *testing.T, e *env) {
	s, other := e.newSite(t, e.a), e.newSite(t, e.a)
	ed := e.newEdge(t, e.a, s.ID)
	at1 := e.tick()
	online := protocol.Status{V: 1, EdgeID: ed.ID, State: cloud.EdgeOnline, At: at1.Add(-time.Minute), Seq: 42, Outbox: 3, Software: "1.2.3"}
	require.NoError(t, e.s.RecordEdgeStatus(t.Context(), e.a, s.ID, online, at1))
	at2 := e.tick()
	online.Seq, online.Outbox = 50, 0
	require.NoError(t, e.s.RecordEdgeStatus(t.Context(), e.a, s.ID, online, at2))
	got, err := e.s.Edge(t.Context(), ed.ID)
	require.NoError(t, err)
	require.Equal(t, cloud.EdgeOnline, got.State)
	require.True(t, at1.Equal(*got.StateSince), "online since the first online status")
	require.True(t, at2.Equal(*got.LastSeenAt))
	require.Equal(t, uint64(50), got.Seq)
	require.Zero(t, got.Outbox)
	require.Equal(t, "1.2.3", got.Software)

	at3 := e.tick()
	will := protocol.Status{V: 1, EdgeID: ed.ID, State: cloud.EdgeOffline, At: at1}
	require.NoError(t, e.s.RecordEdgeStatus(t.Context(), e.a, s.ID, will, at3))
	got, err = e.s.Edge(t.Context(), ed.ID)
	require.NoError(t, err)
	require.Equal(t, cloud.EdgeOffline, got.State)
	require.True(t, at3.Equal(*got.StateSince))
	require.True(t, at2.Equal(*got.LastSeenAt), "the last will leaves the last sighting")
	require.Equal(t, uint64(50), got.Seq, "and what the edge last said of itself")
	require.Equal(t, "1.2.3", got.Software)

	for _, c := range []struct {
		tn   cloud.Tenant
		site string
		edge string
	}{{e.a, other.ID, ed.ID}, {e.c, s.ID, ed.ID}, {e.a, s.ID, ids.New(ids.Edge)}} {
		st := online
		st.EdgeID = c.edge
		requireNotFound(t, e.s.RecordEdgeStatus(t.Context(), c.tn, c.site, st, e.tick()), "%+v", c)
	}
}

// A call publishes each site at most once: a site written to while it is
// published waits for the next call, and does not keep the others
// waiting.
func testPublishEachSiteOnce(t *testing.T, e *env) {
	busy, quiet := e.newSite(t, e.a), e.newSite(t, e.a)
	if quiet.ID < busy.ID {
		busy, quiet = quiet, busy // busy is the one published first
	}
	v := e.newVisit(t, e.a, busy.ID)
	var order []string
	n, err := e.s.PublishFeeds(t.Context(), 2, func(site protocol.Site, cs []protocol.Change) error {
		order = append(order, site.SiteID)
		if site.SiteID == busy.ID {
			_, err := e.s.UpdateVisit(t.Context(), e.a, v.ID, func(x *cloud.Visit, _ *cloud.VisitWrites) error {
				x.Pass.Uses++
				return nil
			})
			return err
		}
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, []string{busy.ID, quiet.ID}, order)
	require.Equal(t, 3, n, "the busy site's settings and visit, the quiet one's settings")
	var p published
	n, err = e.s.PublishFeeds(t.Context(), 2, p.fn)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, []uint64{3}, p.bySeq[cloud.EdgeSite(e.a, busy.ID)])
}

// A batch applies each fact ID once: a fact recorded by an earlier call,
// and the second of two facts with one ID in the batch, are skipped
// without calling fn; the others are applied and go out on the feed once
// each.
func testFactBatchOnce(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	v1, v2, v3 := e.newVisit(t, e.a, s.ID), e.newVisit(t, e.a, s.ID), e.newVisit(t, e.a, s.ID)
	f1, f2, f3 := e.newFact(protocol.FactCheckIn, v1.ID), e.newFact(protocol.FactCheckIn, v2.ID), e.newFact(protocol.FactCheckIn, v3.ID)
	received := e.tick()
	ef := func(f protocol.Fact) cloud.EdgeFact {
		return cloud.EdgeFact{Tenant: e.a, SiteID: s.ID, Fact: f, ReceivedAt: received}
	}
	var calls []int
	earlier := []cloud.EdgeFact{ef(f2)}
	applied, err := e.s.ApplyFacts(t.Context(), earlier, checkIn(earlier, &calls))
	require.NoError(t, err)
	require.Equal(t, []bool{true}, applied)

	before := e.head(t, e.a, s.ID)
	batch := []cloud.EdgeFact{ef(f3), ef(f2), ef(f1), ef(f3)}
	calls = nil
	applied, err = e.s.ApplyFacts(t.Context(), batch, checkIn(batch, &calls))
	require.NoError(t, err)
	require.Equal(t, []bool{true, false, true, false}, applied)
	require.Equal(t, []int{0, 2}, calls, "fn runs for the facts applied now, in order")
	for _, v := range []cloud.Visit{v1, v2, v3} {
		got, err := e.s.Visit(t.Context(), e.a, v.ID)
		require.NoError(t, err)
		require.Equal(t, cloud.VisitCheckedIn, got.Status)
		require.Equal(t, 1, got.Pass.Uses, "visit %s checked in once", v.ID)
	}
	for _, f := range []protocol.Fact{f1, f2, f3} {
		rec, err := e.s.EdgeFact(t.Context(), e.a, f.ID)
		require.NoError(t, err)
		require.Equal(t, f.VisitID, rec.Fact.VisitID)
	}
	cs, _ := e.changes(t, e.a, s.ID, before)
	require.Len(t, cs, 2, "one change per visit the batch wrote")
	requireRun(t, before+1, cs)
	e.requireVisitChange(t, e.a, cs[0], v3.ID)
	e.requireVisitChange(t, e.a, cs[1], v1.ID)

	calls = nil
	applied, err = e.s.ApplyFacts(t.Context(), batch, checkIn(batch, &calls))
	require.NoError(t, err)
	require.Equal(t, []bool{false, false, false, false}, applied)
	require.Empty(t, calls)
	require.Equal(t, before+2, e.head(t, e.a, s.ID), "a batch applied before writes nothing")
}

// Two facts of one visit in a batch, a check-in then a check-out: the
// second reads the visit as the first left it, and the visit is stored and
// goes out on the feed once, as the second left it.
func testFactBatchSameVisit(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	v := e.newVisit(t, e.a, s.ID, withVisitor(func(vr *cloud.Visitor) { vr.Name = "Ada" }))
	in, out := e.newFact(protocol.FactCheckIn, v.ID), e.newFact(protocol.FactCheckOut, v.ID)
	received := e.tick()
	batch := []cloud.EdgeFact{
		{Tenant: e.a, SiteID: s.ID, Fact: in, ReceivedAt: received},
		{Tenant: e.a, SiteID: s.ID, Fact: out, ReceivedAt: received},
	}
	before := e.head(t, e.a, s.ID)
	var seen []cloud.VisitStatus
	applied, err := e.s.ApplyFacts(t.Context(), batch, func(i int, load func(string) (cloud.Visit, error), w *cloud.FactWrites) error {
		x, err := load(v.ID)
		if err != nil {
			return err
		}
		seen = append(seen, x.Status)
		at := batch[i].Fact.At
		if i == 0 {
			x.Status, x.CheckedInAt, x.Pass.Uses = cloud.VisitCheckedIn, &at, x.Pass.Uses+1
		} else {
			x.Status, x.CheckedOutAt = cloud.VisitCheckedOut, &at
		}
		x.UpdatedAt = received
		w.Visits = append(w.Visits, x)
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, []bool{true, true}, applied)
	require.Equal(t, []cloud.VisitStatus{cloud.VisitExpected, cloud.VisitCheckedIn}, seen, "the check-out saw the check-in")
	got, err := e.s.Visit(t.Context(), e.a, v.ID)
	require.NoError(t, err)
	require.Equal(t, cloud.VisitCheckedOut, got.Status)
	require.True(t, in.At.Equal(*got.CheckedInAt))
	require.True(t, out.At.Equal(*got.CheckedOutAt))
	require.Equal(t, 1, got.Pass.Uses)
	cs, _ := e.changes(t, e.a, s.ID, before)
	require.Len(t, cs, 1, "the visit goes out once, as the batch left it")
	e.requireVisitChange(t, e.a, cs[0], v.ID)
	require.Equal(t, "Ada", cs[0].Visit.VisitorName)
	require.Equal(t, string(cloud.VisitCheckedOut), cs[0].Visit.Status)
}

// A batch records each fact's conflict with that fact only, stores every
// fact's audit events, and makes new visits, which a later fact of the
// batch may write again: the new visit is stored as that one left it.
func testFactBatchConflicts(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	holder := e.newVisit(t, e.a, s.ID, withVisitor(func(vr *cloud.Visitor) { vr.Name = "Grace" }))
	other := e.newVisit(t, e.a, s.ID)
	re := e.newFact(protocol.FactReEntry, ids.New(ids.Visit))
	re.PassVisitID = holder.ID
	out := e.newFact(protocol.FactCheckOut, re.VisitID)
	bad := e.newFact(protocol.FactCheckIn, other.ID)
	ev := e.newAuditEvent(e.a, bad.VisitID)
	ev.Action, ev.ActorKind, ev.ActorID = cloud.AuditEdgeFactConflicted, cloud.ActorEdge, bad.EdgeID
	received := e.tick()
	var batch []cloud.EdgeFact
	for _, f := range []protocol.Fact{re, bad, out} {
		batch = append(batch, cloud.EdgeFact{Tenant: e.a, SiteID: s.ID, Fact: f, ReceivedAt: received})
	}
	before := e.head(t, e.a, s.ID)
	applied, err := e.s.ApplyFacts(t.Context(), batch, func(i int, load func(string) (cloud.Visit, error), w *cloud.FactWrites) error {
		switch i {
		case 0:
			h, err := load(holder.ID)
			if err != nil {
				return err
			}
			next := h
			next.ID, next.Status, next.CheckedInAt, next.Pass.ForVisitID = re.VisitID, cloud.VisitCheckedIn, &re.At, h.ID
			h.ReenteredAs = re.VisitID
			w.Visits = append(w.Visits, h)
			w.New = append(w.New, next)
		case 1:
			w.Conflict = cloud.ConflictEnded
			w.Audit = append(w.Audit, ev)
		case 2:
			x, err := load(re.VisitID)
			if err != nil {
				return fmt.Errorf("the batch's new visit: %w", err)
			}
			x.Status, x.CheckedOutAt = cloud.VisitCheckedOut, &out.At
			w.Visits = append(w.Visits, x)
		}
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, []bool{true, true, true}, applied)
	for _, c := range []struct {
		f        protocol.Fact
		conflict string
	}{{re, ""}, {bad, cloud.ConflictEnded}, {out, ""}} {
		rec, err := e.s.EdgeFact(t.Context(), e.a, c.f.ID)
		require.NoError(t, err)
		require.Equal(t, c.conflict, rec.Conflict, "fact %s", c.f.Kind)
	}
	events := e.listAuditEvents(t, e.a, cloud.AuditFilter{ObjectID: bad.VisitID})
	require.Len(t, events, 1)
	requireAuditEvent(t, ev, events[0])
	next, err := e.s.Visit(t.Context(), e.a, re.VisitID)
	require.NoError(t, err)
	require.Equal(t, cloud.VisitCheckedOut, next.Status)
	require.Equal(t, "Grace", next.Visitor.Name)
	got, err := e.s.Visit(t.Context(), e.a, holder.ID)
	require.NoError(t, err)
	require.Equal(t, re.VisitID, got.ReenteredAs)
	cs, _ := e.changes(t, e.a, s.ID, before)
	require.Len(t, cs, 2)
	requireRun(t, before+1, cs)
	e.requireVisitChange(t, e.a, cs[0], holder.ID)
	e.requireVisitChange(t, e.a, cs[1], re.VisitID)
	require.Equal(t, string(cloud.VisitCheckedOut), cs[1].Visit.Status)
}

// fn's error on any fact rolls the whole batch back: no fact is recorded,
// no visit written, nothing appended to the feed.
func testFactBatchAborts(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	v1, v2 := e.newVisit(t, e.a, s.ID), e.newVisit(t, e.a, s.ID)
	received := e.tick()
	var batch []cloud.EdgeFact
	for _, v := range []cloud.Visit{v1, v2} {
		batch = append(batch, cloud.EdgeFact{Tenant: e.a, SiteID: s.ID, Fact: e.newFact(protocol.FactCheckIn, v.ID), ReceivedAt: received})
	}
	before := e.head(t, e.a, s.ID)
	var calls []int
	in := checkIn(batch, &calls)
	_, err := e.s.ApplyFacts(t.Context(), batch, func(i int, load func(string) (cloud.Visit, error), w *cloud.FactWrites) error {
		if i == 1 {
			return errAbort
		}
		return in(i, load, w)
	})
	require.ErrorIs(t, err, errAbort)
	for _, ef := range batch {
		_, err := e.s.EdgeFact(t.Context(), e.a, ef.Fact.ID)
		requireNotFound(t, err)
	}
	got, err := e.s.Visit(t.Context(), e.a, v1.ID)
	require.NoError(t, err)
	require.Equal(t, cloud.VisitExpected, got.Status)
	require.Equal(t, before, e.head(t, e.a, s.ID))

	calls = nil
	applied, err := e.s.ApplyFacts(t.Context(), batch, checkIn(batch, &calls))
	require.NoError(t, err)
	require.Equal(t, []bool{true, true}, applied, "the facts of a failed batch are applied later")
}

// Teams and visit types go out on the feed of every site of their tenant
// as they are written, a new site's feed starts with them, and a
// snapshot holds them: the reception kiosk reads them offline. A visit
// carries what the kiosk shows of it.
func testFeedKiosk(t *testing.T, e *env) {
	s1 := e.newSite(t, e.a)
	theirs := e.newSite(t, e.c)
	tm := e.newTeam(t, e.a, func(x *cloud.Team) { x.VisitorsCanChoose = true })
	vt := e.newVisitType(t, e.a)
	cs, _ := e.changes(t, e.a, s1.ID, 1)
	require.Len(t, cs, 2)
	require.Equal(t, ptr(cloud.EdgeTeam(tm)), cs[0].Team)
	require.True(t, cs[0].Team.VisitorsCanChoose)
	require.Equal(t, ptr(cloud.EdgeVisitType(vt)), cs[1].VisitType)
	cs, _ = e.changes(t, e.c, theirs.ID, 0)
	require.Len(t, cs, 1, "another tenant's site gets no team or type")

	_, err := e.s.UpdateTeam(t.Context(), e.a, tm.ID, func(x *cloud.Team) error {
		x.Archived, x.UpdatedAt = true, e.tick()
		return nil
	})
	require.NoError(t, err)
	cs, _ = e.changes(t, e.a, s1.ID, 3)
	require.Len(t, cs, 1)
	require.True(t, cs[0].Team.Archived, "an archived team goes out archived")

	s2 := e.newSite(t, e.a)
	cs, _ = e.changes(t, e.a, s2.ID, 0)
	var teams, types int
	for _, c := range cs {
		if c.Team != nil {
			teams++
			require.True(t, c.Team.Archived)
		}
		if c.VisitType != nil {
			types++
		}
	}
	require.Equal(t, 1, teams, "a new site's feed starts with the tenant's teams")
	require.Equal(t, 1, types, "and its visit types")

	snap, err := e.s.SiteSnapshot(t.Context(), e.a, s2.ID, e.now)
	require.NoError(t, err)
	require.Len(t, snap.Teams, 1)
	require.Equal(t, tm.ID, snap.Teams[0].ID)
	require.Equal(t, []protocol.VisitType{cloud.EdgeVisitType(vt)}, snap.VisitTypes)

	v := e.newVisit(t, e.a, s1.ID, func(v *cloud.Visit, _ *cloud.VisitWrites) {
		v.Team, v.Audience, v.NeedsSomeone, v.Status = &cloud.Ref{ID: tm.ID, Name: tm.Name}, cloud.AudienceTeam, true, cloud.VisitCheckedIn
		v.CheckedInAt, v.WaitingSince, v.Source = ptr(e.now), ptr(e.now.Add(time.Minute)), cloud.SourceWalkIn
	})
	got, err := e.s.Visit(t.Context(), e.a, v.ID)
	require.NoError(t, err)
	require.True(t, got.WaitingSince.Equal(e.now.Add(time.Minute)), "waiting_since is stored")
	pv := lastOfVisit(func() []protocol.Change { cs, _ := e.changes(t, e.a, s1.ID, 0); return cs }(), v.ID)
	require.NotNil(t, pv)
	require.Equal(t, tm.ID, pv.TeamID)
	require.Equal(t, tm.Name, pv.TeamName)
	require.Equal(t, "walk_in", pv.Source)
	require.Equal(t, "team", pv.Audience)
	require.True(t, pv.NeedsSomeone)
	require.Equal(t, got.Visitor.ID, pv.VisitorID)
	require.True(t, pv.WaitingSince.Equal(e.now.Add(time.Minute)))
}

// A fact's new visitor record and outbox messages are written in its
// transaction, once: a walk-in's visit points at the visitor it makes (the
// feed carries the name), and a second delivery, in a later batch or in
// the same one, writes neither again.
func testFactVisitorAndMessages(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	at := e.tick()
	f := protocol.Fact{V: protocol.Version, ID: ids.New(ids.Fact), Kind: protocol.FactWalkIn, EdgeID: ids.New(ids.Edge),
		Counter: 3, At: at, DeviceID: "kiosk-1", VisitID: ids.New(ids.Visit),
		WalkIn: &protocol.WalkIn{Type: "meeting", Visitor: protocol.WalkInVisitor{Name: "Vera Walk"}}}
	ef := cloud.EdgeFact{Tenant: e.a, SiteID: s.ID, Fact: f, ReceivedAt: e.tick()}
	calls := 0
	fn := func(_ int, _ func(string) (cloud.Visit, error), w *cloud.FactWrites) error {
		calls++
		vr := cloud.Visitor{ID: ids.New(ids.Visitor), Tenant: e.a, Name: "Vera Walk", Email: "vera@example.com", CreatedAt: at, UpdatedAt: at}
		v := cloud.Visit{ID: f.VisitID, Tenant: e.a, Status: cloud.VisitCheckedIn, Type: "meeting", Source: cloud.SourceWalkIn,
			SiteID: s.ID, Audience: cloud.AudienceDesk, VisitorID: vr.ID, Visitor: vr, CheckedInAt: &at, NeedsSomeone: true,
			Receiver: cloud.Receiver{Kind: cloud.ReceiverReception}, Pass: cloud.Pass{ForVisitID: f.VisitID, Uses: 1},
			CreatedAt: at, UpdatedAt: at}
		w.Visitors = append(w.Visitors, vr)
		w.New = append(w.New, v)
		for _, to := range []string{"vera@example.com", cloud.Reception} {
			w.Messages = append(w.Messages, cloud.Message{ID: ids.New(ids.Message), Tenant: e.a, VisitID: v.ID,
				Channel: cloud.ChannelConsole, To: to, Subject: "Arrived", Body: "Vera is here.", Status: cloud.MessageQueued, CreatedAt: at})
		}
		return nil
	}
	before := e.head(t, e.a, s.ID)
	applied, err := e.s.ApplyFacts(t.Context(), []cloud.EdgeFact{ef, ef}, fn)
	require.NoError(t, err)
	require.Equal(t, []bool{true, false}, applied)
	applied, err = e.s.ApplyFacts(t.Context(), []cloud.EdgeFact{ef}, fn)
	require.NoError(t, err)
	require.Equal(t, []bool{false}, applied)
	require.Equal(t, 1, calls)

	got, err := e.s.Visit(t.Context(), e.a, f.VisitID)
	require.NoError(t, err)
	require.Equal(t, "Vera Walk", got.Visitor.Name)
	require.Equal(t, "vera@example.com", got.Visitor.Email)
	vr, err := e.s.Visitor(t.Context(), e.a, got.VisitorID)
	require.NoError(t, err)
	require.Equal(t, "Vera Walk", vr.Name)
	found, err := e.s.FindVisitor(t.Context(), e.a, "VERA@example.com", "")
	require.NoError(t, err)
	require.Equal(t, vr.ID, found.ID, "the new record is matched as any other")
	msgs := e.listMessages(t, e.a, cloud.MessageFilter{VisitID: f.VisitID})
	require.Len(t, msgs, 2)
	to := []string{msgs[0].To, msgs[1].To}
	require.ElementsMatch(t, []string{"vera@example.com", cloud.Reception}, to)
	cs, _ := e.changes(t, e.a, s.ID, before)
	require.Len(t, cs, 1)
	require.Equal(t, "Vera Walk", cs[0].Visit.VisitorName)
	require.Equal(t, "walk_in", cs[0].Visit.Source)
}
