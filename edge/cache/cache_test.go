package cache_test

import (
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/svc-vms/svc/edge/cache"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/shared/passrule"
	"github.com/svc-vms/svc/sync/protocol"
)

var (
	edgeID = ids.New(ids.Edge)
	gateID = ids.New(ids.Gate)
	t0     = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
)

// newCache opens a cache in a fresh directory and closes it at the end.
func newCache(tb testing.TB) (*cache.Cache, string) {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "edge.db")
	return openCache(tb, path), path
}

func openCache(tb testing.TB, path string) *cache.Cache {
	tb.Helper()
	c, err := cache.Open(path, cache.Options{EdgeID: edgeID})
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// reopen closes c and opens its file again, as after a restart.
func reopen(tb testing.TB, c *cache.Cache, path string) *cache.Cache {
	tb.Helper()
	require.NoError(tb, c.Close())
	return openCache(tb, path)
}

func ptr[T any](v T) *T { return &v }

func newVisit() protocol.Visit {
	id := ids.New(ids.Visit)
	return protocol.Visit{
		ID: id, Status: string(passrule.Expected), ForVisitID: id,
		ExpectedAt: ptr(t0), ExpectedUntil: ptr(t0.Add(8 * time.Hour)),
		Rules:       protocol.Rules{Window: protocol.Window{Before: 30, After: 15}, GateIDs: []string{}},
		VisitorName: "Vera Visitor", HostName: "Ada Lovelace",
	}
}

func newKey(tb testing.TB, id string) protocol.Key {
	tb.Helper()
	pub, _, err := ed25519.GenerateKey(nil)
	require.NoError(tb, err)
	return protocol.Key{ID: id, Public: pub}
}

func checkInFact(visitID string) protocol.Fact {
	return protocol.Fact{ID: ids.New(ids.Fact), Kind: protocol.FactCheckIn, At: t0.Add(time.Minute), GateID: gateID, VisitID: visitID}
}

// checkedIn is v after a local check-in.
func checkedIn(v protocol.Visit) protocol.Visit {
	v.Status, v.Uses, v.CheckedInAt = string(passrule.CheckedIn), v.Uses+1, ptr(t0.Add(time.Minute))
	return v
}

// changes numbers objects as one run of the feed from seq.
func changes(seq uint64, objs ...any) []protocol.Change {
	out := make([]protocol.Change, len(objs))
	for i, o := range objs {
		c := protocol.Change{Seq: seq + uint64(i), At: t0}
		switch o := o.(type) {
		case protocol.Visit:
			c.Visit = &o
		case protocol.Gate:
			c.Gate = &o
		case protocol.Key:
			c.Key = &o
		case protocol.Settings:
			c.Settings = &o
		case protocol.Person:
			c.Person = &o
		case protocol.Team:
			c.Team = &o
		case protocol.VisitType:
			c.VisitType = &o
		case protocol.EdgeHardware:
			c.Hardware = &o
		default:
			panic(fmt.Sprintf("changes: %T", o))
		}
		out[i] = c
	}
	return out
}

func apply(tb testing.TB, c *cache.Cache, seq uint64, objs ...any) {
	tb.Helper()
	n, err := c.Apply(changes(seq, objs...))
	require.NoError(tb, err)
	require.Equal(tb, len(objs), n)
}

func record(tb testing.TB, c *cache.Cache, f protocol.Fact, visits ...protocol.Visit) protocol.Fact {
	tb.Helper()
	got, err := c.Record(cache.LocalChange{Visits: visits}, f)
	require.NoError(tb, err)
	return got
}

func visitOf(tb testing.TB, c *cache.Cache, id string) protocol.Visit {
	tb.Helper()
	v, ok := c.View().Visit(id)
	require.True(tb, ok, "visit %s is not in the view", id)
	return v
}

func TestCache_RoundTripAcrossReopen(t *testing.T) {
	c, path := newCache(t)
	v := newVisit()
	w := newVisit()
	w.Rules = protocol.Rules{Daily: &protocol.Daily{From: 8 * 60, Until: 18 * 60}, SingleUse: true, GateIDs: []string{gateID}}
	w.ExpectedUntil = nil
	gate := protocol.Gate{ID: gateID, Name: "Front", Direction: "entry"}
	key, retired := newKey(t, "0000000a"), newKey(t, "0000000b")
	retired.Retired = true
	settings := protocol.Settings{Timezone: "Europe/Berlin", OfflineLimitMinutes: 60}
	apply(t, c, 1, settings, gate, key, retired, v, w)
	f := record(t, c, checkInFact(v.ID), checkedIn(v))
	require.NoError(t, c.MarkSynced(t0.Add(time.Hour)))

	check := func(c *cache.Cache) {
		t.Helper()
		view := c.View()
		require.Equal(t, checkedIn(v), visitOf(t, c, v.ID))
		require.Equal(t, w, visitOf(t, c, w.ID))
		g, ok := view.Gate(gateID)
		require.True(t, ok)
		require.Equal(t, gate, g)
		s, ok := view.Settings()
		require.True(t, ok)
		require.Equal(t, settings, s)
		require.Equal(t, "Europe/Berlin", view.Location().String())
		require.Len(t, view.Keys(), 1, "retired keys do not verify")
		require.Equal(t, ed25519.PublicKey(key.Public), view.Keys()[key.ID])
		require.Equal(t, uint64(6), view.Seq())
		require.True(t, t0.Add(time.Hour).Equal(view.SyncedAt()))
		require.Equal(t, cache.Counts{Visits: 2, Gates: 1, Keys: 2, Outbox: 1}, view.Counts())
		out, err := c.Outbox(0)
		require.NoError(t, err)
		require.Equal(t, []protocol.Fact{f}, out)
	}
	check(c)
	check(reopen(t, c, path))
}

func TestCache_EmptyView(t *testing.T) {
	c, _ := newCache(t)
	view := c.View()
	require.NotNil(t, view)
	_, ok := view.Visit(ids.New(ids.Visit))
	require.False(t, ok)
	_, ok = view.Visit("not an id")
	require.False(t, ok)
	_, ok = view.Settings()
	require.False(t, ok)
	require.Equal(t, time.UTC, view.Location())
	require.Empty(t, view.Keys())
	require.Zero(t, view.Seq())
	require.True(t, view.SyncedAt().IsZero())
	depth, oldest, err := c.OutboxStats()
	require.NoError(t, err)
	require.Zero(t, depth)
	require.True(t, oldest.IsZero())
}

func TestApply_InOrderDuplicatesIgnored(t *testing.T) {
	c, _ := newCache(t)
	v1, v2, v3, v4 := newVisit(), newVisit(), newVisit(), newVisit()
	apply(t, c, 1, v1, v2)

	// 2 was applied before; only 3 and 4 are new.
	v2b := v2
	v2b.HostName = "Someone Else"
	n, err := c.Apply(changes(2, v2b, v3, v4))
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Equal(t, uint64(4), c.View().Seq())
	require.Equal(t, v2, visitOf(t, c, v2.ID), "a redelivered change is not applied again")
	visitOf(t, c, v4.ID)

	// All applied before.
	n, err = c.Apply(changes(1, v1, v2))
	require.NoError(t, err)
	require.Zero(t, n)
	n, err = c.Apply(nil)
	require.NoError(t, err)
	require.Zero(t, n)
	require.Equal(t, uint64(4), c.View().Seq())
}

func TestApply_GapRefusedNothingApplied(t *testing.T) {
	c, path := newCache(t)
	apply(t, c, 1, newVisit())
	before := c.View()
	v := newVisit()
	n, err := c.Apply(changes(3, v))
	require.ErrorIs(t, err, cache.ErrGap)
	require.Zero(t, n)
	require.Same(t, before, c.View())
	c = reopen(t, c, path)
	require.Equal(t, uint64(1), c.View().Seq())
	_, ok := c.View().Visit(v.ID)
	require.False(t, ok)
}

func TestApply_InvalidRunNothingApplied(t *testing.T) {
	c, path := newCache(t)
	good, bad := newVisit(), newVisit()
	bad.Status = "teleported"
	notConsecutive := append(changes(1, newVisit()), changes(3, newVisit())...)
	for name, run := range map[string][]protocol.Change{
		"invalid change last":   changes(1, good, bad),
		"not consecutive":       notConsecutive,
		"change with no object": {{Seq: 1, At: t0}},
	} {
		t.Run(name, func(t *testing.T) {
			n, err := c.Apply(run)
			require.ErrorIs(t, err, protocol.ErrInvalid)
			require.Zero(t, n)
			require.Zero(t, c.View().Seq())
			require.Zero(t, c.View().Counts().Visits)
		})
	}
	c = reopen(t, c, path)
	require.Zero(t, c.View().Counts().Visits)
}

func TestApply_GatesKeysAndSettingsChange(t *testing.T) {
	c, path := newCache(t)
	gate := protocol.Gate{ID: gateID, Name: "Front", Direction: "both"}
	key := newKey(t, "0000000a")
	apply(t, c, 1, gate, key, protocol.Settings{Timezone: "UTC"})
	require.Len(t, c.View().Keys(), 1)

	gate.Removed = true
	key.Retired = true
	apply(t, c, 4, gate, key, protocol.Settings{Timezone: "America/New_York", OfflineLimitMinutes: 5})
	for i := range 2 {
		if i == 1 {
			c = reopen(t, c, path)
		}
		_, ok := c.View().Gate(gateID)
		require.False(t, ok, "a removed gate leaves the cache")
		require.Empty(t, c.View().Keys(), "a retired key verifies no more")
		require.Equal(t, "America/New_York", c.View().Location().String())
	}
}

// TestApply_RotatedKeyRetiresOnTime: a key sent with a retire time (a
// rotation) verifies until then and not from then, by the time asked, also
// after a reopen; the new key verifies throughout.
func TestApply_RotatedKeyRetiresOnTime(t *testing.T) {
	c, path := newCache(t)
	old, current := newKey(t, "0000000a"), newKey(t, "0000000b")
	apply(t, c, 1, old)
	retire := t0.Add(48 * time.Hour)
	old.RetireAt = retire.Unix()
	apply(t, c, 2, old, current)
	for i := range 2 {
		if i == 1 {
			c = reopen(t, c, path)
		}
		v := c.View()
		require.Len(t, v.Keys(), 2)
		require.Len(t, v.KeysAt(retire.Add(-time.Second)), 2, "the old key verifies until it retires")
		require.Equal(t, []string{current.ID}, slices.Collect(maps.Keys(v.KeysAt(retire))), "and not from then")
		require.Len(t, v.Keys(), 2, "KeysAt leaves the shared set alone")
	}
}

func TestApply_OldViewUnchanged(t *testing.T) {
	c, _ := newCache(t)
	vs := make([]any, 600)
	for i := range vs {
		vs[i] = newVisit()
	}
	apply(t, c, 1, vs[:300]...)
	old := c.View()
	apply(t, c, 301, vs[300:]...)
	require.Equal(t, 300, old.Counts().Visits)
	require.Equal(t, 600, c.View().Counts().Visits)
	for _, v := range vs[300:] {
		_, ok := old.Visit(v.(protocol.Visit).ID)
		require.False(t, ok, "a published View never changes")
	}
}

// snapshot splits visits into parts of at most per visits.
func snapshot(seq uint64, per int, settings *protocol.Settings, gates []protocol.Gate, keys []protocol.Key, visits []protocol.Visit) []protocol.Snapshot {
	n := max(1, (len(visits)+per-1)/per)
	parts := make([]protocol.Snapshot, n)
	for i := range parts {
		parts[i] = protocol.Snapshot{Seq: seq, Part: i + 1, Parts: n, Gates: []protocol.Gate{}, Keys: []protocol.Key{}}
		parts[i].Visits = visits[min(i*per, len(visits)):min((i+1)*per, len(visits))]
	}
	parts[0].Settings, parts[0].Gates, parts[0].Keys = settings, gates, keys
	return parts
}

func TestReplaceSnapshot_Replaces(t *testing.T) {
	c, path := newCache(t)
	oldVisit, oldGate := newVisit(), protocol.Gate{ID: ids.New(ids.Gate), Name: "Old", Direction: "exit"}
	apply(t, c, 1, oldVisit, oldGate, newKey(t, "0000000a"), protocol.Settings{Timezone: "UTC"})
	f := record(t, c, protocol.Fact{ID: ids.New(ids.Fact), Kind: protocol.FactRefused, At: t0, GateID: gateID, Reason: protocol.ReasonInvalidToken})
	require.NoError(t, c.MarkSynced(t0))

	visits := make([]protocol.Visit, 5)
	for i := range visits {
		visits[i] = newVisit()
	}
	gate, key := protocol.Gate{ID: gateID, Name: "Front", Direction: "entry"}, newKey(t, "0000000c")
	settings := protocol.Settings{Timezone: "Asia/Tokyo", OfflineLimitMinutes: 30}
	require.NoError(t, c.ReplaceSnapshot(snapshot(40, 2, &settings, []protocol.Gate{gate}, []protocol.Key{key}, visits)))

	for i := range 2 {
		if i == 1 {
			c = reopen(t, c, path)
		}
		view := c.View()
		require.Equal(t, uint64(40), view.Seq())
		require.Equal(t, cache.Counts{Visits: 5, Gates: 1, Keys: 1, Outbox: 1}, view.Counts())
		_, ok := view.Visit(oldVisit.ID)
		require.False(t, ok)
		_, ok = view.Gate(oldGate.ID)
		require.False(t, ok)
		for _, v := range visits {
			require.Equal(t, v, visitOf(t, c, v.ID))
		}
		require.Contains(t, view.Keys(), key.ID)
		require.NotContains(t, view.Keys(), "0000000a")
		s, _ := view.Settings()
		require.Equal(t, settings, s)
		require.True(t, t0.Equal(view.SyncedAt()), "a snapshot keeps the sync time")
		out, err := c.Outbox(0)
		require.NoError(t, err)
		require.Equal(t, []protocol.Fact{f}, out, "a snapshot keeps the outbox")
	}
	// The feed continues after the snapshot's seq.
	n, err := c.Apply(changes(41, newVisit()))
	require.NoError(t, err)
	require.Equal(t, 1, n)
}

func TestReplaceSnapshot_RefusesIncompleteOrInvalid(t *testing.T) {
	c, path := newCache(t)
	kept := newVisit()
	apply(t, c, 1, kept)
	visits := []protocol.Visit{newVisit(), newVisit(), newVisit()}
	bad := newVisit()
	bad.Uses = -1
	dup := snapshot(9, 2, nil, nil, nil, visits)
	dup[1].Visits = []protocol.Visit{visits[0]}
	twoSettings := snapshot(9, 2, &protocol.Settings{Timezone: "UTC"}, nil, nil, visits)
	twoSettings[1].Settings = twoSettings[0].Settings
	for name, parts := range map[string][]protocol.Snapshot{
		"no parts":              nil,
		"a part missing":        snapshot(9, 2, nil, nil, nil, visits)[:1],
		"parts of two seqs":     append(snapshot(9, 2, nil, nil, nil, visits)[:1], snapshot(10, 2, nil, nil, nil, visits)[1]),
		"a part twice":          append(snapshot(9, 2, nil, nil, nil, visits)[:1], snapshot(9, 2, nil, nil, nil, visits)[0]),
		"an invalid visit":      snapshot(9, 2, nil, nil, nil, []protocol.Visit{visits[0], bad}),
		"a visit twice":         dup,
		"settings in two parts": twoSettings,
	} {
		t.Run(name, func(t *testing.T) {
			require.ErrorIs(t, c.ReplaceSnapshot(parts), protocol.ErrInvalid)
			require.Equal(t, uint64(1), c.View().Seq())
			require.Equal(t, 1, c.View().Counts().Visits)
		})
	}
	c = reopen(t, c, path)
	require.Equal(t, uint64(1), c.View().Seq())
	visitOf(t, c, kept.ID)
}

func TestRecord_StoresVisitAndFactTogether(t *testing.T) {
	c, path := newCache(t)
	v := newVisit()
	apply(t, c, 1, v)
	f := checkInFact(v.ID)
	f.At = time.Date(2026, 3, 2, 10, 1, 2, 123456789, time.FixedZone("CET", 3600))
	got := record(t, c, f, checkedIn(v))
	require.Equal(t, time.Date(2026, 3, 2, 9, 1, 2, 123456000, time.UTC), got.At, "UTC to the microsecond, as the protocol writes times")
	require.Equal(t, uint64(1), got.Counter)
	require.Equal(t, edgeID, got.EdgeID)
	require.Equal(t, protocol.Version, got.V)
	require.Equal(t, f.ID, got.ID)
	for i := range 2 {
		if i == 1 {
			c = reopen(t, c, path)
		}
		require.Equal(t, checkedIn(v), visitOf(t, c, v.ID))
		out, err := c.Outbox(0)
		require.NoError(t, err)
		require.Equal(t, []protocol.Fact{got}, out)
	}
}

func TestRecord_FailureStoresNothing(t *testing.T) {
	c, path := newCache(t)
	v := newVisit()
	apply(t, c, 1, v)
	first := record(t, c, checkInFact(v.ID))

	invalidFact := checkInFact(v.ID)
	invalidFact.GateID = "gate_nope"
	otherEdge := checkInFact(v.ID)
	otherEdge.EdgeID = ids.New(ids.Edge)
	invalidVisit := checkedIn(v)
	invalidVisit.ForVisitID = ""
	for name, tc := range map[string]struct {
		fact   protocol.Fact
		visits []protocol.Visit
		want   error
	}{
		"an invalid fact":  {invalidFact, []protocol.Visit{checkedIn(v)}, protocol.ErrInvalid},
		"an invalid visit": {checkInFact(v.ID), []protocol.Visit{newVisit(), invalidVisit}, protocol.ErrInvalid},
		"another edge":     {otherEdge, []protocol.Visit{checkedIn(v)}, cache.ErrEdgeMismatch},
		// The duplicate is found inside the transaction, after the visit
		// was written: the rollback must take the visit with it.
		"a fact ID already waiting": {protocol.Fact{ID: first.ID, Kind: protocol.FactCheckIn, At: t0, GateID: gateID, VisitID: v.ID},
			[]protocol.Visit{checkedIn(v)}, cache.ErrDuplicateFact},
	} {
		t.Run(name, func(t *testing.T) {
			before := c.View()
			_, err := c.Record(cache.LocalChange{Visits: tc.visits}, tc.fact)
			require.ErrorIs(t, err, tc.want)
			require.Same(t, before, c.View())
			require.Equal(t, v, visitOf(t, c, v.ID))
		})
	}
	c = reopen(t, c, path)
	require.Equal(t, v, visitOf(t, c, v.ID), "the visit change is absent after a failed Record")
	require.Equal(t, 1, c.View().Counts().Outbox)
	// A failure consumes no counter.
	require.Equal(t, uint64(2), record(t, c, checkInFact(v.ID), checkedIn(v)).Counter)
}

func TestRecord_CountersIncreaseAcrossReopen(t *testing.T) {
	c, path := newCache(t)
	var acked []string
	want := uint64(0)
	for round := range 3 {
		for range 3 {
			f := record(t, c, protocol.Fact{ID: ids.New(ids.Fact), Kind: protocol.FactRefused, At: t0, GateID: gateID, Reason: string(passrule.Expired)})
			want++
			require.Equal(t, want, f.Counter, "round %d", round)
			acked = append(acked, f.ID)
		}
		// Even with the outbox emptied, counters never repeat.
		n, err := c.Ack(acked)
		require.NoError(t, err)
		require.Equal(t, 3, n)
		acked = acked[:0]
		c = reopen(t, c, path)
	}
}

func TestRecord_NoEdge(t *testing.T) {
	path := filepath.Join(t.TempDir(), "edge.db")
	c, err := cache.Open(path, cache.Options{})
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Record(cache.LocalChange{}, checkInFact(ids.New(ids.Visit)))
	require.ErrorIs(t, err, cache.ErrNoEdge)
}

func TestOpen_EdgeMismatch(t *testing.T) {
	c, path := newCache(t)
	require.NoError(t, c.Close())
	_, err := cache.Open(path, cache.Options{EdgeID: ids.New(ids.Edge)})
	require.ErrorIs(t, err, cache.ErrEdgeMismatch)
	// Without an edge ID the file's own is used.
	c, err = cache.Open(path, cache.Options{})
	require.NoError(t, err)
	defer c.Close()
	require.Equal(t, edgeID, record(t, c, checkInFact(ids.New(ids.Visit))).EdgeID)
}

func TestOutbox_OrderStatsAndAck(t *testing.T) {
	c, path := newCache(t)
	var facts []protocol.Fact
	for i := range 5 {
		f := checkInFact(ids.New(ids.Visit))
		f.At = t0.Add(time.Duration(i) * time.Minute)
		facts = append(facts, record(t, c, f))
	}
	out, err := c.Outbox(3)
	require.NoError(t, err)
	require.Equal(t, facts[:3], out)
	out, err = c.Outbox(0)
	require.NoError(t, err)
	require.Equal(t, facts, out)

	depth, oldest, err := c.OutboxStats()
	require.NoError(t, err)
	require.Equal(t, 5, depth)
	require.True(t, t0.Equal(oldest))

	n, err := c.Ack([]string{facts[0].ID, facts[2].ID, ids.New(ids.Fact), "garbage", facts[0].ID})
	require.NoError(t, err)
	require.Equal(t, 2, n, "unknown and repeated IDs are ignored")
	for i := range 2 {
		if i == 1 {
			c = reopen(t, c, path)
		}
		out, err = c.Outbox(0)
		require.NoError(t, err)
		require.Equal(t, []protocol.Fact{facts[1], facts[3], facts[4]}, out)
		depth, oldest, err = c.OutboxStats()
		require.NoError(t, err)
		require.Equal(t, 3, depth)
		require.True(t, facts[1].At.Equal(oldest))
		require.Equal(t, 3, c.View().Counts().Outbox)
	}
}

func TestApply_ConflictRule(t *testing.T) {
	newRules := protocol.Rules{Window: protocol.Window{Before: 5, After: 5}, SingleUse: true, GateIDs: []string{gateID}}
	for name, tc := range map[string]struct {
		cloud func(v protocol.Visit) protocol.Visit // what the cloud sends while the check-in is pending
		want  func(local, cloud protocol.Visit) protocol.Visit
	}{
		"stale expected does not undo the check-in": {
			cloud: func(v protocol.Visit) protocol.Visit { v.Rules = newRules; v.HostName = "Grace Hopper"; return v },
			want: func(local, cloud protocol.Visit) protocol.Visit {
				local.Rules, local.HostName = newRules, "Grace Hopper"
				return local
			},
		},
		"a cancellation wins": {
			cloud: func(v protocol.Visit) protocol.Visit { v.Status = string(passrule.Cancelled); return v },
			want: func(local, cloud protocol.Visit) protocol.Visit {
				local.Status = string(passrule.Cancelled)
				return local
			},
		},
		"a revocation wins": {
			cloud: func(v protocol.Visit) protocol.Visit { v.Revoked = true; return v },
			want: func(local, cloud protocol.Visit) protocol.Visit {
				local.Revoked = true
				return local
			},
		},
		"the larger uses stays": {
			cloud: func(v protocol.Visit) protocol.Visit { v.Uses = 5; v.Status = string(passrule.CheckedOut); return v },
			want: func(local, cloud protocol.Visit) protocol.Visit {
				local.Uses = 5
				return local
			},
		},
	} {
		t.Run(name, func(t *testing.T) {
			c, path := newCache(t)
			v := newVisit()
			apply(t, c, 1, v)
			local := checkedIn(v)
			f := record(t, c, checkInFact(v.ID), local)

			cloud := tc.cloud(v)
			apply(t, c, 2, cloud)
			want := tc.want(local, cloud)
			require.Equal(t, want, visitOf(t, c, v.ID))
			c = reopen(t, c, path)
			require.Equal(t, want, visitOf(t, c, v.ID), "the merged visit is what was stored")

			// Acknowledged: the cloud's next change is taken whole.
			n, err := c.Ack([]string{f.ID})
			require.NoError(t, err)
			require.Equal(t, 1, n)
			apply(t, c, 3, cloud)
			require.Equal(t, cloud, visitOf(t, c, v.ID))
		})
	}
}

func TestApply_ConflictRulePendingAcrossReopen(t *testing.T) {
	c, path := newCache(t)
	v, other := newVisit(), newVisit()
	apply(t, c, 1, v, other)
	record(t, c, checkInFact(v.ID), checkedIn(v))
	record(t, c, checkInFact(v.ID), checkedIn(checkedIn(v)))
	f := record(t, c, checkInFact(other.ID), checkedIn(other))
	c = reopen(t, c, path) // pending is rebuilt from the outbox
	apply(t, c, 3, v, other)
	require.Equal(t, checkedIn(checkedIn(v)), visitOf(t, c, v.ID))
	require.Equal(t, checkedIn(other), visitOf(t, c, other.ID))

	// One of v's two facts acknowledged: v is still pending.
	out, err := c.Outbox(1)
	require.NoError(t, err)
	_, err = c.Ack([]string{out[0].ID, f.ID})
	require.NoError(t, err)
	apply(t, c, 5, v, other)
	require.Equal(t, checkedIn(checkedIn(v)), visitOf(t, c, v.ID))
	require.Equal(t, other, visitOf(t, c, other.ID))
}

func TestReplaceSnapshot_ConflictRule(t *testing.T) {
	c, path := newCache(t)
	v := newVisit()
	apply(t, c, 1, v)
	local := checkedIn(v)
	record(t, c, checkInFact(v.ID), local)

	// A re-entry made here offline: the cloud has not heard of the new visit.
	v2 := newVisit()
	apply(t, c, 2, v2)
	re := newVisit()
	re.ForVisitID, re.Status, re.CheckedInAt = v2.ID, string(passrule.CheckedIn), ptr(t0.Add(time.Hour))
	holder := v2
	holder.Status, holder.ReenteredAs = string(passrule.CheckedOut), re.ID
	record(t, c, protocol.Fact{ID: ids.New(ids.Fact), Kind: protocol.FactReEntry, At: t0.Add(time.Hour), GateID: gateID, VisitID: re.ID, PassVisitID: v2.ID}, re, holder)

	cloud := v
	cloud.Revoked = true
	fresh := newVisit()
	require.NoError(t, c.ReplaceSnapshot(snapshot(10, 1000, nil, nil, nil, []protocol.Visit{cloud, v2, fresh})))
	wantV := local
	wantV.Revoked = true
	for i := range 2 {
		if i == 1 {
			c = reopen(t, c, path)
		}
		require.Equal(t, wantV, visitOf(t, c, v.ID))
		require.Equal(t, holder, visitOf(t, c, v2.ID))
		require.Equal(t, re, visitOf(t, c, re.ID), "a pending visit the snapshot lacks is kept")
		require.Equal(t, fresh, visitOf(t, c, fresh.ID))
		require.Equal(t, 4, c.View().Counts().Visits)
	}
}

func TestOpen_CorruptValueRefused(t *testing.T) {
	v := newVisit()
	for name, tc := range map[string]struct {
		bucket, key, value string
	}{
		"visit in JSON (schema 1)":     {"visits", v.ID, mustJSON(t, v)},
		"visit truncated":              {"visits", v.ID, string(encode(t, v)[:20])},
		"visit with a byte after it":   {"visits", v.ID, string(encode(t, v)) + "\x00"},
		"visit under another ID":       {"visits", ids.New(ids.Visit), string(encode(t, v))},
		"visit invalid":                {"visits", v.ID, string(encode(t, func() protocol.Visit { w := v; w.ExpectedUntil = w.ExpectedAt; return w }()))},
		"gate invalid":                 {"gates", gateID, `{"id":"` + gateID + `","name":"x","direction":"sideways"}`},
		"key not JSON":                 {"keys", "0000000a", `nope`},
		"settings invalid":             {"meta", "settings", `{"timezone":"Mars/Olympus","offline_limit_minutes":0}`},
		"hardware invalid":             {"meta", "hardware", `{"edge_id":"` + edgeID + `","hardware":{"gates":[{"gate_id":"` + gateID + `","readers":[],"relay":{"pin":"P1"}}]}}`},
		"hardware of another edge":     {"meta", "hardware", `{"edge_id":"` + ids.New(ids.Edge) + `","hardware":{"gates":[]}}`},
		"seq not 8 bytes":              {"meta", "seq", "12"},
		"synced_at not a time":         {"meta", "synced_at", "yesterday"},
		"outbox row not JSON":          {"outbox", "\x00\x00\x00\x00\x00\x00\x00\x01", `{`},
		"cloud visit truncated":        {"cloud", v.ID, string(encode(t, v)[:20])},
		"cloud visit in JSON":          {"cloud", v.ID, mustJSON(t, v)},
		"cloud visit under another ID": {"cloud", ids.New(ids.Visit), string(encode(t, v))},
		"cloud visit not pending":      {"cloud", v.ID, string(encode(t, v))},
	} {
		t.Run(name, func(t *testing.T) {
			c, path := newCache(t)
			record(t, c, checkInFact(v.ID)) // counter 1 exists
			require.NoError(t, c.Close())
			db, err := bolt.Open(path, 0o600, nil)
			require.NoError(t, err)
			require.NoError(t, db.Update(func(tx *bolt.Tx) error {
				b, err := tx.CreateBucketIfNotExists([]byte(tc.bucket))
				if err != nil {
					return err
				}
				return b.Put([]byte(tc.key), []byte(tc.value))
			}))
			require.NoError(t, db.Close())

			_, err = cache.Open(path, cache.Options{EdgeID: edgeID})
			var ce *cache.CorruptError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, tc.bucket, ce.Bucket)
			wantKey := tc.key
			if tc.bucket == "outbox" {
				wantKey = "1"
			}
			require.Equal(t, wantKey, ce.Key)
			require.Contains(t, err.Error(), tc.bucket)
		})
	}
}

