package cache

import (
	"maps"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/shared/ids"
)

// checkTrie asserts that t holds exactly model, by get, all and len, and
// that every node keeps the trie's shape.
func checkTrie(t *testing.T, tr trie[int], model map[uid]int, compacted bool) {
	t.Helper()
	require.Equal(t, len(model), tr.len())
	for u, v := range model {
		got, ok := tr.get(u)
		require.True(t, ok, "%v missing", u)
		require.Equal(t, v, got)
	}
	seen := map[uid]int{}
	tr.all(func(u uid, v int) bool {
		_, dup := seen[u]
		require.False(t, dup, "%v listed twice", u)
		seen[u] = v
		return true
	})
	require.Equal(t, model, seen)
	if tr.root != nil {
		checkNode(t, tr.root, 0, 0, 0, compacted)
	}
}

// checkNode asserts n's shape: a leaf has 1 to leafMax entries (more only
// at trieDepth), all on n's path; an interior node has one kid per bit.
func checkNode(t *testing.T, n *tnode[int], depth int, prefix uint64, prefixBits int, compacted bool) {
	t.Helper()
	mask := uint64(1)<<prefixBits - 1
	if n.kids == nil {
		require.NotEmpty(t, n.ents)
		require.True(t, len(n.ents) <= leafMax[int]() || depth >= trieDepth, "leaf of %d at depth %d", len(n.ents), depth)
		if compacted {
			require.Equal(t, len(n.ents), cap(n.ents), "no spare capacity")
		}
		for _, e := range n.ents {
			require.Equal(t, prefix, e.k.hash()&mask, "entry off its path")
		}
		return
	}
	require.Nil(t, n.ents)
	require.Equal(t, countBits(n.mask), len(n.kids))
	i := 0
	for c := range 32 {
		if n.mask&(1<<c) == 0 {
			continue
		}
		checkNode(t, n.kids[i], depth+1, prefix|uint64(c)<<prefixBits, prefixBits+chunkBits, compacted)
		i++
	}
}

func countBits(m uint32) int {
	n := 0
	for ; m != 0; m &= m - 1 {
		n++
	}
	return n
}

// TestTrie_MatchesMap runs random puts and deletes, each edit of a few
// operations published as a new trie, against a plain map, and checks
// after each edit that the new trie equals the model and that the trie
// published before it did not change.
func TestTrie_MatchesMap(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		rnd := rand.New(rand.NewPCG(seed, seed))
		var keys []uid
		// Keys that share their hash's low chunks, so leaves split deep.
		for range 200 {
			u, _ := visitUID(ids.New(ids.Visit))
			keys = append(keys, u)
		}
		var cur trie[int]
		model := map[uid]int{}
		for step := range 400 {
			before := cur
			beforeModel := map[uid]int{}
			for k, v := range model {
				beforeModel[k] = v
			}
			next := cur
			gen := newGen()
			for range 1 + rnd.IntN(20) {
				u := keys[rnd.IntN(len(keys))]
				if rnd.IntN(4) == 0 {
					next.del(gen, u)
					delete(model, u)
				} else {
					v := rnd.Int()
					next.put(gen, u, v)
					model[u] = v
				}
			}
			cur = next
			checkTrie(t, cur, model, false)
			if step%10 == 0 {
				checkTrie(t, before, beforeModel, false) // persistent: untouched by the edit
			}
			if step%50 == 0 {
				cur.compact(gen)
				checkTrie(t, cur, model, false)
			}
		}
	}
}

// TestTrie_BulkBuild fills tries in bulk, with puts, overwrites and
// deletes, and some keys whose hashes agree on many chunks, and checks the
// built trie holds the model in a trie's shape, every leaf at its length,
// and takes edits as a trie filled entry by entry does.
func TestTrie_BulkBuild(t *testing.T) {
	for _, n := range []int{0, 1, leafMax[int](), leafMax[int]() + 1, 5000} {
		rnd := rand.New(rand.NewPCG(uint64(n), 1))
		var tr trie[int]
		tr.startBulk()
		model := map[uid]int{}
		gen := newGen()
		var keys []uid
		first, _ := visitUID(ids.New(ids.Visit))
		for i := range n {
			u, _ := visitUID(ids.New(ids.Visit))
			if i%10 == 0 { // shares its hash's low 40 bits with first, as visits of one short code do
				u = uid{hi: u.hi, lo: u.lo&^codeMask | first.lo&codeMask}
			}
			keys = append(keys, u)
			tr.put(gen, u, i)
			model[u] = i
		}
		for range n / 4 {
			u := keys[rnd.IntN(len(keys))]
			if rnd.IntN(2) == 0 {
				tr.del(gen, u)
				delete(model, u)
			} else {
				tr.put(gen, u, -1)
				model[u] = -1
			}
		}
		for u, v := range model {
			got, ok := tr.get(u)
			require.True(t, ok)
			require.Equal(t, v, got, "read before it is built")
		}
		tr.build(gen)
		require.Nil(t, tr.bulk)
		checkTrie(t, tr, model, true)
		next := tr
		gen = newGen()
		for _, u := range keys[:min(len(keys), 50)] {
			next.put(gen, u, 7)
			model[u] = 7
		}
		checkTrie(t, next, model, false)
	}
}

