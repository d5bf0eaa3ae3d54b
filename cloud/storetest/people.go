package storetest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/sync/protocol"
)

// People on the feed (docs/decisions.md, "Personal passes and punches at
// gates"): every site of a tenant follows every person of the tenant.

// personChanges returns the person changes among cs, in order.
func personChanges(cs []protocol.Change) []protocol.Change {
	var out []protocol.Change
	for _, c := range cs {
		if c.Person != nil {
			out = append(out, c)
		}
	}
	return out
}

// requirePersonChange checks c carries the person as a read of them shows
// them, at their update time.
func (e *env) requirePersonChange(t testing.TB, tn cloud.Tenant, c protocol.Change, personID string, msgAndArgs ...any) {
	t.Helper()
	require.NotNil(t, c.Person, msgAndArgs...)
	p, err := e.s.Person(t.Context(), tn, personID)
	require.NoError(t, err)
	require.Equal(t, cloud.EdgePerson(p), *c.Person, msgAndArgs...)
	require.True(t, p.UpdatedAt.Equal(c.At), "a change's time is its object's update time")
}

// Every person write goes out on every site of the tenant, once per site,
// as the write left the person; a new site starts with every person of the
// tenant, active or not; another tenant's sites get nothing.
func testFeedPeople(t *testing.T, e *env) {
	s1, s2 := e.newSite(t, e.a), e.newSite(t, e.a)
	theirs := e.newSite(t, e.c)
	test := e.newSite(t, e.b)
	p := e.newPerson(t, e.a, named[cloud.Person]("Grace Hopper"))
	for _, s := range []cloud.Site{s1, s2} {
		cs, head := e.changes(t, e.a, s.ID, 0)
		requireRun(t, 1, cs)
		require.Equal(t, uint64(2), head, "site %s: settings, then the person", s.ID)
		e.requirePersonChange(t, e.a, cs[1], p.ID, "site %s", s.ID)
		require.Equal(t, protocol.Person{ID: p.ID, Name: "Grace Hopper", Active: true, PassIssuedAt: p.PassIssuedAt.Unix()}, *cs[1].Person)
	}
	require.Equal(t, uint64(1), e.head(t, e.c, theirs.ID), "another organisation's site")
	require.Equal(t, uint64(1), e.head(t, e.b, test.ID), "the other mode's site")

	edits := []func(*cloud.Person){
		func(x *cloud.Person) { x.Name = "Grace Brewster Hopper" },
		func(x *cloud.Person) { x.Active, x.DeactivatedAt = false, ptr(x.UpdatedAt) },
		func(x *cloud.Person) { x.Active, x.DeactivatedAt = true, nil },
		func(x *cloud.Person) { x.PassIssuedAt = x.PassIssuedAt.Add(time.Hour) },
	}
	for i, edit := range edits {
		_, err := e.s.UpdatePerson(t.Context(), e.a, p.ID, func(x *cloud.Person) error {
			x.UpdatedAt = e.tick()
			edit(x)
			return nil
		})
		require.NoError(t, err)
		for _, s := range []cloud.Site{s1, s2} {
			cs, head := e.changes(t, e.a, s.ID, 2+uint64(i))
			require.Len(t, cs, 1, "write %d at site %s: one change", i, s.ID)
			require.Equal(t, 3+uint64(i), head)
			e.requirePersonChange(t, e.a, cs[0], p.ID, "write %d at site %s", i, s.ID)
		}
	}
	cs, _ := e.changes(t, e.a, s1.ID, 0)
	people := personChanges(cs)
	require.Len(t, people, 1+len(edits))
	require.Equal(t, "Grace Brewster Hopper", people[1].Person.Name)
	require.False(t, people[2].Person.Active, "deactivated")
	require.True(t, people[3].Person.Active, "reactivated")
	require.Equal(t, p.PassIssuedAt.Add(time.Hour).Unix(), people[4].Person.PassIssuedAt, "reissued")

	gone := e.newPerson(t, e.a, named[cloud.Person]("Gone"), func(x *cloud.Person) {
		x.Active, x.DeactivatedAt = false, ptr(x.CreatedAt)
	})
	e.newPerson(t, e.c, named[cloud.Person]("Theirs"))
	s3 := e.newSite(t, e.a)
	cs, head := e.changes(t, e.a, s3.ID, 0)
	requireRun(t, 1, cs)
	require.Equal(t, uint64(3), head, "settings and the tenant's two people")
	require.NotNil(t, cs[0].Settings)
	e.requirePersonChange(t, e.a, cs[1], p.ID, "the first person first")
	e.requirePersonChange(t, e.a, cs[2], gone.ID, "a deactivated person too")
	require.False(t, cs[2].Person.Active)
}

