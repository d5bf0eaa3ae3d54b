package cloud_test

import (
	"crypto/ed25519"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/storetest/stores"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/sync/protocol"
)

func newIdentity(t *testing.T) ed25519.PublicKey {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(nil)
	require.NoError(t, err)
	return pub
}

// An appliance asks for a code, polls while it waits, is claimed for a
// site, and its next poll gets its edge and a broker password that
// authenticates; a second claim of the code is refused, and once the edge
// has connected the poll delivers nothing more.
func TestEnrolment_RequestClaimPoll(t *testing.T) {
	stores.Each(t, func(t *testing.T, store cloud.Store) {
		e := newEdgeEnv(t, store)
		ctx := t.Context()
		pub := newIdentity(t)
		code, en, err := e.svc.RequestEnrolment(ctx, pub, "192.0.2.1", 2*time.Second)
		require.NoError(t, err)
		require.Len(t, code, cloud.EnrolmentCodeLen)
		require.Equal(t, e.clock.Now().Add(cloud.EnrolmentTTL), en.ExpiresAt)

		p, err := e.svc.PollEnrolment(ctx, pub, 40*time.Second)
		require.NoError(t, err)
		require.Equal(t, cloud.EnrolmentWaiting, p.State)
		require.Empty(t, p.Password)

		e.clock.Advance(time.Minute)
		edge, err := e.svc.ClaimEnrolment(ctx, e.tenant, cloud.FormatEnrolmentCode(code), e.other.ID, "Lobby")
		require.NoError(t, err)
		require.True(t, ids.Valid(ids.Edge, edge.ID))
		require.Equal(t, e.other.ID, edge.SiteID)
		require.Equal(t, []byte(pub), edge.IdentityKey)
		require.NotNil(t, edge.Skew)
		require.Equal(t, 40*time.Second, *edge.Skew, "the skew the appliance's last poll showed")
		require.True(t, edge.SkewWarning(), "over the tolerance")

		_, err = e.svc.ClaimEnrolment(ctx, e.tenant, code, e.other.ID, "Lobby")
		require.ErrorIs(t, err, cloud.ErrEnrolmentUsed, "a code works once")

		p, err = e.svc.PollEnrolment(ctx, pub, time.Second)
		require.NoError(t, err)
		require.Equal(t, cloud.EnrolmentClaimed, p.State)
		require.Equal(t, edge.ID, p.Edge.ID)
		require.Equal(t, e.other.ID, p.Site.ID)
		require.Len(t, p.Gates, len(e.other.Gates))
		for i, g := range p.Gates {
			require.Equal(t, e.other.Gates[i], g.ID, "oldest first")
		}
		got, err := e.svc.AuthenticateEdge(ctx, edge.ID, p.Password)
		require.NoError(t, err)
		require.Equal(t, time.Second, *got.Skew)

		// A lost answer: the next poll mints another password, and the
		// first stops working.
		again, err := e.svc.PollEnrolment(ctx, pub, time.Second)
		require.NoError(t, err)
		require.NotEqual(t, p.Password, again.Password)
		_, err = e.svc.AuthenticateEdge(ctx, edge.ID, p.Password)
		require.ErrorIs(t, err, cloud.ErrUnauthorized)

		// Connected: nothing more to deliver, and asking for a code is
		// refused while the edge stands.
		require.NoError(t, e.svc.RecordEdgeStatus(ctx, cloud.EdgeSite(e.tenant, e.other.ID),
			protocol.Status{EdgeID: edge.ID, State: "online", At: e.clock.Now()}))
		p, err = e.svc.PollEnrolment(ctx, pub, 0)
		require.NoError(t, err)
		require.Equal(t, cloud.EnrolmentEnrolled, p.State)
		require.Empty(t, p.Password)
		_, _, err = e.svc.RequestEnrolment(ctx, pub, "192.0.2.1", 0)
		require.ErrorIs(t, err, cloud.ErrEnrolled)

		// Revoked: the appliance may ask again.
		_, err = e.svc.RevokeEdge(ctx, e.tenant, edge.ID)
		require.NoError(t, err)
		p, err = e.svc.PollEnrolment(ctx, pub, 0)
		require.NoError(t, err)
		require.Equal(t, cloud.EnrolmentRevoked, p.State)
		code2, _, err := e.svc.RequestEnrolment(ctx, pub, "192.0.2.1", 0)
		require.NoError(t, err)
		require.NotEmpty(t, code2)
	})
}

