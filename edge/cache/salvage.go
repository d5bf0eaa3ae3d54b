package cache

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"io"
	"os"
	"slices"

	"github.com/svc-vms/svc/sync/protocol"
)

// salvage is what could be read of a damaged file's outbox, by reading
// its pages one by one (pageFile) and skipping what does not read, so that
// no page, however damaged, stops it or crashes it.
type salvage struct {
	edgeID string // the file's, from its meta bucket, if readable

	facts   map[string]protocol.Fact // by ID
	byCount map[uint64]string        // fact ID by counter
	loose   map[string]bool          // facts found outside the outbox's tree
	punches map[string]protocol.Fact // by person: the newest punch found
	indexed map[string]bool          // fact IDs the facts index names
	counter uint64                   // the largest counter the file shows
	meta    uint64                   // the counter of the meta bucket
	salt    uint64                   // the journal salt of the meta bucket; 0 if unread
	journal int                      // facts found in the journal the file lacked

	undecodable int // values in the outbox's tree that are not a fact of this edge filed under its counter
	otherEdge   int // facts of another edge
	unreadable  int // pages of the outbox's tree (or above it) that could not be read
	duplicates  int // facts under a counter another fact already has
}

// salvager walks a file's pages leniently: a page that does not read, or
// is of the wrong kind, is counted and skipped.
type salvager struct {
	f     pageFile
	limit uint64 // pages in the file
	seen  map[uint64]bool
}

// salvageFile reads every outbox fact of edgeID (empty: the file's edge)
// that it can from the bbolt file r of size bytes. It walks the tree of
// the newest meta page; when either meta page is damaged, or that tree
// cannot be read whole (the root or a page of the outbox damaged), it also
// reads every page of the file and takes each value that decodes strictly
// as an outbox row, wherever it is. Such a fact may have been acknowledged
// already (a freed page of an older outbox); the cloud applies each fact
// once, by its ID, so sending it again is harmless, while leaving out a
// waiting one would lose what happened at a gate.
func salvageFile(r io.ReaderAt, size int64, edgeID string) *salvage {
	s := &salvage{edgeID: edgeID, facts: map[string]protocol.Fact{}, byCount: map[uint64]string{}, loose: map[string]bool{},
		punches: map[string]protocol.Fact{}, indexed: map[string]bool{}}
	metas, errs := readMetas(r, size)
	ps := 0
	var newest *boltMeta
	for i := range metas {
		if errs[i] == nil && (newest == nil || metas[i].txid > newest.txid) {
			newest, ps = &metas[i], int(metas[i].pageSize)
		}
	}
	if ps == 0 {
		ps = guessPageSize(r, size)
	}
	w := &salvager{f: pageFile{r: r, size: size, ps: ps}, limit: uint64(size) / uint64(ps), seen: map[uint64]bool{}}
	// With one meta page damaged the other may be a transaction behind:
	// its tree can lack the last facts recorded, which are on pages it
	// does not reach.
	whole := false
	if newest != nil {
		whole = s.fromTree(w, newest.root) && errs[0] == nil && errs[1] == nil
	}
	if !whole {
		s.fromPages(w)
	}
	return s
}

// fromTree reads the cache's buckets from the tree at root and reports
// whether the outbox and everything above it read whole.
func (s *salvage) fromTree(w *salvager, root uint64) bool {
	type bucket struct {
		root   uint64
		inline []byte
	}
	top := map[string]bucket{}
	bad := w.leaves(root, nil, func(flags uint32, k, v []byte) {
		if flags&bucketLeafFlag == 0 {
			return
		}
		if r, inline, err := bucketValue(v); err == nil {
			top[string(k)] = bucket{r, bytes.Clone(inline)}
		}
	})
	if b, ok := top[string(bucketMeta)]; ok {
		w.leaves(b.root, b.inline, func(_ uint32, k, v []byte) { s.metaValue(k, v) })
	}
	if b, ok := top[string(bucketFacts)]; ok {
		w.leaves(b.root, b.inline, func(_ uint32, k, _ []byte) { s.indexed[string(k)] = true })
	}
	if b, ok := top[string(bucketPunches)]; ok {
		w.leaves(b.root, b.inline, func(_ uint32, k, v []byte) { s.punch(k, v) })
	}
	b, ok := top[string(bucketOutbox)]
	if !ok {
		s.unreadable += bad
		return false
	}
	bad += w.leaves(b.root, b.inline, func(flags uint32, k, v []byte) {
		if flags&bucketLeafFlag != 0 || !s.outboxRow(k, v, false) {
			s.undecodable++
		}
	})
	s.unreadable += bad
	return bad == 0
}

