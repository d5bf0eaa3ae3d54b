package cache

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/shared/passrule"
	"github.com/svc-vms/svc/sync/protocol"
)

// lockTimeout bounds how long Open waits for another process holding the
// file, so a second svc-edge fails with a reason instead of hanging.
const lockTimeout = 2 * time.Second

// Options configure Open.
type Options struct {
	// EdgeID is the appliance's edge_ ID, which Record stamps on every
	// fact. A new file takes it; a file of another edge is refused with
	// ErrEdgeMismatch. Empty means the file's own.
	EdgeID string
	// KeepSchema refuses, with ErrSchemaChange, a file this build would
	// migrate (an older schema, or buckets it would add): a release on
	// trial (edge/update) opens the cache so, so that the release before
	// it, should the trial roll back, still reads the file they share.
	KeepSchema bool
}

// Cache is the appliance's durable state in one bbolt file, and the View
// of it the gate path reads. Its methods are safe for concurrent use;
// writes are serialised.
type Cache struct {
	db     *bolt.DB
	file   *os.File // bbolt's, for Close after a fault; nil where not opened by Open
	path   string
	edgeID string
	view   atomic.Pointer[View]
	// failing is the last commit that failed, nil after one succeeds.
	failing atomic.Pointer[error]

	damaged     atomic.Pointer[DamagedError] // set once reading the file failed
	damagedOnce sync.Once
	damagedCh   chan struct{} // closed when damaged is set

	// mu serialises writers, so Views are swapped in the order their
	// transactions committed, and guards the fields below.
	mu      sync.Mutex
	counter uint64      // last fact counter assigned
	pending map[uid]int // visit → facts in the outbox that changed it
	in      *interner
	// waiting holds the IDs of the facts in the outbox, in the file or
	// the journal, each with the visits its row names (outboxRow.Visits):
	// Record's duplicate check, which no longer reads the file, and what
	// Ack uncounts, which need not decode the row.
	waiting map[uid]factVisits
	// j is the journal Record appends to; nil when records go straight
	// to the file (KeepSchema, or a cache not opened by Open).
	j *journal

	// hwMu guards hwCh, closed and replaced whenever a committed write
	// changes the View's hardware (HardwareChanged).
	hwMu sync.Mutex
	hwCh chan struct{}

	// group guards the records waiting for a commit (Record): leading
	// is true while one call commits the queue for everyone in it.
	group   sync.Mutex
	queue   []*record
	spare   []*record // the last batch's slice, for the next queue
	leading bool

	// buf holds what a commit of records writes (a journal frame, or the
	// ops of one transaction) until it is written; reused, under mu.
	buf []byte
	ok  []*record        // the records of the commit under way; reused, under mu
	enc protocol.Encoder // a record's fact, encoded; reused, under mu
}

// LocalChange is the state a gate's action leaves behind, stored in the
// same transaction as the action's fact.
type LocalChange struct {
	// Visits are the visits the action changed, each whole as it now is:
	// the visit checked in with uses+1; a re-entry's new visit and the
	// pass's visit naming it; the visit checked out. None for a refused
	// scan.
	Visits []protocol.Visit
	// RestorePunch, for a refusal that voids a punch, puts the person's
	// last punch back as it was before it; nil leaves last punches alone.
	RestorePunch *PunchRestore
}

// PunchRestore is a person's last punch to put back: Last is nil when
// they had none.
type PunchRestore struct {
	PersonID string
	Last     *protocol.Fact
}

// Open opens the cache file at path, or creates it when there is no file
// there, and builds the View from it. Only a missing file is a new cache:
// an empty, short or damaged one is refused with a *DamagedError (matching
// ErrDamaged) naming the file and what is wrong, and is left as it was:
// Open checks every page (checkFile) and every value before it writes
// anything, so it never crashes on the file and never changes a damaged
// one. A value that does not decode or validate is also a *CorruptError
// naming its bucket and key. It also returns an error wrapping
// ErrEdgeMismatch when the file belongs to another edge, and bbolt's errors
// (ErrTimeout while another process holds the file).
func Open(path string, opts Options) (*Cache, error) {
	if opts.EdgeID != "" && !ids.Valid(ids.Edge, opts.EdgeID) {
		return nil, fmt.Errorf("open cache: %q is not an edge ID", opts.EdgeID)
	}
	if err := create(path, opts.EdgeID); err != nil {
		return nil, fmt.Errorf("open cache %s: %w", path, err)
	}
	db, file, err := openDB(path, false)
	if err != nil {
		return nil, openError(path, err)
	}
	c := &Cache{db: db, file: file, path: path, pending: map[uid]int{}, in: newInterner()}
	if err := c.open(opts.EdgeID, opts.KeepSchema); err != nil {
		_ = db.Close()
		return nil, openError(path, err)
	}
	// A release on trial writes records straight to the file: the
	// release it would roll back to may not know the journal. So does a
	// file without a salt (init writes one; none means a frame could
	// never be replayed).
	if !opts.KeepSchema {
		var salt uint64
		err := c.read(func(tx *bolt.Tx) error { salt = journalSalt(tx); return nil })
		if err == nil && salt != 0 {
			c.j, err = openJournal(path, salt)
		}
		if err != nil {
			_ = db.Close()
			return nil, openError(path, err)
		}
	}
	c.dropMapped()
	return c, nil
}

// openError names the file in an error of Open, and makes a value that
// does not decode a *DamagedError, like damage bbolt reports.
func openError(path string, err error) error {
	var ce *CorruptError
	if errors.As(err, &ce) && !errors.Is(err, ErrDamaged) {
		err = &DamagedError{Path: path, Err: err}
	}
	if errors.Is(err, ErrDamaged) {
		return fmt.Errorf("open cache: %w", err) // the error names the file
	}
	return fmt.Errorf("open cache %s: %w", path, err)
}