// TestTrie_DeepCollisions puts keys whose hashes agree on many chunks, so
// leaves split down several levels, and deletes them again.
func TestTrie_DeepCollisions(t *testing.T) {
	var tr trie[int]
	model := map[uid]int{}
	gen := newGen()
	// Keys are found by search: the first 3 chunks (15 bits) of their
	// hash equal those of the first key.
	first, _ := visitUID(ids.New(ids.Visit))
	want := first.hash() & (1<<15 - 1)
	for u, i := first, 0; len(model) < 3*leafMax[int](); i++ {
		if u.hash()&(1<<15-1) == want {
			tr.put(gen, u, i)
			model[u] = i
		}
		u = uid{hi: first.hi, lo: first.lo + uint64(i)}
	}
	checkTrie(t, tr, model, false)
	gen = newGen()
	for u := range model {
		tr.del(gen, u)
		delete(model, u)
		checkTrie(t, tr, model, false)
	}
	require.Nil(t, tr.root)
}

// nodes counts the nodes of a trie.
func nodes[V any](n *tnode[V], set map[*tnode[V]]bool) {
	if n == nil {
		return
	}
	set[n] = true
	for _, k := range n.kids {
		nodes(k, set)
	}
}

// TestTrie_WriteCopiesItsPathOnly: after 100,000 entries, a new edit that
// changes k entries makes at most k paths' worth of new nodes (the depth
// plus one a change), and every other node is the old trie's own, shared.
func TestTrie_WriteCopiesItsPathOnly(t *testing.T) {
	var tr trie[visitEntry]
	gen := newGen()
	keys := make([]uid, 100_000)
	for i := range keys {
		keys[i], _ = visitUID(ids.New(ids.Visit))
		tr.put(gen, keys[i], visitEntry{uses: int32(i)})
	}
	old := map[*tnode[visitEntry]]bool{}
	nodes(tr.root, old)

	for _, k := range []int{1, 10, 256} {
		next := tr
		g := newGen()
		for i := range k {
			next.put(g, keys[i*97], visitEntry{uses: -1})
		}
		now := map[*tnode[visitEntry]]bool{}
		nodes(next.root, now)
		fresh := 0
		for n := range now {
			if !old[n] {
				fresh++
			}
		}
		require.LessOrEqual(t, fresh, k*5, "%d changes made %d new nodes of %d", k, fresh, len(now))
		require.Len(t, now, len(old), "no node added or dropped")
		for i := range k {
			x, _ := tr.get(keys[i*97])
			require.Equal(t, int32(i*97), x.uses, "the old trie is unchanged")
		}
	}

	// And in bytes: one change allocates the path, never a share of n.
	g := newGen()
	i := 0
	allocs := testing.AllocsPerRun(100, func() {
		next := tr
		next.put(g, keys[i], visitEntry{uses: -2})
		i++
	})
	require.LessOrEqual(t, allocs, 12.0, "one change: about two allocations per level")
}

func TestTrie_SecondWriteInAnEditWritesInPlace(t *testing.T) {
	var tr trie[int]
	gen := newGen()
	u, _ := visitUID(ids.New(ids.Visit))
	for range 1000 {
		k, _ := visitUID(ids.New(ids.Visit))
		tr.put(gen, k, 1)
	}
	tr.put(gen, u, 1)
	g := newGen()
	tr.put(g, u, 2)
	allocs := testing.AllocsPerRun(100, func() { tr.put(g, u, 3) })
	require.Zero(t, allocs, "the edit owns the path it copied")
	got, _ := tr.get(u)
	require.Equal(t, 3, got)
}

