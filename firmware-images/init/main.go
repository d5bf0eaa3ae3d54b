// Command init is PID 1 of the appliance image (issue 18): gokrazy's Boot
// mounts the file systems (the data partition at /perm) and feeds the
// hardware watchdog; gokrazy's supervisor runs the DHCP client; and init
// itself runs svc-edge, restarting it when it exits, with its output on
// the console (the serial port and, on a Pi, the HDMI screen) and in a
// size-bounded log on the data partition that survives a reboot.
//
// The cloud's URL comes from the kernel command line (svc.cloud=URL, and
// svc.simulate=1 on a machine without GPIO), which boot.scr takes from
// svc.txt on the boot partition: the installer can edit it on any
// computer before the first boot.
//
// svc-edge runs under its own supervisor (svc-edge supervise) on the A/B
// root partitions: an update is written into the other root, and tried
// by one reboot into it (docs/decisions.md, "A/B partition slots").
package main

import (
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gokrazy/gokrazy"
)

const (
	edgeBin = "/user/svc-edge"
	dataDir = "/perm/svc-edge"
	// slotsDir is the A/B slots' state on the data partition.
	slotsDir = "/perm/svc-edge/slots"
	// bootDir is where the boot partition (ab.txt, the kernels) is
	// mounted read-write for updates.
	bootDir  = "/boot"
	logDir   = "/perm/log"
	logLimit = 1 << 20 // bytes per log file; one older file is kept
	// kioskListen is where the appliance's status page (the kiosk's
	// enrolment page while it is not enrolled) is served on the LAN.
	kioskListen = "0.0.0.0:8088"
)

func main() {
	con := consoles()
	log.SetOutput(con)
	log.SetPrefix("init: ")
	version := strings.TrimSpace(readFile("/etc/version"))
	if err := gokrazy.Boot(version); err != nil {
		log.Printf("boot: %v", err)
	}
	preparePerm() // the data partition at /perm: made at the first boot, grown to the card
	log.Printf("svc appliance %s, slot %s", version, cmdline("svc.slot"))
	dhcp := gokrazy.NewService(exec.Command("/gokrazy/dhcp"))
	ntp := gokrazy.NewService(exec.Command("/gokrazy/ntp", ntpServers(cmdline("svc.ntp"))...))
	if err := gokrazy.SuperviseServices([]*gokrazy.Service{dhcp, ntp}); err != nil {
		log.Printf("supervise dhcp and ntp: %v", err)
	}
	out := io.Writer(con)
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		log.Printf("no log on the data partition: %v", err)
	} else {
		out = io.MultiWriter(con, &rotating{path: filepath.Join(logDir, "svc-edge.log"), limit: logLimit})
	}
	cloud := cmdline("svc.cloud")
	if _, err := os.Stat(filepath.Join(dataDir, "edge.json")); cloud == "" && err != nil {
		log.Printf("this appliance is not enrolled and has no cloud to enrol with: on another computer, write cloud=https://your-cloud into svc.txt on the SD card's boot partition, then start it again (firmware-images/README.md)")
	}
	run := edgeArgs(cloud, cmdline("svc.simulate") == "1", cmdline("svc.update_every"))
	args, err := superviseArgs(run)
	if err != nil {
		log.Printf("updates are off, svc-edge runs without its supervisor: %v", err)
		args = run
	}
	go statusLED("/sys")         // the board's LED and the console say how svc-edge is doing (led.go)
	go reportMemory(memoryEvery) // memory.go: a line on the console every minute
	superviseEdge(args, out)
}

// defaultNTP are the time servers when svc.txt names none: a board
// without a battery-backed clock (a Pi) starts in 1970 or at the time
// saved on /perm at the last shutdown, and the broker's TLS certificate,
// the passes' validity and the cloud's clock check all need the real
// time. A site that blocks outbound NTP sets ntp= in svc.txt.
var defaultNTP = []string{"0.pool.ntp.org", "1.pool.ntp.org", "2.pool.ntp.org", "3.pool.ntp.org"}

