package cache_test

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/edge/cache"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/shared/passrule"
	"github.com/svc-vms/svc/sync/protocol"
)

// site makes a cache with n visits applied (in the file, the journal
// empty) and returns it, its path and the visits.
func site(t *testing.T, n int) (*cache.Cache, string, []protocol.Visit) {
	t.Helper()
	c, path := newCache(t)
	visits := make([]protocol.Visit, n)
	objs := make([]any, n)
	for i := range visits {
		visits[i] = newVisit()
		objs[i] = visits[i]
	}
	apply(t, c, 1, objs...)
	return c, path, visits
}

func checkIn(t *testing.T, c *cache.Cache, v protocol.Visit) protocol.Fact {
	t.Helper()
	return record(t, c, checkInFact(v.ID), checkedIn(v))
}

func outbox(t *testing.T, c *cache.Cache) []protocol.Fact {
	t.Helper()
	out, err := c.Outbox(0)
	require.NoError(t, err)
	return out
}

// A power cut while a frame was being written leaves it torn: its record
// never returned to its gate, so nothing opened for it. Open takes the
// frames before it and stops there; the torn record's counter is the next
// one's.
func TestJournal_TornLastFrame(t *testing.T) {
	c, path, visits := site(t, 3)
	f1 := checkIn(t, c, visits[0])
	f2 := checkIn(t, c, visits[1])
	at := cache.JournalOffset(c)
	checkIn(t, c, visits[2])
	end := cache.JournalOffset(c)
	cache.Crash(c)
	damage(t, path+".journal", func(b []byte) []byte {
		clear(b[at+(end-at)/2 : end]) // the frame's second half never reached the disk
		return b
	})

	c = openCache(t, path)
	require.Equal(t, []protocol.Fact{f1, f2}, outbox(t, c))
	require.Equal(t, string(passrule.CheckedIn), visitOf(t, c, visits[1].ID).Status)
	require.Equal(t, string(passrule.Expected), visitOf(t, c, visits[2].ID).Status, "the torn record's visit is as it was")
	require.Equal(t, uint64(3), checkIn(t, c, visits[2]).Counter, "the torn record's counter is assigned again")
}

// A frame written before the last flush stays in the journal's file until
// a later frame overwrites it. It assigns counters the file already has,
// so it does not follow the frames written since: Open stops before it,
// and a fact acknowledged since it was written does not come back.
func TestJournal_StaleFrameFromBeforeTheFlush(t *testing.T) {
	c, path, visits := site(t, 4)
	f1 := checkIn(t, c, visits[0])
	first := cache.JournalOffset(c)
	f2 := checkIn(t, c, visits[1])
	f3 := checkIn(t, c, visits[2])
	removed, err := c.Ack([]string{f2.ID}) // writes the journal to the file first, in its transaction
	require.NoError(t, err)
	require.Equal(t, 1, removed)
	require.Zero(t, cache.JournalOffset(c), "the journal was flushed")
	f4 := checkIn(t, c, visits[3])
	require.Equal(t, first, cache.JournalOffset(c), "f4's frame took f1's place: f2's frame, stale, is right after it")
	cache.Crash(c)

	c = openCache(t, path)
	require.Equal(t, []protocol.Fact{f1, f3, f4}, outbox(t, c), "f2, acknowledged, stays acknowledged")
	require.Equal(t, uint64(5), checkIn(t, c, newVisitIn(t, c)).Counter)
}

// newVisitIn applies a new visit to c and returns it.
func newVisitIn(t *testing.T, c *cache.Cache) protocol.Visit {
	t.Helper()
	v := newVisit()
	apply(t, c, c.Seq()+1, v)
	return v
}

