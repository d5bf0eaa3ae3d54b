package cache_test

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/edge/cache"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/sync/protocol"
)

// filled makes a closed cache file with 400 visits (a visits bucket of
// several leaf pages under a branch page) and facts waiting in its
// outbox, and returns its path and the facts as recorded.
func filled(t *testing.T) (string, []protocol.Fact) {
	t.Helper()
	c, path := newCache(t)
	visits := make([]any, 400)
	for i := range visits {
		visits[i] = newVisit()
	}
	apply(t, c, 1, visits...)
	apply(t, c, 401, protocol.Gate{ID: gateID, Name: "Front", Direction: "entry"})
	var facts []protocol.Fact
	for _, o := range visits[:4] {
		v := o.(protocol.Visit)
		facts = append(facts, record(t, c, checkInFact(v.ID), checkedIn(v)))
	}
	facts = append(facts, record(t, c, protocol.Fact{ID: ids.New(ids.Fact), Kind: protocol.FactPunch, At: t0, GateID: gateID,
		PersonID: ids.New(ids.Person), Direction: protocol.DirectionIn}))
	require.NoError(t, c.Close())
	return path, facts
}

// damage rewrites the file at path with what fn makes of its bytes and
// returns them.
func damage(t *testing.T, path string, fn func(b []byte) []byte) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	b = fn(b)
	require.NoError(t, os.WriteFile(path, b, 0o600))
	return b
}

// damages are ways a cache file gets damaged, given its page size and
// high water mark (the pages in use).
func damages(t *testing.T, path string) map[string]func(b []byte) []byte {
	t.Helper()
	ps, pgid := cache.Layout(t, path)
	branches, leaves := cache.BucketPages(t, path, "visits")
	require.NotEmpty(t, branches, "the visits need a branch page")
	require.Greater(t, len(leaves), 2, "the visits need several leaf pages")
	data := int(pgid) * ps // where the pages in use end
	leaf, branch := int(leaves[len(leaves)/2]), int(branches[0])
	zero := func(page int) func(b []byte) []byte {
		return func(b []byte) []byte {
			clear(b[page*ps : (page+1)*ps])
			return b
		}
	}
	random := func(page, from int) func(b []byte) []byte {
		return func(b []byte) []byte {
			r := rand.New(rand.NewPCG(uint64(page), uint64(from)))
			for i := page*ps + from; i < (page+1)*ps; i++ {
				b[i] = byte(r.Uint32())
			}
			return b
		}
	}
	return map[string]func(b []byte) []byte{
		"truncated to 0 bytes":          func(b []byte) []byte { return b[:0] },
		"truncated below one page":      func(b []byte) []byte { return b[:100] },
		"truncated to one page":         func(b []byte) []byte { return b[:ps] },
		"truncated to the meta pages":   func(b []byte) []byte { return b[:2*ps] },
		"truncated mid-file":            func(b []byte) []byte { return b[:data/2+123] },
		"truncated one page short":      func(b []byte) []byte { return b[:data-ps] },
		"truncated one byte short":      func(b []byte) []byte { return b[:data-1] },
		"both meta pages zeroed":        func(b []byte) []byte { return zero(1)(zero(0)(b)) },
		"branch page zeroed":            zero(branch),
		"leaf page zeroed":              zero(leaf),
		"branch page random":            random(branch, 0),
		"leaf page random":              random(leaf, 0),
		"branch page's elements random": random(branch, 16),
		"leaf page's elements random":   random(leaf, 16),
		"leaf page's keys and values random": func(b []byte) []byte {
			// From the first element's key on: the page's used part, not
			// its free tail, which nothing reads.
			at := leaf*ps + 16
			pos := int(binary.LittleEndian.Uint32(b[at+4:]))
			return random(leaf, 16+pos)(b)
		},
		"every page after the metas random": func(b []byte) []byte {
			for page := 2; page < int(pgid); page++ {
				b = random(page, 0)(b)
			}
			return b
		},
	}
}