// A code expires after EnrolmentTTL; a second request replaces the
// first's code; the site keeps one active edge.
func TestEnrolment_ExpiredReplacedAndOneEdgePerSite(t *testing.T) {
	stores.Each(t, func(t *testing.T, store cloud.Store) {
		e := newEdgeEnv(t, store)
		ctx := t.Context()
		pub := newIdentity(t)
		code, _, err := e.svc.RequestEnrolment(ctx, pub, "192.0.2.1", 0)
		require.NoError(t, err)
		e.clock.Advance(cloud.EnrolmentTTL)
		p, err := e.svc.PollEnrolment(ctx, pub, 0)
		require.NoError(t, err)
		require.Equal(t, cloud.EnrolmentExpired, p.State)
		_, err = e.svc.ClaimEnrolment(ctx, e.tenant, code, e.other.ID, "")
		require.ErrorIs(t, err, cloud.ErrEnrolmentExpired)

		newer, _, err := e.svc.RequestEnrolment(ctx, pub, "192.0.2.1", 0)
		require.NoError(t, err)
		_, err = e.svc.ClaimEnrolment(ctx, e.tenant, code, e.other.ID, "")
		var ve *cloud.ValidationError
		require.ErrorAs(t, err, &ve, "the replaced code is unknown")

		_, err = e.svc.ClaimEnrolment(ctx, e.tenant, newer, e.site.SiteID, "")
		require.ErrorIs(t, err, cloud.ErrSiteHasEdge, "London has its edge")
		p, err = e.svc.PollEnrolment(ctx, pub, 0)
		require.NoError(t, err)
		require.Equal(t, cloud.EnrolmentWaiting, p.State, "a refused claim leaves the code to claim")
	})
}

// Wrong codes count against the tenant: after ClaimAttempts of them its
// claims are refused, the right code included, until the window passes;
// another tenant is not locked out.
func TestEnrolment_WrongCodesLockOut(t *testing.T) {
	stores.Each(t, func(t *testing.T, store cloud.Store) {
		e := newEdgeEnv(t, store)
		ctx := t.Context()
		pub := newIdentity(t)
		code, _, err := e.svc.RequestEnrolment(ctx, pub, "192.0.2.1", 0)
		require.NoError(t, err)
		wrong := "ZZZZZZZZ"
		if code == wrong {
			wrong = "YYYYYYYY"
		}
		for i := range cloud.ClaimAttempts {
			guess := wrong
			if i == 0 {
				guess = "not a code"
			}
			_, err := e.svc.ClaimEnrolment(ctx, e.tenant, guess, e.other.ID, "")
			var ve *cloud.ValidationError
			require.ErrorAs(t, err, &ve, "try %d", i)
		}
		first := e.clock.Now()
		_, err = e.svc.ClaimEnrolment(ctx, e.tenant, code, e.other.ID, "")
		var ae *cloud.AttemptsError
		require.ErrorAs(t, err, &ae)
		require.Equal(t, first.Add(cloud.ClaimLockout), ae.Until)

		test := cloud.Tenant{OrgID: e.tenant.OrgID, Mode: cloud.ModeTest}
		_, err = e.svc.ClaimEnrolment(ctx, test, wrong, e.other.ID, "")
		require.NotErrorAs(t, err, &ae, "test mode is another tenant")

		e.clock.Advance(cloud.ClaimLockout)
		code, _, err = e.svc.RequestEnrolment(ctx, pub, "192.0.2.1", 0) // the first expired meanwhile
		require.NoError(t, err)
		_, err = e.svc.ClaimEnrolment(ctx, e.tenant, code, e.other.ID, "")
		require.NoError(t, err)
	})
}