// A person write that does not commit (fn's error, an email in use)
// appends nothing to any site.
func testFeedPersonRollback(t *testing.T, e *env) {
	s1, s2 := e.newSite(t, e.a), e.newSite(t, e.a)
	p := e.newPerson(t, e.a, func(x *cloud.Person) { x.Email = "taken@example.com" })
	other := e.newPerson(t, e.a)
	h1, h2 := e.head(t, e.a, s1.ID), e.head(t, e.a, s2.ID)
	_, err := e.s.UpdatePerson(t.Context(), e.a, p.ID, func(x *cloud.Person) error {
		x.Active = false
		return errAbort
	})
	require.ErrorIs(t, err, errAbort)
	_, err = e.s.UpdatePerson(t.Context(), e.a, other.ID, func(x *cloud.Person) error {
		x.Email, x.UpdatedAt = "Taken@Example.com", e.tick()
		return nil
	})
	var conflict *cloud.ConflictError
	require.True(t, errors.As(err, &conflict), "an email in use: %v", err)
	at := e.tick()
	err = e.s.CreatePerson(t.Context(), cloud.Person{ID: p.ID, Tenant: e.a, Name: "Twice", Active: true,
		PassIssuedAt: at.Truncate(time.Second), CreatedAt: at, UpdatedAt: at})
	require.Error(t, err, "a person ID used twice")
	require.Equal(t, h1, e.head(t, e.a, s1.ID))
	require.Equal(t, h2, e.head(t, e.a, s2.ID))
}

// Sites created while people are written: whatever the order they commit
// in, every site's feed ends with each person as the store holds them, so
// an edge replaying its feed from the start knows every person. On
// PostgreSQL this is the tenant's feed lock at work.
func testFeedPeopleConcurrentSites(t *testing.T, e *env) {
	const writers, each, sites = 4, 6, 6
	people := make([]cloud.Person, writers)
	for i := range people {
		people[i] = e.newPerson(t, e.a)
	}
	var wg sync.WaitGroup
	errs := make(chan error, writers*each+sites)
	made := make(chan cloud.Site, sites)
	for w := range writers {
		wg.Go(func() {
			for range each {
				_, err := e.s.UpdatePerson(t.Context(), e.a, people[w].ID, func(x *cloud.Person) error {
					x.PassIssuedAt, x.UpdatedAt = x.PassIssuedAt.Add(time.Second), e.tick()
					return nil
				})
				errs <- err
			}
		})
	}
	for range sites {
		wg.Go(func() {
			at := e.tick()
			s := cloud.Site{ID: ids.New(ids.Site), Tenant: e.a, Name: "Site", Timezone: "Europe/London", CreatedAt: at, UpdatedAt: at}
			err := e.s.CreateSite(t.Context(), s)
			errs <- err
			if err == nil {
				made <- s
			}
		})
	}
	wg.Wait()
	close(errs)
	close(made)
	for err := range errs {
		require.NoError(t, err)
	}
	n := 0
	for s := range made {
		n++
		cs, _ := e.changes(t, e.a, s.ID, 0)
		requireRun(t, 1, cs)
		last := map[string]protocol.Person{}
		for _, c := range cs {
			if c.Person != nil {
				last[c.Person.ID] = *c.Person
			}
		}
		for _, p := range people {
			stored, err := e.s.Person(t.Context(), e.a, p.ID)
			require.NoError(t, err)
			got, ok := last[p.ID]
			require.True(t, ok, "site %s never got person %s", s.ID, p.ID)
			require.Equal(t, cloud.EdgePerson(stored), got, "site %s: the last change of person %s", s.ID, p.ID)
		}
	}
	require.Equal(t, sites, n)
}

// A snapshot holds every person of the tenant, active or not, as the feed
// last sent them, and nobody of another tenant.
func testSnapshotPeople(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	p1 := e.newPerson(t, e.a, named[cloud.Person]("One"))
	p2 := e.newPerson(t, e.a, named[cloud.Person]("Two"))
	_, err := e.s.UpdatePerson(t.Context(), e.a, p2.ID, func(x *cloud.Person) error {
		x.Active, x.DeactivatedAt, x.UpdatedAt = false, ptr(e.tick()), e.tick()
		return nil
	})
	require.NoError(t, err)
	e.newPerson(t, e.b, named[cloud.Person]("Test mode"))
	e.newPerson(t, e.c, named[cloud.Person]("Theirs"))

	snap, err := e.s.SiteSnapshot(t.Context(), e.a, s.ID, e.now)
	require.NoError(t, err)
	var want []protocol.Person
	for _, id := range []string{p1.ID, p2.ID} {
		p, err := e.s.Person(t.Context(), e.a, id)
		require.NoError(t, err)
		want = append(want, cloud.EdgePerson(p))
	}
	require.ElementsMatch(t, want, snap.People)
	cs, _ := e.changes(t, e.a, s.ID, 0)
	last := map[string]protocol.Person{}
	for _, c := range personChanges(cs) {
		last[c.Person.ID] = *c.Person
	}
	for _, p := range snap.People {
		require.Equal(t, last[p.ID], p, "the snapshot's person is the feed's last change of them")
		require.NoError(t, protocol.Validate(&p))
	}

	empty := e.newSite(t, e.c)
	snap, err = e.s.SiteSnapshot(t.Context(), e.c, empty.ID, e.now)
	require.NoError(t, err)
	require.Len(t, snap.People, 1, "the other organisation's one person")
	lonely := e.newSite(t, e.b)
	_, err = e.s.UpdatePerson(t.Context(), e.b, snap.People[0].ID, func(*cloud.Person) error { return nil })
	requireNotFound(t, err, "another tenant's person")
	snap, err = e.s.SiteSnapshot(t.Context(), e.b, lonely.ID, e.now)
	require.NoError(t, err)
	require.NotNil(t, snap.People)
	require.Len(t, snap.People, 1, "test mode's one person")
}
