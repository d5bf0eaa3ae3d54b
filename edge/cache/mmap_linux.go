package cache

import (
	"syscall"

	bolt "go.etcd.io/bbolt"
)

// dropMapped gives back the pages of the file's map that this process has
// touched: Open reads every page, and a snapshot or a batch of changes
// reads many, yet the gate path never reads the file (it reads the View).
// Without this, the file's size stays in the process's resident memory.
//
// bbolt maps the file read-only and shared and writes with pwrite, so
// MADV_DONTNEED only unmaps clean pages of the page cache: the next read
// of one faults it back in from the cache, and nothing is lost. It runs in
// a read transaction, which holds bbolt's map lock, so the map cannot move
// meanwhile, and covers the transaction's size, which the map always
// spans. It is advice: if the kernel refuses, the pages stay resident,
// which is not a reason to fail a write that has committed.
func (c *Cache) dropMapped() {
	_ = c.read(func(tx *bolt.Tx) error { return dropPages(tx) })
}

// dropPages is dropMapped within tx, for Open, which reads the whole file
// in one transaction. Within a write transaction it may only run before
// the transaction allocates (which may move the map).
func dropPages(tx *bolt.Tx) error {
	_, _, errno := syscall.Syscall(syscall.SYS_MADVISE, tx.DB().Info().Data, uintptr(tx.Size()), syscall.MADV_DONTNEED)
	if errno != 0 {
		return errno
	}
	return nil
}
