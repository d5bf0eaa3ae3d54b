// Command abhello stands in for svc-edge on the A/B spike image: it shows an
// enrolment code on the console, takes a root image over HTTP into the
// inactive slot, asks U-Boot for one trial boot of it, and on a trial boot
// commits (version not "bad") or reboots without committing (U-Boot then
// starts the committed slot again). Its devices are qemu's (/dev/vda).
package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"syscall"
	"time"
)

const bootDev = "/dev/vda1"

var con io.Writer = os.Stdout

func logf(format string, args ...any) { fmt.Fprintf(con, "abhello: "+format+"\n", args...) }

func cmdline(key string) string {
	b, _ := os.ReadFile("/proc/cmdline")
	for _, f := range strings.Fields(string(b)) {
		if v, ok := strings.CutPrefix(f, key+"="); ok {
			return v
		}
	}
	return ""
}

// withBoot mounts the boot FAT, runs f on it, syncs and unmounts.
func withBoot(f func(dir string) error) error {
	os.MkdirAll("/run/boot", 0755)
	if err := syscall.Mount(bootDev, "/run/boot", "vfat", 0, ""); err != nil {
		return fmt.Errorf("mount boot: %w", err)
	}
	err := f("/run/boot")
	syscall.Sync()
	if uerr := syscall.Unmount("/run/boot", 0); err == nil {
		err = uerr
	}
	return err
}

func writeAB(slot, trial string, tries int) error {
	return withBoot(func(dir string) error {
		s := fmt.Sprintf("slot=%s\ntrial=%s\ntries=%d\n", slot, trial, tries)
		tmp := dir + "/ab.new"
		if err := os.WriteFile(tmp, []byte(s), 0644); err != nil {
			return err
		}
		return os.Rename(tmp, dir+"/ab.txt")
	})
}

func readAB() string {
	var s string
	withBoot(func(dir string) error {
		b, err := os.ReadFile(dir + "/ab.txt")
		s = strings.ReplaceAll(string(b), "\n", " ")
		return err
	})
	return s
}

func main() {
	if c, err := os.OpenFile("/dev/console", os.O_WRONLY, 0); err == nil {
		con = c
	}
	vb, _ := os.ReadFile("/etc/version")
	version := strings.TrimSpace(string(vb))
	slot, committed, trial := cmdline("svc.slot"), cmdline("svc.committed"), cmdline("svc.trial") == "1"
	logf("version %s running from slot %s (committed %s, trial %v), ab.txt: %s", version, slot, committed, trial, readAB())
	if trial {
		if strings.Contains(version, "panic") {
			logf("trial of %s: crashing the kernel", version)
			os.WriteFile("/proc/sysrq-trigger", []byte("c"), 0)
		}
		if strings.Contains(version, "bad") {
			logf("HEALTH CHECK FAILED on trial of %s: rebooting without commit", version)
			time.Sleep(2 * time.Second)
			syscall.Sync()
			syscall.Reboot(syscall.LINUX_REBOOT_CMD_RESTART)
		}
		if err := writeAB(slot, "", 0); err != nil {
			logf("commit: %v", err)
		} else {
			logf("COMMITTED slot %s version %s", slot, version)
		}
	}
	http.HandleFunc("/update", func(w http.ResponseWriter, r *http.Request) {
		other := map[string]string{"a": "b", "b": "a"}[slot]
		part := map[string]string{"a": "/dev/vda2", "b": "/dev/vda3"}[other]
		f, err := os.OpenFile(part, os.O_WRONLY, 0)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		n, err := io.Copy(f, r.Body)
		if err == nil {
			err = f.Sync()
		}
		f.Close()
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		if err := writeAB(slot, other, 1); err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		logf("wrote %d bytes to slot %s (%s); trial requested, rebooting", n, other, part)
		fmt.Fprintf(w, "ok %d\n", n)
		go func() { time.Sleep(time.Second); syscall.Sync(); syscall.Reboot(syscall.LINUX_REBOOT_CMD_RESTART) }()
	})
	go http.ListenAndServe(":8080", nil)
	for i := 0; ; i++ {
		logf("ENROLMENT CODE: K7Q-4XZ version=%s slot=%s", version, slot)
		time.Sleep(20 * time.Second)
	}
}
