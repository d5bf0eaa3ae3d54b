package storetest

import (
	"crypto/ed25519"
	"crypto/rand"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/sync/protocol"
)

// Enrolment by a one-time code (docs/decisions.md, "Enrolment (issue
// 17)"): what the store keeps of it, and for how long.

func enrolmentTests() []test {
	return []test{
		{"Purge", testEnrolmentPurge},
	}
}

// newEnrolment stores an enrolment for a new key whose code expires at
// expires, and returns it with its code hash.
func (e *env) newEnrolment(t testing.TB, expires time.Time) cloud.Enrolment {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	en := cloud.Enrolment{PublicKey: pub, CodeHash: cloud.HashKey(cloud.NewEnrolmentCode()), CreatedAt: expires.Add(-cloud.EnrolmentTTL),
		ExpiresAt: expires, Address: "192.0.2.7"}
	require.NoError(t, e.s.PutEnrolment(t.Context(), en))
	return en
}

// claimed stores an enrolment claimed at at by a new edge at a new site of
// tenant a, and returns it with the edge.
func (e *env) claimed(t testing.TB, at time.Time) (cloud.Enrolment, cloud.Edge) {
	t.Helper()
	en := e.newEnrolment(t, at.Add(time.Minute))
	site := e.newSite(t, e.a)
	id := ids.New(ids.Edge)
	ed, err := e.s.ClaimEnrolment(t.Context(), en.CodeHash, cloud.Edge{ID: id, Tenant: e.a, SiteID: site.ID, Name: "Edge", Username: id,
		SecretHash: cloud.HashKey("secret " + id), CreatedAt: at, State: cloud.EdgeOffline}, at, func(cloud.Edge) error { return nil })
	require.NoError(t, err)
	return en, ed
}

// testEnrolmentPurge: PurgeEnrolments deletes wrong codes tried before the
// time, codes that expired unclaimed before it, and claims made before it
// whose edge has connected or was revoked; it keeps the rest, among them a
// claim however old whose appliance has not collected its configuration.
func testEnrolmentPurge(t *testing.T, e *env) {
	ctx := t.Context()
	before := e.now
	old, recent := before.Add(-time.Microsecond), before.Add(time.Microsecond)

	require.NoError(t, e.s.AddEnrolmentFailure(ctx, e.a, old))
	require.NoError(t, e.s.AddEnrolmentFailure(ctx, e.a, recent))
	require.NoError(t, e.s.AddEnrolmentFailure(ctx, e.c, old))

	expired := e.newEnrolment(t, old)
	lately := e.newEnrolment(t, recent) // expired too, but within the retention
	waiting := e.newEnrolment(t, before.Add(time.Hour))

	uncollected, _ := e.claimed(t, before.Add(-48*time.Hour))
	connected, connEdge := e.claimed(t, before.Add(-time.Hour))
	require.NoError(t, e.s.RecordEdgeStatus(ctx, e.a, connEdge.SiteID,
		protocol.Status{V: 1, EdgeID: connEdge.ID, State: cloud.EdgeOnline, At: before.Add(-50 * time.Minute)}, before.Add(-50*time.Minute)))
	revoked, revEdge := e.claimed(t, before.Add(-time.Hour))
	_, err := e.s.RevokeEdge(ctx, e.a, revEdge.ID, before.Add(-30*time.Minute))
	require.NoError(t, err)
	fresh, freshEdge := e.claimed(t, recent)
	require.NoError(t, e.s.RecordEdgeStatus(ctx, e.a, freshEdge.SiteID,
		protocol.Status{V: 1, EdgeID: freshEdge.ID, State: cloud.EdgeOnline, At: recent}, recent))

	n, err := e.s.PurgeEnrolments(ctx, before)
	require.NoError(t, err)
	require.Equal(t, int64(2+1+2), n, "two old wrong codes, one expired code, two claims done with")

	fails, err := e.s.EnrolmentFailures(ctx, e.a, time.Time{})
	require.NoError(t, err)
	require.Len(t, fails, 1)
	require.True(t, recent.Equal(fails[0]), "the wrong code tried after the time is kept")
	fails, err = e.s.EnrolmentFailures(ctx, e.c, time.Time{})
	require.NoError(t, err)
	require.Empty(t, fails, "every tenant's old wrong codes go")

	for _, c := range []struct {
		name string
		en   cloud.Enrolment
		kept bool
	}{
		{"expired unclaimed before the time", expired, false},
		{"expired unclaimed after the time", lately, true},
		{"waiting", waiting, true},
		{"claimed long ago, its configuration not collected", uncollected, true},
		{"claimed before the time, its edge connected", connected, false},
		{"claimed before the time, its edge revoked", revoked, false},
		{"claimed after the time", fresh, true},
	} {
		got, err := e.s.Enrolment(ctx, c.en.PublicKey)
		if c.kept {
			require.NoError(t, err, c.name)
			require.Equal(t, c.en.CodeHash, got.CodeHash, c.name)
		} else {
			requireNotFound(t, err)
		}
	}
	// The claimed enrolment still works as one: its edge is not touched.
	got, err := e.s.Enrolment(ctx, uncollected.PublicKey)
	require.NoError(t, err)
	require.NotNil(t, got.ClaimedAt)

	n, err = e.s.PurgeEnrolments(ctx, before)
	require.NoError(t, err)
	require.Zero(t, n, "nothing more to purge")
}
