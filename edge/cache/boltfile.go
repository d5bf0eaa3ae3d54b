package cache

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math/bits"
)

// This file reads a bbolt file without bbolt, with every offset checked,
// so that a damaged file is an error and never a crash. bbolt maps the
// file and trusts it: a file shorter than its meta page says faults with
// SIGBUS, and a damaged page fails one of its assertions or, at Open with
// NoFreelistSync, makes the goroutine that rebuilds the free list panic,
// which no caller can recover. So Open checks the whole file here first,
// under the file's lock, and hands it to bbolt only when bbolt can read
// every page it will reach.
//
// The layout is bbolt's (go.etcd.io/bbolt v1.4.3, internal/common), in the
// machine's byte order: a page is a 16-byte header (id uint64, flags
// uint16, count uint16, overflow uint32) and its elements; the meta page's
// body is magic, version, page size, flags (uint32 each), the root bucket
// (root page, sequence: uint64 each), the free list's page, the high
// water mark (the first page never allocated), the transaction ID and an
// FNV-64a checksum of the 56 bytes before it. A branch element is pos,
// ksize (uint32) and the child's page (uint64); a leaf element is flags,
// pos, ksize, vsize (uint32), the key and value at pos bytes from the
// element. A leaf value flagged as a bucket is the bucket's root page and
// sequence, then, when the root page is 0, the bucket's one leaf page
// inline.
const (
	pageHeaderSize   = 16
	metaSize         = 64
	elemSize         = 16 // branch and leaf elements alike
	bucketHeaderSize = 16

	branchPageFlag   = 0x01
	leafPageFlag     = 0x02
	metaPageFlag     = 0x04
	freelistPageFlag = 0x10
	bucketLeafFlag   = 0x01

	boltMagic   = 0xED0CDAED
	boltVersion = 2
	noFreelist  = ^uint64(0)

	// Page sizes a file may have: bbolt takes the OS's page size (4 KiB,
	// or 16 or 64 KiB on some arm64 kernels).
	minPageSize = 1 << 10
	maxPageSize = 1 << 16

	// maxDepth bounds the recursion through branch pages and nested
	// buckets. A B+tree of pages holding at least two keys each is never
	// deeper than 64 for a file that fits in memory; this file nests one
	// level of buckets.
	maxDepth = 64
)

var native = binary.NativeEndian

// boltMeta is a meta page's body.
type boltMeta struct {
	pageSize uint32
	root     uint64 // the root bucket's root page
	freelist uint64 // noFreelist when not stored (NoFreelistSync)
	pgid     uint64 // high water mark: pages [0, pgid) are in use or free
	txid     uint64
}

// parseMeta reads a meta page's header and body from b (at least
// pageHeaderSize+metaSize bytes) and checks what bbolt's Validate checks:
// magic, version, checksum; and the page's own header.
func parseMeta(b []byte, at uint64) (boltMeta, error) {
	if len(b) < pageHeaderSize+metaSize {
		return boltMeta{}, fmt.Errorf("meta page %d: %d bytes, want %d", at, len(b), pageHeaderSize+metaSize)
	}
	body := b[pageHeaderSize : pageHeaderSize+metaSize]
	if native.Uint32(body[0:]) != boltMagic {
		return boltMeta{}, fmt.Errorf("meta page %d: not a bbolt meta page (magic %#x)", at, native.Uint32(body[0:]))
	}
	if v := native.Uint32(body[4:]); v != boltVersion {
		return boltMeta{}, fmt.Errorf("meta page %d: bbolt format version %d, want %d", at, v, boltVersion)
	}
	h := fnv.New64a()
	_, _ = h.Write(body[:56])
	if sum := native.Uint64(body[56:]); sum != h.Sum64() {
		return boltMeta{}, fmt.Errorf("meta page %d: checksum %016x, computed %016x", at, sum, h.Sum64())
	}
	m := boltMeta{
		pageSize: native.Uint32(body[8:]),
		root:     native.Uint64(body[16:]),
		freelist: native.Uint64(body[32:]),
		pgid:     native.Uint64(body[40:]),
		txid:     native.Uint64(body[48:]),
	}
	if id, flags := native.Uint64(b[0:]), native.Uint16(b[8:]); id != at || flags != metaPageFlag {
		return m, fmt.Errorf("meta page %d: header says page %d, flags %#x", at, id, flags)
	}
	if m.txid%2 != at {
		return m, fmt.Errorf("meta page %d: holds transaction %d, which belongs on page %d", at, m.txid, m.txid%2)
	}
	if m.pageSize < minPageSize || m.pageSize > maxPageSize || bits.OnesCount32(m.pageSize) != 1 {
		return m, fmt.Errorf("meta page %d: page size %d", at, m.pageSize)
	}
	if m.pgid < 3 {
		return m, fmt.Errorf("meta page %d: high water mark %d is below the first data page", at, m.pgid)
	}
	if m.root < 2 || m.root >= m.pgid {
		return m, fmt.Errorf("meta page %d: root page %d outside [2, %d)", at, m.root, m.pgid)
	}
	if m.freelist != noFreelist && (m.freelist < 2 || m.freelist >= m.pgid) {
		return m, fmt.Errorf("meta page %d: free list page %d outside [2, %d)", at, m.freelist, m.pgid)
	}
	return m, nil
}

