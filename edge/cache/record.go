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
// went. Then, when the journal holds flushEvery records, it writes them
// to the file: the batch's gates go on meanwhile, and only the call that
// led this commit waits for the file.
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
	if c.j != nil && c.j.due() {
		_ = c.flushLocked() // on failure the records stay in the journal, and WriteFailure says so
	}
}

// commitLocked stores the records of batch whose facts are new, at once:
// one frame appended to the journal and fdatasync'd, or, without a
// journal, one transaction of the file. A record whose fact is already in
// the outbox fails alone with ErrDuplicateFact. When the write fails (or
// cannot begin), every other record fails with its error, which is
// returned. The View shows the records once they are durable.
func (c *Cache) commitLocked(batch []*record) error {
	if d := c.damaged.Load(); d != nil {
		return c.fail(batch, d)
	}
	e := newEdit(c.view.Load(), c.in)
	counter := c.counter
	c.buf = c.buf[:0]
	if c.j != nil {
		c.buf = appendFrameStart(c.buf)
	}
	c.ok = c.ok[:0]
	for _, r := range batch {
		if c.duplicate(r) {
			r.err = fmt.Errorf("record fact: fact %s: %w", r.fact.ID, ErrDuplicateFact)
			continue
		}
		counter++
		if err := c.put(e, r, counter); err != nil {
			return c.fail(batch, err)
		}
		c.ok = append(c.ok, r)
	}
	if len(c.ok) == 0 {
		return nil
	}
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], counter)
	c.buf = appendPut(c.buf, jMeta, metaCounter, n[:])
	next, err := e.done()
	if err == nil {
		err = c.persist(c.counter+1, counter)
	}
	if err != nil {
		return c.fail(batch, err)
	}
	c.counter = counter
	for _, r := range c.ok {
		for _, u := range r.us {
			c.pending[u]++
		}
		if u, ok := parseUID(ids.Fact, r.stored.ID); ok {
			c.waiting[u] = holdVisits(r.us) // a copy: r.us is the pooled record's
		}
	}
	clear(c.ok)
	c.view.Store(next)
	return nil
}

// factVisits is the visits a waiting fact's outbox row names (Cache's
// waiting), as uids: the first held in place, as every fact a gate
// records names one, so that Record does not allocate for it.
type factVisits struct {
	n     int
	first [1]uid
	more  []uid // the rest, past the first
}

// holdVisits copies us.
func holdVisits(us []uid) factVisits {
	fv := factVisits{n: len(us)}
	if k := copy(fv.first[:], us); k < len(us) {
		fv.more = slices.Clone(us[k:])
	}
	return fv
}

// list returns the visits in order. One is read through fv's own field:
// fv is the caller's copy.
func (fv *factVisits) list() []uid {
	if fv.n <= len(fv.first) {
		return fv.first[:fv.n]
	}
	return append(fv.first[:], fv.more...)
}

// duplicate reports whether r's fact is in the outbox, or earlier in the
// commit under way (c.ok).
func (c *Cache) duplicate(r *record) bool {
	u, ok := parseUID(ids.Fact, r.fact.ID)
	if !ok {
		return false // not a fact ID: the fact fails as invalid when it is encoded
	}
	if _, ok := c.waiting[u]; ok {
		return true
	}
	for _, o := range c.ok {
		if o.fact.ID == r.fact.ID {
			return true
		}
	}
	return false
}

// fail fails every record of batch but the duplicates with err, and
// returns it.
func (c *Cache) fail(batch []*record, err error) error {
	for _, r := range batch {
		if !errors.Is(r.err, ErrDuplicateFact) {
			r.stored, r.err = protocol.Fact{}, fmt.Errorf("record fact: %w", err)
		}
	}
	clear(c.ok)
	return err
}

