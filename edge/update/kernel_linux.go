package update

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// kernelFromRoot is Partitions.InstallKernel for a squashfs root that
// holds its kernel at path: the staged partition is mounted read-only
// (nothing on it can run: noexec, nodev, nosuid) in a temporary
// directory, and the kernel copied to the boot partition as
// vmlinuz-<slot> through a temporary file and a rename, so a power cut
// leaves the old kernel or the new, never half of one. Only the inactive
// slot's kernel is ever written: the committed slot's boots as before.
func kernelFromRoot(path string) func(ctx context.Context, slot Slot, boot string) error {
	return func(_ context.Context, slot Slot, boot string) error {
		dir, err := os.MkdirTemp("", "svc-slot-")
		if err != nil {
			return err
		}
		defer os.Remove(dir)
		const flags = syscall.MS_RDONLY | syscall.MS_NOEXEC | syscall.MS_NODEV | syscall.MS_NOSUID
		if err := syscall.Mount(slot.Path, dir, "squashfs", flags, ""); err != nil {
			return fmt.Errorf("mount slot %s (%s) to read its kernel: %w", slot.Name, slot.Path, err)
		}
		defer syscall.Unmount(dir, 0) //nolint:errcheck // read-only; nothing to lose
		src, err := os.Open(filepath.Join(dir, path))
		if err != nil {
			return fmt.Errorf("slot %s holds no kernel: %w", slot.Name, err)
		}
		defer src.Close()
		return writeFile(filepath.Join(boot, "vmlinuz-"+slot.Name), 0o644, func(w io.Writer) error {
			_, err := io.Copy(w, src)
			return err
		})
	}
}