// readMetas reads both meta pages. Meta page 0 is at offset 0; meta page
// 1 is one page further, so its page size comes from meta page 0, or, when
// that is unreadable, from probing each possible page size (as bbolt
// does).
func readMetas(r io.ReaderAt, size int64) (metas [2]boltMeta, errs [2]error) {
	buf := make([]byte, pageHeaderSize+metaSize)
	read := func(off int64, at uint64) (boltMeta, error) {
		if off+int64(len(buf)) > size {
			return boltMeta{}, fmt.Errorf("meta page %d: the file ends at byte %d", at, size)
		}
		if _, err := r.ReadAt(buf, off); err != nil {
			return boltMeta{}, fmt.Errorf("meta page %d: %w", at, err)
		}
		return parseMeta(buf, at)
	}
	metas[0], errs[0] = read(0, 0)
	if errs[0] == nil {
		metas[1], errs[1] = read(int64(metas[0].pageSize), 1)
		return metas, errs
	}
	errs[1] = errors.New("meta page 1: not found at any page size")
	for ps := int64(minPageSize); ps <= maxPageSize; ps *= 2 {
		if m, err := read(ps, 1); err == nil && int64(m.pageSize) == ps {
			metas[1], errs[1] = m, nil
			break
		}
	}
	return metas, errs
}

// page is one page (and its overflow pages) as read from the file.
type page struct {
	id       uint64
	flags    uint16
	count    int
	overflow uint32
	b        []byte // header included
}

// pageFile reads pages of a file with a known page size.
type pageFile struct {
	r    io.ReaderAt
	size int64
	ps   int
}

// read reads page id with its overflow pages into buf (grown as needed)
// and returns it, after checking that it lies inside the file and below
// limit (the high water mark) and that its header names it. It checks
// nothing about its type or elements.
func (f *pageFile) read(id, limit uint64, buf []byte) (page, []byte, error) {
	ps := uint64(f.ps)
	if id >= limit {
		return page{}, buf, fmt.Errorf("page %d is past the high water mark %d", id, limit)
	}
	if id > uint64(f.size)/ps || (id+1)*ps > uint64(f.size) {
		return page{}, buf, fmt.Errorf("page %d is past the end of the file (%d bytes)", id, f.size)
	}
	buf = grow(buf, f.ps)
	if _, err := f.r.ReadAt(buf[:f.ps], int64(id*ps)); err != nil {
		return page{}, buf, fmt.Errorf("page %d: %w", id, err)
	}
	p := page{id: native.Uint64(buf[0:]), flags: native.Uint16(buf[8:]), count: int(native.Uint16(buf[10:])), overflow: native.Uint32(buf[12:])}
	if p.id != id {
		return page{}, buf, fmt.Errorf("page %d: its header says page %d", id, p.id)
	}
	n := uint64(p.overflow) + 1
	if last := id + n - 1; last < id || last >= limit || last >= uint64(f.size)/ps {
		return page{}, buf, fmt.Errorf("page %d: %d overflow pages run past the high water mark %d or the end of the file", id, p.overflow, limit)
	}
	if n > 1 {
		buf = grow(buf, int(n*ps))
		if _, err := f.r.ReadAt(buf[f.ps:n*ps], int64((id+1)*ps)); err != nil {
			return page{}, buf, fmt.Errorf("page %d: overflow: %w", id, err)
		}
	}
	p.b = buf[:n*ps]
	return p, buf, nil
}

