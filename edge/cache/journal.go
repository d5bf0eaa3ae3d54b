package cache

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	bolt "go.etcd.io/bbolt"

	"github.com/svc-vms/svc/shared/durable"
)

// The journal (decisions.md, "The scan's record path (issue 20)") is a
// file of journalSize bytes beside the cache file, zeroed once when it is
// made, to which Record appends each commit of records as a frame: the
// bbolt puts and deletes the commit would make, with the fact counters it
// assigned and a CRC, fdatasync'd before Record returns. bbolt is written
// once per flushEvery records, or before any other operation reads or
// writes the file (Cache.update applies the journal in its transaction),
// and the journal is then written again from its start. Open applies the
// frames whose counters follow the file's counter before it loads.
//
// A frame is, in order (integers little-endian):
//
//	magic    4 bytes "svj1"
//	length   uint32, of the whole frame
//	crc      uint32, CRC-32C of what follows it to the frame's end
//	salt     uint64, the file's journal salt (metaJournal)
//	first    uint64, the first fact counter the frame assigns
//	last     uint64, the last
//	ops      to the end: each a byte (its bucket's index in
//	         journalBuckets, with opDelete set for a delete), the key
//	         (uint32 length, bytes) and, for a put, the value (the same)
//
// A frame follows a file whose counter is n when its salt is the file's
// and its first counter is n+1. Frames from before the last flush (stale)
// assign counters the file already has, a torn frame fails its CRC, and a
// journal of another file has another salt: none of them follows, and
// replay stops at the first frame that does not.
//
// flushEvery is 1024 records (256 before, docs/performance.md "A scan's
// garbage, fifth pass: the flush"): a flush reads into memory the bbolt
// nodes its puts land in, the visits' branch nodes, the outbox's and
// facts index's last leaves, however many records it carries, so a
// record's share of them falls with the interval. The journal is 4 MiB
// so that 1024 records of a gate (under 1 KB each) fit with room for
// bigger ones before a frame that does not fit flushes early.
const (
	journalSize   = 4 << 20
	flushEvery    = 1024 // records
	frameHeader   = 36
	journalSuffix = ".journal"
	opDelete      = 0x80
)

var frameMagic = [4]byte{'s', 'v', 'j', '1'}

// journalBuckets numbers the buckets in frames. Append only: a frame one
// build writes is replayed by the next.
var journalBuckets = [...][]byte{bucketMeta, bucketVisits, bucketGates, bucketKeys, bucketOutbox, bucketFacts, bucketCloud, bucketPeople,
	bucketPunches, bucketTeams, bucketTypes}

// Indexes of journalBuckets the record path writes.
const (
	jMeta    = 0
	jVisits  = 1
	jOutbox  = 4
	jFacts   = 5
	jCloud   = 6
	jPunches = 8
)

// metaJournal is the meta key of the file's journal salt, 8 random bytes
// init writes once: a frame of another file's journal never follows this
// one. A build older than the journal ignores the key.
var metaJournal = []byte("journal")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// journal is the open journal of a cache, under Cache.mu.
type journal struct {
	f    *os.File
	salt uint64
	// mem is the file's bytes from its start up to the end of the last
	// frame written since the last flush: what the next flush applies.
	mem     []byte
	records int // records in mem
}

// journalPath is where the journal of the cache file at path is.
func journalPath(path string) string { return path + journalSuffix }

// openJournal opens the journal beside the cache file at path, making it
// (journalSize zero bytes, synced, then named) when it is missing or of
// another size. The caller has applied whatever in it followed the file.
func openJournal(path string, salt uint64) (*journal, error) {
	name := journalPath(path)
	st, err := os.Stat(name)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && st.Size() != journalSize) {
		err = durable.WriteFile(name, 0o600, func(w io.Writer) error {
			_, err := w.Write(make([]byte, journalSize))
			return err
		})
	}
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	// mem has room for a flush's frames at the start (a gate's record is
	// under 1 KB): grown by appends it reached that room anyway, through
	// a dozen reallocations, in the first flushEvery records after Open.
	return &journal{f: f, salt: salt, mem: make([]byte, 0, flushEvery<<10)}, nil
}

