package cache_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/edge/cache"
	"github.com/svc-vms/svc/sync/protocol"
)

func TestPrune_EndedVisitsOnly(t *testing.T) {
	c, path := newCache(t)
	ended := newVisit() // until t0+8h, window.after 15
	later := newVisit()
	later.ExpectedUntil = ptr(t0.Add(48 * time.Hour))
	open := newVisit()
	open.ExpectedUntil = nil
	// A walk-in checked in at 18:00 in Tokyo: its pass lasts until
	// midnight there, 15:00 UTC, plus its window.
	walkIn := newVisit()
	walkIn.ExpectedAt, walkIn.ExpectedUntil, walkIn.CheckedInAt = nil, nil, ptr(t0)
	walkIn.Status = "checked_in"
	pending := newVisit()
	apply(t, c, 1, protocol.Settings{Timezone: "Asia/Tokyo"}, ended, later, open, walkIn, pending)
	f := record(t, c, checkInFact(pending.ID), checkedIn(pending))
	require.Equal(t, uint64(6), c.Seq())

	endOfPass := t0.Add(8*time.Hour + 15*time.Minute)
	n, err := c.Prune(t0.Add(6*time.Hour + 14*time.Minute))
	require.NoError(t, err)
	require.Zero(t, n, "nothing ended yet")

	n, err = c.Prune(t0.Add(6*time.Hour + 15*time.Minute))
	require.NoError(t, err)
	require.Equal(t, 1, n, "the walk-in's day ended in Tokyo")
	_, ok := c.View().Visit(walkIn.ID)
	require.False(t, ok)

	n, err = c.Prune(endOfPass)
	require.NoError(t, err)
	require.Zero(t, n, "a pass admits through its last moment")

	before := c.View()
	n, err = c.Prune(endOfPass.Add(time.Microsecond))
	require.NoError(t, err)
	require.Equal(t, 1, n, "ended goes; pending waits for its fact's acknowledgement")
	_, ok = before.Visit(ended.ID)
	require.True(t, ok, "a View never changes")
	require.Equal(t, 4, before.Counts().Visits)

	check := func(c *cache.Cache) {
		t.Helper()
		_, ok := c.View().Visit(ended.ID)
		require.False(t, ok)
		visitOf(t, c, later.ID)
		visitOf(t, c, open.ID)
		visitOf(t, c, pending.ID)
		require.Equal(t, 3, c.View().Counts().Visits)
	}
	check(c)
	c = reopen(t, c, path)
	check(c)

	removed, err := c.Ack([]string{f.ID})
	require.NoError(t, err)
	require.Equal(t, 1, removed)
	n, err = c.Prune(t0.Add(100 * 24 * time.Hour))
	require.NoError(t, err)
	require.Equal(t, 2, n, "pending, acknowledged, and later go; the open visit never ends")
	visitOf(t, c, open.ID)
	c = reopen(t, c, path)
	require.Equal(t, 1, c.View().Counts().Visits)
	require.Equal(t, uint64(6), c.Seq())
}

func TestPrune_ThenRecordAndApply(t *testing.T) {
	c, _ := newCache(t)
	ended, kept := newVisit(), newVisit()
	kept.ExpectedUntil = ptr(t0.Add(72 * time.Hour))
	apply(t, c, 1, ended, kept)
	n, err := c.Prune(t0.Add(24 * time.Hour))
	require.NoError(t, err)
	require.Equal(t, 1, n)
	// The nodes Prune copied are written again as usual.
	record(t, c, checkInFact(kept.ID), checkedIn(kept))
	apply(t, c, 3, ended)
	require.Equal(t, 2, c.View().Counts().Visits)
	require.Equal(t, "checked_in", visitOf(t, c, kept.ID).Status)
}
