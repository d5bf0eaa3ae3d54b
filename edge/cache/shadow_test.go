package cache_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/svc-vms/svc/edge/cache"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/shared/passrule"
	"github.com/svc-vms/svc/sync/protocol"
)

func ack(tb testing.TB, c *cache.Cache, factIDs ...string) {
	tb.Helper()
	n, err := c.Ack(factIDs)
	require.NoError(tb, err)
	require.Equal(tb, len(factIDs), n)
}

// cloudVersions returns the visit IDs of the file's "cloud" bucket.
func cloudVersions(tb testing.TB, c *cache.Cache, path string) ([]string, *cache.Cache) {
	tb.Helper()
	require.NoError(tb, c.Close())
	db, err := bolt.Open(path, 0o600, nil)
	require.NoError(tb, err)
	var out []string
	require.NoError(tb, db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("cloud"))
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, _ []byte) error {
			out = append(out, string(k))
			return nil
		})
	}))
	require.NoError(tb, db.Close())
	return out, openCache(tb, path)
}

// The cloud publishes its change of a visit as soon as it has applied the
// gate's fact, and acknowledges the fact later: in either order the cache
// ends with the cloud's visit.
func TestAck_ConvergesToTheCloudsVisit(t *testing.T) {
	for name, tc := range map[string]struct {
		// cloud is the visit the cloud has after applying the gate's
		// check-in of v.
		cloud func(v protocol.Visit) protocol.Visit
	}{
		"cancelled while the site was offline": {
			cloud: func(v protocol.Visit) protocol.Visit { v.Status = string(passrule.Cancelled); return v },
		},
		"checked in at the desk first": {
			cloud: func(v protocol.Visit) protocol.Visit {
				v.Status, v.Uses, v.CheckedInAt = string(passrule.CheckedIn), 2, ptr(t0.Add(30*time.Second))
				return v
			},
		},
	} {
		t.Run(name+"/change then acknowledgement", func(t *testing.T) {
			c, path := newCache(t)
			v := newVisit()
			apply(t, c, 1, v)
			local := checkedIn(v)
			f := record(t, c, checkInFact(v.ID), local)
			cloud := tc.cloud(v)
			apply(t, c, 2, cloud)
			require.NotEqual(t, cloud, visitOf(t, c, v.ID), "merged while pending")
			c = reopen(t, c, path) // the cloud's version is durable

			before := c.View()
			ack(t, c, f.ID)
			require.Equal(t, cloud, visitOf(t, c, v.ID))
			require.Equal(t, 1, c.View().Counts().Visits)
			require.Zero(t, c.View().Counts().Outbox)
			require.NotEqual(t, cloud, func() protocol.Visit { w, _ := before.Visit(v.ID); return w }(), "a View never changes")
			got, c := cloudVersions(t, c, path)
			require.Empty(t, got, "the cloud's version goes with the last fact")
			require.Equal(t, cloud, visitOf(t, c, v.ID))

			// A later check-in is not undone by the old cloud version.
			again := checkedIn(cloud)
			f = record(t, c, checkInFact(v.ID), again)
			ack(t, c, f.ID)
			require.Equal(t, again, visitOf(t, c, v.ID))
		})
		t.Run(name+"/acknowledgement then change", func(t *testing.T) {
			c, path := newCache(t)
			v := newVisit()
			apply(t, c, 1, v)
			local := checkedIn(v)
			f := record(t, c, checkInFact(v.ID), local)
			ack(t, c, f.ID)
			require.Equal(t, local, visitOf(t, c, v.ID), "no cloud version yet: the local one stays")
			c = reopen(t, c, path)
			require.Equal(t, local, visitOf(t, c, v.ID))
			cloud := tc.cloud(v)
			apply(t, c, 2, cloud)
			require.Equal(t, cloud, visitOf(t, c, v.ID))
		})
	}
}

// Only a version received while the visit is pending replaces it: one
// received before the gate's Record would undo the check-in.
func TestAck_IgnoresCloudVersionBeforeRecord(t *testing.T) {
	c, path := newCache(t)
	v := newVisit()
	apply(t, c, 1, v)
	renamed := v
	renamed.HostName = "Grace Hopper"
	apply(t, c, 2, renamed)
	local := checkedIn(renamed)
	f := record(t, c, checkInFact(v.ID), local)
	got, c := cloudVersions(t, c, path)
	require.Empty(t, got)
	ack(t, c, f.ID)
	require.Equal(t, local, visitOf(t, c, v.ID))
}

