package cloud

import (
	"errors"
	"fmt"
	"slices"
)

// FactBatch is what the facts of one Store.ApplyFacts call write,
// gathered in memory so each visit is read once and stored once per
// batch. Both stores use it: they read the visits (locked) through the
// load given to NewFactBatch, call Apply for each fact they recorded,
// then store Visitors, Written, Messages, Audit and Conflicts, and put
// each written visit on
// the feed as the batch left it (the visitor's name is the one the
// transaction read, so the visit need not be read again).
type FactBatch struct {
	load      func(id string) (Visit, error) // the store's, in its transaction
	visits    map[string]*BatchVisit
	missing   map[string]bool // read and not found, nor made since
	order     []*BatchVisit   // written, in the order first written
	Visitors  []Visitor       // new visitor records, every fact's, in order
	Messages  []Message       // every fact's outbox messages, in order
	Audit     []AuditEvent    // every fact's, in order
	Conflicts []FactConflict  // the facts that conflicted, in order
}

// BatchVisit is a visit a batch reads or writes.
type BatchVisit struct {
	Visit   Visit  // as the batch has left it so far
	Loaded  *Visit // as read from the store; nil for a visit the batch makes
	written bool
}

// New reports whether the batch makes the visit: it is to be inserted.
func (b *BatchVisit) New() bool { return b.Loaded == nil }

// FactConflict is a fact recorded with a conflict.
type FactConflict struct {
	FactID   string
	Conflict string
}

// NewFactBatch starts a batch over load, which reads one visit of the
// batch's tenant in the store's transaction, locked, or returns
// ErrNotFound.
func NewFactBatch(load func(id string) (Visit, error)) *FactBatch {
	return &FactBatch{load: load, visits: map[string]*BatchVisit{}, missing: map[string]bool{}}
}

// Preloaded adds visits the store has read (locked) ahead, so Apply's
// loads of them need no query.
func (b *FactBatch) Preloaded(vs ...Visit) {
	for _, v := range vs {
		if _, ok := b.visits[v.ID]; !ok {
			loaded := v
			b.visits[v.ID] = &BatchVisit{Visit: v, Loaded: &loaded}
		}
	}
}

// get returns the batch's entry of the visit, reading it when the batch
// has not; nil when the tenant has no such visit.
func (b *FactBatch) get(id string) (*BatchVisit, error) {
	if bv, ok := b.visits[id]; ok {
		return bv, nil
	}
	if b.missing[id] {
		return nil, nil
	}
	v, err := b.load(id)
	if errors.Is(err, ErrNotFound) {
		b.missing[id] = true
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	loaded := v
	bv := &BatchVisit{Visit: v, Loaded: &loaded}
	b.visits[id] = bv
	return bv, nil
}

// Apply runs fn for the fact factID and takes in what it writes. fn's
// load returns a visit as the batch has left it; fn's error is returned
// as is, and the batch is then to be abandoned.
func (b *FactBatch) Apply(factID string, fn func(load func(id string) (Visit, error), w *FactWrites) error) error {
	load := func(id string) (Visit, error) {
		bv, err := b.get(id)
		switch {
		case err != nil:
			return Visit{}, err
		case bv == nil:
			return Visit{}, ErrNotFound
		}
		return bv.Visit, nil
	}
	var w FactWrites
	if err := fn(load, &w); err != nil {
		return err
	}
	for _, v := range w.Visits {
		bv, err := b.get(v.ID)
		if err != nil {
			return fmt.Errorf("store visit %s: %w", v.ID, err)
		}
		if bv == nil {
			return fmt.Errorf("store visit %s: %w", v.ID, ErrNotFound)
		}
		bv.Visit = v
		b.wrote(bv)
	}
	for _, v := range w.New {
		if _, ok := b.visits[v.ID]; ok {
			return fmt.Errorf("create visit %s: %w: it exists", v.ID, ErrConflict)
		}
		delete(b.missing, v.ID)
		bv := &BatchVisit{Visit: v}
		b.visits[v.ID] = bv
		b.wrote(bv)
	}
	b.Visitors = append(b.Visitors, w.Visitors...)
	b.Messages = append(b.Messages, w.Messages...)
	b.Audit = append(b.Audit, w.Audit...)
	if w.Conflict != "" {
		b.Conflicts = append(b.Conflicts, FactConflict{FactID: factID, Conflict: w.Conflict})
	}
	return nil
}

func (b *FactBatch) wrote(bv *BatchVisit) {
	if !bv.written {
		bv.written = true
		b.order = append(b.order, bv)
	}
}

// Written returns the visits the batch writes, each once, as it leaves
// them, in the order first written.
func (b *FactBatch) Written() []*BatchVisit { return b.order }

// NamedVisits returns the IDs of the visits the facts name (VisitID,
// PassVisitID), sorted, each once: what a store reads ahead, in one
// statement, for Preloaded. With applied set, only the facts it marks.
func NamedVisits(facts []EdgeFact, applied []bool) []string {
	var named []string
	for i, ef := range facts {
		if applied != nil && !applied[i] {
			continue
		}
		for _, id := range []string{ef.Fact.VisitID, ef.Fact.PassVisitID} {
			if id != "" {
				named = append(named, id)
			}
		}
	}
	slices.Sort(named)
	return slices.Compact(named)
}