func TestOpen_OutboxWithoutIndexRefused(t *testing.T) {
	c, path := newCache(t)
	f := record(t, c, checkInFact(ids.New(ids.Visit)))
	require.NoError(t, c.Close())
	db, err := bolt.Open(path, 0o600, nil)
	require.NoError(t, err)
	require.NoError(t, db.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte("facts")).Delete([]byte(f.ID)) }))
	require.NoError(t, db.Close())
	_, err = cache.Open(path, cache.Options{EdgeID: edgeID})
	var ce *cache.CorruptError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "outbox", ce.Bucket)
}

func mustJSON(tb testing.TB, v protocol.Visit) string {
	tb.Helper()
	b, err := json.Marshal(v)
	require.NoError(tb, err)
	return string(b)
}

// TestView_ConcurrentReadersWhileRecording runs readers against writers
// under -race: every View a reader gets is one committed state, in which
// the uses of the two visits add up to the facts in the outbox.
func TestView_ConcurrentReadersWhileRecording(t *testing.T) {
	c, _ := newCache(t)
	a, b := newVisit(), newVisit()
	apply(t, c, 1, a, b)
	const perWriter, readers, minReads = 30, 4, 100
	done := make(chan struct{})
	var started, writing, reading sync.WaitGroup
	errs := make(chan error, 2+readers)
	var states [readers]map[int]bool
	started.Add(readers)
	for r := range readers {
		states[r] = map[int]bool{}
		reading.Go(func() {
			started.Done()
			for n := 0; ; n++ {
				if n >= minReads {
					select {
					case <-done:
						return
					default:
					}
				}
				view := c.View()
				va, okA := view.Visit(a.ID)
				vb, okB := view.Visit(b.ID)
				if !okA || !okB || va.Uses+vb.Uses != view.Counts().Outbox {
					errs <- fmt.Errorf("inconsistent view: uses %d+%d, outbox %d", va.Uses, vb.Uses, view.Counts().Outbox)
					return
				}
				states[r][view.Counts().Outbox] = true
			}
		})
	}
	started.Wait() // the readers run before the first write
	for _, v := range []protocol.Visit{a, b} {
		writing.Go(func() {
			for range perWriter {
				cur, _ := c.View().Visit(v.ID)
				cur.Uses++
				if _, err := c.Record(cache.LocalChange{Visits: []protocol.Visit{cur}}, checkInFact(v.ID)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	writing.Wait()
	close(done)
	reading.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, 2*perWriter, c.View().Counts().Outbox)
	require.Equal(t, perWriter, visitOf(t, c, a.ID).Uses)
	require.Equal(t, perWriter, visitOf(t, c, b.ID).Uses)
	for r := range states {
		t.Logf("reader %d saw %d of the %d states", r, len(states[r]), 2*perWriter+1)
	}
}