// ntpServers is gokrazy's ntp's arguments: the servers of svc.txt's
// ntp=host,host, or defaultNTP.
func ntpServers(list string) []string {
	var out []string
	for _, h := range strings.Split(list, ",") {
		if h = strings.TrimSpace(h); h != "" {
			out = append(out, h)
		}
	}
	if len(out) == 0 {
		return defaultNTP
	}
	return out
}

// superviseArgs is svc-edge's command line under its supervisor on the
// A/B partitions: the boot partition mounted read-write at bootDir (the
// supervisor and the updater write ab.txt and the kernels there), and
// root partitions 2 and 3 of the disk the system booted from.
func superviseArgs(run []string) ([]string, error) {
	d, err := rootDisk("/sys", "/")
	if err != nil {
		return nil, err
	}
	var dev [3]string // boot, root A, root B
	for i := range dev {
		if dev[i], err = partitionDev(d, i+1); err != nil {
			return nil, err
		}
	}
	boot, a, b := dev[0], dev[1], dev[2]
	if err := mountBoot(boot, bootDir); err != nil {
		return nil, err
	}
	args := []string{"supervise", "--slots", slotsDir, "--boot", bootDir, "--root-a", a, "--root-b", b, "--"}
	return append(args, run...), nil
}

// edgeArgs is svc-edge's command line: it enrols first when the data
// partition holds no configuration, showing its code on stdout and on
// the kiosk's page. simulate is for a machine without GPIO (qemu): the
// gates' relays are simulated pins. updateEvery, when set, is how often
// it asks the cloud for a release (svc.txt's update_every).
func edgeArgs(cloud string, simulate bool, updateEvery string) []string {
	args := []string{"run", "--data", dataDir, "--config", filepath.Join(dataDir, "edge.json"),
		"--kiosk-listen", kioskListen}
	if cloud != "" {
		args = append(args, "--cloud", cloud)
	}
	if simulate {
		args = append(args, "--simulate")
	}
	if updateEvery != "" {
		args = append(args, "--update-every", updateEvery)
	}
	return args
}

// superviseEdge runs svc-edge forever, starting it again after it exits
// (restartEdge has the delays).
func superviseEdge(args []string, out io.Writer) {
	restartEdge(func() error {
		if err := os.MkdirAll(dataDir, 0o700); err != nil {
			log.Printf("mkdir %s: %v", dataDir, err)
		}
		cmd := exec.Command(edgeBin, args...)
		cmd.Stdout, cmd.Stderr = out, out
		cmd.Env = append(os.Environ(), "HOME="+dataDir)
		return cmd.Run()
	}, time.Now, func(d time.Duration) bool { time.Sleep(d); return true })
}

// The delays between svc-edge's runs.
const (
	restartFirst = time.Second     // after a clean exit (an update asked for a restart), and the first after a run that lasted
	restartMax   = time.Minute     // the longest, after failures in a row
	restartReset = 5 * time.Minute // a run this long starts the delays again from restartFirst, however it ended
)

// restartEdge calls run (one run of svc-edge) again and again, waiting
// with wait between runs: restartFirst after a clean exit or a run that
// lasted restartReset; after failures in a row, twice the last delay
// each time, up to restartMax (2 s, 4 s ... 32 s, then a minute), so a
// svc-edge that cannot start does not spin on the CPU and flood the log.
// It returns when wait returns false (only tests do).
func restartEdge(run func() error, now func() time.Time, wait func(time.Duration) bool) {
	delay := restartFirst
	for {
		start := now()
		err := run()
		if err == nil || now().Sub(start) >= restartReset {
			delay = restartFirst
		} else {
			delay = min(2*delay, restartMax)
		}
		log.Printf("svc-edge exited: %v; starting it again in %s", err, delay)
		if !wait(delay) {
			return
		}
	}
}

