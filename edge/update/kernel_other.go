//go:build !linux

package update

import (
	"context"
	"errors"
)

// kernelFromRoot mounts a squashfs, which only Linux does.
func kernelFromRoot(string) func(ctx context.Context, slot Slot, boot string) error {
	return func(context.Context, Slot, string) error {
		return errors.New("update: a root image's kernel is read on Linux only")
	}
}
