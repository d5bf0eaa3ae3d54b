package cache

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/svc-vms/svc/shared/durable"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/sync/protocol"
)

// Summary is what Check found in a sound file.
type Summary struct {
	Size     int64  // bytes
	Schema   string // "1" is migrated by the next Open
	EdgeID   string
	Seq      uint64
	SyncedAt time.Time
	Counts   Counts // as the file holds them, without the journal's records
	// Journaled are the records in the journal that the file lacks: the
	// next Open writes them to it (in Counts.Outbox then).
	Journaled int
}

// Check reads the cache file at path as Open would, without writing to it
// (read-only, under a shared lock, so not while svc-edge runs): every page,
// then every value. It returns what it found in a sound file; a
// *DamagedError (matching ErrDamaged, and a *CorruptError when a value
// does not decode) listing what is wrong with a damaged one; an error
// wrapping ErrNoFile when there is no file, ErrEdgeMismatch when it is
// another edge's (opts.EdgeID), and bbolt's errors (ErrTimeout while
// another process holds the file).
func Check(path string, opts Options) (Summary, error) {
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Summary{}, fmt.Errorf("check cache %s: %w", path, ErrNoFile)
	}
	if err != nil {
		return Summary{}, fmt.Errorf("check cache: %w", err)
	}
	db, _, err := openDB(path, true)
	if err != nil {
		return Summary{}, checkError(path, err)
	}
	defer db.Close()
	c := &Cache{db: db, path: path, pending: map[uid]int{}, in: newInterner()}
	state, err := c.prepare(opts.EdgeID)
	if err == nil {
		err = c.load(state.schema)
	}
	var journaled int
	if err == nil {
		journaled, err = c.journaled()
	}
	if err != nil {
		return Summary{}, checkError(path, err)
	}
	v := c.View()
	return Summary{Size: st.Size(), Schema: state.schema, EdgeID: c.edgeID, Seq: v.Seq(), SyncedAt: v.SyncedAt(), Counts: v.Counts(),
		Journaled: journaled}, nil
}

func checkError(path string, err error) error {
	var ce *CorruptError
	if errors.As(err, &ce) && !errors.Is(err, ErrDamaged) {
		err = &DamagedError{Path: path, Problems: []string{err.Error()}, Err: err}
	}
	if errors.Is(err, ErrDamaged) {
		return fmt.Errorf("check cache: %w", err)
	}
	return fmt.Errorf("check cache %s: %w", path, err)
}

// Recovery is what Reset did.
type Recovery struct {
	Aside string // the old file's name now: path.damaged-<UTC time>
	Size  int64  // the old file's, in bytes

	// Facts are the facts recovered into the new outbox, in counter
	// order, with their IDs and counters.
	Facts []protocol.Fact
	// Loose of them were found outside the outbox's tree, when it could
	// not be read whole; the cloud may have acknowledged some already.
	Loose int
	// Punches are the people whose last punch here was recovered.
	Punches int
	// Counter is the new file's fact counter: the largest the old file
	// showed, so new facts follow the old ones.
	Counter uint64

	// What was lost: values in the outbox that were not a fact of this
	// edge filed under its counter; pages of the outbox (or above it)
	// that could not be read; the IDs of facts the old file's index
	// names that were not recovered (in neither).
	Undecodable, Unreadable int
	Missing                 []string
	// OtherEdge facts belonged to another edge and were left out.
	OtherEdge int
	// Journaled of the Facts were in the journal only (recorded since the
	// old file was last written).
	Journaled int
}

