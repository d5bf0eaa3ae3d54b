package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/shared/ids"
)

// Readiness and statistics (docs/decisions.md, "Metrics (issue 19)"):
// what /readyz asks of the store, and what /metrics shows of it.

func readyTests() []test {
	return []test{
		{"ReadyWhenOpen", testReadyWhenOpen},
		{"NotReadyPastDeadline", testNotReadyPastDeadline},
		{"NotReadyWhenClosed", testNotReadyWhenClosed},
		{"StatsPools", testStatsPools},
		{"StatsCountConstraintErrors", testStatsCountConstraintErrors},
	}
}

func testReadyWhenOpen(t *testing.T, e *env) {
	require.NoError(t, e.s.Ready(t.Context()), "a migrated store is ready")
}

func testNotReadyPastDeadline(t *testing.T, e *env) {
	ctx, cancel := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
	defer cancel()
	require.ErrorIs(t, e.s.Ready(ctx), cloud.ErrUnavailable)
}

func testNotReadyWhenClosed(t *testing.T, e *env) {
	require.NoError(t, e.s.Close())
	err := e.s.Ready(t.Context())
	require.Error(t, err, "a closed store is not ready")
	require.NotErrorIs(t, err, cloud.ErrSchemaBehind)
}

func testStatsPools(t *testing.T, e *env) {
	// A read and a write have been made (newEnv's organisations); make
	// sure of a read too.
	_, err := e.s.Organisation(t.Context(), e.org1.ID)
	require.NoError(t, err)
	st := e.s.Stats()
	require.NotEmpty(t, st.Pools)
	names := map[string]bool{}
	for _, p := range st.Pools {
		require.NotEmpty(t, p.Name)
		require.False(t, names[p.Name], "pool names are unique: %q twice", p.Name)
		names[p.Name] = true
		require.Positive(t, p.MaxOpen, "pool %s", p.Name)
		require.GreaterOrEqual(t, p.InUse, 0)
		require.GreaterOrEqual(t, p.Idle, 0)
		require.LessOrEqual(t, p.InUse+p.Idle, p.MaxOpen, "pool %s", p.Name)
		require.GreaterOrEqual(t, p.Waits, int64(0))
	}
}

// A store that counts statement errors counts a broken unique key as a
// constraint error, and a deadline as unavailable, not as other errors.
func testStatsCountConstraintErrors(t *testing.T, e *env) {
	if e.s.Stats().Errors == nil {
		t.Skip("this store does not count statement errors (cloud.StoreStats.Errors)")
	}
	k := e.newKey(t, e.a, cloud.KindSecret, cloud.Scopes)
	before := *e.s.Stats().Errors
	dup := k
	dup.ID = ids.New(ids.Key)
	require.Error(t, e.s.CreateKey(t.Context(), dup), "a second key with the same hash")
	after := *e.s.Stats().Errors
	require.Equal(t, before.Constraint+1, after.Constraint, "%+v then %+v", before, after)
	require.Equal(t, before.Other, after.Other, "%+v then %+v", before, after)

	_, err := e.s.Organisation(t.Context(), ids.New(ids.Organisation))
	require.ErrorIs(t, err, cloud.ErrNotFound)
	require.Equal(t, after, *e.s.Stats().Errors, "no rows is an answer, not an error")
}
