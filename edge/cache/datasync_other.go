//go:build !linux

package cache

import "os"

// datasync is fsync where the system has no fdatasync.
func datasync(f *os.File) error { return f.Sync() }