// Reset replaces the cache file at path with a new one: it reads every
// outbox fact it can from the old file, however damaged (salvageFile),
// writes a new cache holding them (with their IDs and counters, and each
// person's last punch found) under a temporary name, checks it as Open
// would, then gives the old file the name path.damaged-<now, UTC> (it is
// kept, never changed) and puts the new one at path. The new file has no
// change sequence, so the next run asks the cloud for a snapshot, and its
// outbox sends the recovered facts, which the cloud applies once each, by
// ID. It takes the old file's lock first, so it fails with bbolt's
// ErrTimeout while svc-edge runs. It returns an error wrapping ErrNoFile
// when there is no file at path, ErrNoEdge when neither opts.EdgeID nor
// the old file names the edge, and the file system's errors; the old
// file stays at path unless the new one took its place.
func Reset(path string, opts Options, now time.Time) (Recovery, error) {
	if opts.EdgeID != "" && !ids.Valid(ids.Edge, opts.EdgeID) {
		return Recovery{}, fmt.Errorf("reset cache: %q is not an edge ID", opts.EdgeID)
	}
	old, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Recovery{}, fmt.Errorf("reset cache %s: %w", path, ErrNoFile)
	}
	if err != nil {
		return Recovery{}, fmt.Errorf("reset cache: %w", err)
	}
	defer old.Close()
	if err := lockFile(old, true, lockTimeout); err != nil {
		return Recovery{}, fmt.Errorf("reset cache: %w", err)
	}
	st, err := old.Stat()
	if err != nil {
		return Recovery{}, fmt.Errorf("reset cache: %w", err)
	}
	s := salvageFile(old, st.Size(), opts.EdgeID)
	// The journal's records are facts too: those the file lacks would be
	// lost with it.
	jb, err := os.ReadFile(journalPath(path))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return Recovery{}, fmt.Errorf("reset cache: %w", err)
	}
	s.fromJournal(jb)
	if s.edgeID == "" || !ids.Valid(ids.Edge, s.edgeID) {
		return Recovery{}, fmt.Errorf("reset cache %s: the old file names no edge (%q); give the edge ID: %w", path, s.edgeID, ErrNoEdge)
	}
	rec := Recovery{Size: st.Size(), Counter: s.counter, Undecodable: s.undecodable + s.duplicates, Unreadable: s.unreadable, OtherEdge: s.otherEdge, Loose: len(s.loose),
		Journaled: s.journal}
	var punches []protocol.Fact
	rec.Facts, punches = s.sorted()
	rec.Punches = len(punches)
	for id := range s.indexed {
		if _, ok := s.facts[id]; !ok {
			rec.Missing = append(rec.Missing, id)
		}
	}
	slices.Sort(rec.Missing)

	tmp, err := build(path, s.edgeID, rec.Facts, punches, rec.Counter)
	if err != nil {
		return Recovery{}, fmt.Errorf("reset cache %s: %w", path, err)
	}
	defer os.Remove(tmp) // once renamed, a no-op
	rec.Aside = fmt.Sprintf("%s.damaged-%s", path, now.UTC().Format("20060102T150405Z"))
	if err := durable.LinkNew(path, rec.Aside); err != nil {
		return Recovery{}, fmt.Errorf("reset cache: keep the old file as %s: %w", rec.Aside, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return Recovery{}, fmt.Errorf("reset cache: the old file is kept as %s; put the new one at %s: %w", rec.Aside, path, err)
	}
	if err := durable.SyncDir(filepath.Dir(path)); err != nil {
		return Recovery{}, fmt.Errorf("reset cache: %w", err)
	}
	// The journal goes with the old file, kept as it was. Until it has
	// gone, the new file (of another salt, with a counter past every
	// frame's) takes nothing from it.
	if err := moveJournalAside(path, rec.Aside); err != nil {
		return Recovery{}, fmt.Errorf("reset cache: keep the journal as %s: %w", journalPath(rec.Aside), err)
	}
	return rec, nil
}

// build writes a new cache of edgeID holding facts in its outbox, the
// last punches and the fact counter, under a temporary name beside path,
// checks it as Open would, and returns its name.
func build(path, edgeID string, facts, punches []protocol.Fact, counter uint64) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".new-*")
	if err != nil {
		return "", fmt.Errorf("new file: %w", err)
	}
	name := f.Name()
	err = f.Close()
	if err == nil {
		err = restore(name, edgeID, facts, punches, counter)
	}
	if err == nil {
		var c *Cache
		if c, err = Open(name, Options{EdgeID: edgeID}); err == nil {
			err = c.Close()
		}
		_ = os.Remove(journalPath(name)) // Open's, empty: the new file's is made beside it at its name
	}
	if err != nil {
		_ = os.Remove(name)
		return "", fmt.Errorf("new file: %w", err)
	}
	return name, nil
}

// restore makes the empty file name a cache of edgeID with facts waiting
// in its outbox (under their counters, indexed by ID), the last punches
// and the counter, in one transaction after init's.
func restore(name, edgeID string, facts, punches []protocol.Fact, counter uint64) error {
	db, err := bolt.Open(name, 0o600, boltOptions(false))
	if err != nil {
		return err
	}
	c := &Cache{db: db, path: name, edgeID: edgeID, pending: map[uid]int{}, in: newInterner()}
	err = c.init()
	if err == nil {
		err = c.write(func(tx *bolt.Tx) error {
			outbox, index, last := tx.Bucket(bucketOutbox), tx.Bucket(bucketFacts), tx.Bucket(bucketPunches)
			for i := range facts {
				raw, err := protocol.Encode(&facts[i])
				if err != nil {
					return err
				}
				row, err := json.Marshal(outboxRow{Fact: raw})
				if err != nil {
					return err
				}
				key := u64(facts[i].Counter)
				if err := outbox.Put(key, row); err != nil {
					return err
				}
				if err := index.Put([]byte(facts[i].ID), key); err != nil {
					return err
				}
			}
			for i := range punches {
				if punches[i].EdgeID != edgeID {
					continue
				}
				raw, err := protocol.Encode(&punches[i])
				if err != nil {
					return err
				}
				if err := last.Put([]byte(punches[i].PersonID), raw); err != nil {
					return err
				}
			}
			return tx.Bucket(bucketMeta).Put(metaCounter, u64(counter))
		})
	}
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	return err
}
