package main

import "syscall"

// rebootSystem restarts the appliance into a trial boot: what the
// supervisor and the daemon wrote is on disk (each file fsync'd), and
// the rest of the page cache is flushed first.
func rebootSystem() error {
	syscall.Sync()
	return syscall.Reboot(syscall.LINUX_REBOOT_CMD_RESTART)
}
