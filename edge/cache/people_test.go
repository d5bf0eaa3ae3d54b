package cache_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/svc-vms/svc/edge/cache"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/sync/protocol"
)

func newPerson(name string) protocol.Person {
	return protocol.Person{ID: ids.New(ids.Person), Name: name, Active: true, PassIssuedAt: t0.Add(-24 * time.Hour).Unix()}
}

func punchFact(personID, gate, dir string, at time.Time) protocol.Fact {
	return protocol.Fact{ID: ids.New(ids.Fact), Kind: protocol.FactPunch, At: at, GateID: gate, PersonID: personID, Direction: dir}
}

func personOf(tb testing.TB, c *cache.Cache, id string) protocol.Person {
	tb.Helper()
	p, ok := c.View().Person(id)
	require.True(tb, ok, "person %s is not in the view", id)
	return p
}

// People changes apply like any other object: a later change replaces the
// person whole, and the file keeps them across a restart.
func TestApply_People(t *testing.T) {
	c, path := newCache(t)
	ada, grace := newPerson("Ada Lovelace"), newPerson("Grace Hopper")
	apply(t, c, 1, ada, grace)
	require.Equal(t, ada, personOf(t, c, ada.ID))
	gone := ada
	gone.Active = false
	reissued := grace
	reissued.PassIssuedAt += 3600
	old := c.View()
	apply(t, c, 3, gone, reissued)
	_, ok := c.View().Person(ids.New(ids.Person))
	require.False(t, ok, "a person the cloud never sent")
	_, ok = c.View().Person(ids.New(ids.Visit))
	require.False(t, ok, "not a person ID")
	require.Equal(t, ada, func() protocol.Person { p, _ := old.Person(ada.ID); return p }(), "an older View is unchanged")

	for i := range 2 {
		if i == 1 {
			c = reopen(t, c, path)
		}
		require.Equal(t, gone, personOf(t, c, ada.ID), "after reopen: %t", i == 1)
		require.Equal(t, reissued, personOf(t, c, grace.ID))
		require.Equal(t, 2, c.View().Counts().People)
		require.Equal(t, uint64(4), c.View().Seq())
	}

	bad := newPerson("x")
	bad.PassIssuedAt = -1
	_, err := c.Apply(changes(5, bad))
	require.ErrorIs(t, err, protocol.ErrInvalid)
	_, err = c.Apply([]protocol.Change{{Seq: 5, At: t0, Person: &bad, Visit: ptr(newVisit())}})
	require.ErrorIs(t, err, protocol.ErrInvalid, "two objects in one change")
	require.Equal(t, uint64(4), c.View().Seq(), "nothing applied")
}

// A snapshot's people replace the cache's: a person it lacks is gone. The
// last punches stay: they are what happened here. A person twice refuses
// the whole snapshot.
func TestReplaceSnapshot_People(t *testing.T) {
	c, path := newCache(t)
	ada, grace, alan := newPerson("Ada"), newPerson("Grace"), newPerson("Alan")
	apply(t, c, 1, ada, grace)
	punch := record(t, c, punchFact(ada.ID, gateID, protocol.DirectionIn, t0))

	alan.Active = false
	parts := snapshot(10, 2, &protocol.Settings{Timezone: "UTC"}, nil, nil, []protocol.Visit{newVisit(), newVisit(), newVisit()})
	parts[0].People = []protocol.Person{grace}
	parts[1].People = []protocol.Person{alan}
	require.NoError(t, c.ReplaceSnapshot(parts))
	for i := range 2 {
		if i == 1 {
			c = reopen(t, c, path)
		}
		_, ok := c.View().Person(ada.ID)
		require.False(t, ok, "a person the snapshot lacks is gone")
		require.Equal(t, grace, personOf(t, c, grace.ID))
		require.Equal(t, alan, personOf(t, c, alan.ID))
		require.Equal(t, 2, c.View().Counts().People)
		last, ok := c.View().LastPunch(ada.ID)
		require.True(t, ok, "the last punch survives the snapshot")
		require.Equal(t, punch, last)
	}

	twice := snapshot(20, 5, &protocol.Settings{Timezone: "UTC"}, nil, nil, nil)
	twice[0].People = []protocol.Person{ada, ada}
	require.ErrorIs(t, c.ReplaceSnapshot(twice), protocol.ErrInvalid)
	invalid := snapshot(20, 5, &protocol.Settings{Timezone: "UTC"}, nil, nil, nil)
	invalid[0].People = []protocol.Person{{ID: "person_1"}}
	require.ErrorIs(t, c.ReplaceSnapshot(invalid), protocol.ErrInvalid)
	require.Equal(t, uint64(10), c.View().Seq(), "a refused snapshot changes nothing")
	require.Equal(t, grace, personOf(t, c, grace.ID))
}