// grow returns b with length n, keeping what b holds: read grows the
// buffer of a page it has read the first page of to fit its overflow
// pages.
func grow(b []byte, n int) []byte {
	if cap(b) < n {
		nb := make([]byte, n)
		copy(nb, b)
		return nb
	}
	return b[:n]
}

// branchElem returns a branch page's i-th key and child page, checked to
// lie inside b (the page, header first).
func branchElem(b []byte, i int) (key []byte, child uint64, err error) {
	at := pageHeaderSize + i*elemSize
	if at+elemSize > len(b) {
		return nil, 0, fmt.Errorf("element %d is past the page's end", i)
	}
	pos, ksize := uint64(native.Uint32(b[at:])), uint64(native.Uint32(b[at+4:]))
	child = native.Uint64(b[at+8:])
	start := uint64(at) + pos
	if ksize == 0 || start+ksize > uint64(len(b)) {
		return nil, 0, fmt.Errorf("element %d: key of %d bytes at offset %d is outside the page", i, ksize, start)
	}
	return b[start : start+ksize], child, nil
}

// leafElem returns a leaf page's i-th flags, key and value, checked to
// lie inside b (the page, header first).
func leafElem(b []byte, i int) (flags uint32, key, value []byte, err error) {
	at := pageHeaderSize + i*elemSize
	if at+elemSize > len(b) {
		return 0, nil, nil, fmt.Errorf("element %d is past the page's end", i)
	}
	flags = native.Uint32(b[at:])
	pos, ksize, vsize := uint64(native.Uint32(b[at+4:])), uint64(native.Uint32(b[at+8:])), uint64(native.Uint32(b[at+12:]))
	start := uint64(at) + pos
	if ksize == 0 || start+ksize+vsize > uint64(len(b)) {
		return 0, nil, nil, fmt.Errorf("element %d: key of %d and value of %d bytes at offset %d are outside the page", i, ksize, vsize, start)
	}
	if flags&^bucketLeafFlag != 0 {
		return 0, nil, nil, fmt.Errorf("element %d: flags %#x", i, flags)
	}
	return flags, b[start : start+ksize], b[start+ksize : start+ksize+vsize], nil
}

// bucketValue splits a bucket's leaf value into its root page and, for an
// inline bucket (root 0), its leaf page.
func bucketValue(v []byte) (root uint64, inline []byte, err error) {
	if len(v) < bucketHeaderSize {
		return 0, nil, fmt.Errorf("bucket header of %d bytes, want %d", len(v), bucketHeaderSize)
	}
	root = native.Uint64(v)
	if root != 0 {
		return root, nil, nil
	}
	inline = v[bucketHeaderSize:]
	if len(inline) < pageHeaderSize {
		return 0, nil, fmt.Errorf("inline bucket of %d bytes, shorter than a page header", len(inline))
	}
	if f := native.Uint16(inline[8:]); f != leafPageFlag {
		return 0, nil, fmt.Errorf("inline bucket: page flags %#x, want a leaf", f)
	}
	return 0, inline, nil
}

// maxProblems bounds how many problems a check lists.
const maxProblems = 20

// fileCheck is the check of a whole file that Open runs before bbolt reads
// it: the meta pages, then every page reachable from the newest one's root
// bucket, every nested bucket and the free list, with what bbolt's own
// Tx.Check verifies (each page referenced once, of the right type, below
// the high water mark, keys in order within a page and between a branch
// and its children, no page both reachable and free, no page neither when
// the free list is stored) and what bbolt assumes without checking (every
// page inside the file, its header naming it, every element and key
// inside its page, non-empty keys, branch pages not empty, well-formed
// inline buckets, a sane page size and both meta pages intact).
type fileCheck struct {
	f        pageFile
	meta     boltMeta
	seen     []uint64 // bit per page: reachable
	problems []string
	bufs     [][]byte // one read buffer per depth
}

