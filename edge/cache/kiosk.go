package cache

import (
	"cmp"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/shared/passrule"
	"github.com/svc-vms/svc/shared/textfold"
	"github.com/svc-vms/svc/sync/protocol"
)

// This file is what the reception kiosk reads (docs/decisions.md, "Kiosk
// data and facts"): teams, visit types, and the indexes of the View it
// searches, each kept up to date by the write that changes what it
// indexes, so a read need not go through every visit:
//
//   - waiting and on site, the checked-in visits with needs_someone and
//     all checked-in visits (a few hundred at a busy site): each node of
//     the visits' trie holds the marks (marksOf) of the visits under it,
//     and a read goes only into the nodes that hold its mark. Sets of
//     their own, copy-on-write like the visits, cost every check-in at a
//     gate a path copied in each, 5 of the scan's 32 allocations; the
//     marks are written in the nodes the visit's own write has copied
//     already;
//   - search: every word of every person's folded name, sorted, so a
//     prefix is a binary search. People change rarely, one at a time, so
//     it is rebuilt whole when they do (10,000 people in a few ms).

// A visit's short code (ids.ShortCode) spells the low 40 bits of its
// UUID, which are also all a trie's hash takes (uid.hash): the visits
// with one code are in one leaf of the View's visits, so they need no
// index of their own.
//
// Visits by visitor name are the one read that goes through every visit
// (VisitsByVisitorName, for a returning walk-in): an index of 100,000
// names held 4.5 MB, where a 32-bit hash in each entry holds 0.8 MB and
// the scan compares it (BenchmarkKioskSearch/visitor: 8 ms for 100,000
// visits on a loaded 2-core machine, where a short code takes 1 µs).

// nameHash is a hash of the folded visitor name, kept in each visit's
// entry: 0 for no name.
func nameHash(name string) uint32 {
	f := textfold.Fold(name)
	if f == "" {
		return 0
	}
	h := uint32(2166136261) // FNV-1a, without hash/fnv's allocations
	for i := 0; i < len(f); i++ {
		h = (h ^ uint32(f[i])) * 16777619
	}
	return h | 1
}

// statusCheckedIn is checked_in's number in statuses.
var statusCheckedIn = uint8(slices.Index(statuses, passrule.CheckedIn))

func checkedIn(x visitEntry) bool { return x.status == statusCheckedIn }

// markPending records whether a waiting fact names visit u, in its
// entry (flagPending). A visit the View does not hold is not marked: a
// pending visit is never pruned, and a snapshot that lacks it keeps it.
func (e *edit) markPending(u uid, pending bool) {
	x, ok := e.v.visits.get(u)
	if !ok || (x.flags&flagPending != 0) == pending {
		return
	}
	x.flags ^= flagPending
	e.v.visits.put(e.gen, u, x) // the path is the edit's already when it has just put the visit
}

func (e *edit) putTeam(t protocol.Team) {
	if !e.teamsCopy {
		e.v.teams = maps.Clone(e.v.teams)
		if e.v.teams == nil {
			e.v.teams = map[string]protocol.Team{}
		}
		e.teamsCopy = true
	}
	e.v.teams[t.ID] = t
}

func (e *edit) putVisitType(t protocol.VisitType) {
	if !e.typesCopy {
		e.v.types = maps.Clone(e.v.types)
		if e.v.types == nil {
			e.v.types = map[string]protocol.VisitType{}
		}
		e.typesCopy = true
	}
	t.Form = slices.Clone(t.Form)
	e.v.types[t.Key] = t
}

// peopleIndex is every word of every person's folded name, sorted.
type peopleIndex struct {
	people []indexed
	words  []wordRef // by word, then person
}

type indexed struct {
	u      uid
	folded string
	words  []string
}

type wordRef struct {
	word string
	p    int32 // index in people
	pos  int16 // the word's place in the name
}

