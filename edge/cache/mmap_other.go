//go:build !linux

package cache

import bolt "go.etcd.io/bbolt"

// dropMapped is a no-op where the appliance does not run (see
// mmap_linux.go).
func (c *Cache) dropMapped() {}

func dropPages(*bolt.Tx) error { return nil }