// newSalt returns a journal salt: random, never 0 (no salt).
func newSalt() []byte {
	var b [8]byte
	for binary.LittleEndian.Uint64(b[:]) == 0 {
		_, _ = rand.Read(b[:])
	}
	return b[:]
}

// appendFrameStart appends the header of a frame, to be completed by
// sealFrame, to b.
func appendFrameStart(b []byte) []byte { return append(b, make([]byte, frameHeader)...) }

// sealFrame completes the frame that fills b: its length, salt, counters
// and CRC.
func sealFrame(b []byte, salt, first, last uint64) {
	copy(b, frameMagic[:])
	binary.LittleEndian.PutUint32(b[4:], uint32(len(b)))
	binary.LittleEndian.PutUint64(b[12:], salt)
	binary.LittleEndian.PutUint64(b[20:], first)
	binary.LittleEndian.PutUint64(b[28:], last)
	binary.LittleEndian.PutUint32(b[8:], crc32.Checksum(b[12:], castagnoli))
}

// frame is one frame read back.
type frame struct {
	salt, first, last uint64
	ops               []byte
	size              int
}

// readFrame reads the frame at the start of b; false when there is none
// whole (zeroes, a torn or overwritten frame, the end of the file).
func readFrame(b []byte) (frame, bool) {
	if len(b) < frameHeader || !bytes.Equal(b[:4], frameMagic[:]) {
		return frame{}, false
	}
	n := binary.LittleEndian.Uint32(b[4:])
	if n < frameHeader || uint64(n) > uint64(len(b)) ||
		crc32.Checksum(b[12:n], castagnoli) != binary.LittleEndian.Uint32(b[8:]) {
		return frame{}, false
	}
	f := frame{salt: binary.LittleEndian.Uint64(b[12:]), first: binary.LittleEndian.Uint64(b[20:]),
		last: binary.LittleEndian.Uint64(b[28:]), ops: b[frameHeader:n], size: int(n)}
	if f.last < f.first {
		return frame{}, false
	}
	return f, true
}

// following returns how many bytes at the start of b are frames that
// follow a file of salt whose counter is counter, one after the other,
// the counter after them, and how many records they hold.
func following(b []byte, salt, counter uint64) (n int, last uint64, records int) {
	last = counter
	for salt != 0 {
		f, ok := readFrame(b[n:])
		if !ok || f.salt != salt || f.first != last+1 {
			break
		}
		n += f.size
		last = f.last
		records += int(f.last - f.first + 1)
	}
	return n, last, records
}

// appendPut appends the op putting value under key in the bucket of
// journalBuckets[bucket] to b.
func appendPut[K text](b []byte, bucket byte, key K, value []byte) []byte {
	b = appendKey(b, bucket, key)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(value)))
	return append(b, value...)
}

// appendDelete appends the op deleting key from the bucket to b.
func appendDelete[K text](b []byte, bucket byte, key K) []byte {
	return appendKey(b, bucket|opDelete, key)
}

// text is a key: a string, or bytes. Taking either as it is spares a
// conversion, which allocates for a key longer than 32 bytes.
type text interface{ ~string | ~[]byte }

func appendKey[K text](b []byte, op byte, key K) []byte {
	b = append(b, op)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(key)))
	return append(b, key...)
}

// startValue appends a put's op and key, and room for its value's
// length, to b; the caller appends the value and calls endValue with
// the length b had after startValue.
func startValue[K text](b []byte, bucket byte, key K) []byte {
	return binary.LittleEndian.AppendUint32(appendKey(b, bucket, key), 0)
}

func endValue(b []byte, start int) {
	binary.LittleEndian.PutUint32(b[start-4:], uint32(len(b)-start))
}

