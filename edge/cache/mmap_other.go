//go:build !linux

package cache

// dropMapped is a no-op where the appliance does not run (see
// mmap_linux.go).
func (c *Cache) dropMapped() {}
