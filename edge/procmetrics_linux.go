package edge

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// userHZ is the kernel's USER_HZ, the unit of /proc/self/stat's CPU
// times: 100 on every Linux architecture the appliance runs on (what
// sysconf(_SC_CLK_TCK) answers; Go has no sysconf without cgo).
const userHZ = 100

// writeProcess writes the process's figures under the Prometheus client's
// names (process_*), read from /proc; a field that cannot be read is left
// out rather than written wrong.
func writeProcess(p *promWriter) {
	if f, ok := procStat(); ok {
		if cpu, ok := f.ticks(14, 15); ok { // utime, stime
			p.family("process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.")
			p.sample("process_cpu_seconds_total", cpu/userHZ)
		}
		if v, ok := f.num(23); ok { // vsize, bytes
			p.gauge("process_virtual_memory_bytes", "Virtual memory size in bytes.", v)
		}
		if v, ok := f.num(24); ok { // rss, pages
			p.gauge("process_resident_memory_bytes", "Resident memory size in bytes.", v*float64(os.Getpagesize()))
		}
		if start, ok := f.num(22); ok { // starttime, ticks after boot
			if boot, ok := bootTime(); ok {
				p.gauge("process_start_time_seconds", "Start time of the process since unix epoch in seconds.", boot+start/userHZ)
			}
		}
	}
	if fds, err := os.ReadDir("/proc/self/fd"); err == nil {
		p.gauge("process_open_fds", "Number of open file descriptors.", float64(len(fds)))
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil {
		p.gauge("process_max_fds", "Maximum number of open file descriptors.", float64(lim.Cur))
	}
}

// statFields are /proc/self/stat's fields after the command name, which
// may hold spaces and parentheses: field n (1-based, as proc(5) numbers
// them) is statFields[n-3].
type statFields []string

func procStat() (statFields, bool) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return nil, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil, false
	}
	return strings.Fields(string(b[i+1:])), true
}

func (f statFields) num(n int) (float64, bool) {
	if n-3 < 0 || n-3 >= len(f) {
		return 0, false
	}
	v, err := strconv.ParseUint(f[n-3], 10, 64)
	return float64(v), err == nil
}

func (f statFields) ticks(a, b int) (float64, bool) {
	x, ok1 := f.num(a)
	y, ok2 := f.num(b)
	return x + y, ok1 && ok2
}

// bootTime is /proc/stat's btime, the boot in Unix seconds.
func bootTime() (float64, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			return float64(n), err == nil
		}
	}
	return 0, false
}
