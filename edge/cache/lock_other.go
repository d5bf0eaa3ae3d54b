//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package cache

import (
	"os"
	"time"
)

// lockFile does nothing where the appliance does not run: bbolt still
// locks the file when it opens it, after checkFile has read it.
func lockFile(*os.File, bool, time.Duration) error { return nil }
