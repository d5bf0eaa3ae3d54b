package cache_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/svc-vms/svc/edge/cache"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/shared/passrule"
	"github.com/svc-vms/svc/sync/protocol"
)

// toSchema1 rewrites a closed cache file into the form builds before
// schema 2 wrote: the visits and the cloud's versions as the protocol's
// JSON (what their putJSON stored: json.Marshal of the visit) under
// schema "1". It returns the visits as they were written.
func toSchema1(tb testing.TB, path string) map[string]protocol.Visit {
	tb.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	require.NoError(tb, err)
	defer db.Close()
	written := map[string]protocol.Visit{}
	require.NoError(tb, db.Update(func(tx *bolt.Tx) error {
		for _, name := range []string{"visits", "cloud"} {
			b := tx.Bucket([]byte(name))
			rows := map[string][]byte{}
			require.NoError(tb, b.ForEach(func(k, raw []byte) error {
				v, err := cache.DecodeVisit(raw)
				require.NoError(tb, err)
				js, err := json.Marshal(v)
				require.NoError(tb, err)
				rows[string(k)] = js
				written[name+"/"+string(k)] = v
				return nil
			}))
			for k, js := range rows {
				require.NoError(tb, b.Put([]byte(k), js))
			}
		}
		return tx.Bucket([]byte("meta")).Put([]byte("schema"), []byte("1"))
	}))
	return written
}

// fileForm returns the schema and the first byte of every visit value,
// by bucket.
func fileForm(tb testing.TB, path string) (schema string, first map[string][]byte) {
	tb.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	require.NoError(tb, err)
	defer db.Close()
	first = map[string][]byte{}
	require.NoError(tb, db.View(func(tx *bolt.Tx) error {
		schema = string(tx.Bucket([]byte("meta")).Get([]byte("schema")))
		for _, name := range []string{"visits", "cloud"} {
			require.NoError(tb, tx.Bucket([]byte(name)).ForEach(func(_, raw []byte) error {
				first[name] = append(first[name], raw[0])
				return nil
			}))
		}
		return nil
	}))
	return schema, first
}

// A file written before schema 2 (visits as JSON) opens to the same View,
// is migrated, and the cloud's version of a pending visit survives the
// migration.
func TestOpen_MigratesSchema1(t *testing.T) {
	c, path := newCache(t)
	visits := siteVisits(300)
	at := t0.Add(-time.Hour)
	visits[7].CheckedInAt, visits[7].CheckedOutAt = &at, ptr(t0)
	visits[7].Status, visits[7].Uses, visits[7].Revoked = string(passrule.CheckedOut), 2, true
	visits[7].Rules.SingleUse, visits[7].ReenteredAs = true, visits[8].ID
	visits[8].ForVisitID = visits[7].ID
	settings := protocol.Settings{Timezone: "Europe/London", OfflineLimitMinutes: 240}
	gates := []protocol.Gate{{ID: gateID, Name: "Front", Direction: "both"}}
	require.NoError(t, c.ReplaceSnapshot(snapshot(4, 100, &settings, gates, []protocol.Key{newKey(t, "0000000a")}, visits)))
	pending := visits[0]
	f := record(t, c, checkInFact(pending.ID), checkedIn(pending))
	cloudV := checkedIn(pending)
	cloudV.HostName = "Changed In The Cloud"
	apply(t, c, 5, cloudV)
	require.NoError(t, c.MarkSynced(t0))
	want := c.View()
	require.NoError(t, c.Close())

	written := toSchema1(t, path)
	require.Len(t, written, len(visits)+1, "every visit and the one cloud version")
	schema, first := fileForm(t, path)
	require.Equal(t, "1", schema)
	for _, b := range append(first["visits"], first["cloud"]...) {
		require.Equal(t, byte('{'), b)
	}

	c = openCache(t, path)
	got := c.View()
	require.Equal(t, want.Counts(), got.Counts())
	require.Equal(t, uint64(0), got.Seq(), "schema 3 asks for the whole feed again")
	require.True(t, want.SyncedAt().Equal(got.SyncedAt()))
	ws, _ := want.Settings()
	gs, _ := got.Settings()
	require.Equal(t, ws, gs)
	g, ok := got.Gate(gateID)
	require.True(t, ok)
	require.Equal(t, gates[0], g)
	require.Len(t, got.Keys(), 1)
	for _, v := range visits {
		w, _ := want.Visit(v.ID)
		require.Equal(t, w, visitOf(t, c, v.ID))
	}
	require.NoError(t, c.Close())
	schema, first = fileForm(t, path)
	require.Equal(t, "3", schema)
	require.Len(t, first["visits"], len(visits))
	require.Len(t, first["cloud"], 1)
	for _, b := range append(first["visits"], first["cloud"]...) {
		require.Equal(t, byte(0x04), b)
	}

	// The cloud's version was carried over: the Ack takes it whole.
	c = openCache(t, path)
	ack(t, c, f.ID)
	require.Equal(t, normalized(cloudV), visitOf(t, c, pending.ID))
	c = reopen(t, c, path)
	require.Equal(t, normalized(cloudV), visitOf(t, c, pending.ID))
	require.Equal(t, len(visits), c.View().Counts().Visits)
}