// open checks the file and reads it (prepare, then load, both read-only),
// and only then writes what init must: the buckets and edge of a file
// from an older build, or the migration of a schema 1 file.
func (c *Cache) open(edgeID string, keepSchema bool) error {
	st, err := c.prepare(edgeID)
	if err != nil {
		return err
	}
	if keepSchema && st.migrate {
		return fmt.Errorf("%w: the file is schema %s and this build would migrate it to %s", ErrSchemaChange, st.schema, schemaVersion)
	}
	if err := c.load(st.schema); err != nil {
		return err
	}
	// What the journal holds that the file lacks goes in once the file
	// is known sound, and the View is built again with it. A release on
	// trial replays too: the records are the release's before it.
	if n, err := c.replay(); err != nil {
		return err
	} else if n > 0 {
		if err := c.load(st.schema); err != nil {
			return err
		}
	}
	if !st.write {
		return nil
	}
	if err := c.init(); err != nil {
		return err
	}
	if st.schema == schemaJSON || st.schema == schemaBinary {
		return c.load(schemaVersion) // as migrated
	}
	return nil
}

// buckets are the cache's buckets, all at the root of the file.
var buckets = [][]byte{bucketMeta, bucketVisits, bucketGates, bucketKeys, bucketOutbox, bucketFacts, bucketCloud, bucketPeople, bucketPunches,
	bucketTeams, bucketTypes}

// fileState is what prepare found.
type fileState struct {
	schema string // "" for a file init has not yet written
	write  bool   // init has something to write
	// migrate is set when what init writes would change the file for an
	// older build: its schema, or buckets it does not know.
	migrate bool
}

// prepare checks, without writing, what init would: that the root holds
// only the cache's buckets, the schema is one this build reads, and the
// file is this edge's; and it sets the edge. A bucket that is missing is
// one init creates (a file of an older build), empty until then.
func (c *Cache) prepare(edgeID string) (st fileState, err error) {
	err = c.read(func(tx *bolt.Tx) error {
		cur := tx.Cursor()
		for k, v := cur.First(); k != nil; k, v = cur.Next() {
			if v != nil || !slices.ContainsFunc(buckets, func(b []byte) bool { return bytes.Equal(b, k) }) {
				return corrupt(k, nil, errors.New("the root of the file holds what is not one of the cache's buckets"))
			}
		}
		meta := tx.Bucket(bucketMeta)
		st.schema = string(get(meta, metaSchema))
		if len(get(meta, metaJournal)) != 8 {
			st.write = true // the salt; an older build ignores it, so it is no migration
		}
		for _, name := range buckets {
			if tx.Bucket(name) == nil {
				st.write = true
				st.migrate = st.schema != ""
			}
		}
		switch st.schema {
		case "":
			st.write = true
		case schemaJSON, schemaBinary:
			st.write, st.migrate = true, true
		case schemaVersion:
		default:
			return fmt.Errorf("schema %q; this build reads schemas %s, %s and %s", st.schema, schemaJSON, schemaBinary, schemaVersion)
		}
		stored := string(get(meta, metaEdgeID))
		switch {
		case stored != "" && !ids.Valid(ids.Edge, stored):
			return corrupt(bucketMeta, metaEdgeID, fmt.Errorf("%q is not an edge ID", stored))
		case edgeID == "" || edgeID == stored:
			c.edgeID = stored
		case stored == "":
			c.edgeID = edgeID
			st.write = true
		default:
			return fmt.Errorf("%w: the file is %s's, not %s's", ErrEdgeMismatch, stored, edgeID)
		}
		return nil
	})
	return st, err
}

// get is b.Get for a bucket that may be missing.
func get(b *bolt.Bucket, key []byte) []byte {
	if b == nil {
		return nil
	}
	return b.Get(key)
}

// forEach is the bucket's ForEach for a bucket that may be missing.
func forEach(tx *bolt.Tx, name []byte, fn func(k, v []byte) error) error {
	b := tx.Bucket(name)
	if b == nil {
		return nil
	}
	return b.ForEach(fn)
}

// init writes what prepare found missing, in one transaction: the
// buckets, the schema and the edge (c.edgeID, as prepare set it), and
// migrates a schema 1 file, whole or not at all.
func (c *Cache) init() error {
	return c.write(func(tx *bolt.Tx) error {
		for _, name := range buckets {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return fmt.Errorf("create bucket %s: %w", name, err)
			}
		}
		meta := tx.Bucket(bucketMeta)
		schema := string(meta.Get(metaSchema))
		if schema == "" {
			if err := meta.Put(metaSchema, []byte(schemaVersion)); err != nil {
				return err
			}
		}
		if len(meta.Get(metaJournal)) != 8 {
			if err := meta.Put(metaJournal, newSalt()); err != nil {
				return err
			}
		}
		if meta.Get(metaEdgeID) == nil && c.edgeID != "" {
			if err := meta.Put(metaEdgeID, []byte(c.edgeID)); err != nil {
				return err
			}
		}
		if schema == schemaJSON {
			if err := migrateJSON(tx); err != nil {
				return err
			}
		}
		if schema == schemaJSON || schema == schemaBinary {
			return migrateKiosk(tx)
		}
		return nil
	})
}

// read runs fn in a read transaction, write in a write transaction,
// both through run.
func (c *Cache) read(fn func(*bolt.Tx) error) error {
	return c.run(func() error { return c.db.View(fn) })
}

func (c *Cache) write(fn func(*bolt.Tx) error) error {
	return c.run(func() error { return c.db.Update(fn) })
}

// run runs fn, a bbolt transaction, under protect. When reading the file
// failed (a fault on its map, a panic in bbolt), the transaction was
// rolled back as bbolt unwound, but the cache stops there: that call and
// every later one return the same *DamagedError, and Damaged is closed, so
// the appliance stops rather than run on a file it cannot trust.
func (c *Cache) run(fn func() error) error {
	if d := c.damaged.Load(); d != nil {
		return d
	}
	err := c.checkSize()
	if err == nil {
		err = protect(fn)
	}
	var fault *faultError
	if !errors.As(err, &fault) {
		return err
	}
	d := &DamagedError{Path: c.path, Err: err}
	if c.damaged.CompareAndSwap(nil, d) {
		close(c.done())
	}
	return c.damaged.Load()
}