func TestOpen_DamagedFileRefused(t *testing.T) {
	base, _ := filled(t)
	original, err := os.ReadFile(base)
	require.NoError(t, err)
	for name, fn := range damages(t, base) {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "cache.db")
			require.NoError(t, os.WriteFile(path, original, 0o600))
			damaged := damage(t, path, fn)

			_, err := cache.Open(path, cache.Options{EdgeID: edgeID})
			require.ErrorIs(t, err, cache.ErrDamaged)
			require.ErrorContains(t, err, path)
			var de *cache.DamagedError
			require.ErrorAs(t, err, &de)
			require.Equal(t, path, de.Path)
			after, rerr := os.ReadFile(path)
			require.NoError(t, rerr)
			require.True(t, bytes.Equal(damaged, after), "Open changed the damaged file")
			entries, rerr := os.ReadDir(filepath.Dir(path))
			require.NoError(t, rerr)
			require.Len(t, entries, 1, "Open left no other file")

			_, err = cache.Check(path, cache.Options{EdgeID: edgeID})
			require.ErrorIs(t, err, cache.ErrDamaged)
			require.ErrorContains(t, err, path)
		})
	}
}

func TestOpen_TruncatedBelowTheHighWaterMark(t *testing.T) {
	// Each truncation in damages, and every page boundary below the
	// pages in use, is refused: bbolt would map past the end and fault.
	path, _ := filled(t)
	ps, pgid := cache.Layout(t, path)
	original, err := os.ReadFile(path)
	require.NoError(t, err)
	for n := range int(pgid) {
		require.NoError(t, os.WriteFile(path, original[:n*ps], 0o600))
		_, err := cache.Open(path, cache.Options{EdgeID: edgeID})
		require.ErrorIs(t, err, cache.ErrDamaged, "truncated to %d pages", n)
	}
}

func TestOpen_MissingFileIsNew(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cache.db")
	c := openCache(t, path)
	require.Zero(t, c.View().Seq())
	record(t, c, checkInFact(ids.New(ids.Visit)))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	require.Equal(t, []string{"cache.db", "cache.db.journal"}, names,
		"the file was built under another name and linked: nothing else is left but the journal")
	st, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())
}

func TestOpen_EmptyFileIsNotNew(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	require.NoError(t, os.WriteFile(path, nil, 0o600))
	_, err := cache.Open(path, cache.Options{EdgeID: edgeID})
	require.ErrorIs(t, err, cache.ErrDamaged)
	require.ErrorContains(t, err, "empty")
	st, err := os.Stat(path)
	require.NoError(t, err)
	require.Zero(t, st.Size(), "the empty file was not initialised")
}

func TestOpen_SoundFileIsNotWritten(t *testing.T) {
	// Opening and closing a sound file of this build changes nothing in
	// it: Open writes only what an older build's file lacks.
	path, _ := filled(t)
	before, err := os.ReadFile(path)
	require.NoError(t, err)
	c := openCache(t, path)
	require.NoError(t, c.Close())
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	require.True(t, bytes.Equal(before, after))
}

func TestCheck_SoundFile(t *testing.T) {
	path, facts := filled(t)
	before, err := os.ReadFile(path)
	require.NoError(t, err)
	s, err := cache.Check(path, cache.Options{EdgeID: edgeID})
	require.NoError(t, err)
	require.Equal(t, edgeID, s.EdgeID)
	require.Equal(t, "3", s.Schema)
	require.Equal(t, uint64(401), s.Seq)
	require.Equal(t, 400, s.Counts.Visits)
	require.Equal(t, len(facts), s.Counts.Outbox)
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	require.True(t, bytes.Equal(before, after), "Check wrote to the file")

	_, err = cache.Check(path, cache.Options{EdgeID: ids.New(ids.Edge)})
	require.ErrorIs(t, err, cache.ErrEdgeMismatch)
	_, err = cache.Check(filepath.Join(t.TempDir(), "none.db"), cache.Options{})
	require.ErrorIs(t, err, cache.ErrNoFile)
}

func TestCheck_WhileOpenTimesOut(t *testing.T) {
	c, path := newCache(t)
	_, err := cache.Check(path, cache.Options{})
	require.Error(t, err, "the daemon holds the file")
	require.NotErrorIs(t, err, cache.ErrDamaged)
	_, err = cache.Reset(path, cache.Options{EdgeID: edgeID}, t0)
	require.Error(t, err)
	require.NotErrorIs(t, err, cache.ErrDamaged)
	require.NoError(t, c.Close())
}

