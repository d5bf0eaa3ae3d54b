package cache

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"

	bolt "go.etcd.io/bbolt"

	"github.com/svc-vms/svc/shared/durable"
)

// boltOptions are the options every open of a cache file uses.
func boltOptions(readOnly bool) *bolt.Options {
	return &bolt.Options{
		Timeout:         lockTimeout,
		ReadOnly:        readOnly,
		NoFreelistSync:  true, // as etcd runs it: shorter commits; the freelist is rebuilt at open
		FreelistType:    bolt.FreelistMapType,
		InitialMmapSize: 256 << 20, // address space, not memory: a big write never remaps mid-transaction, which copies every node
	}
}

// openDB opens the existing cache file at path with bbolt, exclusively
// or, readOnly, shared with other readers. Before bbolt maps it, it takes
// the file's lock (so no writer changes it meanwhile) and checks every
// page bbolt will reach (checkFile): a damaged file is a *DamagedError,
// never a fault or a panic, and is not written to. It never creates the
// file: a missing file is an error wrapping fs.ErrNotExist. It also returns
// the file bbolt uses (see Cache.Close).
func openDB(path string, readOnly bool) (*bolt.DB, *os.File, error) {
	var file *os.File
	opts := boltOptions(readOnly)
	opts.OpenFile = func(name string, flag int, perm os.FileMode) (*os.File, error) {
		f, err := os.OpenFile(name, flag&^os.O_CREATE, perm)
		if err != nil {
			return nil, err
		}
		if err := lockFile(f, !readOnly, lockTimeout); err != nil {
			_ = f.Close()
			return nil, err
		}
		st, err := f.Stat()
		if err != nil {
			_ = f.Close()
			return nil, err
		}
		if problems := checkFile(f, st.Size()); len(problems) > 0 {
			_ = f.Close()
			return nil, &DamagedError{Path: path, Problems: problems}
		}
		file = f
		return f, nil
	}
	var db *bolt.DB
	err := protect(func() (err error) {
		db, err = bolt.Open(path, 0o600, opts)
		return err
	})
	var fault *faultError
	if errors.As(err, &fault) {
		// bbolt panicked inside Open: the DB is lost, so close its file,
		// and the lock with it. The map stays (a few hundred MB of address
		// space, no memory) until the process exits.
		if file != nil {
			_ = file.Close()
		}
		return nil, nil, &DamagedError{Path: path, Err: err}
	}
	if err != nil {
		return nil, nil, err
	}
	return db, file, nil
}

// create makes a new cache at path when there is no file there, and
// does nothing when there is one, whatever it holds. The new file is built
// under a temporary name beside path (bbolt's first pages, the buckets,
// the schema and edgeID, each committed with fsync) and then linked to
// path, so a file at path is always a whole cache: a short or empty one
// is damage, never a cache that was being made.
func create(path, edgeID string) error {
	switch _, err := os.Lstat(path); {
	case err == nil:
		return nil
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".new-*")
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	name := tmp.Name()
	defer os.Remove(name) // once linked, path keeps the file
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("create: %w", err)
	}
	db, err := bolt.Open(name, 0o600, boltOptions(false))
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	c := &Cache{db: db, path: name, edgeID: edgeID, pending: map[uid]int{}, in: newInterner()}
	err = c.init()
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	if err := durable.LinkNew(name, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil // made meanwhile by another process: open that one
		}
		return fmt.Errorf("create: %w", err)
	}
	return nil
}

// faultError is a panic inside bbolt or the cache's reading of the file,
// or a fault reading its map (SIGBUS when the file shrank under the map,
// an I/O error on a mapped page), caught by protect.
type faultError struct{ v any }

func (e *faultError) Error() string { return fmt.Sprintf("reading the file failed: %v", e.v) }

// protect runs fn with faults on mapped memory turned into panics (for
// this goroutine) and any panic turned into a *faultError, so that a
// damaged file, or one changed under the process, stops the cache with
// an error instead of crashing the appliance.
func protect(fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if v := recover(); v != nil {
			err = &faultError{v: v}
		}
	}()
	return fn()
}