// A snapshot's edit fills leaves by appending; compact leaves every node
// it owns at its length, and the trie unchanged.
func TestTrie_CompactCutsSpareCapacity(t *testing.T) {
	var tr trie[int]
	model := map[uid]int{}
	gen := newGen()
	for i := range 5000 {
		u, _ := visitUID(ids.New(ids.Visit))
		tr.put(gen, u, i)
		model[u] = i
	}
	spare := 0
	var count func(n *tnode[int])
	count = func(n *tnode[int]) {
		spare += cap(n.ents) - len(n.ents) + cap(n.kids) - len(n.kids)
		for _, k := range n.kids {
			count(k)
		}
	}
	count(tr.root)
	require.Positive(t, spare, "appends leave spare capacity")
	tr.compact(gen)
	checkTrie(t, tr, model, true)
}

// checkMarks asserts that n and every node under it hold exactly the
// kiosk's marks that entries under them carry, and returns n's.
func checkMarks(t *testing.T, n *tnode[visitEntry]) uint8 {
	t.Helper()
	var m uint8
	for i := range n.ents {
		m |= marksOf(&n.ents[i].v)
	}
	for _, k := range n.kids {
		m |= checkMarks(t, k)
	}
	require.Equal(t, m, n.marked, "a node's marks")
	return m
}

// checkMarked asserts that tr's marks hold in every node, and that
// eachMarked lists, for each mark, exactly the entries of model that
// carry it.
func checkMarked(t *testing.T, tr trie[visitEntry], model map[uid]visitEntry) {
	t.Helper()
	if tr.root != nil {
		checkMarks(t, tr.root)
	}
	for _, mark := range []uint8{markOnSite, markWaiting} {
		want := map[uid]bool{}
		for u, x := range model {
			if marksOf(&x)&mark != 0 {
				want[u] = true
			}
		}
		got := map[uid]bool{}
		tr.eachMarked(mark, func(u uid, x *visitEntry) bool {
			require.False(t, got[u], "%v listed twice", u)
			require.Equal(t, model[u], *x)
			got[u] = true
			return true
		})
		require.Equal(t, want, got, "the entries with mark %d", mark)
	}
}

// randomEntry is a visit's entry in a random status, checked in for one
// in twenty (so that a node's mark often rests on one entry), waiting for
// someone or not.
func randomEntry(rnd *rand.Rand) visitEntry {
	x := visitEntry{status: uint8(rnd.IntN(len(statuses))), uses: rnd.Int32()}
	for checkedIn(x) != (rnd.IntN(20) == 0) {
		x.status = uint8(rnd.IntN(len(statuses)))
	}
	if rnd.IntN(2) == 0 {
		x.flags |= flagNeedsSomeone
	}
	return x
}

// TestTrie_MarksHoldWhatEntriesCarry: through random puts and deletes of
// visits checked in or not, waiting or not, in edits published one after
// another (leaves that split and empty, a leaf and a path written twice
// in one edit), and through a bulk build, every node holds the marks of
// the entries under it, eachMarked lists exactly the entries with its
// mark, and the trie published before an edit keeps its marks.
func TestTrie_MarksHoldWhatEntriesCarry(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		rnd := rand.New(rand.NewPCG(seed, 7))
		var keys []uid
		first, _ := visitUID(ids.New(ids.Visit))
		for i := range 2000 { // leaves of one or two entries under the root's kids
			u, _ := visitUID(ids.New(ids.Visit))
			if i%40 == 0 { // shares its hash with first: a leaf at trieDepth
				u = uid{hi: u.hi, lo: u.lo&^codeMask | first.lo&codeMask}
			}
			keys = append(keys, u)
		}
		var cur trie[visitEntry]
		model := map[uid]visitEntry{}
		if seed == 3 { // starts from a bulk build
			gen := newGen()
			cur.startBulk()
			for _, u := range keys[:1500] {
				x := randomEntry(rnd)
				cur.put(gen, u, x)
				model[u] = x
			}
			checkMarked(t, cur, model) // read before it is built
			cur.build(gen)
			checkMarked(t, cur, model)
		}
		for range 300 {
			before, beforeModel := cur, maps.Clone(model)
			next := cur
			gen := newGen()
			pool := keys
			if rnd.IntN(2) == 0 { // an edit that writes some keys, and so some leaves, twice
				pool = keys[:64]
			}
			for range 1 + rnd.IntN(60) {
				u := pool[rnd.IntN(len(pool))]
				if rnd.IntN(2) == 0 {
					next.del(gen, u)
					delete(model, u)
				} else {
					x := randomEntry(rnd)
					next.put(gen, u, x)
					model[u] = x
				}
			}
			cur = next
			checkMarked(t, cur, model)
			checkMarked(t, before, beforeModel) // persistent: the edit left its marks alone
		}
	}
}