// checkFile checks the bbolt file r of size bytes and returns what is
// wrong with it, or nothing when bbolt can read every page it will reach.
func checkFile(r io.ReaderAt, size int64) []string {
	if size == 0 {
		return []string{"the file is empty (0 bytes): a cache file is never empty, so it was truncated; a new cache is made only where no file exists"}
	}
	metas, errs := readMetas(r, size)
	// One meta page that does not read while the other does is what a
	// power cut in the middle of a commit leaves: bbolt writes the new
	// meta page last, after the transaction's pages are fsync'd, so that
	// commit never returned, nothing waited on it (a gate opens only once
	// its record returned), and the other meta page, the transaction
	// before, is whole. bbolt then opens that one, and so does the cache,
	// after checking every page it reaches; a site's gates must not stay
	// shut after a power cut. With both meta pages gone, nothing is read.
	if ok0, ok1 := errs[0] == nil, errs[1] == nil; ok0 != ok1 {
		good := 0
		if ok1 {
			good = 1
		}
		metas[1-good], errs[1-good] = metas[good], nil // checked below as the one meta page
	}
	var problems []string
	for i, err := range errs {
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		if m := metas[i]; m.pgid > uint64(size)/uint64(m.pageSize) {
			problems = append(problems, fmt.Sprintf("meta page %d: the file is %d bytes, shorter than the %d pages of %d bytes it says are in use (truncated)",
				i, size, m.pgid, m.pageSize))
		}
	}
	if errs[0] == nil && errs[1] == nil && metas[0] != metas[1] {
		a, b := metas[0], metas[1]
		if a.pageSize != b.pageSize {
			problems = append(problems, fmt.Sprintf("meta pages disagree on the page size: %d and %d", a.pageSize, b.pageSize))
		}
		if a.txid != b.txid+1 && b.txid != a.txid+1 {
			problems = append(problems, fmt.Sprintf("meta pages hold transactions %d and %d, not two consecutive ones", a.txid, b.txid))
		}
	}
	if len(problems) > 0 {
		return problems
	}
	c := &fileCheck{f: pageFile{r: r, size: size, ps: int(metas[0].pageSize)}, meta: metas[0]}
	if metas[1].txid > metas[0].txid {
		c.meta = metas[1]
	}
	c.seen = make([]uint64, (c.meta.pgid+63)/64)
	c.mark(0, 1, "meta page")
	freed := c.freelist()
	c.tree(c.meta.root, nil, nil, 0, "root bucket")
	if freed != nil {
		for id := uint64(2); id < c.meta.pgid; id++ {
			switch {
			case c.isSeen(id) && freed[id]:
				c.problemf("page %d is both in use and on the free list", id)
			case !c.isSeen(id) && !freed[id]:
				c.problemf("page %d is neither in use nor on the free list", id)
			}
		}
	}
	return c.problems
}

func (c *fileCheck) problemf(format string, args ...any) {
	if len(c.problems) < maxProblems {
		c.problems = append(c.problems, fmt.Sprintf(format, args...))
	}
}

func (c *fileCheck) isSeen(id uint64) bool { return c.seen[id/64]&(1<<(id%64)) != 0 }

// mark marks pages [id, id+n) reachable and reports false, with a problem,
// when one of them was already.
func (c *fileCheck) mark(id, n uint64, what string) bool {
	for i := id; i < id+n; i++ {
		if c.isSeen(i) {
			c.problemf("%s: page %d is referenced more than once", what, i)
			return false
		}
		c.seen[i/64] |= 1 << (i % 64)
	}
	return true
}

// freelist checks the stored free list, if any, and returns its pages;
// nil when the file stores none (bbolt then rebuilds it from the pages
// not reachable).
func (c *fileCheck) freelist() map[uint64]bool {
	if c.meta.freelist == noFreelist {
		return nil
	}
	freed := map[uint64]bool{}
	p, _, err := c.f.read(c.meta.freelist, c.meta.pgid, nil)
	if err != nil {
		c.problemf("free list: %v", err)
		return freed
	}
	if p.flags != freelistPageFlag {
		c.problemf("free list: page %d has flags %#x", p.id, p.flags)
		return freed
	}
	c.mark(p.id, uint64(p.overflow)+1, "free list")
	start, n := pageHeaderSize, uint64(p.count)
	if p.count == 0xFFFF { // the count is the first element
		if len(p.b) < pageHeaderSize+8 {
			c.problemf("free list: page %d is too short for its count", p.id)
			return freed
		}
		n, start = native.Uint64(p.b[pageHeaderSize:]), pageHeaderSize+8
	}
	if n > uint64(len(p.b)-start)/8 {
		c.problemf("free list: %d pages do not fit in page %d", n, p.id)
		return freed
	}
	for i := range n {
		id := native.Uint64(p.b[uint64(start)+i*8:])
		switch {
		case id < 2 || id >= c.meta.pgid:
			c.problemf("free list: page %d outside [2, %d)", id, c.meta.pgid)
		case freed[id]:
			c.problemf("free list: page %d is listed twice", id)
		}
		freed[id] = true
	}
	return freed
}