func buildPeopleIndex(m trie[protocol.Person]) *peopleIndex {
	ix := &peopleIndex{}
	m.all(func(u uid, p protocol.Person) bool {
		if !p.Active {
			return true // the kiosk lists active people only
		}
		f := textfold.Fold(p.Name)
		words := strings.Fields(f)
		i := int32(len(ix.people))
		ix.people = append(ix.people, indexed{u: u, folded: f, words: words})
		for j, w := range words {
			ix.words = append(ix.words, wordRef{word: w, p: i, pos: int16(min(j, 1<<15-1))})
		}
		return true
	})
	slices.SortFunc(ix.words, func(a, b wordRef) int {
		return cmp.Or(strings.Compare(a.word, b.word), cmp.Compare(a.p, b.p))
	})
	return ix
}

// SearchPeople returns up to limit active people with a word of their
// name starting with each word of q (folded: case and accents do not
// count), best first: those whose first name matches before those whose
// later name does, then by folded name. q needs at least 2 letters; fewer
// finds nobody, so the kiosk never lists all staff.
func (v *View) SearchPeople(q string, limit int) []protocol.Person {
	qw := textfold.Words(q)
	if textfold.Letters(q) < 2 || len(qw) == 0 || limit <= 0 || v.search == nil {
		return nil
	}
	// The longest word of q narrows most.
	key := slices.MaxFunc(qw, func(a, b string) int { return cmp.Compare(len(a), len(b)) })
	ix := v.search
	i, _ := slices.BinarySearchFunc(ix.words, key, func(w wordRef, k string) int { return strings.Compare(w.word, k) })
	type hit struct {
		p     int32
		first bool
	}
	var hits []hit
	seen := map[int32]int{}
	for ; i < len(ix.words) && strings.HasPrefix(ix.words[i].word, key); i++ {
		w := ix.words[i]
		if j, ok := seen[w.p]; ok {
			hits[j].first = hits[j].first || w.pos == 0
			continue
		}
		if !allPrefixes(qw, ix.people[w.p].words) {
			continue
		}
		seen[w.p] = len(hits)
		hits = append(hits, hit{p: w.p, first: w.pos == 0})
	}
	slices.SortFunc(hits, func(a, b hit) int {
		if a.first != b.first {
			if a.first {
				return -1
			}
			return 1
		}
		return strings.Compare(ix.people[a.p].folded, ix.people[b.p].folded)
	})
	out := make([]protocol.Person, 0, min(limit, len(hits)))
	for _, h := range hits[:min(limit, len(hits))] {
		p, _ := v.people.get(ix.people[h.p].u)
		out = append(out, p)
	}
	return out
}

// allPrefixes reports whether each query word starts a distinct word of
// the name.
func allPrefixes(q, name []string) bool {
	used := make([]bool, len(name))
next:
	for _, w := range q {
		for i, n := range name {
			if !used[i] && strings.HasPrefix(n, w) {
				used[i] = true
				continue next
			}
		}
		return false
	}
	return true
}

// Team returns one of the organisation's teams, archived or not.
func (v *View) Team(id string) (protocol.Team, bool) {
	t, ok := v.teams[id]
	return t, ok
}

// Teams returns the teams the kiosk offers at site siteID: not archived,
// the site's own and the organisation-wide ones, by folded name.
func (v *View) Teams(siteID string) []protocol.Team {
	var out []protocol.Team
	for _, t := range v.teams {
		if !t.Archived && (t.SiteID == "" || t.SiteID == siteID) {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b protocol.Team) int {
		return cmp.Or(strings.Compare(textfold.Fold(a.Name), textfold.Fold(b.Name)), strings.Compare(a.ID, b.ID))
	})
	return out
}

// VisitType returns a visit type by key, enabled or not. Its Form is
// shared: do not modify it.
func (v *View) VisitType(key string) (protocol.VisitType, bool) {
	t, ok := v.types[key]
	return t, ok
}

// VisitTypes returns the enabled visit types, in the organisation's order
// (position, then key). Their forms are shared: do not modify them.
func (v *View) VisitTypes() []protocol.VisitType {
	var out []protocol.VisitType
	for _, t := range v.types {
		if t.Enabled {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b protocol.VisitType) int {
		return cmp.Or(cmp.Compare(a.Position, b.Position), strings.Compare(a.Key, b.Key))
	})
	return out
}