// eachOp calls fn for each op of ops, in order; value is nil for a
// delete. It returns an error for ops that do not parse and fn's.
func eachOp(ops []byte, fn func(bucket byte, del bool, key, value []byte) error) error {
	for len(ops) > 0 {
		op := ops[0]
		key, rest, ok := cutField(ops[1:])
		if !ok {
			return errors.New("journal: an op ends early")
		}
		var value []byte
		if op&opDelete == 0 {
			if value, rest, ok = cutField(rest); !ok {
				return errors.New("journal: an op ends early")
			}
		}
		bucket := op &^ opDelete
		if int(bucket) >= len(journalBuckets) {
			return fmt.Errorf("journal: bucket %d unknown", bucket)
		}
		if err := fn(bucket, op&opDelete != 0, key, value); err != nil {
			return err
		}
		ops = rest
	}
	return nil
}

func cutField(b []byte) (field, rest []byte, ok bool) {
	if len(b) < 4 {
		return nil, nil, false
	}
	n := binary.LittleEndian.Uint32(b)
	if uint64(n) > uint64(len(b)-4) {
		return nil, nil, false
	}
	return b[4 : 4+n], b[4+n:], true
}

// applyOps makes the puts and deletes of ops in tx; with lastCounter
// false, but its put of the fact counter. The slices stay bbolt's until
// tx ends.
func applyOps(tx *bolt.Tx, ops []byte, lastCounter bool) error {
	return eachOp(ops, func(bucket byte, del bool, key, value []byte) error {
		if !lastCounter && bucket == jMeta && bytes.Equal(key, metaCounter) {
			return nil
		}
		b := tx.Bucket(journalBuckets[bucket])
		if b == nil {
			return fmt.Errorf("journal: the file has no bucket %s", journalBuckets[bucket])
		}
		if del {
			return b.Delete(key)
		}
		return b.Put(key, value)
	})
}

// applyFrames applies every frame of b, which are whole, in order. Every
// frame puts the fact counter; only the last frame's put is made, the
// others' would be overwritten in the same transaction: a flush writes
// the meta bucket once, not once a record.
func applyFrames(tx *bolt.Tx, b []byte) error {
	for len(b) > 0 {
		f, ok := readFrame(b)
		if !ok {
			return errors.New("journal: a frame does not read")
		}
		if err := applyOps(tx, f.ops, f.size == len(b)); err != nil {
			return err
		}
		b = b[f.size:]
	}
	return nil
}

// write appends frame, sealed, to the journal at the end of mem and
// fdatasyncs it. On error mem is as it was, and the frame is struck out
// (unwrite): its record failed, its gate refused, and a frame whose
// bytes reached the file before the write or the sync failed must not be
// replayed at the next Open as if it had been recorded.
func (j *journal) write(frame []byte, records int) error {
	at := len(j.mem)
	_, err := j.f.WriteAt(frame, int64(at))
	if err == nil {
		err = syncJournal(j.f)
	}
	if err != nil {
		j.unwrite(at)
		return fmt.Errorf("journal: %w", err)
	}
	j.mem = append(j.mem, frame...)
	j.records += records
	return nil
}

// unwrite zeroes the magic of the frame at offset at, so that replay (and
// Reset's salvage) stop there, and syncs it: best effort, as the write
// that failed may fail again. The zeroes are what this boot reads back
// whatever the disk holds (a restarted process replays from the page
// cache); after a power cut the disk may hold either, as it may after any
// failed fdatasync (docs/decisions.md, "A journal write that fails").
func (j *journal) unwrite(at int) {
	var zero [len(frameMagic)]byte
	if _, err := j.f.WriteAt(zero[:], int64(at)); err == nil {
		_ = syncJournal(j.f)
	}
}

// syncJournal is datasync, the journal's fdatasync; a test of a failing
// disk replaces it.
var syncJournal = datasync