// waiting returns the facts in the outbox of the cache at path.
func waiting(t *testing.T, path string) []protocol.Fact {
	t.Helper()
	c := openCache(t, path)
	out, err := c.Outbox(0)
	require.NoError(t, err)
	require.NoError(t, c.Close())
	return out
}

func TestReset_RecoversTheOutbox(t *testing.T) {
	base, facts := filled(t)
	original, err := os.ReadFile(base)
	require.NoError(t, err)
	_, leaves := cache.BucketPages(t, base, "visits")
	ps, _ := cache.Layout(t, base)
	now := time.Date(2026, 11, 26, 5, 0, 0, 0, time.UTC)
	for name, page := range map[string]int{"a visits leaf zeroed": int(leaves[1]), "an outbox-free leaf zeroed": int(leaves[0])} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "cache.db")
			require.NoError(t, os.WriteFile(path, original, 0o600))
			damaged := damage(t, path, func(b []byte) []byte { clear(b[page*ps : (page+1)*ps]); return b })
			_, err := cache.Open(path, cache.Options{EdgeID: edgeID})
			require.ErrorIs(t, err, cache.ErrDamaged)

			rec, err := cache.Reset(path, cache.Options{EdgeID: edgeID}, now)
			require.NoError(t, err)
			require.Equal(t, path+".damaged-20261126T050000Z", rec.Aside)
			aside, err := os.ReadFile(rec.Aside)
			require.NoError(t, err)
			require.True(t, bytes.Equal(damaged, aside), "the damaged file is kept as it was")
			require.Equal(t, facts, rec.Facts)
			require.Equal(t, 1, rec.Punches)
			require.Equal(t, uint64(len(facts)), rec.Counter)
			require.Zero(t, rec.Undecodable)
			require.Empty(t, rec.Missing)

			require.Equal(t, facts, waiting(t, path), "the facts wait in the new outbox, with their IDs and counters")
			c := openCache(t, path)
			require.Zero(t, c.View().Seq(), "the new cache resyncs from the start")
			require.Zero(t, c.View().Counts().Visits, "no visits: they come with the snapshot")
			require.Equal(t, len(facts), c.View().Counts().Outbox)
			next := record(t, c, checkInFact(ids.New(ids.Visit)))
			require.Equal(t, uint64(len(facts)+1), next.Counter, "new facts follow the old ones")
			_, ok := c.View().LastPunch(facts[len(facts)-1].PersonID)
			require.True(t, ok, "the last punch is kept")
		})
	}
}

// One meta page lost (zeroed, or torn by a power cut while a commit wrote
// it) is no damage: bbolt writes the new meta page last, after the
// commit's pages are fsync'd, so the other one is the transaction before,
// whole, and the cache opens it, as bbolt does. Without the journal the
// facts are all there, or all but the last commit's, which never returned
// to its gate; with it, all of them: the last commit was the journal's
// flush, and the journal still holds its frames, which follow the
// transaction before.
func TestOpen_OneMetaPageLostOpensTheTransactionBefore(t *testing.T) {
	base, facts := filled(t)
	original, err := os.ReadFile(base)
	require.NoError(t, err)
	journal, err := os.ReadFile(base + ".journal")
	require.NoError(t, err)
	ps, _ := cache.Layout(t, base)
	for name, fn := range map[string]func(b []byte){
		"meta page 0 zeroed": func(b []byte) { clear(b[:ps]) },
		"meta page 1 zeroed": func(b []byte) { clear(b[ps : 2*ps]) },
		"meta page 0 torn":   func(b []byte) { clear(b[ps/2 : ps]) },
		"meta page 1 random": func(b []byte) {
			r := rand.New(rand.NewPCG(1, 2))
			for i := ps; i < 2*ps; i++ {
				b[i] = byte(r.Uint32())
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "cache.db")
			require.NoError(t, os.WriteFile(path, original, 0o600))
			damage(t, path, func(b []byte) []byte { fn(b); return b })
			_, err := cache.Check(path, cache.Options{EdgeID: edgeID})
			require.NoError(t, err)
			without := waiting(t, path)
			require.True(t, slices.Equal(facts[:len(without)], without), "without the journal at most the last commit (its flush) is lost")

			require.NoError(t, os.WriteFile(path, original, 0o600))
			damage(t, path, func(b []byte) []byte { fn(b); return b })
			require.NoError(t, os.WriteFile(path+".journal", journal, 0o600))
			require.Equal(t, facts, waiting(t, path), "with the journal nothing is lost")
		})
	}
}