// VisitByCode returns the visit whose short code is code (ids.ShortCode:
// 8 Crockford characters, upper case, no dash): the expected one when
// several visits share the code, else the most recent.
func (v *View) VisitByCode(code string) (protocol.Visit, bool) {
	if len(code) != ids.ShortCodeLen {
		return protocol.Visit{}, false
	}
	var k uint64
	for i := 0; i < len(code); i++ {
		c := code[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		d := crockfordValue[c]
		if d == 0xff {
			return protocol.Visit{}, false
		}
		k = k<<5 | uint64(d)
	}
	var best protocol.Visit
	found := false
	v.visits.near(uid{lo: k}, func(u uid, x visitEntry) {
		if u.lo&codeMask != k {
			return
		}
		vis := v.visitOf(&x, visitID(u), u)
		switch {
		case !found, vis.Status == "expected" && best.Status != "expected",
			(vis.Status == "expected") == (best.Status == "expected") && vis.ID > best.ID:
			best, found = vis, true
		}
	})
	return best, found
}

// Waiting returns the checked-in visits with needs_someone, longest
// waiting first (waiting_since, else checked_in_at).
func (v *View) Waiting() []protocol.Visit {
	out := v.collect(markWaiting)
	slices.SortFunc(out, func(a, b protocol.Visit) int {
		return cmp.Or(waitStart(a).Compare(waitStart(b)), strings.Compare(a.ID, b.ID))
	})
	return out
}

func waitStart(v protocol.Visit) time.Time {
	switch {
	case v.WaitingSince != nil:
		return *v.WaitingSince
	case v.CheckedInAt != nil:
		return *v.CheckedInAt
	}
	return time.Time{}
}

// OnSite returns the checked-in visits, by folded visitor name.
func (v *View) OnSite() []protocol.Visit {
	all := v.collect(markOnSite)
	// Each name is folded once, not twice in each of n·log n comparisons:
	// folding was a quarter of the reception page's time with 300 on site.
	type named struct {
		folded string
		i      int
	}
	keys := make([]named, len(all))
	for i := range all {
		keys[i] = named{textfold.Fold(all[i].VisitorName), i}
	}
	slices.SortFunc(keys, func(a, b named) int {
		return cmp.Or(strings.Compare(a.folded, b.folded), strings.Compare(all[a.i].ID, all[b.i].ID))
	})
	out := make([]protocol.Visit, len(all))
	for j, k := range keys {
		out[j] = all[k.i]
	}
	return out
}

// collect returns the visits that carry mark, never nil. Their entries
// are found first, so the list of visits (some 400 bytes each) is made
// once at its length.
func (v *View) collect(mark uint8) []protocol.Visit {
	type found struct {
		u uid
		x *visitEntry
	}
	var fs []found
	v.visits.eachMarked(mark, func(u uid, x *visitEntry) bool {
		fs = append(fs, found{u, x})
		return true
	})
	out := make([]protocol.Visit, len(fs))
	for i, f := range fs {
		out[i] = v.visitOf(f.x, visitID(f.u), f.u)
	}
	return out
}

// VisitsByVisitorName returns the visits whose visitor's name folds to
// what name folds to (case, accents and spaces do not count), newest
// first.
func (v *View) VisitsByVisitorName(name string) []protocol.Visit {
	k := nameHash(name)
	if k == 0 {
		return nil
	}
	want := textfold.Fold(name)
	var out []protocol.Visit
	v.visits.all(func(u uid, x visitEntry) bool {
		if x.nameHash == k && textfold.Fold(v.visitorName(&x)) == want { // the hash may collide
			out = append(out, v.visitOf(&x, visitID(u), u))
		}
		return true
	})
	slices.SortFunc(out, func(a, b protocol.Visit) int { return strings.Compare(b.ID, a.ID) })
	return out
}

// Pending reports whether a fact recorded here that names the visit still
// waits for the cloud's acknowledgement.
func (v *View) Pending(visitID string) bool {
	u, ok := visitUID(visitID)
	if !ok {
		return false
	}
	x, ok := v.visits.get(u)
	return ok && x.flags&flagPending != 0
}