// The process killed after Record returned (the frame fdatasync'd, the
// relay free to open) and before the journal was written to the file:
// the cache file alone lacks the record, and Open puts it back from the
// journal, with its visit.
func TestJournal_KilledAfterRecordBeforeFlush(t *testing.T) {
	c, path, visits := site(t, 1)
	require.NoError(t, c.Close())

	cmd := exec.Command(os.Args[0], "-test.run=^TestJournal_RecordInChild$")
	cmd.Env = append(os.Environ(), "CACHE_CHILD_PATH="+path, "CACHE_CHILD_VISIT="+visits[0].ID)
	stdin, err := cmd.StdinPipe() // held open: the child waits on it until killed
	require.NoError(t, err)
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	var factID string
	for sc := bufio.NewScanner(stdout); sc.Scan(); {
		if id, ok := strings.CutPrefix(sc.Text(), "recorded "); ok {
			factID = id
			break
		}
		t.Log("child: " + sc.Text())
	}
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	require.NotEmpty(t, factID, "the child recorded nothing")

	alone := filepath.Join(t.TempDir(), "alone.db")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(alone, b, 0o600))
	require.Empty(t, outbox(t, openCache(t, alone)), "the file alone lacks the record: it was killed before the flush")

	c = openCache(t, path)
	out := outbox(t, c)
	require.Len(t, out, 1)
	require.Equal(t, factID, out[0].ID)
	require.Equal(t, string(passrule.CheckedIn), visitOf(t, c, visits[0].ID).Status)
}

// TestJournal_RecordInChild is the process TestJournal_KilledAfterRecordBeforeFlush
// kills: it records a check-in, says so, and waits.
func TestJournal_RecordInChild(t *testing.T) {
	path := os.Getenv("CACHE_CHILD_PATH")
	if path == "" {
		t.Skip("run by TestJournal_KilledAfterRecordBeforeFlush")
	}
	c, err := cache.Open(path, cache.Options{}) // the file's edge: edgeID is the parent's
	require.NoError(t, err)
	v := visitOf(t, c, os.Getenv("CACHE_CHILD_VISIT"))
	f := checkIn(t, c, v)
	_, err = os.Stdout.WriteString("recorded " + f.ID + "\n")
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, os.Stdin) // until killed
}

// A release on trial (KeepSchema) writes its records straight to the
// file, which the release it may roll back to reads without knowing the
// journal; and it replays what the release before it left in the
// journal.
func TestJournal_KeepSchemaWritesStraightToTheFile(t *testing.T) {
	c, path, visits := site(t, 2)
	f1 := checkIn(t, c, visits[0]) // in the journal only
	cache.Crash(c)

	trial, err := cache.Open(path, cache.Options{EdgeID: edgeID, KeepSchema: true})
	require.NoError(t, err)
	require.Equal(t, []protocol.Fact{f1}, outbox(t, trial), "the trial replays the journal")
	f2 := checkIn(t, trial, visits[1])
	cache.Crash(trial)
	require.NoError(t, os.Remove(path+".journal")) // as a release without the journal sees the file

	c = openCache(t, path)
	require.Equal(t, []protocol.Fact{f1, f2}, outbox(t, c), "both are in the file")
}

// Reset of a damaged file recovers the facts the journal holds that the
// file lacks, and keeps the journal beside the old file.
func TestReset_CarriesTheJournal(t *testing.T) {
	path, facts := filled(t)
	c := openCache(t, path)
	f := record(t, c, protocol.Fact{ID: ids.New(ids.Fact), Kind: protocol.FactPunch, At: t0, GateID: gateID,
		PersonID: ids.New(ids.Person), Direction: protocol.DirectionIn})
	cache.Crash(c)
	_, leaves := cache.BucketPages(t, path, "visits")
	ps, _ := cache.Layout(t, path)
	damage(t, path, func(b []byte) []byte { clear(b[int(leaves[1])*ps : int(leaves[1]+1)*ps]); return b })
	_, err := cache.Open(path, cache.Options{EdgeID: edgeID})
	require.ErrorIs(t, err, cache.ErrDamaged)
	journal, err := os.ReadFile(path + ".journal")
	require.NoError(t, err)

	rec, err := cache.Reset(path, cache.Options{EdgeID: edgeID}, t0)
	require.NoError(t, err)
	want := append(facts, f)
	require.Equal(t, want, rec.Facts)
	require.Equal(t, 1, rec.Journaled)
	require.Zero(t, rec.Loose, "the journal's stale frames hold facts the file's outbox gave")
	require.Equal(t, 2, rec.Punches)
	require.Equal(t, f.Counter, rec.Counter)
	aside, err := os.ReadFile(rec.Aside + ".journal")
	require.NoError(t, err)
	require.Equal(t, journal, aside, "the journal is kept beside the old file, as it was")
	require.Equal(t, want, waiting(t, path))
	_, ok := openCache(t, path).View().LastPunch(f.PersonID)
	require.True(t, ok)
}

