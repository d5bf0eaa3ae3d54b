package cache_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/svc-vms/svc/edge/cache"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/sync/protocol"
)

// fuzzEdge is the edge of the seed files in testdata/fuzz/FuzzOpen.
const fuzzEdge = "edge_01m8bd4zs8fh8sqjxk7yvwyg9g"

// seedFile makes a small cache file of fuzzEdge: a few visits, a gate, a
// fact waiting, cut at its high water mark (bbolt grows a file ahead of
// its pages; the rest is unused).
func seedFile(tb testing.TB, visits int) []byte {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "seed.db")
	c, err := cache.Open(path, cache.Options{EdgeID: fuzzEdge})
	require.NoError(tb, err)
	objs := []any{protocol.Gate{ID: gateID, Name: "Front", Direction: "entry"}}
	for range visits {
		objs = append(objs, newVisit())
	}
	_, err = c.Apply(changes(1, objs...))
	require.NoError(tb, err)
	_, err = c.Record(cache.LocalChange{}, checkInFact(ids.New(ids.Visit)))
	require.NoError(tb, err)
	require.NoError(tb, c.Close())
	ps, pgid := cache.Layout(tb, path)
	b, err := os.ReadFile(path)
	require.NoError(tb, err)
	return b[:int(pgid)*ps]
}

// withFreelist is b as a bbolt with default options leaves it after a
// write: with the free list stored on a page, which the cache never
// does but must read.
func withFreelist(tb testing.TB, b []byte) []byte {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "seed.db")
	require.NoError(tb, os.WriteFile(path, b, 0o600))
	db, err := bolt.Open(path, 0o600, nil)
	require.NoError(tb, err)
	require.NoError(tb, db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("meta")).Put([]byte("synced_at"), []byte("2026-03-02T09:00:00Z"))
	}))
	require.NoError(tb, db.Close())
	ps, pgid := cache.Layout(tb, path)
	out, err := os.ReadFile(path)
	require.NoError(tb, err)
	return out[:int(pgid)*ps]
}

// FuzzOpen writes arbitrary bytes as the cache file: Open returns an
// error or a working cache, never panics or faults. A cache it returns
// passes bbolt's own check, reads, takes a write, and opens again.
func FuzzOpen(f *testing.F) {
	f.Add([]byte{})
	f.Add(seedFile(f, 2))
	f.Add(seedFile(f, 40))
	f.Add(withFreelist(f, seedFile(f, 40)))
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(t.TempDir(), "cache.db")
		require.NoError(t, os.WriteFile(path, b, 0o600))
		_, checkErr := cache.Check(path, cache.Options{EdgeID: fuzzEdge})
		c, err := cache.Open(path, cache.Options{EdgeID: fuzzEdge})
		if err != nil {
			require.Error(t, checkErr, "Check passed a file Open refuses: %v", err)
			return
		}
		require.NoError(t, checkErr, "Check refused a file Open takes")
		defer c.Close()
		require.Empty(t, cache.BoltCheck(c), "Open took a file bbolt's check refuses")
		// A write may fail on what the file holds (a counter at its
		// largest), but reading the file may not.
		_, err = c.Outbox(0)
		require.NoError(t, err)
		_, err = c.Record(cache.LocalChange{}, checkInFact(ids.New(ids.Visit)))
		require.NotErrorIs(t, err, cache.ErrDamaged)
		_, err = c.Apply(changes(c.View().Seq()+1, newVisit()))
		require.NotErrorIs(t, err, cache.ErrDamaged)
		require.NoError(t, c.Close())
		c, err = cache.Open(path, cache.Options{EdgeID: fuzzEdge})
		require.NoError(t, err, "a file Open took and wrote to no longer opens")
		require.NoError(t, c.Close())
	})
}