func TestReset_LooseFactsWhenTheTreeIsGone(t *testing.T) {
	// With both meta pages gone there is no root to walk: the facts are
	// found by reading every page.
	path, facts := filled(t)
	ps, _ := cache.Layout(t, path)
	damage(t, path, func(b []byte) []byte { clear(b[:2*ps]); return b })
	rec, err := cache.Reset(path, cache.Options{EdgeID: edgeID}, t0)
	require.NoError(t, err)
	require.Equal(t, facts, rec.Facts)
	require.Equal(t, len(facts), rec.Loose)
	require.Equal(t, facts, waiting(t, path))
}

func TestReset_ReportsWhatIsLost(t *testing.T) {
	// A cache with enough facts that the outbox has pages of its own;
	// one of them zeroed loses its facts, which the index still names.
	c, path := newCache(t)
	var facts []protocol.Fact
	for range 200 {
		facts = append(facts, record(t, c, checkInFact(ids.New(ids.Visit))))
	}
	require.NoError(t, c.Close())
	_, leaves := cache.BucketPages(t, path, "outbox")
	require.Greater(t, len(leaves), 2)
	_, indexLeaves := cache.BucketPages(t, path, "facts")
	ps, _ := cache.Layout(t, path)
	lost := int(leaves[1])
	damage(t, path, func(b []byte) []byte { clear(b[lost*ps : (lost+1)*ps]); return b })
	// The journal still holds every fact (from before the flush at
	// Close), which Reset would take back as loose: without it, what the
	// zeroed page held is lost.
	require.NoError(t, os.Remove(path+".journal"))

	rec, err := cache.Reset(path, cache.Options{EdgeID: edgeID}, t0)
	require.NoError(t, err)
	require.NotEmpty(t, indexLeaves)
	require.Positive(t, rec.Unreadable)
	require.NotEmpty(t, rec.Missing)
	got := map[string]bool{}
	for _, f := range rec.Facts {
		got[f.ID] = true
	}
	for _, f := range facts {
		require.True(t, got[f.ID] != slices.Contains(rec.Missing, f.ID), "fact %d is recovered or reported lost, not both", f.Counter)
	}
	require.Equal(t, len(facts), len(rec.Facts)+len(rec.Missing))
	require.Equal(t, rec.Facts, waiting(t, path))
}

func TestReset_EmptyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	require.NoError(t, os.WriteFile(path, nil, 0o600))
	rec, err := cache.Reset(path, cache.Options{EdgeID: edgeID}, t0)
	require.NoError(t, err)
	require.Empty(t, rec.Facts)
	st, err := os.Stat(rec.Aside)
	require.NoError(t, err)
	require.Zero(t, st.Size())
	require.Empty(t, waiting(t, path))

	_, err = cache.Reset(filepath.Join(t.TempDir(), "none.db"), cache.Options{EdgeID: edgeID}, t0)
	require.ErrorIs(t, err, cache.ErrNoFile)
}

func TestCache_FileTruncatedWhileOpen(t *testing.T) {
	// The file shrinks under a running cache (another program, a file
	// system error): reading it faults on bbolt's map. The cache stops
	// with a *DamagedError instead of crashing the process.
	path, _ := filled(t)
	c := openCache(t, path)
	ps, _ := cache.Layout(t, path)
	require.NoError(t, os.Truncate(path, int64(2*ps)))

	_, err := c.Outbox(0)
	require.ErrorIs(t, err, cache.ErrDamaged)
	require.ErrorContains(t, err, path)
	select {
	case <-c.Damaged():
	default:
		t.Fatal("Damaged is not closed")
	}
	_, err = c.Record(cache.LocalChange{}, checkInFact(ids.New(ids.Visit)))
	require.ErrorIs(t, err, cache.ErrDamaged, "every later call fails the same way")
	require.ErrorIs(t, c.DamagedErr(), cache.ErrDamaged)
}

