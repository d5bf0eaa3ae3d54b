package main

import (
	"log/slog"
	"syscall"
)

// rebootSystem restarts the appliance into a trial boot: what the
// supervisor and the daemon wrote is on disk (each file fsync'd), and
// the rest of the page cache is flushed first. The boot partition,
// mounted at boot, is unmounted, so that the FAT's dirty flag is cleared
// and the next boot does not find a volume "not properly unmounted".
func rebootSystem(boot string) error {
	syscall.Sync()
	if err := syscall.Unmount(boot, 0); err != nil {
		slog.Warn("supervise: the boot partition stays mounted over the reboot", "dir", boot, "error", err.Error())
	}
	return syscall.Reboot(syscall.LINUX_REBOOT_CMD_RESTART)
}
