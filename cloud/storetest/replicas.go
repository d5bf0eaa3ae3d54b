package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
)

// Replicas (docs/decisions.md, "Running replicas (issue 19)"): what each
// serve process says of itself, for the rate-limit check at start.

func testReplicasPutListForget(t *testing.T, e *env) {
	ctx := context.Background()
	a := cloud.Replica{ID: "host-a-000001", RateLimits: "free=1", SeenAt: e.now}
	b := cloud.Replica{ID: "host-b-000002", RateLimits: "free=2", SeenAt: e.now.Add(-time.Minute)}
	require.NoError(t, e.s.PutReplica(ctx, a))
	require.NoError(t, e.s.PutReplica(ctx, b))
	got, err := e.s.Replicas(ctx, e.now.Add(-2*time.Minute))
	require.NoError(t, err)
	require.Equal(t, []cloud.Replica{a, b}, got)
	got, err = e.s.Replicas(ctx, e.now.Add(-30*time.Second))
	require.NoError(t, err)
	require.Equal(t, []cloud.Replica{a}, got, "b was not seen since")

	b.RateLimits, b.SeenAt = "free=3", e.now.Add(time.Second)
	require.NoError(t, e.s.PutReplica(ctx, b))
	got, err = e.s.Replicas(ctx, e.now)
	require.NoError(t, err)
	require.Equal(t, []cloud.Replica{a, b}, got, "a put replaces what the replica said before")

	c := cloud.Replica{ID: "host-c-000003", RateLimits: "free=1", SeenAt: e.now.Add(cloud.ReplicaForget + 500*time.Millisecond)}
	require.NoError(t, e.s.PutReplica(ctx, c))
	got, err = e.s.Replicas(ctx, time.Time{})
	require.NoError(t, err)
	require.Equal(t, []cloud.Replica{b, c}, got, "a replica not seen for ReplicaForget is deleted")
}

func testReplicasJoinRefusesOtherLimits(t *testing.T, e *env) {
	ctx := context.Background()
	now := e.now
	svc := cloud.NewService(e.s, func() time.Time { return now })
	same := cloud.RateLimitsString(nil)
	require.Equal(t, "free=120,growth=600,pro=3000,enterprise=12000", same)
	require.NoError(t, svc.JoinReplicas(ctx, "a", same))
	require.NoError(t, svc.JoinReplicas(ctx, "b", cloud.RateLimitsString(map[cloud.Plan]int{cloud.PlanPro: 3000})), "the defaults written out are the same limits")

	other := cloud.RateLimitsString(map[cloud.Plan]int{cloud.PlanPro: 6000})
	err := svc.JoinReplicas(ctx, "c", other)
	var mismatch *cloud.LimitsMismatchError
	require.ErrorAs(t, err, &mismatch)
	require.Len(t, mismatch.Others, 2)
	require.Equal(t, "a", mismatch.Others[0].ID)
	require.Contains(t, err.Error(), "pro=3000")

	now = now.Add(cloud.ReplicaLive + time.Second)
	require.NoError(t, svc.JoinReplicas(ctx, "c", other), "a and b are gone: no live replica differs")
}