func TestOpen_CraftedPagesRefused(t *testing.T) {
	// Damage that random bytes seldom make: headers intact, one field
	// wrong. Each would send bbolt past its page, into a loop, or into
	// an assertion.
	base, _ := filled(t)
	original, err := os.ReadFile(base)
	require.NoError(t, err)
	ps, pgid := cache.Layout(t, base)
	branches, leaves := cache.BucketPages(t, base, "visits")
	branch, leaf := int(branches[0])*ps, int(leaves[1])*ps
	le := binary.LittleEndian
	elem := func(page, i int) int { return page + 16 + 16*i }
	for name, fn := range map[string]func(b []byte){
		"branch child is the branch itself": func(b []byte) { le.PutUint64(b[elem(branch, 0)+8:], branches[0]) },
		"branch child is a meta page":       func(b []byte) { le.PutUint64(b[elem(branch, 0)+8:], 1) },
		"branch child past the pages in use": func(b []byte) {
			le.PutUint64(b[elem(branch, 1)+8:], pgid+10)
		},
		"two branch children are one page": func(b []byte) { copy(b[elem(branch, 1)+8:elem(branch, 1)+16], b[elem(branch, 0)+8:]) },
		"branch page without elements":     func(b []byte) { le.PutUint16(b[branch+10:], 0) },
		"branch key outside the page":      func(b []byte) { le.PutUint32(b[elem(branch, 0)+4:], 1<<20) },
		"leaf key outside the page":        func(b []byte) { le.PutUint32(b[elem(leaf, 0)+8:], 1<<20) },
		"leaf value outside the page":      func(b []byte) { le.PutUint32(b[elem(leaf, 0)+12:], uint32(ps)) },
		"leaf key of 0 bytes":              func(b []byte) { le.PutUint32(b[elem(leaf, 2)+8:], 0) },
		"leaf keys out of order": func(b []byte) {
			// Element 0 points at element 1's key and value, and 1 at 0's.
			p0, p1 := le.Uint32(b[elem(leaf, 0)+4:]), le.Uint32(b[elem(leaf, 1)+4:])
			le.PutUint32(b[elem(leaf, 0)+4:], p1+16)
			le.PutUint32(b[elem(leaf, 1)+4:], p0-16)
		},
		"leaf value flagged as a bucket": func(b []byte) { le.PutUint32(b[elem(leaf, 0):], 1) },
		"leaf claims overflow pages":     func(b []byte) { le.PutUint32(b[leaf+12:], uint32(pgid)) },
		"page of no known type":          func(b []byte) { le.PutUint16(b[leaf+8:], 0x20) },
		"leaf page with too many elements": func(b []byte) {
			le.PutUint16(b[leaf+10:], uint16(ps/16))
		},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "cache.db")
			require.NoError(t, os.WriteFile(path, original, 0o600))
			damaged := damage(t, path, func(b []byte) []byte { fn(b); return b })
			_, err := cache.Open(path, cache.Options{EdgeID: edgeID})
			require.ErrorIs(t, err, cache.ErrDamaged)
			var de *cache.DamagedError
			require.ErrorAs(t, err, &de)
			require.NotEmpty(t, de.Problems, "found in the pages, before bbolt read them: %v", err)
			after, rerr := os.ReadFile(path)
			require.NoError(t, rerr)
			require.True(t, bytes.Equal(damaged, after), "Open changed the damaged file")
		})
	}
}

func TestCheck_Schema1File(t *testing.T) {
	// A file of an older build is read as it is, without migrating it:
	// Open migrates it later.
	c, path := newCache(t)
	v := newVisit()
	apply(t, c, 1, v)
	record(t, c, checkInFact(v.ID), checkedIn(v))
	require.NoError(t, c.Close())
	toSchema1(t, path)
	before, err := os.ReadFile(path)
	require.NoError(t, err)
	s, err := cache.Check(path, cache.Options{EdgeID: edgeID})
	require.NoError(t, err)
	require.Equal(t, "1", s.Schema)
	require.Equal(t, 1, s.Counts.Visits)
	require.Equal(t, 1, s.Counts.Outbox)
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	require.True(t, bytes.Equal(before, after), "Check migrated the file")
	require.Equal(t, checkedIn(v).Status, visitOf(t, openCache(t, path), v.ID).Status)
}