// checkSize is a *faultError when the file no longer holds its two meta
// pages. bbolt reads them through its map as it begins a transaction,
// holding its locks without a deferred unlock: a fault there would leave
// them held, so a file that shrank that far is caught here instead. A
// file that shrank less faults later in the transaction, which bbolt
// rolls back, releasing its locks, as the panic unwinds.
func (c *Cache) checkSize() error {
	if c.file == nil {
		return nil
	}
	st, err := c.file.Stat()
	if err != nil {
		return &faultError{v: err}
	}
	if min := 2 * int64(c.db.Info().PageSize); st.Size() < min {
		return &faultError{v: fmt.Sprintf("the file shrank to %d bytes, less than its two meta pages (%d)", st.Size(), min)}
	}
	return nil
}

// Damaged is closed when reading the file failed after Open (see
// DamagedErr); it is never closed otherwise.
func (c *Cache) Damaged() <-chan struct{} { return c.done() }

// DamagedErr returns the *DamagedError every method now returns, once
// Damaged is closed, and nil before.
func (c *Cache) DamagedErr() error {
	if d := c.damaged.Load(); d != nil {
		return d
	}
	return nil
}

func (c *Cache) done() chan struct{} {
	c.damagedOnce.Do(func() { c.damagedCh = make(chan struct{}) })
	return c.damagedCh
}

// load reads the whole file, checking every value, and publishes the
// View. It reads a file of schema (a schema 1 file's visits are JSON) and
// takes a missing bucket for an empty one, as init would create it.
func (c *Cache) load(schema string) error {
	decode := decodeVisit
	if schema == schemaJSON {
		decode = func(raw []byte) (protocol.Visit, error) {
			v, err := decodeVisitJSON(raw)
			return normalize(v), err
		}
	}
	return c.read(func(tx *bolt.Tx) error {
		c.counter, c.pending, c.waiting = 0, map[uid]int{}, map[uid]factVisits{}
		e := newFullEdit(c.in)
		meta := tx.Bucket(bucketMeta)
		var err error
		if b := get(meta, metaSeq); b != nil {
			if e.v.seq, err = readU64(b); err != nil {
				return corrupt(bucketMeta, metaSeq, err)
			}
		}
		if b := get(meta, metaCounter); b != nil {
			if c.counter, err = readU64(b); err != nil {
				return corrupt(bucketMeta, metaCounter, err)
			}
		}
		if b := get(meta, metaSyncedAt); b != nil {
			if e.v.syncedAt, err = time.Parse(time.RFC3339Nano, string(b)); err != nil {
				return corrupt(bucketMeta, metaSyncedAt, err)
			}
		}
		if b := get(meta, metaSettings); b != nil {
			s, err := decodeSettings(b)
			if err == nil {
				err = e.setSettings(s)
			}
			if err != nil {
				return corrupt(bucketMeta, metaSettings, err)
			}
		}
		if b := get(meta, metaHardware); b != nil {
			if err := c.loadHardware(e, b); err != nil {
				return corrupt(bucketMeta, metaHardware, err)
			}
		}
		err = forEach(tx, bucketGates, func(k, b []byte) error {
			g, err := decodeGate(b)
			if err == nil && (g.ID != string(k) || g.Removed) {
				err = fmt.Errorf("holds gate %s (removed %t)", g.ID, g.Removed)
			}
			if err != nil {
				return corrupt(bucketGates, k, err)
			}
			e.putGate(g)
			return nil
		})
		if err != nil {
			return err
		}
		err = forEach(tx, bucketKeys, func(k, b []byte) error {
			key, err := decodeKey(b)
			if err == nil && key.ID != string(k) {
				err = fmt.Errorf("holds key %s", key.ID)
			}
			if err != nil {
				return corrupt(bucketKeys, k, err)
			}
			e.putKey(key)
			return nil
		})
		if err != nil {
			return err
		}
		err = forEach(tx, bucketPeople, func(k, b []byte) error {
			p, err := decodePerson(b)
			if err == nil && p.ID != string(k) {
				err = fmt.Errorf("holds person %s", p.ID)
			}
			if err == nil {
				err = e.putPerson(p)
			}
			if err != nil {
				return corrupt(bucketPeople, k, err)
			}
			return nil
		})
		if err != nil {
			return err
		}
		err = forEach(tx, bucketTeams, func(k, b []byte) error {
			var t protocol.Team
			err := protocol.DecodeObject(b, &t)
			if err == nil && t.ID != string(k) {
				err = fmt.Errorf("holds team %s", t.ID)
			}
			if err != nil {
				return corrupt(bucketTeams, k, err)
			}
			e.putTeam(t)
			return nil
		})
		if err != nil {
			return err
		}
		err = forEach(tx, bucketTypes, func(k, b []byte) error {
			var t protocol.VisitType
			err := protocol.DecodeObject(b, &t)
			if err == nil && t.Key != string(k) {
				err = fmt.Errorf("holds visit type %s", t.Key)
			}
			if err != nil {
				return corrupt(bucketTypes, k, err)
			}
			e.putVisitType(t)
			return nil
		})
		if err != nil {
			return err
		}
		if err := c.loadPunches(tx, e); err != nil {
			return err
		}
		if err := c.loadVisits(tx, e, decode); err != nil {
			return err
		}
		if err := c.loadOutbox(tx, e); err != nil {
			return err
		}
		if err := c.loadCloud(tx, e, decode); err != nil {
			return err
		}
		v, err := e.done()
		if err != nil {
			return corrupt(bucketKeys, nil, err)
		}
		c.view.Store(v)
		return nil
	})
}

// dropEvery is how many visits Open and the migration read between calls
// of dropPages: about 1.5 MB of a schema 2 file, 7 MB of a schema 1 file.
const dropEvery = 8192