// eachRow calls fn with the key and value of each outbox row in the
// journal, oldest first, until fn returns an error (errStop ends it
// without one). The slices are the journal's: valid under Cache.mu until
// the next flush.
func (j *journal) eachRow(fn func(key, value []byte) error) error {
	for b := j.mem; len(b) > 0; {
		f, ok := readFrame(b)
		if !ok {
			return errors.New("journal: a frame does not read")
		}
		err := eachOp(f.ops, func(bucket byte, del bool, k, v []byte) error {
			if bucket == jOutbox && !del {
				return fn(k, v)
			}
			return nil
		})
		if errors.Is(err, errStop) {
			return nil
		}
		if err != nil {
			return err
		}
		b = b[f.size:]
	}
	return nil
}

// firstRow returns the key and value of the first outbox row in the
// journal; nil when it holds none.
func (j *journal) firstRow() (key, value []byte) {
	_ = j.eachRow(func(k, v []byte) error {
		key, value = k, v
		return errStop
	})
	return key, value
}

var errStop = errors.New("stop")

// fits reports whether a frame of n bytes fits after those written.
func (j *journal) fits(n int) bool { return len(j.mem)+n <= journalSize }

// due reports whether the journal should be flushed.
func (j *journal) due() bool { return j.records >= flushEvery }

// flushed forgets the frames applied to the file: the next is written
// at the start.
func (j *journal) flushed() { j.mem, j.records = j.mem[:0], 0 }

// journalSalt reads the file's salt in tx; 0 when it has none.
func journalSalt(tx *bolt.Tx) uint64 {
	b := get(tx.Bucket(bucketMeta), metaJournal)
	if len(b) != 8 {
		return 0
	}
	return binary.LittleEndian.Uint64(b)
}

// journalFollowing reads the journal beside the file whole, whatever its
// size, and returns it, how many bytes at its start follow the file (as
// replay applies them) and how many records those hold. A missing
// journal holds none.
func (c *Cache) journalFollowing() (b []byte, n, records int, err error) {
	b, err = os.ReadFile(journalPath(c.path))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, 0, nil
	}
	if err != nil {
		return nil, 0, 0, fmt.Errorf("journal: %w", err)
	}
	err = c.read(func(tx *bolt.Tx) error {
		n, _, records = following(b, journalSalt(tx), c.counter)
		return nil
	})
	return b, n, records, err
}

// replay applies the frames of the journal beside the file that follow
// it, in one transaction, and returns how many records they held.
func (c *Cache) replay() (int, error) {
	b, n, records, err := c.journalFollowing()
	if err == nil && records > 0 { // a sound file is written only when the journal holds what it lacks
		err = c.write(func(tx *bolt.Tx) error { return applyFrames(tx, b[:n]) })
	}
	if err != nil {
		return 0, fmt.Errorf("replay journal: %w", err)
	}
	return records, nil
}

// journaled counts the records in the journal beside the file that
// follow it, as replay would apply them, without writing.
func (c *Cache) journaled() (int, error) {
	_, _, records, err := c.journalFollowing()
	return records, err
}

// flushLocked writes what the journal holds to the file (update applies
// it), under mu. It does nothing when the journal holds nothing.
func (c *Cache) flushLocked() error {
	if c.j == nil || len(c.j.mem) == 0 {
		return nil
	}
	return c.update(func(*bolt.Tx) error { return nil })
}

// flush is flushLocked for readers of the file that do not hold mu.
func (c *Cache) flush() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.flushLocked()
}

// closeJournal closes the journal's file.
func (c *Cache) closeJournal() {
	if c.j != nil {
		_ = c.j.f.Close()
	}
}

// moveJournalAside gives the journal beside path the name aside+".journal",
// if there is one, and syncs the directory.
func moveJournalAside(path, aside string) error {
	err := os.Rename(journalPath(path), journalPath(aside))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return durable.SyncDir(filepath.Dir(path))
}
