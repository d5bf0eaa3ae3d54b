package cache_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/edge/cache"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/sync/protocol"
)

// siteVisits makes n visits shaped like a busy site's: a few hundred
// hosts, one visit in five limited to gates, one in ten to daily hours.
func siteVisits(n int) []protocol.Visit {
	gates := []string{ids.New(ids.Gate), ids.New(ids.Gate), ids.New(ids.Gate)}
	out := make([]protocol.Visit, n)
	for i := range out {
		v := newVisit()
		at := t0.Add(time.Duration(i) * time.Minute)
		v.ExpectedAt, v.ExpectedUntil = ptr(at), ptr(at.Add(8*time.Hour))
		v.VisitorName = fmt.Sprintf("Visitor Number %d", i)
		v.HostName = fmt.Sprintf("Host Person %d", i%300)
		if i%5 == 0 {
			v.Rules.GateIDs = gates[:1+i%3]
		}
		if i%10 == 0 {
			v.Rules.Daily = &protocol.Daily{From: 7 * 60, Until: 19 * 60}
		}
		out[i] = v
	}
	return out
}

// fill writes n visits into a new cache file through a snapshot and
// returns the file, closed, and the visits.
func fill(tb testing.TB, n int) (string, []protocol.Visit) {
	tb.Helper()
	c, path := newCache(tb)
	visits := siteVisits(n)
	settings := protocol.Settings{Timezone: "Europe/London", OfflineLimitMinutes: 240}
	gates := []protocol.Gate{{ID: gateID, Name: "Front", Direction: "both"}}
	require.NoError(tb, c.ReplaceSnapshot(snapshot(1, protocol.MaxSnapshot, &settings, gates, []protocol.Key{newKey(tb, "0000000a")}, visits)))
	require.NoError(tb, c.Close())
	return path, visits
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// TestView_Heap100k reports the heap that a cache of 100,000 visits holds
// after Open, and the resident memory of a fresh process that opened it.
// The appliance's budget is 60 MB resident for everything; the View is
// held to 40 MB of heap.
func TestView_Heap100k(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("builds 100,000 visits; the race detector's allocations would distort the figure")
	}
	path, visits := fill(t, 100_000)
	before := heapInUse()
	c := openCache(t, path)
	after := heapInUse()
	require.Equal(t, 100_000, c.View().Counts().Visits)
	visitOf(t, c, visits[len(visits)-1].ID)
	mb := float64(after-before) / (1 << 20)
	t.Logf("heap in use for 100,000 visits: %.1f MB (%.0f bytes a visit)", mb, float64(after-before)/100_000)
	require.Less(t, mb, 40.0)
	runtime.KeepAlive(c)
	require.NoError(t, c.Close())

	// This process built the file and holds what that cost; a child
	// process that only opens it shows what the appliance would.
	cmd := exec.Command(os.Args[0], "-test.run=^TestView_OpenInChild$", "-test.v")
	cmd.Env = append(os.Environ(), "CACHE_CHILD_PATH="+path)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	i := strings.Index(string(out), "resident:")
	require.GreaterOrEqual(t, i, 0, "%s", out)
	t.Logf("fresh process after Open: %s", strings.SplitN(string(out[i:]), "\n", 2)[0])
}

// TestView_OpenInChild opens the file TestView_Heap100k names and prints
// its resident memory; it does nothing in a normal run.
func TestView_OpenInChild(t *testing.T) {
	path := os.Getenv("CACHE_CHILD_PATH")
	if path == "" {
		t.Skip("run by TestView_Heap100k")
	}
	c, err := cache.Open(path, cache.Options{})
	require.NoError(t, err)
	defer c.Close()
	runtime.GC()
	debug.FreeOSMemory()
	fmt.Printf("resident: %s, %d visits\n", rss(), c.View().Counts().Visits)
}

func BenchmarkView_Lookup(b *testing.B) {
	path, visits := fill(b, 100_000)
	c := openCache(b, path)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, ok := c.View().Visit(visits[i%len(visits)].ID); !ok {
			b.Fatal("missing visit")
		}
		i += 7919
	}
}