// A second Record of a pending visit keeps the cloud's version received
// since the first; it replaces the visit when both facts are acknowledged,
// in one Ack or two.
func TestAck_LaterRecordKeepsCloudVersion(t *testing.T) {
	for _, together := range []bool{false, true} {
		c, path := newCache(t)
		v, other := newVisit(), newVisit()
		apply(t, c, 1, v, other)
		in := checkedIn(v)
		f1 := record(t, c, checkInFact(v.ID), in)
		cloud := in
		cloud.CheckedInAt = ptr(t0.Add(20 * time.Second))
		apply(t, c, 3, cloud)
		out := in
		out.Status, out.CheckedOutAt = string(passrule.CheckedOut), ptr(t0.Add(time.Hour))
		f2 := record(t, c, protocol.Fact{ID: ids.New(ids.Fact), Kind: protocol.FactCheckOut, At: t0.Add(time.Hour), GateID: gateID, VisitID: v.ID}, out)
		f3 := record(t, c, checkInFact(other.ID), checkedIn(other))
		got, c := cloudVersions(t, c, path)
		require.Equal(t, []string{v.ID}, got)

		if together {
			ack(t, c, f2.ID, f1.ID)
		} else {
			ack(t, c, f1.ID)
			require.Equal(t, out, visitOf(t, c, v.ID), "still pending")
			c = reopen(t, c, path)
			ack(t, c, f2.ID)
		}
		require.Equal(t, cloud, visitOf(t, c, v.ID))
		require.Equal(t, checkedIn(other), visitOf(t, c, other.ID), "no cloud version of other")
		ack(t, c, f3.ID)
		require.Equal(t, checkedIn(other), visitOf(t, c, other.ID))
		c = reopen(t, c, path)
		require.Equal(t, cloud, visitOf(t, c, v.ID))
	}
}

func TestReplaceSnapshot_StoresCloudVersionOfPendingVisit(t *testing.T) {
	c, path := newCache(t)
	v, fresh := newVisit(), newVisit()
	apply(t, c, 1, v)
	local := checkedIn(v)
	f := record(t, c, checkInFact(v.ID), local)
	cloud := v
	cloud.Status = string(passrule.Cancelled)
	require.NoError(t, c.ReplaceSnapshot(snapshot(10, 1000, nil, nil, nil, []protocol.Visit{cloud, fresh})))
	merged := local
	merged.Status = string(passrule.Cancelled)
	require.Equal(t, merged, visitOf(t, c, v.ID))
	c = reopen(t, c, path)
	require.Equal(t, merged, visitOf(t, c, v.ID))
	ack(t, c, f.ID)
	require.Equal(t, cloud, visitOf(t, c, v.ID))
	require.Equal(t, fresh, visitOf(t, c, fresh.ID))
	require.Equal(t, 2, c.View().Counts().Visits)
}

// Prune keeps a pending visit and its cloud version; after Close the last
// View stays and Ack fails, changing nothing in the file.
func TestAck_CloudVersionAcrossPruneAndClose(t *testing.T) {
	c, path := newCache(t)
	v, ended := newVisit(), newVisit()
	apply(t, c, 1, v, ended)
	local := checkedIn(v)
	f := record(t, c, checkInFact(v.ID), local)
	cloud := v
	cloud.Uses, cloud.Status = 0, string(passrule.NoShow)
	apply(t, c, 3, cloud)
	n, err := c.Prune(t0.Add(100 * 24 * time.Hour))
	require.NoError(t, err)
	require.Equal(t, 1, n, "ended goes; the pending visit stays")

	merged := local
	merged.Status = string(passrule.NoShow)
	require.NoError(t, c.Close())
	_, err = c.Ack([]string{f.ID})
	require.Error(t, err)
	require.Equal(t, merged, visitOf(t, c, v.ID))

	c = openCache(t, path)
	require.Equal(t, merged, visitOf(t, c, v.ID))
	ack(t, c, f.ID)
	require.Equal(t, cloud, visitOf(t, c, v.ID))
	n, err = c.Prune(t0.Add(100 * 24 * time.Hour))
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Zero(t, c.View().Counts().Visits)
}
