package cache

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/shared/passrule"
	"github.com/svc-vms/svc/sync/protocol"
)

// record is one call of Record waiting for its commit. Records are
// pooled (records): a scan's record and its channel are reused rather
// than made anew for each scan.
type record struct {
	change LocalChange
	fact   protocol.Fact
	visits []protocol.Visit // normalized and checked
	us     []uid            // the visits' uids, each once
	row    outboxRow        // but Fact, encoded at commit with the counter

	stored protocol.Fact
	err    error
	// wake gets true when the record is committed or failed, false when
	// this call is to commit the queue (the commit before ended with it
	// first in the queue). It holds one value: each call gets exactly one
	// true, and the leader takes its own back (Record).
	wake chan bool
}

var records = sync.Pool{New: func() any { return &record{wake: make(chan bool, 1)} }}

// release returns r to the pool, keeping its slices' room.
func (r *record) release() {
	clear(r.visits) // let go of the visits' strings and times while pooled
	clear(r.row.Visits)
	*r = record{visits: r.visits[:0], us: r.us[:0], row: outboxRow{Visits: r.row.Visits[:0]}, wake: r.wake}
	records.Put(r)
}

// Record stores what a gate did, in one transaction: the visits of
// change, and fact appended to the outbox with the next counter of this
// edge; a punch fact also becomes its person's last punch (LastPunch), and
// change.RestorePunch puts one back. It returns once the transaction is
// committed and fsync'd, with the fact as stored (counter, edge and
// version set); an empty fact.EdgeID is the cache's. Nothing is stored
// when it fails: with an error wrapping protocol.ErrInvalid for an invalid
// fact or visit, ErrEdgeMismatch for a fact of another edge, ErrNoEdge
// when the cache knows no edge, ErrDuplicateFact when the fact's ID is
// already waiting, or bbolt's error.
//
// Records made while another commit is under way wait for it and are then
// committed together, in one transaction (a group commit): gates scanning
// at once share an fsync instead of queueing for one each. Each record is
// still whole or absent: one that cannot be stored fails alone, and when
// a shared transaction fails its records are committed one by one.
func (c *Cache) Record(change LocalChange, fact protocol.Fact) (protocol.Fact, error) {
	r, err := c.prepareRecord(change, fact)
	if err != nil {
		return protocol.Fact{}, fmt.Errorf("record fact: %w", err)
	}
	defer r.release()
	c.group.Lock()
	c.queue = append(c.queue, r)
	if c.leading {
		c.group.Unlock()
		if done := <-r.wake; done {
			return r.stored, r.err
		}
	} else {
		c.leading = true
		c.group.Unlock()
	}
	c.group.Lock()
	batch := c.queue
	c.queue = c.spare[:0]
	c.group.Unlock()

	c.commitRecords(batch)
	<-r.wake // this call's own record was in the batch

	c.group.Lock()
	clear(batch)
	c.spare = batch
	if len(c.queue) > 0 {
		c.queue[0].wake <- false // the next commit is theirs
	} else {
		c.leading = false
	}
	c.group.Unlock()
	return r.stored, r.err
}

// prepareRecord checks what can be checked before the commit.
func (c *Cache) prepareRecord(change LocalChange, fact protocol.Fact) (*record, error) {
	switch {
	case c.edgeID == "":
		return nil, ErrNoEdge
	case fact.EdgeID == "":
		fact.EdgeID = c.edgeID
	case fact.EdgeID != c.edgeID:
		return nil, fmt.Errorf("the fact is %s's, this is %s: %w", fact.EdgeID, c.edgeID, ErrEdgeMismatch)
	}
	fact.At = fact.At.UTC().Truncate(time.Microsecond) // the protocol's precision: what is returned is what is stored
	// The fact is checked when it is encoded, at the commit (put): an
	// invalid one fails alone there, and is not encoded twice.
	r := records.Get().(*record)
	r.change, r.fact = change, fact
	for i := range change.Visits {
		r.visits = append(r.visits, normalize(change.Visits[i]))
		v := &r.visits[i] // checked where it is kept: a copy would escape
		deskEntry(fact, v)
		if err := check(protocol.Change{Visit: v}); err != nil {
			r.release()
			return nil, fmt.Errorf("visits[%d]: %w", i, err)
		}
		u, _ := visitUID(v.ID)
		if !slices.Contains(r.us, u) {
			r.us = append(r.us, u)
			r.row.Visits = append(r.row.Visits, v.ID)
		}
	}
	return r, nil
}

// deskEntry marks the visit a walk_in or desk_check_in fact checked in
// as checked in at the desk: at no gate, and not yet through one, so an
// entry gate lets it in once (gate: the entered fact). It is marked here,
// where every desk fact is recorded, from the fact that says what
// happened, as a punch fact becomes its person's last punch.
func deskEntry(f protocol.Fact, v *protocol.Visit) {
	if (f.Kind == protocol.FactWalkIn || f.Kind == protocol.FactDeskCheckIn) && v.ID == f.VisitID &&
		v.Status == string(passrule.CheckedIn) {
		v.GateID, v.AtDesk = "", true
	}
}

