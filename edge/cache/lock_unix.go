//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package cache

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	berrors "go.etcd.io/bbolt/errors"
)

// lockFile takes the advisory lock bbolt takes on a file (flock:
// exclusive for a writer, shared for readers), waiting up to timeout for
// another process to release it; then it fails with bbolt's ErrTimeout.
// bbolt's own lock on the same open file then succeeds at once.
func lockFile(f *os.File, exclusive bool, timeout time.Duration) error {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	deadline := time.Now().Add(timeout)
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case !errors.Is(err, syscall.EWOULDBLOCK):
			return fmt.Errorf("lock %s: %w", f.Name(), err)
		case time.Now().After(deadline):
			return fmt.Errorf("lock %s: another process holds it: %w", f.Name(), berrors.ErrTimeout)
		}
		time.Sleep(50 * time.Millisecond) // as bbolt polls
	}
}
