package gate_test

import (
	"context"
	"crypto/ed25519"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/svc-vms/svc/gate"
	"github.com/svc-vms/svc/sync/protocol"
)

// benchVisits is the size of the site the latency budget is for.
const benchVisits = 100_000

// siteVisits makes n visits shaped like a busy site's: a few hundred
// hosts, one in five limited to some of gateIDs, one in ten to daily
// hours, every one admitting at the entry gate at t0.
func siteVisits(n int, gateIDs ...string) []protocol.Visit {
	out := make([]protocol.Visit, n)
	for i := range out {
		out[i] = visit(func(v *protocol.Visit) {
			v.VisitorName = fmt.Sprintf("Visitor Number %d", i)
			v.HostName = fmt.Sprintf("Host Person %d", i%300)
			if i%5 == 0 {
				v.Rules.GateIDs = gateIDs[:1+i%len(gateIDs)]
			}
			if i%10 == 0 {
				v.Rules.Daily = &protocol.Daily{From: 7 * 60, Until: 19 * 60}
			}
		})
	}
	return out
}

// benchSite is a site whose cache file holds benchVisits visits.
func benchSite(b *testing.B) (*fixture, []protocol.Visit) {
	b.Helper()
	f := newFixture(b)
	visits := siteVisits(benchVisits, f.entry, f.both)
	f.snapshot(visits)
	return f, visits
}

// reportLatency reports the median, the 99th percentile and the
// slowest of ds: a scan whose record flushes the journal to bbolt, one in
// edge/cache's flushEvery, is slower than 99 in 100 and shows in max.
func reportLatency(b *testing.B, ds []time.Duration) {
	if len(ds) == 0 {
		return
	}
	slices.Sort(ds)
	b.ReportMetric(float64(ds[len(ds)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(ds[len(ds)*99/100].Nanoseconds())/1e3, "p99-µs")
	b.ReportMetric(float64(ds[len(ds)-1].Nanoseconds())/1e3, "max-µs")
}

// BenchmarkDecide_100k is the decision alone, as Scan makes it: verify
// the token, look the visit up and judge it, on a cache of 100,000
// visits. Tokens of 4096 visits spread over the cache take turns.
func BenchmarkDecide_100k(b *testing.B) {
	f, visits := benchSite(b)
	toks := make([]string, 4096)
	for i := range toks {
		toks[i] = f.token(visits[(i*7919)%len(visits)])
	}
	r, _ := newRelay(b)
	g := f.newGate(f.entry, false, r)
	ds := make([]time.Duration, 0, 1<<16)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		start := time.Now()
		d := g.Decide(toks[i%len(toks)], t0)
		ds = append(ds, time.Since(start))
		if d.Kind != protocol.FactCheckIn {
			b.Fatalf("decision %s %s", d.Kind, d.Reason)
		}
		i++
	}
	reportLatency(b, ds)
}

// BenchmarkScan_100k is a whole scan but the relay's pulse: the decision
// and Record, one fsync'd bbolt commit of the visit and its fact and a new
// View, on a cache of 100,000 visits. Each scan checks in a visit not
// scanned before; its token is signed with the clock stopped.
func BenchmarkScan_100k(b *testing.B) {
	f, visits := benchSite(b)
	instant := relayFunc(func(context.Context, time.Duration) error { return nil })
	g := f.newGate(f.entry, false, instant)
	ds := make([]time.Duration, 0, 1<<14)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		b.StopTimer()
		tok := f.token(visits[(i*7919)%len(visits)])
		b.StartTimer()
		start := time.Now()
		res := g.Scan(context.Background(), tok, t0)
		ds = append(ds, time.Since(start))
		if res.Err != nil || res.Kind != protocol.FactCheckIn {
			b.Fatalf("scan %d: %+v", i, res)
		}
		i++
	}
	// The records still in the journal are written to bbolt by the next
	// write to the file: counted here, so that every record's share of
	// its flush is in allocs/op and B/op, and not only that of the
	// records flushed every flushEvery scans.
	b.StartTimer()
	if err := f.cache().MarkSynced(t0); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	reportLatency(b, ds)
	if i >= len(visits) {
		b.Fatalf("%d scans wrapped around %d visits", i, len(visits))
	}
}

