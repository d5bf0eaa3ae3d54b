package gate_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/sync/protocol"
)

// scanAllocBudget is what one admitted scan may allocate, from the
// reader's text to the relay commanded, with its record made durable in a
// real cache of a small site: 10 since the kiosk's lists are marks in the
// visits' own nodes instead of sets of their own (15 before; 16 before
// the decision's time shared the allocation of its visits; 23 before the
// View's next version copied less; 166 before the journal
// in front of bbolt, 192 before issue 20). The journal's flush to bbolt,
// once every 1024 records, does not happen in the test's 51 scans: at
// 100,000 visits it adds some 18 a scan, averaged (docs/performance.md,
// "A scan's garbage, fifth pass: the flush"). Counts of allocations do not
// vary with the machine's load, so a budget can be pinned where a time
// cannot.
const scanAllocBudget = 10

// TestScan_AllocationBudget: an admitted scan, decision, fsync'd record
// and relay command, allocates no more than scanAllocBudget times.
func TestScan_AllocationBudget(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	const runs = 50
	f := newFixture(t)
	visits := siteVisits(runs+1, f.entry, f.both) // AllocsPerRun runs once more to warm up
	f.snapshot(visits)
	toks := make([]string, len(visits))
	for i := range visits {
		toks[i] = f.token(visits[i])
	}
	g := f.newGate(f.entry, false, instantRelay{})
	ctx := context.Background()
	i := 0
	var failed protocol.FactKind
	allocs := testing.AllocsPerRun(runs, func() {
		res := g.Scan(ctx, toks[i], t0)
		if !res.Admitted || res.Err != nil {
			failed = res.Kind + protocol.FactKind(" "+res.Reason)
		}
		i++
	})
	require.Empty(t, failed, "every scan admits")
	t.Logf("%.0f allocations a scan", allocs)
	require.LessOrEqual(t, allocs, float64(scanAllocBudget), "allocations a scan")
}

// instantRelay frees the passage at once, allocating nothing.
type instantRelay struct{}

func (instantRelay) Start(context.Context, time.Duration) (func() error, error) { return endPulse, nil }

func endPulse() error { return nil }
