package cache_test

import (
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/edge/cache"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/sync/protocol"
)

// Records made at once from many gates, some committed together: each is
// stored whole with its own counter, the counters have no gap, a fact ID
// sent twice at once is stored once, and it all survives a restart.
func TestRecord_ConcurrentRecordsEachStoredOnce(t *testing.T) {
	const n = 48
	c, path, visits := site(t, n)
	twice := checkInFact(visits[0].ID)

	var wg sync.WaitGroup
	stored := make([]protocol.Fact, n)
	errs := make([]error, n)
	var dupErrs [2]error
	for i := range n {
		wg.Go(func() {
			stored[i], errs[i] = c.Record(cache.LocalChange{Visits: []protocol.Visit{checkedIn(visits[i])}}, checkInFact(visits[i].ID))
		})
	}
	for i := range dupErrs {
		wg.Go(func() { _, dupErrs[i] = c.Record(cache.LocalChange{}, twice) })
	}
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i], "record %d", i)
	}
	require.Equal(t, 1, countNil(dupErrs[:]), "the same fact at once: stored once")
	for _, err := range dupErrs {
		if err != nil {
			require.ErrorIs(t, err, cache.ErrDuplicateFact)
		}
	}

	for round := range 2 {
		if round == 1 {
			c = reopen(t, c, path)
		}
		out, err := c.Outbox(0)
		require.NoError(t, err)
		require.Len(t, out, n+1)
		for i, f := range out {
			require.Equal(t, uint64(i+1), f.Counter, "counters in order, without a gap")
		}
		for i := range n {
			require.Contains(t, out, stored[i])
			require.Equal(t, checkedIn(visits[i]), visitOf(t, c, visits[i].ID))
		}
		require.Equal(t, n+1, c.View().Counts().Outbox)
	}
	require.Equal(t, uint64(n+2), record(t, c, protocol.Fact{ID: ids.New(ids.Fact), Kind: protocol.FactRefused, At: t0,
		GateID: gateID, Reason: protocol.ReasonInvalidToken}).Counter)
}

func countNil(errs []error) int {
	return len(errs) - len(slices.DeleteFunc(slices.Clone(errs), func(err error) bool { return err == nil }))
}