// fromPages reads every leaf page of the file, and the inline buckets in
// them, for outbox rows, last punches and the fact counter.
func (s *salvage) fromPages(w *salvager) {
	var buf []byte
	var each func(b []byte, count, depth int)
	each = func(b []byte, count, depth int) {
		for i := range count {
			flags, k, v, err := leafElem(b, i)
			switch {
			case err != nil:
				continue
			case flags&bucketLeafFlag != 0:
				if _, inline, err := bucketValue(v); err == nil && inline != nil && depth < 2 {
					each(inline, int(native.Uint16(inline[10:])), depth+1)
				}
			default:
				if !s.outboxRow(k, v, true) {
					s.punch(k, v)
					s.metaValue(k, v)
				}
			}
		}
	}
	for id := uint64(2); id < w.limit; id++ {
		var p page
		var err error
		p, buf, err = w.f.read(id, w.limit, buf)
		if err != nil || p.flags != leafPageFlag {
			continue
		}
		each(p.b, p.count, 0)
	}
}

// outboxRow takes v, filed under k, as a waiting fact if it is one: an
// outbox row that decodes strictly, of this edge, under its counter. It
// reports whether v was an outbox row at all.
func (s *salvage) outboxRow(k, v []byte, loose bool) bool {
	if len(k) != 8 {
		return false
	}
	_, f, err := decodeRow(v)
	if err != nil || f.Counter != binary.BigEndian.Uint64(k) {
		return false
	}
	if s.edgeID == "" && !loose {
		s.edgeID = f.EdgeID
	}
	if f.EdgeID != s.edgeID {
		if !loose {
			s.otherEdge++
		}
		return true
	}
	s.counter = max(s.counter, f.Counter)
	if _, ok := s.facts[f.ID]; ok {
		return true
	}
	if _, ok := s.byCount[f.Counter]; ok {
		s.duplicates++
		return true
	}
	s.facts[f.ID], s.byCount[f.Counter] = f, f.ID
	if loose {
		s.loose[f.ID] = true
	}
	return true
}

// punch takes v, filed under k, as a person's last punch if it is one of
// this edge's, keeping the newest per person.
func (s *salvage) punch(k, v []byte) {
	f, ok := s.punchFact(k, v)
	if !ok {
		return
	}
	if old, ok := s.punches[f.PersonID]; !ok || f.Counter > old.Counter {
		s.punches[f.PersonID] = f
	}
}

// punchFact decodes v, filed under k, as a last punch of this edge's, and
// counts its counter as one the file shows.
func (s *salvage) punchFact(k, v []byte) (protocol.Fact, bool) {
	var f protocol.Fact
	if protocol.Decode(v, &f) != nil || f.Kind != protocol.FactPunch || f.PersonID != string(k) || (s.edgeID != "" && f.EdgeID != s.edgeID) {
		return protocol.Fact{}, false
	}
	s.counter = max(s.counter, f.Counter)
	return f, true
}

// metaValue takes the edge and the fact counter from the meta bucket.
func (s *salvage) metaValue(k, v []byte) {
	switch {
	case bytes.Equal(k, metaCounter) && len(v) == 8:
		s.counter = max(s.counter, binary.BigEndian.Uint64(v))
		s.meta = max(s.meta, binary.BigEndian.Uint64(v))
	case bytes.Equal(k, metaJournal) && len(v) == 8 && s.salt == 0:
		s.salt = binary.LittleEndian.Uint64(v)
	case bytes.Equal(k, metaEdgeID) && s.edgeID == "":
		s.edgeID = string(v)
	}
}