// loadVisits decodes the visits on every core: decoding and validating
// them is most of the time Open takes. The cursor's values point into bbolt's map, valid
// until the transaction ends, which is after every worker has finished.
// One goroutine packs the decoded visits, since the interner and the edit
// are not shared.
func (c *Cache) loadVisits(tx *bolt.Tx, e *edit, decode func([]byte) (protocol.Visit, error)) error {
	b := tx.Bucket(bucketVisits)
	if b == nil {
		return nil
	}
	type item struct {
		key, raw []byte
		v        protocol.Visit
		err      error
	}
	const chunk = 512
	workers := runtime.GOMAXPROCS(0)
	jobs, results := make(chan []item, workers), make(chan []item, workers)
	var decoders sync.WaitGroup
	for range workers {
		decoders.Go(func() {
			for items := range jobs {
				for i := range items {
					it := &items[i]
					// it.raw is in bbolt's map: a fault reading it is
					// this goroutine's (see protect).
					it.err = protect(func() (err error) {
						it.v, err = decode(it.raw)
						return err
					})
					if it.err == nil && it.v.ID != string(it.key) {
						it.err = fmt.Errorf("holds visit %s", it.v.ID)
					}
				}
				results <- items
			}
		})
	}
	var failed atomic.Bool
	packed := make(chan error, 1)
	go func() {
		var first error
		for items := range results {
			for i := range items {
				it := &items[i]
				var u uid
				var x visitEntry
				var xe visitExtra
				if it.err == nil {
					u, x, xe, it.err = e.pack(&it.v, nil)
				}
				if it.err != nil {
					if first == nil {
						first = corrupt(bucketVisits, it.key, it.err)
						failed.Store(true)
					}
					continue
				}
				e.putVisit(u, x, xe)
			}
		}
		packed <- first
	}()

	cur := b.Cursor()
	items := make([]item, 0, chunk)
	n := 0
	for k, v := cur.First(); k != nil && !failed.Load(); k, v = cur.Next() {
		items = append(items, item{key: k, raw: v})
		if len(items) == chunk {
			jobs <- items
			items = make([]item, 0, chunk)
		}
		// The pages read so far need not stay resident until the end
		// (dropMapped): give them back as the load goes, so Open's peak
		// holds little of the file. A page a decoder is still reading is
		// faulted back in from the page cache.
		if n++; n%dropEvery == 0 {
			_ = dropPages(tx)
		}
	}
	jobs <- items
	close(jobs)
	decoders.Wait()
	close(results)
	return <-packed
}

// loadPunches checks each person's last punch: a punch fact of this edge,
// filed under its person, with a counter this edge assigned.
func (c *Cache) loadPunches(tx *bolt.Tx, e *edit) error {
	return forEach(tx, bucketPunches, func(k, b []byte) error {
		var f protocol.Fact
		err := protocol.Decode(b, &f)
		switch {
		case err != nil:
		case f.Kind != protocol.FactPunch:
			err = fmt.Errorf("holds a %s fact", f.Kind)
		case f.PersonID != string(k):
			err = fmt.Errorf("holds a punch of person %s", f.PersonID)
		case f.EdgeID != c.edgeID:
			err = fmt.Errorf("punch of edge %s in the file of %s", f.EdgeID, c.edgeID)
		case f.Counter > c.counter:
			err = fmt.Errorf("counter %d is past the last assigned, %d", f.Counter, c.counter)
		default:
			err = e.putPunch(f)
		}
		if err != nil {
			return corrupt(bucketPunches, k, err)
		}
		return nil
	})
}

// loadOutbox checks every waiting fact and its index entry, and counts
// the visits each one protects.
func (c *Cache) loadOutbox(tx *bolt.Tx, e *edit) error {
	facts := tx.Bucket(bucketFacts)
	err := forEach(tx, bucketOutbox, func(k, b []byte) error {
		row, f, err := decodeRow(b)
		switch {
		case err != nil:
		case len(k) != 8 || readCounter(k) != f.Counter:
			err = fmt.Errorf("holds fact counter %d", f.Counter)
		case f.Counter > c.counter:
			err = fmt.Errorf("counter %d is past the last assigned, %d", f.Counter, c.counter)
		case f.EdgeID != c.edgeID:
			err = fmt.Errorf("fact of edge %s in the file of %s", f.EdgeID, c.edgeID)
		case string(get(facts, []byte(f.ID))) != string(k):
			err = fmt.Errorf("fact %s is missing from the facts index", f.ID)
		}
		var us []uid
		for _, id := range row.Visits {
			u, ok := visitUID(id)
			if !ok && err == nil {
				err = fmt.Errorf("visits: %q is not a visit ID", id)
			}
			us = append(us, u)
		}
		if err != nil {
			return corrupt(bucketOutbox, k, err)
		}
		for _, u := range us {
			c.pending[u]++
			e.markPending(u, true)
		}
		if u, ok := parseUID(ids.Fact, f.ID); ok {
			c.waiting[u] = holdVisits(us)
		}
		e.v.outbox++
		return nil
	})
	if err != nil {
		return err
	}
	n := 0
	if facts != nil {
		n = facts.Stats().KeyN
	}
	if n != e.v.outbox {
		return corrupt(bucketFacts, nil, fmt.Errorf("indexes %d facts; the outbox holds %d", n, e.v.outbox))
	}
	return nil
}

// loadCloud checks the cloud's versions of pending visits: each decodes
// strictly, is filed under its own ID, and belongs to a visit that is in
// the file and that a waiting fact names (Ack deletes it with the last).
func (c *Cache) loadCloud(tx *bolt.Tx, e *edit, decode func([]byte) (protocol.Visit, error)) error {
	return forEach(tx, bucketCloud, func(k, b []byte) error {
		v, err := decode(b)
		u, ok := visitUID(string(k))
		switch {
		case err != nil:
		case v.ID != string(k):
			err = fmt.Errorf("holds visit %s", v.ID)
		case !ok:
			err = fmt.Errorf("%q is not a visit ID", k)
		case c.pending[u] == 0:
			err = fmt.Errorf("no waiting fact names visit %s", k)
		default:
			if _, ok := e.visit(u); !ok {
				err = fmt.Errorf("visit %s is not in the visits", k)
			}
		}
		if err != nil {
			return corrupt(bucketCloud, k, err)
		}
		return nil
	})
}

func readCounter(k []byte) uint64 { n, _ := readU64(k); return n }

// Close closes the file. The last View stays readable; writes fail.
// Once the cache is damaged (Damaged), it closes only the file, and with
// it the lock: bbolt may still hold its own locks from the fault, so
// closing it could wait forever; its map goes with the process.
func (c *Cache) Close() error {
	defer c.closeJournal()
	if c.damaged.Load() != nil {
		if c.file != nil {
			_ = c.file.Close()
		}
		return nil
	}
	// The journal's records go to the file, so that a release that does
	// not know the journal finds them there. When this fails they stay in
	// the journal, which the next Open replays.
	ferr := c.flush()
	if err := c.db.Close(); err != nil {
		return fmt.Errorf("close cache: %w", err)
	}
	if ferr != nil {
		return fmt.Errorf("close cache: %w", ferr)
	}
	return nil
}