// A punch the relay then failed is voided: its refusal puts the person's
// punch before it back, or deletes it when there was none. Reset of a
// damaged file takes each person's last punch as the journal leaves it,
// not the newest ever put: a voided punch that came back would turn the
// person's next punch the wrong way.
func TestReset_KeepsAVoidedPunchVoided(t *testing.T) {
	path, _ := filled(t)
	c := openCache(t, path)
	punch := func(person string, restore *cache.PunchRestore) protocol.Fact {
		f := protocol.Fact{ID: ids.New(ids.Fact), Kind: protocol.FactPunch, At: t0, GateID: gateID,
			PersonID: person, Direction: protocol.DirectionIn}
		got, err := c.Record(cache.LocalChange{}, f)
		require.NoError(t, err)
		void := protocol.Fact{ID: ids.New(ids.Fact), Kind: protocol.FactRefused, At: t0, GateID: gateID,
			PersonID: person, Reason: protocol.ReasonRelayFailed, Voids: got.ID}
		if restore != nil {
			_, err = c.Record(cache.LocalChange{RestorePunch: restore}, void)
			require.NoError(t, err)
		}
		return got
	}
	// Ada's first punch stands, her second is voided; Alan's only punch is
	// voided.
	ada, alan := ids.New(ids.Person), ids.New(ids.Person)
	first := punch(ada, nil)
	punch(ada, &cache.PunchRestore{PersonID: ada, Last: &first})
	punch(alan, &cache.PunchRestore{PersonID: alan})
	cache.Crash(c)
	_, leaves := cache.BucketPages(t, path, "visits")
	ps, _ := cache.Layout(t, path)
	damage(t, path, func(b []byte) []byte { clear(b[int(leaves[1])*ps : int(leaves[1]+1)*ps]); return b })

	rec, err := cache.Reset(path, cache.Options{EdgeID: edgeID}, t0)
	require.NoError(t, err)
	require.Equal(t, 2, rec.Punches, "filled's person's and Ada's")
	view := openCache(t, path).View()
	last, ok := view.LastPunch(ada)
	require.True(t, ok)
	require.Equal(t, first.ID, last.ID, "Ada's last punch is the one before the voided one")
	_, ok = view.LastPunch(alan)
	require.False(t, ok, "Alan's voided punch stays voided")
}

// Check counts the records the journal holds that the file lacks, and
// does not write them.
func TestCheck_CountsTheJournal(t *testing.T) {
	c, path, visits := site(t, 2)
	checkIn(t, c, visits[0])
	checkIn(t, c, visits[1])
	cache.Crash(c)
	s, err := cache.Check(path, cache.Options{EdgeID: edgeID})
	require.NoError(t, err)
	require.Equal(t, 2, s.Journaled)
	require.Zero(t, s.Counts.Outbox)

	require.NoError(t, openCache(t, path).Close())
	s, err = cache.Check(path, cache.Options{EdgeID: edgeID})
	require.NoError(t, err)
	require.Zero(t, s.Journaled)
	require.Equal(t, 2, s.Counts.Outbox)
}

// Record no longer reads the file: it finds a fact already waiting by
// the IDs it keeps in memory, from Open on, until the fact is
// acknowledged.
func TestRecord_DuplicateOfAFactWaitingBeforeOpen(t *testing.T) {
	c, path := newCache(t)
	f := record(t, c, checkInFact(ids.New(ids.Visit)))
	c = reopen(t, c, path)
	_, err := c.Record(cache.LocalChange{}, checkInFact(f.VisitID))
	require.NoError(t, err, "another fact")
	f.Counter = 0
	_, err = c.Record(cache.LocalChange{}, f)
	require.ErrorIs(t, err, cache.ErrDuplicateFact)
	_, err = c.Ack([]string{f.ID})
	require.NoError(t, err)
	_, err = c.Record(cache.LocalChange{}, f)
	require.NoError(t, err, "once acknowledged, the ID is free again, as it was in the file")
}

// A write after records (here the feed's change of a visit a record
// changed) applies the journal in its own transaction, first: a crash
// after it replays nothing over it, and the visit is the merge of both.
func TestJournal_WriteAfterRecordKeepsItsOrder(t *testing.T) {
	c, path, visits := site(t, 1)
	v := visits[0]
	checkIn(t, c, v)
	cloud := v
	cloud.HostName = "Grace Hopper"
	apply(t, c, c.Seq()+1, cloud)
	require.Zero(t, cache.JournalOffset(c), "the change's transaction took the journal")
	cache.Crash(c)

	c = openCache(t, path)
	got := visitOf(t, c, v.ID)
	require.Equal(t, "Grace Hopper", got.HostName, "the record's frame was not replayed over the change")
	require.Equal(t, string(passrule.CheckedIn), got.Status)
}