// leaves calls fn for each element of the leaf pages of the tree at root,
// or of the inline bucket's page, and returns how many pages (or branch
// elements) it could not read. The slices fn gets are valid during the
// call only.
func (w *salvager) leaves(root uint64, inline []byte, fn func(flags uint32, k, v []byte)) (bad int) {
	elems := func(b []byte, count int) {
		for i := range count {
			flags, k, v, err := leafElem(b, i)
			if err != nil {
				bad++
				continue
			}
			fn(flags, k, v)
		}
	}
	if inline != nil {
		elems(inline, int(native.Uint16(inline[10:])))
		return bad
	}
	var walk func(id uint64, depth int)
	walk = func(id uint64, depth int) {
		if depth > maxDepth || id < 2 || w.seen[id] {
			bad++
			return
		}
		w.seen[id] = true
		p, _, err := w.f.read(id, w.limit, nil)
		if err != nil {
			bad++
			return
		}
		switch p.flags {
		case branchPageFlag:
			for i := range p.count {
				_, child, err := branchElem(p.b, i)
				if err != nil {
					bad++
					continue
				}
				walk(child, depth+1)
			}
		case leafPageFlag:
			elems(p.b, p.count)
		default:
			bad++
		}
	}
	walk(root, 0)
	return bad
}

// fromJournal reads the journal b of the file as leniently as its pages:
// every whole frame from its start, in order, up to the first that is not
// (whatever its salt, the salt of the meta bucket being perhaps unread),
// taking the outbox rows, last punches and counters its puts hold. The
// frames that follow the file's counter (as replay would apply them) are
// facts the file lacks; the others are from before the last flush, and
// are taken as found outside the outbox's tree: the file had them, and the
// cloud may have acknowledged them since.
//
// A person's last punch is not the newest punch ever put: a refusal that
// voids a punch puts the one before it back, or deletes it. The journal's
// frames are in order, so within each kind the last put or delete wins:
// the following frames' over whatever the pages hold, the older frames'
// only for people whose punch the pages did not give.
func (s *salvage) fromJournal(b []byte) {
	n, _, _ := following(b, s.salt, s.meta)
	newer, older := map[string]*protocol.Fact{}, map[string]*protocol.Fact{}
	for at := 0; ; {
		f, ok := readFrame(b[at:])
		if !ok {
			break
		}
		loose := at >= n
		_ = eachOp(f.ops, func(bucket byte, del bool, k, v []byte) error {
			if bucket == jPunches {
				last := newer
				if loose {
					last = older
				}
				if del {
					last[string(k)] = nil
				} else if p, ok := s.punchFact(k, v); ok {
					last[p.PersonID] = &p
				}
			}
			if del {
				return nil
			}
			switch bucket {
			case jOutbox:
				before := len(s.facts)
				if s.outboxRow(k, v, loose) && len(s.facts) > before && !loose {
					s.journal++
				}
			case jMeta:
				if bytes.Equal(k, metaCounter) && len(v) == 8 {
					s.counter = max(s.counter, binary.BigEndian.Uint64(v))
				}
			}
			return nil
		})
		at += f.size
	}
	for person, p := range older {
		if _, ok := s.punches[person]; !ok && p != nil {
			s.punches[person] = *p
		}
	}
	for person, p := range newer {
		if p == nil {
			delete(s.punches, person)
		} else {
			s.punches[person] = *p
		}
	}
}

// guessPageSize finds the page size of a file whose meta pages are both
// unreadable: the size at which most pages name themselves in their
// header. It falls back on the OS's page size, which bbolt uses.
func guessPageSize(r io.ReaderAt, size int64) int {
	best, bestN := os.Getpagesize(), 0
	hdr := make([]byte, pageHeaderSize)
	for ps := minPageSize; ps <= maxPageSize; ps *= 2 {
		n := 0
		for id := int64(2); id < min(size/int64(ps), 4096); id++ {
			if _, err := r.ReadAt(hdr, id*int64(ps)); err == nil && native.Uint64(hdr) == uint64(id) {
				n++
			}
		}
		if n > bestN {
			best, bestN = ps, n
		}
	}
	return best
}

// sorted returns the salvaged facts in counter order, and the punches.
func (s *salvage) sorted() (facts, punches []protocol.Fact) {
	for _, f := range s.facts {
		facts = append(facts, f)
	}
	slices.SortFunc(facts, func(a, b protocol.Fact) int { return cmp.Compare(a.Counter, b.Counter) })
	for _, f := range s.punches {
		punches = append(punches, f)
	}
	slices.SortFunc(punches, func(a, b protocol.Fact) int { return cmp.Compare(a.PersonID, b.PersonID) })
	return facts, punches
}
