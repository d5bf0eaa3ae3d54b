package cache

import (
	"math/bits"
	"slices"
	"sync/atomic"
	"unsafe"
)

// trie is a persistent hash trie keyed by uid: the View's visits, people
// and indexes. A published trie is never written; a write copies the path
// from the root to the leaf it changes (a leaf of up to leafMax entries
// and three or four interior nodes of up to 32 pointers for 100,000
// entries), so its cost follows the change, not the size. Within one edit
// the nodes it has copied are its own (they carry its generation) and are
// written in place, so a batch that touches a leaf twice copies it once.
// The zero value is empty.
type trie[V any] struct {
	root *tnode[V]
	n    int
	// bulk holds the entries of an edit that fills the trie from nothing
	// (startBulk) until build makes its nodes; nil in a published trie.
	bulk *bulk[V]
}

// bulk is a trie being filled: its entries in one slice, and where each
// is. Built once at the end, every leaf is made once at its final size:
// grown entry by entry, each leaf was reallocated as it grew, and that
// garbage, in the live leaves' size classes, left the heap at Open a
// third larger than its live bytes (docs/performance.md, "A scan's
// garbage and the edge's memory, fourth pass").
type bulk[V any] struct {
	ents []tent[V]
	at   map[uid]int
}

// startBulk makes the empty trie t take its entries in bulk until build.
func (t *trie[V]) startBulk() { t.bulk = &bulk[V]{at: map[uid]int{}} }

// build makes the nodes of a trie filled in bulk, in the edit gen.
func (t *trie[V]) build(gen uint64) {
	b := t.bulk
	if b == nil {
		return
	}
	t.bulk = nil
	ents := b.ents
	b.at = nil // not needed while the nodes are made, and as large as a third of them
	if len(ents) > 0 {
		t.root = buildNode(gen, 0, ents)
	}
}

// buildNode makes the node at depth over ents, all of whose hashes agree
// below depth: a leaf of a copy of them, or an interior node over ents
// sorted in place by their chunk at depth (an American flag sort, so that
// building holds no second copy of the entries).
func buildNode[V any](gen uint64, depth int, ents []tent[V]) *tnode[V] {
	if len(ents) <= leafMax[V]() || depth >= trieDepth {
		leaf := make([]tent[V], len(ents))
		copy(leaf, ents)
		return newLeaf(gen, leaf)
	}
	var start [33]int // start[c]: where chunk c's entries begin; start[32] = len(ents)
	for i := range ents {
		start[chunk(ents[i].k.hash(), depth)+1]++
	}
	var mask uint32
	for c := range 32 {
		if start[c+1] > 0 {
			mask |= 1 << c
		}
		start[c+1] += start[c]
	}
	next := start
	for c := range uint32(32) {
		for next[c] < start[c+1] { // each swap puts one entry where it belongs
			d := chunk(ents[next[c]].k.hash(), depth)
			if d == c {
				next[c]++
				continue
			}
			ents[next[c]], ents[next[d]] = ents[next[d]], ents[next[c]]
			next[d]++
		}
	}
	n := newInner[V](gen, mask, nil)
	for c := range 32 {
		if start[c+1] > start[c] {
			n.kids = append(n.kids, buildNode(gen, depth+1, ents[start[c]:start[c+1]]))
		}
	}
	n.remark()
	return n
}

// tnode is a leaf (ents, kids nil) or an interior node: kids in the order
// of the bits set in mask, one for each 5-bit chunk of the hash at its
// depth. A leaf holds at most leafMax entries unless it is at trieDepth.
type tnode[V any] struct {
	gen  uint64 // the edit that made it; only that edit writes it
	mask uint32
	// marked holds each of the kiosk's marks (marksOf) that an entry
	// under the node carries. Every write sets it again on the nodes of
	// its path, which it has copied already, so it costs no allocation,
	// and it fits where the node had padding; eachMarked goes only into
	// nodes that hold its mark.
	marked uint8
	kids   []*tnode[V]
	ents   []tent[V]
}

type tent[V any] struct {
	k uid
	v V
}

const (
	chunkBits = 5
	trieDepth = 64 / chunkBits // 12: the last chunk takes 60 of the 64 bits
	leafBytes = 8192           // a leaf's entries, at most, in bytes
)