// View returns the state as of the last committed write. It is never nil
// and never changes; call View again to see later writes.
func (c *Cache) View() *View { return c.view.Load() }

// Apply applies a run of the site's change feed in one transaction and
// returns how many changes it applied. Changes at or below View().Seq()
// were applied before (a redelivery) and are skipped. It returns an error
// wrapping ErrGap when the first change is past View().Seq()+1, and one
// wrapping protocol.ErrInvalid when a change fails the protocol's checks
// or the run is not consecutive; either way it applies nothing. A visit
// with a fact still in the outbox is merged by the conflict rule (doc.go).
func (c *Cache) Apply(changes []protocol.Change) (applied int, err error) {
	if len(changes) == 0 {
		return 0, nil
	}
	for i := range changes {
		if err := check(changes[i]); err != nil {
			return 0, fmt.Errorf("apply changes: changes[%d]: %w", i, err)
		}
		if i > 0 && changes[i].Seq != changes[i-1].Seq+1 {
			return 0, fmt.Errorf("apply changes: changes[%d].seq %d does not follow %d: %w",
				i, changes[i].Seq, changes[i-1].Seq, protocol.ErrInvalid)
		}
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	cur := c.view.Load()
	if first := changes[0].Seq; first > cur.seq+1 {
		return 0, fmt.Errorf("apply changes: the batch starts at %d and the cache is at %d: %w", first, cur.seq, ErrGap)
	}
	skip := cur.seq + 1 - changes[0].Seq // changes applied before
	if skip >= uint64(len(changes)) {
		return 0, nil
	}
	todo := changes[skip:]
	e := newEdit(cur, c.in)
	var next *View
	err = c.update(func(tx *bolt.Tx) error {
		for i := range todo {
			if err := c.applyOne(tx, e, &todo[i]); err != nil {
				return fmt.Errorf("seq %d: %w", todo[i].Seq, err)
			}
		}
		e.v.seq = todo[len(todo)-1].Seq
		if err := tx.Bucket(bucketMeta).Put(metaSeq, u64(e.v.seq)); err != nil {
			return err
		}
		var err error
		next, err = e.done()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("apply changes: %w", err)
	}
	c.publish(cur, next)
	c.dropMapped()
	return len(todo), nil
}

func (c *Cache) applyOne(tx *bolt.Tx, e *edit, ch *protocol.Change) error {
	switch {
	case ch.Visit != nil:
		v := normalize(*ch.Visit)
		if u, ok := visitUID(v.ID); ok && c.pending[u] > 0 {
			if err := putVisitValue(tx.Bucket(bucketCloud), v); err != nil {
				return err
			}
			if x, ok := e.visit(u); ok {
				v = merge(e.v.visitOf(&x, v.ID, u), v)
			}
		}
		return c.putVisit(tx, e, v)
	case ch.Gate != nil:
		g := *ch.Gate
		e.putGate(g)
		if g.Removed {
			return tx.Bucket(bucketGates).Delete([]byte(g.ID))
		}
		return putJSON(tx.Bucket(bucketGates), []byte(g.ID), g)
	case ch.Key != nil:
		e.putKey(*ch.Key)
		return putJSON(tx.Bucket(bucketKeys), []byte(ch.Key.ID), ch.Key)
	case ch.Person != nil:
		if err := e.putPerson(*ch.Person); err != nil {
			return err
		}
		return putJSON(tx.Bucket(bucketPeople), []byte(ch.Person.ID), ch.Person)
	case ch.Settings != nil:
		if err := e.setSettings(*ch.Settings); err != nil {
			return err
		}
		return putJSON(tx.Bucket(bucketMeta), metaSettings, ch.Settings)
	case ch.Team != nil:
		e.putTeam(*ch.Team)
		return putJSON(tx.Bucket(bucketTeams), []byte(ch.Team.ID), ch.Team)
	case ch.VisitType != nil:
		e.putVisitType(*ch.VisitType)
		return putJSON(tx.Bucket(bucketTypes), []byte(ch.VisitType.Key), ch.VisitType)
	case ch.Hardware != nil:
		return c.putHardware(tx, e, ch.Hardware)
	}
	return fmt.Errorf("a change without an object: %w", protocol.ErrInvalid)
}

// putHardware stores the hardware the cloud sent, when it is this edge's:
// another edge's (one the site had before) is passed over. Null hardware
// deletes it.
func (c *Cache) putHardware(tx *bolt.Tx, e *edit, h *protocol.EdgeHardware) error {
	if h.EdgeID != c.edgeID {
		return nil
	}
	meta := tx.Bucket(bucketMeta)
	if h.Hardware == nil {
		e.v.hardware = nil
		return meta.Delete(metaHardware)
	}
	doc := h.Hardware.Clone()
	e.v.hardware = &doc
	return putJSON(meta, metaHardware, h)
}

// loadHardware reads the stored hardware into the edit: this edge's.
func (c *Cache) loadHardware(e *edit, raw []byte) error {
	var h protocol.EdgeHardware
	if err := protocol.DecodeObject(raw, &h); err != nil {
		return err
	}
	if h.EdgeID != c.edgeID {
		return fmt.Errorf("the hardware of edge %s, not of this edge %s", h.EdgeID, c.edgeID)
	}
	if h.Hardware != nil {
		e.v.hardware = h.Hardware
	}
	return nil
}

// HardwareChanged returns a channel closed when a write next changes the
// hardware View.Hardware returns. Take it before reading the View, so
// that a change between the two is not missed.
func (c *Cache) HardwareChanged() <-chan struct{} {
	c.hwMu.Lock()
	defer c.hwMu.Unlock()
	if c.hwCh == nil {
		c.hwCh = make(chan struct{})
	}
	return c.hwCh
}

// publish stores next as the View and, when its hardware is not cur's,
// tells HardwareChanged's callers.
func (c *Cache) publish(cur, next *View) {
	c.view.Store(next)
	if cur.hardware == next.hardware {
		return
	}
	c.hwMu.Lock()
	defer c.hwMu.Unlock()
	if c.hwCh != nil {
		close(c.hwCh)
		c.hwCh = nil
	}
}

// merge is the conflict rule (doc.go): while the edge's own facts about a
// visit are unacknowledged, the cloud's visit is taken with the local
// status, uses and checked-in/out times, unless the cloud ended the visit.
func merge(local, cloud protocol.Visit) protocol.Visit {
	out := cloud
	if !ended(cloud.Status) {
		out.Status = local.Status
	}
	out.Uses = max(local.Uses, cloud.Uses)
	out.CheckedInAt, out.CheckedOutAt = local.CheckedInAt, local.CheckedOutAt
	// How the visitor came in goes with the check-in: the cloud's "at the
	// desk" sent before it saw the gate's entered fact must not let the
	// pass through the entrance a second time.
	out.GateID, out.AtDesk = local.GateID, local.AtDesk
	if local.ReenteredAs != "" {
		out.ReenteredAs = local.ReenteredAs
	}
	// Who receives the visit stays as the desk left it when the desk
	// changed it (a take, a hand-over) and the cloud has not caught up,
	// unless the cloud ended the visit.
	switch {
	case ended(cloud.Status):
		out.NeedsSomeone = false
	case local.HostID != cloud.HostID || local.TeamID != cloud.TeamID || local.Receiver != cloud.Receiver ||
		local.ReceiverID != cloud.ReceiverID || later(local.WaitingSince, cloud.WaitingSince):
		out.HostID, out.HostName, out.TeamID, out.TeamName = local.HostID, local.HostName, local.TeamID, local.TeamName
		out.NeedsSomeone, out.WaitingSince = local.NeedsSomeone, local.WaitingSince
		out.Receiver, out.ReceiverID = local.Receiver, local.ReceiverID
	}
	return out
}

// later reports whether a is set and after b (or b is unset).
func later(a, b *time.Time) bool { return a != nil && (b == nil || a.After(*b)) }

// ended reports whether the cloud's status closes the visit for good, so
// it overrides what the gate did.
func ended(s string) bool {
	switch passrule.Status(s) {
	case passrule.Cancelled, passrule.Denied, passrule.NoShow:
		return true
	}
	return false
}

// putVisit stores a normalized, valid visit and puts it in the edit.
func (c *Cache) putVisit(tx *bolt.Tx, e *edit, v protocol.Visit) error {
	u, x, xe, err := e.entry(&v)
	if err != nil {
		return fmt.Errorf("visit %s: %w", v.ID, err)
	}
	if err := putVisitValue(tx.Bucket(bucketVisits), v); err != nil {
		return err
	}
	e.putVisit(u, x, xe)
	return nil
}

// putVisitValue stores a normalized, valid visit under its ID in the
// binary form.
func putVisitValue(b *bolt.Bucket, v protocol.Visit) error {
	raw, err := encodeVisit(&v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", v.ID, err)
	}
	return b.Put([]byte(v.ID), raw)
}

func putJSON(b *bolt.Bucket, key []byte, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", key, err)
	}
	return b.Put(key, raw)
}

// ReplaceSnapshot replaces the visits, gates, keys, people, settings and
// this edge's hardware with the union of all parts of one snapshot, and
// sets the sequence to its Seq, in one transaction. The fact counter,
// outbox, last punches and sync time stay. Visits with facts still in the
// outbox are merged by the conflict rule, and kept as they are when the
// snapshot lacks them (a visit made here offline). A snapshot without
// settings leaves the cache without settings, and one without this edge's
// hardware without hardware (the cloud holds none). It returns
// an error wrapping protocol.ErrInvalid, and changes nothing, when a part
// fails the protocol's checks, the parts are not exactly parts 1 to Parts
// of one Seq, more than one part carries settings, or an object appears
// twice.
func (c *Cache) ReplaceSnapshot(parts []protocol.Snapshot) error {
	if err := checkParts(parts); err != nil {
		return fmt.Errorf("replace snapshot: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	cur := c.view.Load()
	in := newInterner()
	e := newFullEdit(in)
	e.v.seq, e.v.syncedAt, e.v.outbox, e.v.punches = parts[0].Seq, cur.syncedAt, cur.outbox, cur.punches
	var next *View
	err := c.update(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bucketVisits, bucketGates, bucketKeys, bucketPeople, bucketTeams, bucketTypes} {
			if err := tx.DeleteBucket(name); err != nil {
				return fmt.Errorf("empty bucket %s: %w", name, err)
			}
			if _, err := tx.CreateBucket(name); err != nil {
				return fmt.Errorf("create bucket %s: %w", name, err)
			}
		}
		meta := tx.Bucket(bucketMeta)
		if err := meta.Delete(metaSettings); err != nil {
			return err
		}
		if err := meta.Delete(metaHardware); err != nil {
			return err
		}
		if err := meta.Put(metaSeq, u64(e.v.seq)); err != nil {
			return err
		}
		var visits []*protocol.Visit
		for i := range parts {
			if err := c.putPart(tx, e, &parts[i]); err != nil {
				return fmt.Errorf("part %d: %w", parts[i].Part, err)
			}
			for j := range parts[i].Visits {
				visits = append(visits, &parts[i].Visits[j])
			}
		}
		// In key order into full pages: the file of a bulk load stays
		// about half the size bbolt's default split would leave.
		slices.SortFunc(visits, func(a, b *protocol.Visit) int { return strings.Compare(a.ID, b.ID) })
		tx.Bucket(bucketVisits).FillPercent = 0.9
		for i, p := range visits {
			if i > 0 && p.ID == visits[i-1].ID {
				return fmt.Errorf("visit %s appears twice: %w", p.ID, protocol.ErrInvalid)
			}
			v := normalize(*p)
			if u, _ := visitUID(v.ID); c.pending[u] > 0 {
				if err := putVisitValue(tx.Bucket(bucketCloud), v); err != nil {
					return err
				}
				if x, ok := cur.visits.get(u); ok {
					v = merge(cur.visitOf(&x, v.ID, u), v)
				}
			}
			if err := c.putVisit(tx, e, v); err != nil {
				return err
			}
		}
		for u := range c.pending {
			if _, ok := e.visit(u); !ok {
				if x, ok := cur.visits.get(u); ok {
					if err := c.putVisit(tx, e, cur.visitOf(&x, visitID(u), u)); err != nil {
						return err
					}
				}
			}
			e.markPending(u, true)
		}
		var err error
		next, err = e.done()
		return err
	})
	if err != nil {
		return fmt.Errorf("replace snapshot: %w", err)
	}
	c.in = in
	c.publish(cur, next)
	c.dropMapped()
	return nil
}

// putPart stores a snapshot part's settings, gates, keys and people.
func (c *Cache) putPart(tx *bolt.Tx, e *edit, p *protocol.Snapshot) error {
	if p.Settings != nil {
		if err := e.setSettings(*p.Settings); err != nil {
			return err
		}
		if err := putJSON(tx.Bucket(bucketMeta), metaSettings, p.Settings); err != nil {
			return err
		}
	}
	if p.Hardware != nil {
		if err := c.putHardware(tx, e, p.Hardware); err != nil {
			return err
		}
	}
	for _, g := range p.Gates {
		if g.Removed {
			continue
		}
		if _, ok := e.v.gates[g.ID]; ok {
			return fmt.Errorf("gate %s appears twice: %w", g.ID, protocol.ErrInvalid)
		}
		e.putGate(g)
		if err := putJSON(tx.Bucket(bucketGates), []byte(g.ID), g); err != nil {
			return err
		}
	}
	for _, k := range p.Keys {
		if _, ok := e.v.keys[k.ID]; ok {
			return fmt.Errorf("key %s appears twice: %w", k.ID, protocol.ErrInvalid)
		}
		e.putKey(k)
		if err := putJSON(tx.Bucket(bucketKeys), []byte(k.ID), k); err != nil {
			return err
		}
	}
	for _, t := range p.Teams {
		if _, ok := e.v.teams[t.ID]; ok {
			return fmt.Errorf("team %s appears twice: %w", t.ID, protocol.ErrInvalid)
		}
		e.putTeam(t)
		if err := putJSON(tx.Bucket(bucketTeams), []byte(t.ID), t); err != nil {
			return err
		}
	}
	for _, t := range p.VisitTypes {
		if _, ok := e.v.types[t.Key]; ok {
			return fmt.Errorf("visit type %s appears twice: %w", t.Key, protocol.ErrInvalid)
		}
		e.putVisitType(t)
		if err := putJSON(tx.Bucket(bucketTypes), []byte(t.Key), t); err != nil {
			return err
		}
	}
	people := tx.Bucket(bucketPeople)
	for _, p := range p.People {
		if people.Get([]byte(p.ID)) != nil {
			return fmt.Errorf("person %s appears twice: %w", p.ID, protocol.ErrInvalid)
		}
		if err := e.putPerson(p); err != nil {
			return err
		}
		if err := putJSON(people, []byte(p.ID), p); err != nil {
			return err
		}
	}
	return nil
}

// checkParts checks that parts are one whole snapshot of valid objects.
func checkParts(parts []protocol.Snapshot) error {
	if len(parts) == 0 {
		return fmt.Errorf("no parts: %w", protocol.ErrInvalid)
	}
	seen := make([]bool, len(parts)+1)
	settings, hw := 0, 0
	for i := range parts {
		p := &parts[i]
		if p.Seq != parts[0].Seq || p.Parts != len(parts) || p.Part < 1 || p.Part > len(parts) || seen[p.Part] {
			return fmt.Errorf("parts[%d] is part %d of %d at seq %d; want each of %d parts once, all at seq %d: %w",
				i, p.Part, p.Parts, p.Seq, len(parts), parts[0].Seq, protocol.ErrInvalid)
		}
		seen[p.Part] = true
		if p.Settings != nil {
			settings++
			if err := check(protocol.Change{Settings: p.Settings}); err != nil {
				return fmt.Errorf("part %d settings: %w", p.Part, err)
			}
		}
		if p.Hardware != nil {
			hw++
			if err := check(protocol.Change{Hardware: p.Hardware}); err != nil {
				return fmt.Errorf("part %d hardware: %w", p.Part, err)
			}
		}
		for j := range p.Gates {
			if err := check(protocol.Change{Gate: &p.Gates[j]}); err != nil {
				return fmt.Errorf("part %d gates[%d]: %w", p.Part, j, err)
			}
		}
		for j := range p.Keys {
			if err := check(protocol.Change{Key: &p.Keys[j]}); err != nil {
				return fmt.Errorf("part %d keys[%d]: %w", p.Part, j, err)
			}
		}
		for j := range p.Visits {
			if err := check(protocol.Change{Visit: &p.Visits[j]}); err != nil {
				return fmt.Errorf("part %d visits[%d]: %w", p.Part, j, err)
			}
		}
		for j := range p.People {
			if err := check(protocol.Change{Person: &p.People[j]}); err != nil {
				return fmt.Errorf("part %d people[%d]: %w", p.Part, j, err)
			}
		}
		for j := range p.Teams {
			if err := check(protocol.Change{Team: &p.Teams[j]}); err != nil {
				return fmt.Errorf("part %d teams[%d]: %w", p.Part, j, err)
			}
		}
		for j := range p.VisitTypes {
			if err := check(protocol.Change{VisitType: &p.VisitTypes[j]}); err != nil {
				return fmt.Errorf("part %d visit_types[%d]: %w", p.Part, j, err)
			}
		}
	}
	if settings > 1 {
		return fmt.Errorf("%d parts carry settings: %w", settings, protocol.ErrInvalid)
	}
	if hw > 1 {
		return fmt.Errorf("%d parts carry hardware: %w", hw, protocol.ErrInvalid)
	}
	return nil
}

// Outbox returns up to limit facts waiting for acknowledgement, oldest
// (lowest counter) first; limit ≤ 0 means all. It returns bbolt's errors
// and a *CorruptError for a row that no longer decodes.
func (c *Cache) Outbox(limit int) ([]protocol.Fact, error) { return c.OutboxAfter(0, limit) }

// OutboxAfter returns up to limit facts waiting for acknowledgement whose
// counter is past after, lowest counter first; limit ≤ 0 means all. The
// sync half reads on from the last fact it published rather than reading
// (and decoding) again those in flight. It returns bbolt's errors and a
// *CorruptError for a row that no longer decodes.
func (c *Cache) OutboxAfter(after uint64, limit int) ([]protocol.Fact, error) {
	// The rows are the file's, then the journal's, whose counters follow
	// the file's: read where they are rather than flush the journal, so
	// that sync reading the outbox does not write the file at each record.
	// mu keeps a flush from moving rows from the journal to the file until
	// both are taken (the file's by a read transaction begun under it); the
	// file's rows are then read without it.
	var out, journaled []protocol.Fact
	c.mu.Lock()
	locked := true
	unlock := func() {
		if locked {
			locked = false
			c.mu.Unlock()
		}
	}
	defer unlock()
	err := c.read(func(tx *bolt.Tx) error {
		if c.j != nil {
			err := c.j.eachRow(func(k, b []byte) error {
				if binary.BigEndian.Uint64(k) <= after {
					return nil
				}
				if limit > 0 && len(journaled) == limit {
					return errStop
				}
				var err error
				journaled, err = appendOutboxFact(journaled, k, b)
				return err
			})
			if err != nil {
				return err
			}
		}
		unlock()
		cur := tx.Bucket(bucketOutbox).Cursor()
		k, b := cur.First()
		if after > 0 {
			k, b = cur.Seek(u64(after + 1))
		}
		for ; k != nil && (limit <= 0 || len(out) < limit); k, b = cur.Next() {
			var err error
			if out, err = appendOutboxFact(out, k, b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read outbox: %w", err)
	}
	out = append(out, journaled...)
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// appendOutboxFact appends the fact of the outbox row k, b (the file's or
// the journal's) to out; a *CorruptError when it does not decode.
func appendOutboxFact(out []protocol.Fact, k, b []byte) ([]protocol.Fact, error) {
	_, f, err := decodeRow(b)
	if err != nil {
		return out, corrupt(bucketOutbox, k, err)
	}
	return append(out, f), nil
}

// OutboxStats returns how many facts wait for acknowledgement and when
// the oldest of them happened (zero when none wait). It returns bbolt's
// errors and a *CorruptError for a row that no longer decodes.
func (c *Cache) OutboxStats() (depth int, oldest time.Time, err error) {
	c.mu.Lock() // the depth and the oldest row of one state
	defer c.mu.Unlock()
	// It reads the journal where the file's outbox is empty rather than
	// flush it: a health check must not write, and on a full disk must
	// report that writes fail rather than fail itself.
	err = c.read(func(tx *bolt.Tx) error {
		depth = c.view.Load().outbox
		k, b := tx.Bucket(bucketOutbox).Cursor().First()
		if k == nil && c.j != nil {
			k, b = c.j.firstRow()
		}
		if k == nil {
			depth = 0
			return nil
		}
		_, f, err := decodeRow(b)
		if err != nil {
			return corrupt(bucketOutbox, k, err)
		}
		oldest = f.At
		return nil
	})
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("outbox stats: %w", err)
	}
	return depth, oldest, nil
}

// Ack removes the facts the cloud acknowledged, in one transaction, and
// returns how many it removed. IDs not in the outbox (acknowledged before,
// or never recorded here) are ignored. Once no waiting fact names a visit,
// it takes, in the same transaction, the cloud's latest version of it
// received while it was pending, whole; a visit without one stays as it
// is until the cloud's next change, which is taken whole. It returns
// bbolt's errors and a *CorruptError for a row that no longer decodes.
func (c *Cache) Ack(factIDs []string) (removed int, err error) {
	if len(factIDs) == 0 {
		return 0, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	left := map[uid]int{} // pending counts after the acknowledgement, of the visits it names
	var gone []string     // the facts removed
	e := newEdit(c.view.Load(), c.in)
	var next *View
	err = c.update(func(tx *bolt.Tx) error {
		facts, outbox := tx.Bucket(bucketFacts), tx.Bucket(bucketOutbox)
		for _, id := range factIDs {
			key := facts.Get([]byte(id))
			if key == nil {
				continue
			}
			key = slices.Clone(key) // bbolt's bytes go stale after Delete
			// The row's visits are those Record or Open took from it
			// (waiting): the row is deleted without being read.
			f, ok := parseUID(ids.Fact, id)
			fv, held := c.waiting[f]
			if !ok || !held {
				return corrupt(bucketFacts, []byte(id), errors.New("indexed, but not among the facts waiting"))
			}
			for _, u := range fv.list() {
				n, ok := left[u]
				if !ok {
					n = c.pending[u]
				}
				left[u] = n - 1
			}
			if err := outbox.Delete(key); err != nil {
				return err
			}
			if err := facts.Delete([]byte(id)); err != nil {
				return err
			}
			gone = append(gone, id)
			removed++
		}
		if removed == 0 {
			return nil
		}
		cloud := tx.Bucket(bucketCloud)
		for u, n := range left {
			if n > 0 {
				continue
			}
			e.markPending(u, false)
			id := []byte(visitID(u))
			b := cloud.Get(id)
			if b == nil {
				continue
			}
			v, err := decodeVisit(b)
			if err != nil {
				return corrupt(bucketCloud, id, err)
			}
			if err := c.putVisit(tx, e, v); err != nil {
				return err
			}
			if err := cloud.Delete(id); err != nil {
				return err
			}
		}
		e.v.outbox -= removed
		var err error
		next, err = e.done()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("ack facts: %w", err)
	}
	for _, id := range gone {
		if u, ok := parseUID(ids.Fact, id); ok {
			delete(c.waiting, u)
		}
	}
	for u, n := range left {
		if n <= 0 {
			delete(c.pending, u)
		} else {
			c.pending[u] = n
		}
	}
	if removed > 0 {
		c.view.Store(next)
	}
	return removed, nil
}

// MarkSynced records t as the last contact with the cloud, for the
// offline limit and status reports. Each call is a durable write: call it
// on a timer, not per message. It returns bbolt's errors.
func (c *Cache) MarkSynced(t time.Time) error {
	t = t.UTC()
	c.mu.Lock()
	defer c.mu.Unlock()
	err := c.update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketMeta).Put(metaSyncedAt, []byte(t.Format(time.RFC3339Nano)))
	})
	if err != nil {
		return fmt.Errorf("mark synced: %w", err)
	}
	next := *c.view.Load()
	next.syncedAt = t
	c.view.Store(&next)
	return nil
}
