package main

import (
	"os"
	"path/filepath"
	"testing"
)

// fakeProc writes files (path under proc: content) into a new directory.
func fakeProc(t *testing.T, files map[string]string) string {
	t.Helper()
	proc := t.TempDir()
	for p, s := range files {
		p = filepath.Join(proc, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return proc
}

// TestMemoryLine_SystemAndSvcEdge: the line gives MemAvailable of
// MemTotal, then the svc-edge daemon's and its supervisor's VmRSS,
// RssAnon and VmHWM, the daemon first; other processes are left out.
func TestMemoryLine_SystemAndSvcEdge(t *testing.T) {
	proc := fakeProc(t, map[string]string{
		"meminfo":       "MemTotal:         983552 kB\nMemFree:          800000 kB\nMemAvailable:     870912 kB\nHugePages_Total:       0\n",
		"1/cmdline":     "/gokrazy/init\x00",
		"1/status":      "Name:\tinit\nVmRSS:\t    9000 kB\nVmHWM:\t    9500 kB\n",
		"105/cmdline":   "/user/svc-edge\x00supervise\x00--slots\x00/perm/svc-edge/slots\x00",
		"105/status":    "Name:\tsvc-edge\nVmHWM:\t   10342 kB\nVmRSS:\t   10035 kB\nRssAnon:\t    2560 kB\nThreads:\t7\n",
		"131/cmdline":   "/user/svc-edge\x00run\x00--data\x00/perm/svc-edge\x00",
		"131/status":    "Name:\tsvc-edge\nVmHWM:\t   52224 kB\nVmRSS:\t   46387 kB\nRssAnon:\t   31744 kB\nRssFile:\t   14643 kB\n",
		"200/cmdline":   "/gokrazy/dhcp\x00",
		"self/cmdline":  "/gokrazy/init\x00",
		"4000/cmdline":  "", // a kernel thread
		"4001/cmdline":  "svc-edge\x00",
		"4001/status":   "VmRSS:\t 1 kB\nRssAnon:\t 1 kB\nVmHWM:\t 1 kB\n",
		"notapid/dummy": "",
	})
	want := "memory: 850.5 MiB available of 960.5 MiB; " +
		"svc-edge run (pid 131): 45.3 MiB resident (31.0 MiB anonymous), peak 51.0 MiB; " +
		"svc-edge supervise (pid 105): 9.8 MiB resident (2.5 MiB anonymous), peak 10.1 MiB"
	if got := memoryLine(proc); got != want {
		t.Errorf("memoryLine:\n got %s\nwant %s", got, want)
	}
}

// TestMemoryLine_SaysWhatItCannotRead: no meminfo, no svc-edge, a status
// without the figures; each is said in the line.
func TestMemoryLine_SaysWhatItCannotRead(t *testing.T) {
	proc := fakeProc(t, map[string]string{"1/cmdline": "/gokrazy/init\x00"})
	want := "memory: open " + filepath.Join(proc, "meminfo") + ": no such file or directory; svc-edge is not running"
	if got := memoryLine(proc); got != want {
		t.Errorf("memoryLine:\n got %s\nwant %s", got, want)
	}

	proc = fakeProc(t, map[string]string{
		"meminfo":   "MemTotal: 983552 kB\n",
		"7/cmdline": "/user/svc-edge\x00run\x00",
		"7/status":  "Name:\tsvc-edge\n",
	})
	want = "memory: no MemAvailable and MemTotal in meminfo; svc-edge run (pid 7): no VmRSS, RssAnon and VmHWM in its status"
	if got := memoryLine(proc); got != want {
		t.Errorf("memoryLine:\n got %s\nwant %s", got, want)
	}
}
