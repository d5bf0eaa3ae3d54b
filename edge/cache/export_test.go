package cache

import (
	"bytes"
	"os"
	"syscall"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// For the tests of package cache_test that write files by hand.
var (
	EncodeVisit = encodeVisit
	DecodeVisit = decodeVisit
)

// Layout returns the page size and high water mark of the newest intact
// meta page of the file at path.
func Layout(tb testing.TB, path string) (pageSize int, pgid uint64) {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		tb.Fatal(err)
	}
	metas, errs := readMetas(f, st.Size())
	if errs[0] != nil || errs[1] != nil {
		tb.Fatalf("meta pages: %v, %v", errs[0], errs[1])
	}
	m := metas[0]
	if metas[1].txid > m.txid {
		m = metas[1]
	}
	return int(m.pageSize), m.pgid
}

// BucketPages returns the pages of the tree of the bucket name at the
// root of the file at path, root first: its branch pages and its leaf
// pages, in the order a walk meets them. An inline bucket has none.
func BucketPages(tb testing.TB, path, name string) (branches, leaves []uint64) {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	ps, pgid := Layout(tb, path)
	f := pageFile{r: bytes.NewReader(b), size: int64(len(b)), ps: ps}
	m, _ := readMetas(f.r, f.size)
	root := m[0].root
	if m[1].txid > m[0].txid {
		root = m[1].root
	}
	var walk func(id uint64, fn func(p page))
	walk = func(id uint64, fn func(p page)) {
		p, _, err := f.read(id, pgid, nil)
		if err != nil {
			tb.Fatal(err)
		}
		fn(p)
		if p.flags == branchPageFlag {
			for i := range p.count {
				_, child, err := branchElem(p.b, i)
				if err != nil {
					tb.Fatal(err)
				}
				walk(child, fn)
			}
		}
	}
	var bucketRoot uint64
	walk(root, func(p page) {
		if p.flags != leafPageFlag {
			return
		}
		for i := range p.count {
			flags, k, v, err := leafElem(p.b, i)
			if err == nil && flags&bucketLeafFlag != 0 && string(k) == name {
				bucketRoot = native.Uint64(v)
			}
		}
	})
	if bucketRoot == 0 {
		return nil, nil
	}
	walk(bucketRoot, func(p page) {
		if p.flags == branchPageFlag {
			branches = append(branches, p.id)
		} else {
			leaves = append(leaves, p.id)
		}
	})
	return branches, leaves
}

// BoltCheck runs bbolt's own consistency check on c's file and returns
// what it reports. A file with one meta page lost (which bbolt and the
// cache open, on the other) is not given to it: its check asserts on
// every meta page it reads, in a goroutine of its own, and would end the
// process.
func BoltCheck(c *Cache) []error {
	if f, err := os.Open(c.path); err == nil {
		st, serr := f.Stat()
		if serr == nil {
			if _, merrs := readMetas(f, st.Size()); merrs[0] != nil || merrs[1] != nil {
				f.Close()
				return nil
			}
		}
		f.Close()
	}
	var errs []error
	_ = c.db.View(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			errs = append(errs, err)
		}
		return nil
	})
	return errs
}

// Crash closes c's files as a process that died would leave them: the
// journal's records not written to the cache file. c is unusable after.
func Crash(c *Cache) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closeJournal()
	c.j = nil
	_ = c.db.Close()
}

// JournalOffset is where the journal's next frame goes: the end of the
// frames written since the last flush.
func JournalOffset(c *Cache) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.j.mem)
}

// Flush writes the journal's records to the file.
func Flush(c *Cache) error { return c.flush() }

// JournalSize is the journal file's size.
const JournalSize = journalSize

// FlushEvery is how many records the journal holds before Record writes
// them to the file.
const FlushEvery = flushEvery

// FailJournalSyncs makes the journal's next n fdatasyncs fail with EIO,
// as a failing disk's do, after their writes have reached the file (the
// page cache); the test's end puts the real one back.
func FailJournalSyncs(tb testing.TB, n int) {
	tb.Helper()
	real := syncJournal
	tb.Cleanup(func() { syncJournal = real })
	syncJournal = func(f *os.File) error {
		if n > 0 {
			n--
			return syscall.EIO
		}
		return real(f)
	}
}