func (c *fileCheck) buf(depth int) []byte {
	for len(c.bufs) <= depth {
		c.bufs = append(c.bufs, nil)
	}
	return c.bufs[depth]
}

// tree checks the page id, the root of a bucket's tree or a node in it,
// and everything below it. Keys must be at least min (when set) and below
// max (when set), as bbolt's key-order check has it; it returns the
// largest key below id.
func (c *fileCheck) tree(id uint64, min, max []byte, depth int, what string) (last []byte) {
	if depth > maxDepth {
		c.problemf("%s: page %d is more than %d levels deep", what, id, maxDepth)
		return nil
	}
	if id < 2 {
		c.problemf("%s: refers to page %d, a meta page", what, id)
		return nil
	}
	p, buf, err := c.f.read(id, c.meta.pgid, c.buf(depth))
	c.bufs[depth] = buf
	if err != nil {
		c.problemf("%s: %v", what, err)
		return nil
	}
	if !c.mark(id, uint64(p.overflow)+1, what) {
		return nil
	}
	switch p.flags {
	case branchPageFlag:
		if p.count == 0 {
			c.problemf("%s: branch page %d has no elements", what, id)
			return nil
		}
		running := min
		for i := range p.count {
			key, child, err := branchElem(p.b, i)
			if err != nil {
				c.problemf("%s: branch page %d: %v", what, id, err)
				return nil
			}
			if !c.keyOrder(i, key, running, max, what) {
				return nil
			}
			next := max
			if i+1 < p.count {
				if next, _, err = branchElem(p.b, i+1); err != nil {
					c.problemf("%s: branch page %d: %v", what, id, err)
					return nil
				}
			}
			// The child reads into the next depth's buffer, so p.b,
			// key and next stay valid across the call.
			last = c.tree(child, key, next, depth+1, what)
			running = last
		}
		return last // a copy: the child's
	case leafPageFlag:
		return c.leaf(p.b, p.count, min, max, depth, fmt.Sprintf("%s: leaf page %d", what, id))
	default:
		c.problemf("%s: page %d has flags %#x, not a branch or leaf page", what, id, p.flags)
		return nil
	}
}

// leaf checks the elements of a leaf page b (or an inline bucket's page)
// and the buckets they hold.
func (c *fileCheck) leaf(b []byte, count int, min, max []byte, depth int, what string) (last []byte) {
	running := min
	for i := range count {
		flags, key, value, err := leafElem(b, i)
		if err != nil {
			c.problemf("%s: %v", what, err)
			return nil
		}
		if !c.keyOrder(i, key, running, max, what) {
			return nil
		}
		running = key
		if flags&bucketLeafFlag == 0 {
			continue
		}
		name := fmt.Sprintf("bucket %q", key)
		root, inline, err := bucketValue(value)
		switch {
		case err != nil:
			c.problemf("%s: %s: %v", what, name, err)
			return nil
		case inline != nil:
			n := int(native.Uint16(inline[10:]))
			c.leaf(inline, n, nil, nil, depth+1, name+" (inline)")
		default:
			c.tree(root, nil, nil, depth+1, name)
		}
	}
	return bytes.Clone(running)
}

// keyOrder is bbolt's verifyKeyOrder: the first key of a page is at least
// the key before it (in the parent), later keys rise strictly, and every
// key is below max. It reports false, with a problem, when key is out of
// order.
func (c *fileCheck) keyOrder(i int, key, prev, max []byte, what string) bool {
	switch {
	case i == 0 && prev != nil && bytes.Compare(prev, key) > 0,
		i > 0 && bytes.Compare(prev, key) >= 0,
		max != nil && bytes.Compare(key, max) >= 0:
		c.problemf("%s: key %d (%x) is out of order", what, i, key)
		return false
	}
	return true
}