// startTimer is a relay that notes when it was commanded: the end of the
// scan-to-relay latency, which now includes the fsync'd record.
type startTimer struct{ at chan time.Time }

func (r startTimer) Start(context.Context, time.Duration) (func() error, error) {
	r.at <- time.Now()
	return func() error { return nil }, nil
}

// BenchmarkScanToRelay_100k is the latency a visitor waits at the
// turnstile: from the reader's text to the relay being commanded, with
// the admit recorded (fsync'd) in between, on a cache of 100,000 visits.
// gates=N scans at N gates at once, each a visit not scanned before, as
// at a busy entrance: their records queue for the file, or share a
// commit.
func BenchmarkScanToRelay_100k(b *testing.B) {
	for _, n := range []int{1, 4, 8} {
		b.Run(fmt.Sprintf("gates=%d", n), func(b *testing.B) {
			f, visits := benchSite(b)
			gates := make([]*gate.Gate, n)
			relays := make([]startTimer, n)
			for i := range gates {
				relays[i] = startTimer{at: make(chan time.Time, 1)}
				gates[i] = f.newGate(f.entry, false, relays[i])
			}
			ds := make([]time.Duration, 0, 1<<14)
			next := 0
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				toks := make([]string, n)
				for i := range toks {
					toks[i] = f.token(visits[(next*7919)%len(visits)])
					next++
				}
				b.StartTimer()
				var wg sync.WaitGroup
				lat := make([]time.Duration, n)
				for i := range gates {
					wg.Go(func() {
						start := time.Now()
						res := gates[i].Scan(context.Background(), toks[i], t0)
						if res.Kind != protocol.FactCheckIn || res.Err != nil {
							b.Errorf("scan: %+v", res)
							return
						}
						lat[i] = (<-relays[i].at).Sub(start)
					})
				}
				wg.Wait()
				ds = append(ds, lat...)
			}
			reportLatency(b, ds)
			if next >= len(visits) {
				b.Fatalf("%d scans wrapped around %d visits", next, len(visits))
			}
		})
	}
}

// recordSize is about what a check-in's record puts in the cache file:
// its outbox row (the fact's JSON and the visit's ID) and the visit in
// the cache's binary form.
const recordSize = 640

// BenchmarkFloor_VerifyCommit is the floor a scan's latency is judged
// against, measured in the same run: one ed25519.Verify of a pass-sized
// message and one fsync'd bbolt commit of a record-sized value, on a file
// opened as the cache opens its own (edge/cache boltOptions). A scan
// cannot be quicker than the signature it checks and the commit it
// waits for.
func BenchmarkFloor_VerifyCommit(b *testing.B) {
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		b.Fatal(err)
	}
	msg := make([]byte, 96) // a pass's signed bytes
	sig := ed25519.Sign(priv, msg)
	db, err := bolt.Open(filepath.Join(b.TempDir(), "floor.db"), 0o600,
		&bolt.Options{NoFreelistSync: true, FreelistType: bolt.FreelistMapType, InitialMmapSize: 256 << 20})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	bucket := []byte("outbox")
	if err := db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket(bucket); return err }); err != nil {
		b.Fatal(err)
	}
	value := make([]byte, recordSize)
	var key [8]byte
	ds := make([]time.Duration, 0, 1<<14)
	b.ReportAllocs()
	n := uint64(0)
	for b.Loop() {
		start := time.Now()
		if !ed25519.Verify(pub, msg, sig) {
			b.Fatal("signature does not verify")
		}
		n++
		binary.BigEndian.PutUint64(key[:], n)
		if err := db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucket).Put(key[:], value) }); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(start))
	}
	reportLatency(b, ds)
}
