package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// partitionDevice is the /dev path of partition n of the disk the root
// file system was mounted from (/dev/vda2 under qemu, /dev/mmcblk0p2 on
// a Pi's SD card), found in sysfs as the appliance has no udev: the
// root's device number leads to /sys/dev/block/MAJ:MIN, a partition of
// the disk whose sysfs directory holds the others, each with its number
// in its "partition" file.
func partitionDevice(n int) (string, error) {
	var st syscall.Stat_t
	if err := syscall.Stat("/", &st); err != nil {
		return "", fmt.Errorf("partition %d: %w", n, err)
	}
	dev := uint64(st.Dev) //nolint:unconvert // uint32 on some GOARCHes
	root, err := filepath.EvalSymlinks(fmt.Sprintf("/sys/dev/block/%d:%d", unix.Major(dev), unix.Minor(dev)))
	if err != nil {
		return "", fmt.Errorf("partition %d: the root's device: %w", n, err)
	}
	return siblingPartition(filepath.Dir(root), n)
}

// siblingPartition is the /dev path of partition n among disk's sysfs
// entries.
func siblingPartition(disk string, n int) (string, error) {
	entries, err := os.ReadDir(disk)
	if err != nil {
		return "", fmt.Errorf("partition %d: %w", n, err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(disk, e.Name(), "partition"))
		if err != nil {
			continue // not a partition (queue, holders, ...)
		}
		if num, err := strconv.Atoi(strings.TrimSpace(string(b))); err != nil || num != n {
			continue
		}
		return "/dev/" + e.Name(), nil
	}
	return "", fmt.Errorf("partition %d: not on disk %s", n, filepath.Base(disk))
}

// mountBoot mounts the FAT boot partition read-write at dir; nothing on
// it runs from Linux (noexec, nodev, nosuid).
func mountBoot(dev, dir string) error {
	const flags = syscall.MS_NOEXEC | syscall.MS_NODEV | syscall.MS_NOSUID
	if err := syscall.Mount(dev, dir, "vfat", flags, ""); err != nil {
		return fmt.Errorf("mount the boot partition %s at %s: %w", dev, dir, err)
	}
	return nil
}