// What enrolment no longer needs goes after EnrolmentRetention: an
// expired code is told expired for that long (a claim of it is not a
// wrong code), then is unknown; a claim whose appliance has not collected
// its configuration is kept however old, and goes once its edge has
// connected.
func TestEnrolment_PurgeAfterRetention(t *testing.T) {
	stores.Each(t, func(t *testing.T, store cloud.Store) {
		e := newEdgeEnv(t, store)
		ctx := t.Context()
		unclaimed, claimed := newIdentity(t), newIdentity(t)
		code, _, err := e.svc.RequestEnrolment(ctx, unclaimed, "192.0.2.1", 0)
		require.NoError(t, err)
		other, _, err := e.svc.RequestEnrolment(ctx, claimed, "192.0.2.2", 0)
		require.NoError(t, err)
		edge, err := e.svc.ClaimEnrolment(ctx, e.tenant, other, e.other.ID, "Lobby")
		require.NoError(t, err)

		e.clock.Advance(cloud.EnrolmentTTL + cloud.EnrolmentRetention)
		n, err := e.svc.PurgeEnrolments(ctx)
		require.NoError(t, err)
		require.Zero(t, n, "expired for exactly the retention: kept")
		p, err := e.svc.PollEnrolment(ctx, unclaimed, 0)
		require.NoError(t, err)
		require.Equal(t, cloud.EnrolmentExpired, p.State)
		_, err = e.svc.ClaimEnrolment(ctx, e.tenant, code, e.other.ID, "")
		require.ErrorIs(t, err, cloud.ErrEnrolmentExpired)

		e.clock.Advance(time.Second)
		n, err = e.svc.PurgeEnrolments(ctx)
		require.NoError(t, err)
		require.Equal(t, int64(1), n)
		_, err = e.svc.PollEnrolment(ctx, unclaimed, 0)
		require.ErrorIs(t, err, cloud.ErrNotFound, "the appliance asks for a new code")
		_, err = e.svc.ClaimEnrolment(ctx, e.tenant, code, e.other.ID, "")
		var ve *cloud.ValidationError
		require.ErrorAs(t, err, &ve, "an unknown code now, and a wrong try")
		fails, err := store.EnrolmentFailures(ctx, e.tenant, time.Time{})
		require.NoError(t, err)
		require.Len(t, fails, 1)

		e.clock.Advance(30 * 24 * time.Hour)
		n, err = e.svc.PurgeEnrolments(ctx)
		require.NoError(t, err)
		require.Equal(t, int64(1), n, "the wrong try, a day old")
		p, err = e.svc.PollEnrolment(ctx, claimed, 0)
		require.NoError(t, err)
		require.Equal(t, cloud.EnrolmentClaimed, p.State, "a month on, the appliance still collects its configuration")
		require.NotEmpty(t, p.Password)

		require.NoError(t, e.svc.RecordEdgeStatus(ctx, cloud.EdgeSite(e.tenant, e.other.ID),
			protocol.Status{EdgeID: edge.ID, State: "online", At: e.clock.Now()}))
		n, err = e.svc.PurgeEnrolments(ctx)
		require.NoError(t, err)
		require.Equal(t, int64(1), n, "connected: the claim is done with")
		_, err = e.svc.PollEnrolment(ctx, claimed, 0)
		require.ErrorIs(t, err, cloud.ErrNotFound)
		_, _, err = e.svc.RequestEnrolment(ctx, claimed, "192.0.2.2", 0)
		require.ErrorIs(t, err, cloud.ErrEnrolled, "the edge still knows its appliance by its key")
	})
}

func TestEnrolmentCode_Normalise(t *testing.T) {
	for in, want := range map[string]string{
		"abcd-efgh": "ABCDEFGH", "ABCD EFGH": "ABCDEFGH", "o1il-0000": "0111" + "0000", "7K3M-9QZX": "7K3M9QZX",
	} {
		got, ok := cloud.NormaliseEnrolmentCode(in)
		require.True(t, ok, in)
		require.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "ABCD-EFG", "ABCD-EFGHJ", "ABCD-EFGU", "ÄBCD-EFGH"} {
		_, ok := cloud.NormaliseEnrolmentCode(in)
		require.False(t, ok, in)
	}
	for range 100 {
		c := cloud.NewEnrolmentCode()
		got, ok := cloud.NormaliseEnrolmentCode(cloud.FormatEnrolmentCode(c))
		require.True(t, ok)
		require.Equal(t, c, got)
	}
}