// normalized is v as the View gives it back.
func normalized(v protocol.Visit) protocol.Visit {
	for _, p := range []**time.Time{&v.ExpectedAt, &v.ExpectedUntil, &v.CheckedInAt, &v.CheckedOutAt} {
		if *p != nil {
			*p = ptr((*p).UTC())
		}
	}
	return v
}

// A schema 1 file with a value that does not decode is refused naming it,
// and left as it was: the migration is one transaction.
func TestOpen_Schema1CorruptRefusedUnchanged(t *testing.T) {
	for name, tc := range map[string]struct{ bucket, value string }{
		"visit not JSON":         {"visits", `{"id":`},
		"visit in binary form":   {"visits", ""},
		"visit under another ID": {"visits", "other"},
		"cloud visit not JSON":   {"cloud", `{"id":`},
	} {
		t.Run(name, func(t *testing.T) {
			c, path := newCache(t)
			v, other := newVisit(), newVisit()
			apply(t, c, 1, v, other)
			record(t, c, checkInFact(v.ID), checkedIn(v))
			apply(t, c, 3, checkedIn(v)) // a cloud version
			require.NoError(t, c.Close())
			toSchema1(t, path)
			value := []byte(tc.value)
			switch tc.value {
			case "":
				value = encode(t, v)
			case "other":
				value = []byte(mustJSON(t, other))
			}
			db, err := bolt.Open(path, 0o600, nil)
			require.NoError(t, err)
			require.NoError(t, db.Update(func(tx *bolt.Tx) error {
				return tx.Bucket([]byte(tc.bucket)).Put([]byte(v.ID), value)
			}))
			require.NoError(t, db.Close())

			_, err = cache.Open(path, cache.Options{EdgeID: edgeID})
			var ce *cache.CorruptError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, tc.bucket, ce.Bucket)
			require.Equal(t, v.ID, ce.Key)
			schema, first := fileForm(t, path)
			require.Equal(t, "1", schema)
			require.Len(t, first["visits"], 2)
			migrated := 0
			for _, b := range append(first["visits"], first["cloud"]...) {
				if b >= 0x01 && b <= 0x04 {
					migrated++
				}
			}
			want := 0
			if tc.value == "" {
				want = 1 // the binary value put by hand
			}
			require.Equal(t, want, migrated, "no value was migrated")
		})
	}
}

func TestOpen_UnknownSchemaRefused(t *testing.T) {
	c, path := newCache(t)
	require.NoError(t, c.Close())
	db, err := bolt.Open(path, 0o600, nil)
	require.NoError(t, err)
	require.NoError(t, db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("meta")).Put([]byte("schema"), []byte("4"))
	}))
	require.NoError(t, db.Close())
	_, err = cache.Open(path, cache.Options{EdgeID: edgeID})
	require.ErrorContains(t, err, `schema "4"`)
}