// leafMax is how many entries a leaf holds before it splits: about
// leafBytes of them, between 8 and 32. A change copies its leaf: at most
// leafBytes of entries, and for the small entries of the kiosk's indexes
// (16 bytes, a few hundred of them, one put on every check-in) at most
// 32, half a KB, where 128 of them were 2 KB a scan. A leaf's node costs
// 64 bytes, which 32 entries share.
func leafMax[V any]() int {
	return min(32, max(8, leafBytes/int(unsafe.Sizeof(tent[V]{}))))
}

// editGen numbers edits; each trie write names its edit's.
var editGen atomic.Uint64

func newGen() uint64 { return editGen.Add(1) }

// codeMask is the part of a uid the trie's hash takes: the low 40 bits,
// which a visit's short code spells (ids.ShortCode).
const codeMask = 1<<40 - 1

// hash spreads u's low 40 bits over 64 (murmur3's finalizer). They are
// random in a UUIDv7 (the time is in the high bits), and they are the
// visit's short code, so the visits of one code share a leaf (near).
// Keys equal in those bits differ only further down a leaf, which holds
// them all at trieDepth.
func (u uid) hash() uint64 {
	h := u.lo & codeMask
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	return h ^ h>>33
}

func chunk(h uint64, depth int) uint32 { return uint32(h>>(depth*chunkBits)) & 31 }

// The kiosk's marks of a visit's entry: its lists of the visits on site
// and of those waiting for someone are the visits that carry them.
const (
	markOnSite  uint8 = 1 << iota // checked in
	markWaiting                   // checked in, needs_someone
)

// marksOf returns the kiosk's marks of a value: those of a visit's entry,
// none for a value of another type.
func marksOf[V any](v *V) uint8 {
	x, ok := any(v).(*visitEntry)
	switch {
	case !ok || !checkedIn(*x):
		return 0
	case x.flags&flagNeedsSomeone != 0:
		return markOnSite | markWaiting
	}
	return markOnSite
}

// remark sets n's marks from its entries or its kids' marks. Only the
// edit that owns n calls it. A trie of values other than visits' entries
// has none to set.
func (n *tnode[V]) remark() {
	if _, visits := any((*V)(nil)).(*visitEntry); !visits {
		return
	}
	var m uint8
	for _, k := range n.kids {
		m |= k.marked
	}
	for i := range n.ents {
		m |= marksOf(&n.ents[i].v)
	}
	n.marked = m
}

// newLeaf returns a leaf of edit gen over ents, marked.
func newLeaf[V any](gen uint64, ents []tent[V]) *tnode[V] {
	n := &tnode[V]{gen: gen, ents: ents}
	n.remark()
	return n
}

// eachMarked calls fn for each entry that carries mark (one of the
// marks), in no particular order, until fn returns false. It goes only
// into the nodes that hold mark: with a few hundred visits on site of
// 100,000, a few hundred leaves and the nodes above them. fn gets the
// value in the trie, which it must not write: a published trie's is
// never written, so fn may keep it.
func (t trie[V]) eachMarked(mark uint8, fn func(uid, *V) bool) {
	if b := t.bulk; b != nil {
		for i := range b.ents {
			if marksOf(&b.ents[i].v)&mark != 0 && !fn(b.ents[i].k, &b.ents[i].v) {
				return
			}
		}
		return
	}
	if t.root != nil {
		t.root.eachMarked(mark, fn)
	}
}

func (n *tnode[V]) eachMarked(mark uint8, fn func(uid, *V) bool) bool {
	if n.marked&mark == 0 {
		return true
	}
	for i := range n.ents {
		if marksOf(&n.ents[i].v)&mark != 0 && !fn(n.ents[i].k, &n.ents[i].v) {
			return false
		}
	}
	for _, k := range n.kids {
		if !k.eachMarked(mark, fn) {
			return false
		}
	}
	return true
}

func (t trie[V]) len() int { return t.n }

func (t trie[V]) get(u uid) (V, bool) {
	if b := t.bulk; b != nil {
		if i, ok := b.at[u]; ok {
			return b.ents[i].v, true
		}
		var zero V
		return zero, false
	}
	n, h := t.root, u.hash()
	for depth := 0; n != nil; depth++ {
		if n.kids == nil {
			for i := range n.ents {
				if n.ents[i].k == u {
					return n.ents[i].v, true
				}
			}
			break
		}
		bit := uint32(1) << chunk(h, depth)
		if n.mask&bit == 0 {
			break
		}
		n = n.kids[bits.OnesCount32(n.mask&(bit-1))]
	}
	var zero V
	return zero, false
}