// consoles writes to /dev/console (the last console= of the kernel
// command line: the serial port) and to /dev/tty1 (the screen), when they
// open; a write that fails on one does not stop the other.
func consoles() io.Writer {
	var ws []io.Writer
	for _, p := range []string{"/dev/console", "/dev/tty1"} {
		if f, err := os.OpenFile(p, os.O_WRONLY, 0); err == nil {
			ws = append(ws, lenient{f})
		}
	}
	if len(ws) == 0 {
		return os.Stderr
	}
	return io.MultiWriter(ws...)
}

// lenient reports every write as done, so that one console that fails
// does not silence the others in an io.MultiWriter.
type lenient struct{ w io.Writer }

func (l lenient) Write(p []byte) (int, error) {
	l.w.Write(p) //nolint:errcheck // see lenient
	return len(p), nil
}

// logSyncDelay bounds what of the log a power cut can lose: a write is
// fsync'd at most this long after it. Without it, the kernel writes the
// log back when it likes, and a cut (an appliance's usual end) left the
// file ending in NUL bytes where its last seconds of lines were (seen
// under qemu). One fsync per delay at most, whatever the rate of lines,
// so the SD card is not worn by a busy gate.
const logSyncDelay = 2 * time.Second

// rotating appends to path and, past limit bytes, renames it to path.1
// (replacing the older one) and starts a new file, and fsyncs what it
// wrote within logSyncDelay. Errors are reported on the console once per
// file and the output is dropped.
type rotating struct {
	mu     sync.Mutex
	path   string
	limit  int64
	f      *os.File
	size   int64
	failed bool

	// after schedules fn after d (time.AfterFunc when nil); the tests
	// give their own clock.
	after   func(d time.Duration, fn func())
	pending bool // a sync is scheduled
	syncs   int  // fsyncs done, for the tests
}

// scheduleSync arranges one fsync of the current file logSyncDelay from
// now, unless one is arranged already. r.mu is held.
func (r *rotating) scheduleSync() {
	if r.pending {
		return
	}
	r.pending = true
	after := r.after
	if after == nil {
		after = func(d time.Duration, fn func()) { time.AfterFunc(d, fn) }
	}
	after(logSyncDelay, r.sync)
}

func (r *rotating) sync() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending = false
	if r.f == nil {
		return
	}
	if err := r.f.Sync(); err != nil && !r.failed {
		log.Printf("log: %v", err)
		r.failed = true
		return
	}
	r.syncs++
}

func (r *rotating) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f != nil && r.size+int64(len(p)) > r.limit {
		r.f.Sync() //nolint:errcheck // a failure shows at the next write
		r.f.Close()
		r.f = nil
		if err := os.Rename(r.path, r.path+".1"); err != nil {
			log.Printf("log: %v", err)
		}
	}
	if r.f == nil {
		f, err := os.OpenFile(r.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
		if err != nil {
			if !r.failed {
				log.Printf("log: %v", err)
				r.failed = true
			}
			return len(p), nil
		}
		st, err := f.Stat()
		if err != nil {
			f.Close()
			return len(p), nil
		}
		r.f, r.size, r.failed = f, st.Size(), false
	}
	n, err := r.f.Write(p)
	r.size += int64(n)
	if err != nil && !r.failed {
		log.Printf("log: %v", err)
		r.failed = true
	}
	if n > 0 {
		r.scheduleSync()
	}
	return len(p), nil
}

// cmdline returns the value of key=value on the kernel command line.
func cmdline(key string) string {
	for _, f := range strings.Fields(readFile("/proc/cmdline")) {
		if v, ok := strings.CutPrefix(f, key+"="); ok {
			return v
		}
	}
	return ""
}

func readFile(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintf(os.Stderr, "init: %v\n", err)
	}
	return string(b)
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