// persist makes the commit in c.buf durable, assigning the counters first
// to last: appended to the journal as a frame and fdatasync'd, or written
// to the file in one transaction when there is no journal, or when the
// frame is bigger than the journal. A journal too full for the frame is
// flushed first. After a failed write (WriteFailure), the file must take
// a commit before the journal takes a frame: the journal is flushed, or,
// holding nothing, an empty commit is made, which clears WriteFailure. So
// while the file takes no writes neither does the journal, a record fails
// as it did before the journal (the gate refuses record_failed), and the
// appliance is healthy again only once the file has taken a write.
func (c *Cache) persist(first, last uint64) error {
	if c.j == nil {
		return c.update(func(tx *bolt.Tx) error { return applyOps(tx, c.buf, true) })
	}
	switch {
	case c.failing.Load() != nil:
		if err := c.update(func(*bolt.Tx) error { return nil }); err != nil { // applies the journal, if it holds anything
			return err
		}
	case !c.j.fits(len(c.buf)):
		if err := c.flushLocked(); err != nil {
			return err
		}
	}
	if !c.j.fits(len(c.buf)) {
		return c.update(func(tx *bolt.Tx) error { return applyOps(tx, c.buf[frameHeader:], true) })
	}
	sealFrame(c.buf, c.j.salt, first, last)
	err := c.j.write(c.buf, int(last-first+1))
	if err != nil {
		failed := err // its own variable: &err would move err to the heap on every call
		c.failing.Store(&failed)
	}
	return err
}

// put appends the ops of one record, with the counter given, to c.buf,
// and makes its changes in e.
func (c *Cache) put(e *edit, r *record, counter uint64) error {
	// The fact is encoded where it is returned from: r is on the heap
	// already, a copy would be one more allocation.
	r.stored = r.fact
	fact := &r.stored
	fact.Counter = counter
	raw, err := protocol.EncodeWith(&c.enc, fact) // c.enc's bytes, copied into c.buf below
	if err != nil {
		return err
	}
	var key [8]byte
	binary.BigEndian.PutUint64(key[:], counter)
	c.buf = startValue(c.buf, jOutbox, key[:])
	start := len(c.buf)
	c.buf = appendRow(c.buf, raw, r.row.Visits)
	endValue(c.buf, start)
	c.buf = appendPut(c.buf, jFacts, fact.ID, key[:])
	for i := range r.visits {
		if err := c.recordVisit(e, &r.visits[i]); err != nil {
			return err
		}
	}
	// The cloud's version of a visit is kept only while the visit is
	// pending (Apply, ReplaceSnapshot), and Ack deletes it with the last
	// fact naming the visit, in its transaction (a file where one
	// outlives it does not open: loadCloud): a visit becoming pending has
	// none to delete.
	for _, u := range r.us {
		e.markPending(u, true)
	}
	if fact.Kind == protocol.FactPunch {
		c.buf = appendPut(c.buf, jPunches, fact.PersonID, raw)
		if err := e.putPunch(*fact); err != nil {
			return err
		}
	}
	if rp := r.change.RestorePunch; rp != nil {
		if err := c.restorePunch(e, rp); err != nil {
			return err
		}
	}
	e.v.outbox++
	r.err = nil
	return nil
}

// recordVisit appends the put of a normalized, valid visit to c.buf and
// puts it in the edit, as putVisit does in a transaction.
func (c *Cache) recordVisit(e *edit, v *protocol.Visit) error {
	u, x, xe, err := e.entry(v)
	if err != nil {
		return fmt.Errorf("visit %s: %w", v.ID, err)
	}
	c.buf = startValue(c.buf, jVisits, v.ID)
	start := len(c.buf)
	if c.buf, err = appendVisit(c.buf, v); err != nil {
		return fmt.Errorf("encode %s: %w", v.ID, err)
	}
	endValue(c.buf, start)
	e.putVisit(u, x, xe)
	return nil
}

// restorePunch puts back a person's last punch, in c.buf and the edit.
func (c *Cache) restorePunch(e *edit, r *PunchRestore) error {
	if r.Last == nil {
		c.buf = appendDelete(c.buf, jPunches, r.PersonID)
		return e.restorePunch(r.PersonID, nil)
	}
	last := *r.Last
	if last.Kind != protocol.FactPunch || last.PersonID != r.PersonID {
		return fmt.Errorf("restore punch: fact %s is not a punch of %s: %w", last.ID, r.PersonID, protocol.ErrInvalid)
	}
	raw, err := protocol.Encode(&last)
	if err != nil {
		return fmt.Errorf("restore punch: %w", err)
	}
	c.buf = appendPut(c.buf, jPunches, r.PersonID, raw)
	return e.restorePunch(r.PersonID, &last)
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