// near calls fn for each entry of the leaf u's hash leads to: every entry
// whose key hashes as u's does, and maybe others.
func (t trie[V]) near(u uid, fn func(uid, V)) {
	n, h := t.root, u.hash()
	for depth := 0; n != nil && n.kids != nil; depth++ {
		bit := uint32(1) << chunk(h, depth)
		if n.mask&bit == 0 {
			return
		}
		n = n.kids[bits.OnesCount32(n.mask&(bit-1))]
	}
	if n != nil {
		for i := range n.ents {
			fn(n.ents[i].k, n.ents[i].v)
		}
	}
}

// all calls fn for each entry, in no particular order, until fn returns
// false.
func (t trie[V]) all(fn func(uid, V) bool) {
	if b := t.bulk; b != nil {
		for i := range b.ents {
			if !fn(b.ents[i].k, b.ents[i].v) {
				return
			}
		}
		return
	}
	if t.root != nil {
		t.root.each(fn)
	}
}

func (n *tnode[V]) each(fn func(uid, V) bool) bool {
	for i := range n.ents {
		if !fn(n.ents[i].k, n.ents[i].v) {
			return false
		}
	}
	for _, k := range n.kids {
		if !k.each(fn) {
			return false
		}
	}
	return true
}

// own returns n when edit gen made it, else a copy of it that gen owns.
// A leaf's entries are copied at their length; only an edit's own leaves
// grow past it, and compact takes that back.
func (n *tnode[V]) own(gen uint64) *tnode[V] {
	if n.gen == gen {
		return n
	}
	if n.kids != nil {
		c := newInner(gen, n.mask, n.kids)
		c.marked = n.marked
		return c
	}
	c := &tnode[V]{gen: gen, mask: n.mask, marked: n.marked}
	if n.ents != nil {
		c.ents = make([]tent[V], len(n.ents))
		copy(c.ents, n.ents)
	}
	return c
}

// inner is an interior node with room for its kids, made in one
// allocation: a write copies the interior nodes on its path (three for
// 100,000 visits), and a node and its slice apart were two allocations
// each. Its kids never outgrow the room: a node has at most 32.
type inner[V any] struct {
	n    tnode[V]
	room [32]*tnode[V]
}

// newInner returns an interior node of edit gen over a copy of kids.
func newInner[V any](gen uint64, mask uint32, kids []*tnode[V]) *tnode[V] {
	in := &inner[V]{n: tnode[V]{gen: gen, mask: mask}}
	in.n.kids = in.room[:len(kids)] // never nil: a nil kids is a leaf
	copy(in.n.kids, kids)
	return &in.n
}

// put sets u to v in the edit gen.
func (t *trie[V]) put(gen uint64, u uid, v V) {
	if b := t.bulk; b != nil {
		if i, ok := b.at[u]; ok {
			b.ents[i].v = v
			return
		}
		b.at[u] = len(b.ents)
		b.ents = append(b.ents, tent[V]{u, v})
		t.n++
		return
	}
	added := false
	t.root = t.root.put(gen, u.hash(), 0, u, v, &added)
	if added {
		t.n++
	}
}

func (n *tnode[V]) put(gen uint64, h uint64, depth int, u uid, v V, added *bool) *tnode[V] {
	if n == nil {
		*added = true
		return newLeaf(gen, []tent[V]{{u, v}})
	}
	if n.kids == nil {
		for i := range n.ents {
			if n.ents[i].k == u {
				m := n.own(gen)
				m.ents[i].v = v
				m.remark()
				return m
			}
		}
		*added = true
		if len(n.ents) < leafMax[V]() || depth >= trieDepth {
			if n.gen == gen {
				// Grown by append: an edit that fills a leaf (a
				// snapshot) does not copy it for each entry.
				n.ents = append(n.ents, tent[V]{u, v})
				n.remark()
				return n
			}
			// Copied with the new entry in one allocation, not copied
			// at its length and then grown by append.
			ents := make([]tent[V], len(n.ents)+1)
			copy(ents, n.ents)
			ents[len(n.ents)] = tent[V]{u, v}
			return newLeaf(gen, ents)
		}
		// Full: it becomes an interior node over leaves of its entries
		// and the new one.
		ents := make([]tent[V], len(n.ents)+1)
		copy(ents, n.ents)
		ents[len(n.ents)] = tent[V]{u, v}
		return split(gen, depth, ents)
	}
	c := chunk(h, depth)
	bit := uint32(1) << c
	i := bits.OnesCount32(n.mask & (bit - 1))
	if n.mask&bit == 0 {
		m := n.own(gen)
		m.kids = slices.Insert(m.kids, i, newLeaf(gen, []tent[V]{{u, v}}))
		m.mask |= bit
		m.remark()
		*added = true
		return m
	}
	kid := n.kids[i].put(gen, h, depth+1, u, v, added)
	if kid == n.kids[i] {
		n.remark() // written in place: the edit owns the path already
		return n
	}
	m := n.own(gen)
	m.kids[i] = kid
	m.remark()
	return m
}

