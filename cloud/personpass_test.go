package cloud_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/storetest/stores"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/shared/passtoken"
	"github.com/svc-vms/svc/sync/protocol"
)

// lastPerson is the last change of the person among cs, or nil.
func lastPerson(cs []protocol.Change, id string) *protocol.Person {
	var out *protocol.Person
	for _, c := range cs {
		if c.Person != nil && c.Person.ID == id {
			out = c.Person
		}
	}
	return out
}

// A new person has a pass issued at their creation, to the second; the
// token verifies with the tenant's keys, is the same at every call, and
// the person is on the feed of every site with that issue time.
func TestPersonPass_IssuedAtCreation(t *testing.T) {
	stores.Each(t, func(t *testing.T, store cloud.Store) {
		e := newEdgeEnv(t, store)
		e.clock.Advance(1234 * time.Millisecond)
		var n atomic.Int32
		e.svc.OnChange(func() { n.Add(1) })
		head := e.head(t)
		p, err := e.svc.CreatePerson(t.Context(), e.tenant, cloud.PersonInput{Name: cloud.Some("Ada Lovelace")})
		require.NoError(t, err)
		require.Equal(t, int32(1), n.Load(), "a person write feeds the sites")
		require.Equal(t, p.CreatedAt.Truncate(time.Second), p.PassIssuedAt)

		tok, issued, err := e.svc.PersonPass(t.Context(), e.tenant, p.ID)
		require.NoError(t, err)
		require.True(t, p.PassIssuedAt.Equal(issued))
		again, _, err := e.svc.PersonPass(t.Context(), e.tenant, p.ID)
		require.NoError(t, err)
		require.Equal(t, tok, again, "the same pass each time")
		keys, err := e.svc.PassKeySet(t.Context(), e.tenant)
		require.NoError(t, err)
		c, err := passtoken.VerifyPerson(tok, keys)
		require.NoError(t, err)
		require.Equal(t, p.ID, c.PersonID)
		require.True(t, issued.Equal(c.IssuedAt))

		for _, site := range []protocol.Site{e.site, cloud.EdgeSite(e.tenant, e.other.ID)} {
			cs, _, err := e.svc.SiteChanges(t.Context(), site, 0, 0)
			require.NoError(t, err)
			got := lastPerson(cs, p.ID)
			require.NotNil(t, got, "site %s follows the person", site.SiteID)
			require.Equal(t, protocol.Person{ID: p.ID, Name: "Ada Lovelace", Active: true, PassIssuedAt: issued.Unix()}, *got)
		}
		cs := e.changesAfter(t, head)
		require.Equal(t, p.ID, cs[0].Person.ID, "the person, then the key the first pass made")
		require.NotNil(t, cs[1].Key)
		require.Len(t, cs, 2)

		_, _, err = e.svc.PersonPass(t.Context(), e.tenant, ids.New(ids.Person))
		require.ErrorIs(t, err, cloud.ErrNotFound)
		_, _, err = e.svc.PersonPass(t.Context(), cloud.Tenant{OrgID: e.tenant.OrgID, Mode: cloud.ModeTest}, p.ID)
		require.ErrorIs(t, err, cloud.ErrNotFound, "the other mode")
	})
}

// A reissue moves the issue time on, to now cut to the second, and never
// back: within the same second, or with a clock behind, it is a second past
// the current one.
func TestReissuePersonPass(t *testing.T) {
	stores.Each(t, func(t *testing.T, store cloud.Store) {
		e := newEdgeEnv(t, store)
		p, err := e.svc.CreatePerson(t.Context(), e.tenant, cloud.PersonInput{Name: cloud.Some("Grace Hopper")})
		require.NoError(t, err)
		old, oldAt, err := e.svc.PersonPass(t.Context(), e.tenant, p.ID)
		require.NoError(t, err)

		tok, at, err := e.svc.ReissuePersonPass(t.Context(), e.tenant, p.ID)
		require.NoError(t, err)
		require.NotEqual(t, old, tok)
		require.Equal(t, oldAt.Add(time.Second), at, "the same second: one more")
		shown, shownAt, err := e.svc.PersonPass(t.Context(), e.tenant, p.ID)
		require.NoError(t, err)
		require.Equal(t, tok, shown, "the pass shown is the one reissued")
		require.True(t, at.Equal(shownAt))

		e.clock.Advance(90*time.Minute + 700*time.Millisecond)
		_, at2, err := e.svc.ReissuePersonPass(t.Context(), e.tenant, p.ID)
		require.NoError(t, err)
		require.Equal(t, e.clock.Now().Truncate(time.Second), at2)

		e.clock.Advance(-time.Hour) // another process's clock, behind
		_, at3, err := e.svc.ReissuePersonPass(t.Context(), e.tenant, p.ID)
		require.NoError(t, err)
		require.Equal(t, at2.Add(time.Second), at3, "never an issue time already used")

		stored, err := store.Person(t.Context(), e.tenant, p.ID)
		require.NoError(t, err)
		require.True(t, at3.Equal(stored.PassIssuedAt))
		cs := e.changesAfter(t, 0)
		require.Equal(t, at3.Unix(), lastPerson(cs, p.ID).PassIssuedAt, "the edge hears of the new pass")
	})
}

// A deactivated person has no pass to show or reissue: invalid state.
// Reactivated, their pass works again, unchanged.
func TestPersonPass_Deactivated(t *testing.T) {
	stores.Each(t, func(t *testing.T, store cloud.Store) {
		e := newEdgeEnv(t, store)
		p, err := e.svc.CreatePerson(t.Context(), e.tenant, cloud.PersonInput{Name: cloud.Some("Alan Turing")})
		require.NoError(t, err)
		tok, _, err := e.svc.PersonPass(t.Context(), e.tenant, p.ID)
		require.NoError(t, err)
		_, err = e.svc.SetPersonActive(t.Context(), e.tenant, p.ID, false)
		require.NoError(t, err)
		require.False(t, lastPerson(e.changesAfter(t, 0), p.ID).Active, "the edge hears of the deactivation")

		_, _, err = e.svc.PersonPass(t.Context(), e.tenant, p.ID)
		var se *cloud.StateError
		require.ErrorAs(t, err, &se)
		require.ErrorIs(t, err, cloud.ErrInvalidState)
		_, _, err = e.svc.ReissuePersonPass(t.Context(), e.tenant, p.ID)
		require.ErrorIs(t, err, cloud.ErrInvalidState)
		_, _, err = e.svc.ReissuePersonPass(t.Context(), e.tenant, ids.New(ids.Person))
		require.ErrorIs(t, err, cloud.ErrNotFound)

		_, err = e.svc.SetPersonActive(t.Context(), e.tenant, p.ID, true)
		require.NoError(t, err)
		again, _, err := e.svc.PersonPass(t.Context(), e.tenant, p.ID)
		require.NoError(t, err)
		require.Equal(t, tok, again)
	})
}