// A punch becomes its person's last punch in the transaction that puts it
// in the outbox; the next replaces it; an acknowledgement keeps it; a
// refusal naming the person does not count; a restart keeps it.
func TestRecord_LastPunch(t *testing.T) {
	c, path := newCache(t)
	ada, grace := newPerson("Ada"), newPerson("Grace")
	_, ok := c.View().LastPunch(ada.ID)
	require.False(t, ok)
	first := record(t, c, punchFact(ada.ID, gateID, protocol.DirectionIn, t0))
	last, ok := c.View().LastPunch(ada.ID)
	require.True(t, ok)
	require.Equal(t, first, last, "the fact as stored, counter and edge set")
	require.Equal(t, uint64(1), last.Counter)
	require.Equal(t, edgeID, last.EdgeID)
	out, err := c.Outbox(0)
	require.NoError(t, err)
	require.Equal(t, []protocol.Fact{first}, out, "the same fact waits in the outbox")

	other := ids.New(ids.Gate)
	second := record(t, c, punchFact(ada.ID, other, protocol.DirectionOut, t0.Add(time.Hour)))
	record(t, c, protocol.Fact{ID: ids.New(ids.Fact), Kind: protocol.FactRefused, At: t0.Add(2 * time.Hour), GateID: gateID,
		PersonID: ada.ID, Reason: protocol.ReasonPassReplaced})
	gp := record(t, c, punchFact(grace.ID, gateID, protocol.DirectionIn, t0))
	n, err := c.Ack([]string{first.ID, second.ID})
	require.NoError(t, err)
	require.Equal(t, 2, n)

	for i := range 2 {
		if i == 1 {
			c = reopen(t, c, path)
		}
		last, ok := c.View().LastPunch(ada.ID)
		require.True(t, ok)
		require.Equal(t, second, last, "the later punch, acknowledged since, reopened %t", i == 1)
		last, _ = c.View().LastPunch(grace.ID)
		require.Equal(t, gp, last)
		_, ok = c.View().LastPunch(ids.New(ids.Person))
		require.False(t, ok)
	}
	// The punch counts only once stored: a fact that fails leaves the last
	// punch as it was.
	bad := punchFact(ada.ID, gateID, "sideways", t0.Add(3*time.Hour))
	_, err = c.Record(cache.LocalChange{}, bad)
	require.ErrorIs(t, err, protocol.ErrInvalid)
	last, _ = c.View().LastPunch(ada.ID)
	require.Equal(t, second, last)
}

// A file written by a build before people (schema 2 without the people
// and punches buckets) opens, with none; and bad values in the new buckets
// refuse the file, naming them.
func TestOpen_PeopleBuckets(t *testing.T) {
	t.Run("a file without them", func(t *testing.T) {
		c, path := newCache(t)
		v := newVisit()
		apply(t, c, 1, v)
		require.NoError(t, c.Close())
		db, err := bolt.Open(path, 0o600, nil)
		require.NoError(t, err)
		require.NoError(t, db.Update(func(tx *bolt.Tx) error {
			for _, b := range []string{"people", "punches"} {
				if err := tx.DeleteBucket([]byte(b)); err != nil {
					return err
				}
			}
			return nil
		}))
		require.NoError(t, db.Close())
		c = openCache(t, path)
		require.Equal(t, v, visitOf(t, c, v.ID))
		require.Zero(t, c.View().Counts().People)
		p := newPerson("Ada")
		apply(t, c, 2, p)
		record(t, c, punchFact(p.ID, gateID, protocol.DirectionIn, t0))
		c = reopen(t, c, path)
		require.Equal(t, p, personOf(t, c, p.ID))
		_, ok := c.View().LastPunch(p.ID)
		require.True(t, ok)
	})

	p := newPerson("Ada")
	punch := func(edit func(*protocol.Fact)) string {
		f := punchFact(p.ID, gateID, protocol.DirectionIn, t0)
		f.EdgeID, f.Counter = edgeID, 1
		edit(&f)
		b, err := protocol.Encode(&f)
		require.NoError(t, err)
		return string(b)
	}
	for name, tc := range map[string]struct{ bucket, key, value string }{
		"person not JSON":          {"people", p.ID, `{`},
		"person under another ID":  {"people", ids.New(ids.Person), mustJSONOf(t, p)},
		"person with extra field":  {"people", p.ID, `{"id":"` + p.ID + `","active":true,"pass_issued_at":1,"pin":"1234"}`},
		"person invalid":           {"people", p.ID, `{"id":"` + p.ID + `","active":true,"pass_issued_at":-1}`},
		"punch not a fact":         {"punches", p.ID, `{"v":1}`},
		"punch of another person":  {"punches", ids.New(ids.Person), punch(func(*protocol.Fact) {})},
		"punch of another edge":    {"punches", p.ID, punch(func(f *protocol.Fact) { f.EdgeID = ids.New(ids.Edge) })},
		"punch past the counter":   {"punches", p.ID, punch(func(f *protocol.Fact) { f.Counter = 2 })},
		"a refusal, not a punch":   {"punches", p.ID, punch(func(f *protocol.Fact) { f.Kind, f.Direction, f.Reason = protocol.FactRefused, "", "stale_cache" })},
		"punch under a visit's ID": {"punches", ids.New(ids.Visit), punch(func(*protocol.Fact) {})},
	} {
		t.Run(name, func(t *testing.T) {
			c, path := newCache(t)
			record(t, c, checkInFact(ids.New(ids.Visit))) // counter 1 exists
			require.NoError(t, c.Close())
			db, err := bolt.Open(path, 0o600, nil)
			require.NoError(t, err)
			require.NoError(t, db.Update(func(tx *bolt.Tx) error {
				return tx.Bucket([]byte(tc.bucket)).Put([]byte(tc.key), []byte(tc.value))
			}))
			require.NoError(t, db.Close())
			_, err = cache.Open(path, cache.Options{EdgeID: edgeID})
			var ce *cache.CorruptError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, tc.bucket, ce.Bucket)
			require.Equal(t, tc.key, ce.Key)
		})
	}
}

func mustJSONOf(tb testing.TB, p protocol.Person) string {
	tb.Helper()
	b, err := json.Marshal(p)
	require.NoError(tb, err)
	return string(b)
}