// split makes an interior node at depth over ents (more than leafMax).
func split[V any](gen uint64, depth int, ents []tent[V]) *tnode[V] {
	var groups [32][]tent[V]
	var mask uint32
	for _, e := range ents {
		c := chunk(e.k.hash(), depth)
		groups[c] = append(groups[c], e)
		mask |= 1 << c
	}
	n := newInner[V](gen, mask, nil)
	for c := range groups {
		g := groups[c]
		switch {
		case len(g) == 0:
			continue
		case len(g) > leafMax[V]() && depth+1 < trieDepth:
			n.kids = append(n.kids, split[V](gen, depth+1, g))
		default:
			leaf := make([]tent[V], len(g))
			copy(leaf, g)
			n.kids = append(n.kids, newLeaf(gen, leaf))
		}
	}
	n.remark()
	return n
}

// del removes u in the edit gen.
func (t *trie[V]) del(gen uint64, u uid) {
	if b := t.bulk; b != nil {
		if i, ok := b.at[u]; ok {
			last := len(b.ents) - 1
			b.ents[i] = b.ents[last]
			b.at[b.ents[i].k] = i
			b.ents = b.ents[:last]
			delete(b.at, u)
			t.n--
		}
		return
	}
	removed := false
	t.root = t.root.del(gen, u.hash(), 0, u, &removed)
	if removed {
		t.n--
	}
}

// del returns the node without u: nil once it is empty.
func (n *tnode[V]) del(gen uint64, h uint64, depth int, u uid, removed *bool) *tnode[V] {
	if n == nil {
		return nil
	}
	if n.kids == nil {
		for i := range n.ents {
			if n.ents[i].k != u {
				continue
			}
			*removed = true
			if len(n.ents) == 1 {
				return nil
			}
			m := n.own(gen)
			ents := make([]tent[V], len(m.ents)-1)
			copy(ents, m.ents[:i])
			copy(ents[i:], m.ents[i+1:])
			m.ents = ents
			m.remark()
			return m
		}
		return n
	}
	bit := uint32(1) << chunk(h, depth)
	if n.mask&bit == 0 {
		return n
	}
	i := bits.OnesCount32(n.mask & (bit - 1))
	kid := n.kids[i].del(gen, h, depth+1, u, removed)
	switch {
	case kid == n.kids[i]:
		if *removed { // from a kid the edit owns, in place; so it owns n
			n.remark()
		}
		return n
	case kid != nil:
		m := n.own(gen)
		m.kids[i] = kid
		m.remark()
		return m
	case len(n.kids) == 1:
		return nil
	}
	m := n.own(gen)
	m.kids, m.mask = slices.Delete(m.kids, i, i+1), m.mask&^bit
	m.remark()
	return m
}

// compact cuts the entries of the leaves edit gen owns to their length,
// for an edit that put many entries (a snapshot, or the load at Open):
// its appends left spare capacity. It works node by node, so the trie is
// never held twice; nodes of earlier Views are not the edit's, and are
// already at their length.
func (t *trie[V]) compact(gen uint64) {
	if t.root != nil {
		t.root.compact(gen)
	}
}

func (n *tnode[V]) compact(gen uint64) {
	if n.gen != gen {
		return
	}
	if cap(n.ents) > len(n.ents) {
		ents := make([]tent[V], len(n.ents))
		copy(ents, n.ents)
		n.ents = ents
	}
	for _, k := range n.kids {
		k.compact(gen)
	}
}