// commitRecords commits batch in one transaction, or each record alone
// when that fails and there are several, and tells every record how it
// went.
func (c *Cache) commitRecords(batch []*record) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.commitLocked(batch); err != nil && len(batch) > 1 {
		for _, r := range batch {
			if !errors.Is(r.err, ErrDuplicateFact) {
				r.err = nil
				_ = c.commitLocked([]*record{r})
			}
		}
	}
	for _, r := range batch {
		r.wake <- true
	}
}

// commitLocked stores the records of batch whose facts are new in one
// transaction. A record whose fact is already in the outbox fails alone
// with ErrDuplicateFact. When the transaction fails (or cannot begin),
// every other record fails with its error, which is returned.
func (c *Cache) commitLocked(batch []*record) error {
	e := newEdit(c.view.Load(), c.in)
	counter := c.counter
	c.buf = c.buf[:0] // bbolt let go of it when the last transaction ended
	var next *View
	var ok []*record
	err := c.update(func(tx *bolt.Tx) error {
		ok = ok[:0]
		counter = c.counter
		facts := tx.Bucket(bucketFacts)
		for _, r := range batch {
			var id [64]byte // a fact ID is 32 bytes
			if facts.Get(append(id[:0], r.fact.ID...)) != nil {
				r.err = fmt.Errorf("record fact: fact %s: %w", r.fact.ID, ErrDuplicateFact)
				continue
			}
			counter++
			if err := c.put(tx, e, r, counter); err != nil {
				return err
			}
			ok = append(ok, r)
		}
		if len(ok) == 0 {
			return nil
		}
		if err := tx.Bucket(bucketMeta).Put(metaCounter, u64(counter)); err != nil {
			return err
		}
		var err error
		next, err = e.done()
		return err
	})
	if err != nil {
		for _, r := range batch {
			if !errors.Is(r.err, ErrDuplicateFact) {
				r.stored, r.err = protocol.Fact{}, fmt.Errorf("record fact: %w", err)
			}
		}
		return err
	}
	if len(ok) == 0 {
		return nil
	}
	c.counter = counter
	for _, r := range ok {
		for _, u := range r.us {
			c.pending[u]++
		}
	}
	c.view.Store(next)
	return nil
}

// put writes one record in tx with the counter given, and into e.
func (c *Cache) put(tx *bolt.Tx, e *edit, r *record, counter uint64) error {
	// The fact is encoded where it is returned from: r is on the heap
	// already, a copy would be one more allocation.
	r.stored = r.fact
	fact := &r.stored
	fact.Counter = counter
	raw, err := protocol.Encode(fact)
	if err != nil {
		return err
	}
	start := len(c.buf)
	c.buf = appendRow(c.buf, raw, r.row.Visits)
	rowJSON := c.buf[start:len(c.buf):len(c.buf)]
	for _, v := range r.visits {
		if err := c.putVisit(tx, e, v); err != nil {
			return err
		}
	}
	// Only a cloud version received while the visit is pending may
	// replace it at the acknowledgement; while it stays pending, the one
	// received so far is kept.
	for _, u := range r.us {
		e.markPending(u, true)
		if c.pending[u] == 0 {
			start := len(c.buf)
			c.buf = appendID(c.buf, ids.Visit, u)
			if err := tx.Bucket(bucketCloud).Delete(c.buf[start:]); err != nil {
				return err
			}
		}
	}
	start = len(c.buf)
	c.buf = binary.BigEndian.AppendUint64(c.buf, counter)
	key := c.buf[start:len(c.buf):len(c.buf)]
	start = len(c.buf)
	c.buf = append(c.buf, fact.ID...)
	factKey := c.buf[start:len(c.buf):len(c.buf)]
	if err := tx.Bucket(bucketOutbox).Put(key, rowJSON); err != nil {
		return err
	}
	if err := tx.Bucket(bucketFacts).Put(factKey, key); err != nil {
		return err
	}
	if fact.Kind == protocol.FactPunch {
		if err := tx.Bucket(bucketPunches).Put([]byte(fact.PersonID), raw); err != nil {
			return err
		}
		if err := e.putPunch(*fact); err != nil {
			return err
		}
	}
	if rp := r.change.RestorePunch; rp != nil {
		if err := c.restorePunch(tx, e, rp); err != nil {
			return err
		}
	}
	e.v.outbox++
	r.err = nil
	return nil
}

// appendRow appends the outbox row of a fact encoded as raw and the
// visits it changed to b: the bytes json.Marshal makes of the outboxRow,
// without its garbage. raw is protocol.Encode's, already compact and
// HTML-escaped; visit IDs are TypeIDs, which JSON takes as they are.
func appendRow(b, raw []byte, visits []string) []byte {
	b = append(b, `{"fact":`...)
	b = append(b, raw...)
	if len(visits) > 0 {
		b = append(b, `,"visits":[`...)
		for i, id := range visits {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '"')
			b = append(b, id...)
			b = append(b, '"')
		}
		b = append(b, ']')
	}
	return append(b, '}')
}