// Sync reads the outbox at every record it publishes: the rows waiting in
// the journal are read where they are, after the file's, by counter, and
// reading writes nothing (a flush at each read would put bbolt's commit
// back on the path of every scan).
func TestJournal_OutboxAfterReadsTheJournalWithoutFlushing(t *testing.T) {
	c, _, visits := site(t, 5)
	f1 := checkIn(t, c, visits[0])
	f2 := checkIn(t, c, visits[1])
	require.NoError(t, cache.Flush(c))
	f3 := checkIn(t, c, visits[2])
	f4 := checkIn(t, c, visits[3])
	f5 := checkIn(t, c, visits[4])
	at := cache.JournalOffset(c)
	require.NotZero(t, at, "three records wait in the journal")

	for _, tc := range []struct {
		after uint64
		limit int
		want  []protocol.Fact
	}{
		{0, 0, []protocol.Fact{f1, f2, f3, f4, f5}},
		{f1.Counter, 2, []protocol.Fact{f2, f3}},
		{f2.Counter, 1, []protocol.Fact{f3}},
		{f3.Counter, 0, []protocol.Fact{f4, f5}},
		{f4.Counter, 5, []protocol.Fact{f5}},
		{f5.Counter, 0, nil},
	} {
		got, err := c.OutboxAfter(tc.after, tc.limit)
		require.NoError(t, err)
		require.Equal(t, tc.want, got, "after %d, limit %d", tc.after, tc.limit)
	}
	require.Equal(t, at, cache.JournalOffset(c), "reading the outbox flushed the journal")
}

// A record whose frame reached the journal's file but whose fdatasync
// failed (a failing disk) failed: its gate refused and nothing opened. The
// frame follows the file's counter like any other, so it is struck out
// when the sync fails: a restart, clean or not, does not replay it as if
// it had been recorded, and its counter is the next record's.
func TestJournal_FailedSyncIsNotReplayed(t *testing.T) {
	for _, tc := range []struct {
		name    string
		before  int // records journaled before the failing one
		restart func(*cache.Cache)
	}{
		{"first frame, closed", 0, func(c *cache.Cache) { require.NoError(t, c.Close()) }},
		{"after frames, killed", 2, cache.Crash},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, path, visits := site(t, tc.before+2)
			var want []protocol.Fact
			for _, v := range visits[:tc.before] {
				want = append(want, checkIn(t, c, v))
			}
			failing := visits[tc.before]
			cache.FailJournalSyncs(t, 1)
			_, err := c.Record(cache.LocalChange{Visits: []protocol.Visit{checkedIn(failing)}}, checkInFact(failing.ID))
			require.Error(t, err, "the record failed: its gate refuses")
			tc.restart(c)

			c = openCache(t, path)
			require.Equal(t, want, nilIfEmpty(outbox(t, c)), "the failed record is not in the outbox")
			require.Equal(t, string(passrule.Expected), visitOf(t, c, failing.ID).Status, "its visit is as it was")
			require.Equal(t, uint64(tc.before+1), checkIn(t, c, visits[tc.before+1]).Counter, "its counter is assigned again")
		})
	}
}

func nilIfEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}

// After a failed journal write, WriteFailure (the appliance's health) is
// set until the file takes a commit; the next record makes one before its
// frame, even with the journal empty, so a record that succeeds clears it.
func TestJournal_WriteFailureClearsWhenARecordSucceeds(t *testing.T) {
	c, _, visits := site(t, 2)
	require.Zero(t, cache.JournalOffset(c))
	cache.FailJournalSyncs(t, 1)
	_, err := c.Record(cache.LocalChange{Visits: []protocol.Visit{checkedIn(visits[0])}}, checkInFact(visits[0].ID))
	require.Error(t, err)
	require.Error(t, c.WriteFailure(), "a failed record makes the cache unhealthy")

	checkIn(t, c, visits[1])
	require.NoError(t, c.WriteFailure(), "a record stored since: healthy again")
}
