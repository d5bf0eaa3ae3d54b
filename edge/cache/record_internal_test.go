package cache

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFactVisits_HoldsACopy checks that a waiting fact's visits come back
// as they were recorded, whatever their number, and are not the pooled
// record's slice; one or two are held without an allocation.
func TestFactVisits_HoldsACopy(t *testing.T) {
	for n := range 6 {
		us := make([]uid, n)
		for i := range us {
			us[i] = uid{hi: uint64(n), lo: uint64(i + 1)}
		}
		want := append([]uid{}, us...)
		fv := holdVisits(us)
		clear(us) // the record goes back to its pool
		got := fv.list()
		if n == 0 {
			require.Empty(t, got)
			continue
		}
		require.Equal(t, want, got, "%d visits", n)
	}
	one := []uid{{hi: 1, lo: 2}}
	var fv factVisits
	require.Zero(t, testing.AllocsPerRun(100, func() { fv = holdVisits(one) }))
	require.Equal(t, one, fv.list())
}
