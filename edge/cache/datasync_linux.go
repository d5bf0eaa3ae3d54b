package cache

import (
	"errors"
	"os"
	"syscall"
)

// datasync makes f's data durable without its metadata (fdatasync): the
// journal is written in place, never grows, so its size and blocks are
// already on disk and only the data need be.
func datasync(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}