func encode(tb testing.TB, v protocol.Visit) []byte {
	tb.Helper()
	b, err := cache.EncodeVisit(&v)
	require.NoError(tb, err)
	return b
}

// A file of schema 2, from the build before the kiosk, opens with its
// visits, outbox and counter, gains the buckets of teams and visit types,
// and sets its feed sequence back to 0: the next resync brings the whole
// feed, with what the kiosk shows of every visit.
func TestOpen_MigratesSchema2(t *testing.T) {
	c, path := newCache(t)
	v := newVisit()
	apply(t, c, 1, v)
	f := record(t, c, checkInFact(v.ID), checkedIn(v))
	require.NoError(t, c.Close())
	db, err := bolt.Open(path, 0o600, nil)
	require.NoError(t, err)
	require.NoError(t, db.Update(func(tx *bolt.Tx) error {
		for _, name := range []string{"teams", "visit_types"} {
			if err := tx.DeleteBucket([]byte(name)); err != nil {
				return err
			}
		}
		// The visit as a build before the kiosk wrote it: visitV1.
		raw := slices.Clone(tx.Bucket([]byte("visits")).Get([]byte(v.ID)))
		raw = append([]byte{0x01}, raw[1:len(raw)-7]...)
		if err := tx.Bucket([]byte("visits")).Put([]byte(v.ID), raw); err != nil {
			return err
		}
		return tx.Bucket([]byte("meta")).Put([]byte("schema"), []byte("2"))
	}))
	require.NoError(t, db.Close())

	c = openCache(t, path)
	require.Equal(t, uint64(0), c.View().Seq())
	require.Equal(t, normalized(checkedIn(v)), visitOf(t, c, v.ID))
	out, err := c.Outbox(0)
	require.NoError(t, err)
	require.Equal(t, []protocol.Fact{f}, out)
	team := protocol.Team{ID: ids.New(ids.Team), Name: "Sales"}
	apply(t, c, 1, team) // the feed again from its start
	got, ok := c.View().Team(team.ID)
	require.True(t, ok)
	require.Equal(t, team, got)
	require.NoError(t, c.Close())
	schema, _ := fileForm(t, path)
	require.Equal(t, "3", schema)
}

// A release on trial opens the cache with KeepSchema: a file it would
// migrate (an older schema, a bucket it would add) is refused unchanged,
// so the release before it still reads it after a rollback; a file of its
// own schema, or a new one, opens.
func TestOpen_KeepSchemaRefusesMigration(t *testing.T) {
	c, path := newCache(t)
	v := newVisit()
	apply(t, c, 1, v)
	require.NoError(t, c.Close())
	c, err := cache.Open(path, cache.Options{EdgeID: edgeID, KeepSchema: true})
	require.NoError(t, err, "a file of this build's schema")
	require.NoError(t, c.Close())

	db, err := bolt.Open(path, 0o600, nil)
	require.NoError(t, err)
	require.NoError(t, db.Update(func(tx *bolt.Tx) error { return tx.DeleteBucket([]byte("visit_types")) }))
	require.NoError(t, db.Close())
	_, err = cache.Open(path, cache.Options{EdgeID: edgeID, KeepSchema: true})
	require.ErrorIs(t, err, cache.ErrSchemaChange, "a bucket this build would add")

	toSchema1(t, path)
	_, err = cache.Open(path, cache.Options{EdgeID: edgeID, KeepSchema: true})
	require.ErrorIs(t, err, cache.ErrSchemaChange)
	schema, _ := fileForm(t, path)
	require.Equal(t, "1", schema, "the file is left as it was")

	c, err = cache.Open(path, cache.Options{EdgeID: edgeID})
	require.NoError(t, err, "outside a trial the file migrates")
	require.NoError(t, c.Close())

	fresh, err := cache.Open(t.TempDir()+"/new.db", cache.Options{EdgeID: edgeID, KeepSchema: true})
	require.NoError(t, err, "a new file is made")
	require.NoError(t, fresh.Close())
}