// BenchmarkRecord is one check-in: the visit and its fact in one fsync'd
// bbolt commit, then a new View, on a cache of 100,000 visits.
func BenchmarkRecord(b *testing.B) {
	path, visits := fill(b, 100_000)
	c := openCache(b, path)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		v := visits[i%len(visits)]
		v.Uses++
		if _, err := c.Record(cache.LocalChange{Visits: []protocol.Visit{v}}, checkInFact(v.ID)); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkApply_500 applies a full batch of 500 visit changes.
func BenchmarkApply_500(b *testing.B) {
	path, visits := fill(b, 100_000)
	c := openCache(b, path)
	b.ReportAllocs()
	seq := c.View().Seq() + 1
	for b.Loop() {
		objs := make([]any, protocol.MaxChanges)
		for j := range objs {
			v := visits[(int(seq)+j*97)%len(visits)]
			v.HostName = "Changed Host"
			objs[j] = v
		}
		if _, err := c.Apply(changes(seq, objs...)); err != nil {
			b.Fatal(err)
		}
		seq += uint64(len(objs))
	}
}

// BenchmarkOpen_100k is a restart: read and check every value of a file of
// 100,000 visits and build the View.
func BenchmarkOpen_100k(b *testing.B) {
	path, _ := fill(b, 100_000)
	b.ReportAllocs()
	var heap uint64
	for b.Loop() {
		before := heapInUse()
		c, err := cache.Open(path, cache.Options{EdgeID: edgeID})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		heap = heapInUse() - before
		require.NoError(b, c.Close())
		b.StartTimer()
	}
	b.ReportMetric(float64(heap)/(1<<20), "heap-MB")
}

// BenchmarkOpen_100kJournal is a restart after a power cut with the
// journal as full as it gets, FlushEvery-1 check-ins that the file lacks
// (records=max), beside the same file with none to replay (records=0):
// what the flush interval costs a restart. Each Open replays the frames
// into the file, so it opens a fresh copy of both files each time.
func BenchmarkOpen_100kJournal(b *testing.B) {
	path, visits := fill(b, 100_000)
	for _, n := range []int{0, cache.FlushEvery - 1} {
		name := "records=0"
		if n > 0 {
			name = "records=max"
		}
		b.Run(name, func(b *testing.B) {
			dir := b.TempDir()
			saved := filepath.Join(dir, "saved.db")
			c := openCache(b, copyFile(b, path, filepath.Join(dir, "edge.db")))
			for i := range n {
				v := visits[i*97%len(visits)]
				if _, err := c.Record(cache.LocalChange{Visits: []protocol.Visit{checkedIn(v)}}, checkInFact(v.ID)); err != nil {
					b.Fatal(err)
				}
			}
			// Copied while open: the journal holds the records, the file not.
			copyFile(b, filepath.Join(dir, "edge.db"), saved)
			copyFile(b, filepath.Join(dir, "edge.db.journal"), saved+".journal")
			require.NoError(b, c.Close())
			for b.Loop() {
				b.StopTimer()
				at := copyFile(b, saved, filepath.Join(dir, "open.db"))
				copyFile(b, saved+".journal", at+".journal")
				b.StartTimer()
				c, err := cache.Open(at, cache.Options{EdgeID: edgeID})
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if got := c.View().Counts().Outbox; got != n {
					b.Fatalf("outbox %d after Open, want %d", got, n)
				}
				require.NoError(b, c.Close())
				b.StartTimer()
			}
		})
	}
}

// copyFile copies the file at from to to and returns to.
func copyFile(tb testing.TB, from, to string) string {
	tb.Helper()
	data, err := os.ReadFile(from)
	require.NoError(tb, err)
	require.NoError(tb, os.WriteFile(to, data, 0o600))
	return to
}

// BenchmarkReplaceSnapshot_100k replaces the whole cache with a snapshot
// of 100,000 visits in 100 parts.
func BenchmarkReplaceSnapshot_100k(b *testing.B) {
	c, _ := newCache(b)
	visits := siteVisits(100_000)
	parts := snapshot(1, protocol.MaxSnapshot, &protocol.Settings{Timezone: "UTC"}, nil, nil, visits)
	b.ReportAllocs()
	for b.Loop() {
		if err := c.ReplaceSnapshot(parts); err != nil {
			b.Fatal(err)
		}
	}
}

// rss is the process's resident memory as Linux reports it: anonymous
// (the heap, mostly) and file-backed (bbolt's map of the file, which the
// kernel may drop at will).
func rss() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "RSS unknown"
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "RssAnon:") || strings.HasPrefix(line, "RssFile:") {
			out = append(out, strings.Join(strings.Fields(line), " "))
		}
	}
	return strings.Join(out, ", ")
}
