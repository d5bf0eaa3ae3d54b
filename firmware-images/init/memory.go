package main

import (
	"bytes"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// memoryEvery is how often init writes the memory line on the console.
const memoryEvery = time.Minute

// reportMemory writes a line on the console every interval: the memory
// the system has left (MemAvailable of MemTotal) and what svc-edge holds
// (its daemon's and its supervisor's resident memory, the part of it that
// is anonymous rather than pages of files the kernel can drop and read
// again, and the peak). Whoever
// reads the console (an installer, support, the image's benchmark) sees
// whether an appliance runs short; svc-edge's own status API listens on
// the appliance's loopback only.
func reportMemory(every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for range tick.C {
		log.Print(memoryLine("/proc"))
	}
}

// memoryLine reads /proc (at proc) into one line, such as
//
//	memory: 850.2 MiB available of 960.5 MiB; svc-edge run (pid 131): 45.3 MiB resident (31.0 MiB anonymous), peak 51.0 MiB; svc-edge supervise (pid 105): 9.8 MiB resident (2.5 MiB anonymous), peak 10.1 MiB
//
// What it cannot read it says in the line.
func memoryLine(proc string) string {
	var sb strings.Builder
	sb.WriteString("memory: ")
	info, err := readKB(filepath.Join(proc, "meminfo"))
	avail, okA := info["MemAvailable"]
	total, okT := info["MemTotal"]
	switch {
	case err != nil:
		fmt.Fprintf(&sb, "%v", err)
	case !okA || !okT:
		sb.WriteString("no MemAvailable and MemTotal in meminfo")
	default:
		fmt.Fprintf(&sb, "%s available of %s", inMiB(avail), inMiB(total))
	}
	procs := edgeProcesses(proc)
	if len(procs) == 0 {
		sb.WriteString("; svc-edge is not running")
	}
	for _, p := range procs {
		fmt.Fprintf(&sb, "; svc-edge %s (pid %d): ", p.command, p.pid)
		st, err := readKB(filepath.Join(proc, strconv.Itoa(p.pid), "status"))
		rss, okR := st["VmRSS"]
		anon, okA := st["RssAnon"]
		hwm, okH := st["VmHWM"]
		switch {
		case err != nil:
			fmt.Fprintf(&sb, "%v", err)
		case !okR || !okA || !okH:
			sb.WriteString("no VmRSS, RssAnon and VmHWM in its status")
		default:
			fmt.Fprintf(&sb, "%s resident (%s anonymous), peak %s", inMiB(rss), inMiB(anon), inMiB(hwm))
		}
	}
	return sb.String()
}

// edgeProcess is a running svc-edge: its command (run, the daemon, or
// supervise, its supervisor) and PID.
type edgeProcess struct {
	pid     int
	command string
}

// edgeProcesses are the svc-edge processes under proc, the daemons
// first, each kind by PID.
func edgeProcesses(proc string) []edgeProcess {
	dirs, err := os.ReadDir(proc)
	if err != nil {
		return nil
	}
	var out []edgeProcess
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil || !d.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(proc, d.Name(), "cmdline"))
		if err != nil {
			continue // it exited since the listing
		}
		args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if len(args) < 2 || filepath.Base(args[0]) != "svc-edge" {
			continue
		}
		out = append(out, edgeProcess{pid: pid, command: args[1]})
	}
	slices.SortFunc(out, func(a, b edgeProcess) int {
		if (a.command == "run") != (b.command == "run") {
			if a.command == "run" {
				return -1
			}
			return 1
		}
		return a.pid - b.pid
	})
	return out
}

// readKB reads the "Name:   123 kB" lines of a /proc file (meminfo,
// status) into kB by name; lines of another shape are left out.
func readKB(path string) (map[string]uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]uint64{}
	for line := range bytes.Lines(b) {
		name, rest, ok := strings.Cut(string(line), ":")
		f := strings.Fields(rest)
		if !ok || len(f) != 2 || f[1] != "kB" {
			continue
		}
		if n, err := strconv.ParseUint(f[0], 10, 64); err == nil {
			out[name] = n
		}
	}
	return out, nil
}

// inMiB is kB as MiB, for the console.
func inMiB(kb uint64) string { return fmt.Sprintf("%.1f MiB", float64(kb)/1024) }
