package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/sync/protocol"
)

// What /metrics reads of the queue and the fleet at each scrape
// (docs/decisions.md, "Metrics (issue 19)"): aggregates over every
// tenant.

func statsTests() []test {
	return []test{
		{"WebhookQueue", testWebhookQueue},
		{"FleetTotals", testFleetTotals},
	}
}

// The queue counts pending deliveries of every tenant: due, waiting (a
// claim's lease or a retry's wait) and held (a disabled endpoint), and
// the oldest pending one to an enabled endpoint; finished deliveries are
// not counted.
func testWebhookQueue(t *testing.T, e *env) {
	ctx := t.Context()
	now := e.now.Add(-time.Hour)
	svc := cloud.NewService(e.s, func() time.Time { return now })
	svc.SetEventRenderer(func(any) (json.RawMessage, error) { return json.RawMessage(`{}`), nil })
	queue := func(at time.Time) cloud.WebhookQueueStats {
		t.Helper()
		q, err := e.s.WebhookQueue(ctx, at)
		require.NoError(t, err)
		if q.Oldest != nil {
			o := q.Oldest.UTC()
			q.Oldest = &o
		}
		return q
	}
	require.Equal(t, cloud.WebhookQueueStats{}, queue(now), "nothing queued")

	url := "https://hooks.example.com/in"
	endpoint := func(tn cloud.Tenant) cloud.WebhookEndpoint {
		t.Helper()
		ep, err := svc.CreateWebhookEndpoint(ctx, cloud.Actor{Tenant: tn, Plan: cloud.PlanPro},
			cloud.WebhookInput{URL: &url, EventTypes: []string{"*"}})
		require.NoError(t, err)
		return ep
	}
	epA, epC := endpoint(e.a), endpoint(e.c)
	event := func(tn cloud.Tenant) string {
		t.Helper()
		p, err := svc.CreatePerson(ctx, tn, cloud.PersonInput{Name: cloud.Optional[string]{Set: true, Value: "Ada Lovelace"}})
		require.NoError(t, err)
		return p.ID
	}
	first := now
	event(e.a)
	now = now.Add(time.Minute)
	second := now
	event(e.a)
	event(e.c)
	require.Equal(t, cloud.WebhookQueueStats{Due: 3, Oldest: &first}, queue(now), "every tenant's")
	require.Equal(t, cloud.WebhookQueueStats{Waiting: 3, Oldest: &first}, queue(first.Add(-time.Second)),
		"not yet due at an earlier time")

	jobs, err := svc.ClaimWebhooks(ctx, 10)
	require.NoError(t, err)
	require.Len(t, jobs, 3)
	require.Equal(t, cloud.WebhookQueueStats{Waiting: 3, Oldest: &first}, queue(now), "claimed: waiting for the lease")

	for _, j := range jobs {
		code := 500
		if j.Endpoint.ID == epA.ID && j.Delivery.CreatedAt.Equal(first) {
			code = 204 // the oldest succeeds
		}
		require.NoError(t, svc.CompleteWebhook(ctx, j, cloud.WebhookResult{AttemptedAt: now, StatusCode: code}))
	}
	require.Equal(t, cloud.WebhookQueueStats{Waiting: 2, Oldest: &second}, queue(now),
		"the succeeded one is gone, the failed ones wait for their retry")
	retry := now.Add(cloud.WebhookSchedule[0])
	require.Equal(t, cloud.WebhookQueueStats{Due: 2, Oldest: &second}, queue(retry))

	_, err = e.s.UpdateWebhookEndpoint(ctx, e.c, epC.ID, func(x *cloud.WebhookEndpoint) error {
		x.Disabled, x.DisabledReason = true, cloud.DisabledManually
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, cloud.WebhookQueueStats{Due: 1, Held: 1, Oldest: &second}, queue(retry), "a disabled endpoint's are held")

	require.NoError(t, e.s.DeleteWebhookEndpoint(ctx, e.a, epA.ID))
	require.Equal(t, cloud.WebhookQueueStats{Held: 1}, queue(retry), "held ones are not the oldest pending")
}

// The fleet's totals: edges by state over every tenant (online as
// Edge.Presented shows it: a silent edge is offline, a revoked one is
// neither), the outboxes the edges not revoked reported, the largest
// lag of an online edge behind its site's feed, and the sites behind (a
// site that has caught up is not), the most behind first, as many as
// asked for, with a count of the rest.
func testFleetTotals(t *testing.T, e *env) {
	ctx := t.Context()
	totals := func(silentBefore time.Time, lagSites ...int) cloud.FleetTotals {
		t.Helper()
		n := 100
		if len(lagSites) > 0 {
			n = lagSites[0]
		}
		f, err := e.s.FleetTotals(ctx, silentBefore, n)
		require.NoError(t, err)
		if f.OutboxOldest != nil {
			o := f.OutboxOldest.UTC()
			f.OutboxOldest = &o
		}
		return f
	}
	require.Equal(t, cloud.FleetTotals{}, totals(e.now), "no edges")

	s1, s2, s3, s4 := e.newSite(t, e.a), e.newSite(t, e.c), e.newSite(t, e.a), e.newSite(t, e.b)
	e.newVisit(t, e.a, s1.ID)
	e.newVisit(t, e.a, s1.ID)
	ed1, ed2, ed3 := e.newEdge(t, e.a, s1.ID), e.newEdge(t, e.c, s2.ID), e.newEdge(t, e.a, s3.ID)
	e.newEdge(t, e.b, s4.ID) // never said anything: offline
	s5 := e.newSite(t, e.b)
	e.newVisit(t, e.b, s5.ID)
	ed5 := e.newEdge(t, e.b, s5.ID)
	got5, err := e.s.Edge(ctx, ed5.ID)
	require.NoError(t, err)
	require.Positive(t, got5.Head)
	status := func(tn cloud.Tenant, site string, ed cloud.Edge, seq uint64, outbox int, oldest *time.Time) time.Time {
		t.Helper()
		at := e.tick()
		require.NoError(t, e.s.RecordEdgeStatus(ctx, tn, site, protocol.Status{V: 1, EdgeID: ed.ID, State: cloud.EdgeOnline,
			At: at, Seq: seq, Outbox: outbox, OutboxOldest: oldest}, at))
		return at
	}
	oldest := e.now.Add(-30 * time.Minute)
	seen2 := status(e.c, s2.ID, ed2, 0, 1, &oldest)
	status(e.b, s5.ID, ed5, got5.Head, 0, nil) // caught up
	seen1 := status(e.a, s1.ID, ed1, 1, 3, nil)
	status(e.a, s3.ID, ed3, 1, 5, nil)
	_, err = e.s.RevokeEdge(ctx, e.a, ed3.ID, e.tick())
	require.NoError(t, err)

	got1, err := e.s.Edge(ctx, ed1.ID)
	require.NoError(t, err)
	got2, err := e.s.Edge(ctx, ed2.ID)
	require.NoError(t, err)
	lag1, lag2 := got1.Head-got1.Seq, got2.Head-got2.Seq
	require.Positive(t, lag2)
	require.Greater(t, lag1, lag2, "s1 has more changes: its edge lags most")

	behind1, behind2 := cloud.SiteLag{SiteID: s1.ID, Lag: lag1}, cloud.SiteLag{SiteID: s2.ID, Lag: lag2}
	require.Equal(t, cloud.FleetTotals{Online: 3, Offline: 1, Revoked: 1, Outbox: 4, OutboxOldest: &oldest, MaxLag: lag1,
		Behind: []cloud.SiteLag{behind1, behind2}},
		totals(seen2), "all three online: the larger lag, the two sites behind, the most behind first, not the one caught up; "+
			"the revoked edge's outbox is not counted")
	require.Equal(t, cloud.FleetTotals{Online: 3, Offline: 1, Revoked: 1, Outbox: 4, OutboxOldest: &oldest, MaxLag: lag1,
		Behind: []cloud.SiteLag{behind1}, BehindOmitted: 1},
		totals(seen2, 1), "one site asked for: the most behind, the other counted")
	require.Equal(t, cloud.FleetTotals{Online: 1, Offline: 3, Revoked: 1, Outbox: 4, OutboxOldest: &oldest, MaxLag: lag1,
		Behind: []cloud.SiteLag{behind1}},
		totals(seen1), "ed2 silent since before: offline, its lag no longer counted, its outbox still")
	require.Equal(t, cloud.FleetTotals{Offline: 4, Revoked: 1, Outbox: 4, OutboxOldest: &oldest},
		totals(seen1.Add(time.Second)), "all silent")
}
