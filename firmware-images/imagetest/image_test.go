// Package imagetest boots the appliance's arm64 disk image (mkimage.sh
// qemu) under qemu-system-aarch64 with Debian's U-Boot, against a
// svc-cloud started on the host, and checks what an installer sees: the
// enrolment code on the serial console and on the status page, the claim
// through the API, and the edge online; and that the first boot made the
// data partition in the free space of a disk bigger than the image.
//
// It needs Debian's qemu-system-arm, u-boot-qemu, squashfs-tools,
// dosfstools, mtools, e2fsprogs, fdisk and u-boot-tools; without them the
// test is skipped, or fails when SVC_TEST_REQUIRE_SERVICES=1 (CI).
// SVC_TEST_IMAGE names an image already built (make image-test builds it);
// otherwise the test runs mkimage.sh.
package imagetest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// uboot is Debian's U-Boot for qemu's virt machine (u-boot-qemu).
const uboot = "/usr/lib/u-boot/qemu_arm64/u-boot.bin"

// Deadlines for a software-emulated arm64 on a busy 2-core machine: the
// spike measured 6–11 s to the code; these leave a wide margin.
const (
	bootDeadline   = 4 * time.Minute
	onlineDeadline = 2 * time.Minute
)

var codeLine = regexp.MustCompile(`enrolment code: ([0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4})`)

// init's lines about the data partition (init/perm.go).
var (
	permCreated = regexp.MustCompile(`data partition: created (/dev/vda4): (\d+) MiB at (\d+) MiB`)
	permMounted = regexp.MustCompile(`data partition: mounted /dev/vda4 at /perm`)
	permGrown   = regexp.MustCompile(`data partition: grew the file system on /dev/vda4 from (\d+) MiB to (\d+) MiB`)
	// What init says when /perm is not there to write to.
	permMissing = regexp.MustCompile(`data partition: .*(without /perm|damaged)|no log on the data partition`)
)

// cardGrowth is how much bigger than the image the test's disk is, as an
// SD card is: the first boot makes the data partition in that space.
const cardGrowth = 256 << 20

// TestImage_EnrolsByCode boots the image on a disk 256 MiB bigger than it,
// reads its enrolment code from the serial console and from its status
// page, claims it through the cloud's API, and waits for the edge to be
// online in GET /v1/edges; init's console lines say that it made the data
// partition in the disk's free space and grew its file system to it.
func TestImage_EnrolsByCode(t *testing.T) {
	need(t, "qemu-system-aarch64", "mcopy")
	if _, err := os.Stat(uboot); err != nil {
		missing(t, uboot+" (apt-get install u-boot-qemu)")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	img := filepath.Join(dir, "disk.img")
	copyFile(t, image(t), img)
	st, err := os.Stat(img)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, st.Size()+cardGrowth); err != nil {
		t.Fatal(err)
	}
	// The image ends with p3; p4 starts at the next MiB.
	const mib = 1 << 20
	wantPermMiB := (st.Size() + cardGrowth - (st.Size()+mib-1)/mib*mib) / mib

	cloudBin := filepath.Join(dir, "svc-cloud")
	run(t, root, "go", "build", "-o", cloudBin, "./cloud/cmd/svc-cloud")
	// The guest reaches the host's loopback at 10.0.2.2 (qemu's user
	// networking), but the broker's URL is given to the edge as the cloud
	// sees it: the broker listens on the host's own address, which both
	// reach.
	hostIP := hostAddress(t)
	data := filepath.Join(dir, "cloud")
	api := serve(t, cloudBin, "serve", "--data", data, "--addr", "127.0.0.1:0", "--mqtt-listen", "127.0.0.1:0",
		"--mqtt-tls-listen", net.JoinHostPort(hostIP, "0"), "--demo")
	u, err := url.Parse(api)
	if err != nil {
		t.Fatal(err)
	}

	// The installer's edit: the cloud's URL in svc.txt on the boot FAT.
	svcTxt := filepath.Join(dir, "svc.txt")
	if err := os.WriteFile(svcTxt, fmt.Appendf(nil, "cloud=http://10.0.2.2:%s\nsimulate=1\n", u.Port()), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, dir, "mcopy", "-o", "-i", img+"@@1M", svcTxt, "::/svc.txt")

	page := freePort(t)
	start := time.Now()
	con := boot(t, img, page)
	m := con.wait(t, codeLine, bootDeadline)
	code := m[1]
	t.Logf("enrolment code %s on the console %.1f s after qemu started", code, time.Since(start).Seconds())

	// The status page (the kiosk's enrolment page on 0.0.0.0:8088),
	// which answers 503 while the appliance is not enrolled.
	poll(t, bootDeadline, "the status page shows the code", func() bool {
		_, b, err := get(fmt.Sprintf("http://127.0.0.1:%d/", page), "")
		return err == nil && strings.Contains(string(b), code)
	})

	out := run(t, dir, cloudBin, "edges", "claim", code, "--api", strings.TrimSuffix(api, "/v1"), "--data", data,
		"--name", "Image test")
	if !strings.Contains(out, "claimed "+code) {
		t.Fatalf("edges claim: %s", out)
	}
	con.wait(t, regexp.MustCompile(`enrolled as `), onlineDeadline)

	key := demoKey(t, data)
	poll(t, onlineDeadline, "the edge is online in GET /v1/edges", func() bool {
		status, b, err := get(api+"/edges", key)
		if err != nil || status != http.StatusOK {
			return false
		}
		var page struct {
			Data []struct {
				Name  string `json:"name"`
				State string `json:"state"`
			} `json:"data"`
		}
		if json.Unmarshal(b, &page) != nil {
			return false
		}
		for _, e := range page.Data {
			if e.Name == "Image test" && e.State == "online" {
				return true
			}
		}
		return false
	})
	t.Logf("online %.1f s after qemu started", time.Since(start).Seconds())

	// The data partition: made in the disk's free space at this first
	// boot, mounted, its file system grown from the template's size to
	// the partition's (the kernel may leave out a last block group too
	// small for its metadata: within 4 MiB).
	m = con.wait(t, permCreated, time.Second)
	if size := atoi(t, m[2]); size != wantPermMiB {
		t.Errorf("the data partition is %d MiB, want %d (the disk's free space): %s", size, wantPermMiB, m[0])
	}
	con.wait(t, permMounted, time.Second)
	m = con.wait(t, permGrown, time.Second)
	if from, to := atoi(t, m[1]), atoi(t, m[2]); from >= to || to > wantPermMiB || to < wantPermMiB-4 {
		t.Errorf("the file system grew from %d to %d MiB, want to %d MiB: %s", from, to, wantPermMiB, m[0])
	}
	if l := con.find(permMissing); l != "" {
		t.Errorf("the console says the data partition is missing: %s", l)
	}
}

func atoi(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// need skips the test (or fails it in CI) when a program is not on PATH.
func need(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := exec.LookPath(n); err != nil {
			missing(t, n+" (see firmware-images/README.md for the Debian packages)")
		}
	}
}

func missing(t *testing.T, what string) {
	t.Helper()
	if os.Getenv("SVC_TEST_REQUIRE_SERVICES") == "1" {
		t.Fatalf("not found: %s", what)
	}
	t.Skipf("not found: %s", what)
}

// image is SVC_TEST_IMAGE, or the image mkimage.sh builds.
func image(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("SVC_TEST_IMAGE"); p != "" {
		return p
	}
	need(t, "mksquashfs", "mkfs.vfat", "mkfs.ext4", "sfdisk", "mkimage")
	start := time.Now()
	run(t, "..", "./mkimage.sh", "qemu")
	t.Logf("mkimage.sh qemu: %.1f s", time.Since(start).Seconds())
	p, err := filepath.Abs("../build/svc-qemu.img")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func run(t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// hostAddress is the host's first non-loopback IPv4 address.
func hostAddress(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	missing(t, "a non-loopback IPv4 address on the host, for the broker the guest reaches")
	return ""
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// serve starts svc-cloud serve and returns its API's URL (…/v1); it is
// stopped when the test ends.
func serve(t *testing.T, bin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Stderr = io.Discard
	if testing.Verbose() {
		cmd.Stderr = os.Stderr
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stop(cmd) })
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "svc-cloud is serving "); ok {
			go func() { _, _ = io.Copy(io.Discard, stdout) }()
			return rest
		}
	}
	t.Fatal("svc-cloud serve exited without serving")
	return ""
}

func stop(cmd *exec.Cmd) {
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
}

// console is the guest's serial console, line by line.
type console struct {
	mu    sync.Mutex
	lines []string
	more  chan struct{} // closed and replaced when a line comes
	done  bool
}

// boot starts qemu on img with the guest's port 8088 forwarded to the
// host's 127.0.0.1:page; qemu is stopped when the test ends, and the
// console is logged if the test failed.
func boot(t *testing.T, img string, page int) *console {
	t.Helper()
	cmd := exec.Command("qemu-system-aarch64", "-M", "virt", "-cpu", "cortex-a72", "-smp", "2", "-m", "1024",
		"-nographic", "-bios", uboot, "-drive", "file="+img+",format=raw,if=virtio",
		"-device", "i6300esb", "-watchdog-action", "reset",
		"-netdev", fmt.Sprintf("user,id=n0,hostfwd=tcp:127.0.0.1:%d-:8088", page),
		"-device", "virtio-net-pci,netdev=n0")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &console{more: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			c.add(sc.Text(), false)
		}
		c.add("", true)
	}()
	t.Cleanup(func() {
		stop(cmd)
		if t.Failed() {
			c.mu.Lock()
			t.Logf("console:\n%s", strings.Join(c.lines, "\n"))
			c.mu.Unlock()
		}
	})
	return c
}

func (c *console) add(line string, done bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if done {
		c.done = true
	} else {
		c.lines = append(c.lines, strings.TrimRight(line, "\r"))
	}
	close(c.more)
	c.more = make(chan struct{})
}

// wait returns the submatches of the first console line that matches re,
// or fails the test at the deadline or when qemu exits.
func (c *console) wait(t *testing.T, re *regexp.Regexp, within time.Duration) []string {
	t.Helper()
	timeout := time.After(within)
	for i := 0; ; {
		c.mu.Lock()
		for ; i < len(c.lines); i++ {
			if m := re.FindStringSubmatch(c.lines[i]); m != nil {
				c.mu.Unlock()
				return m
			}
		}
		more, done := c.more, c.done
		c.mu.Unlock()
		if done {
			t.Fatalf("qemu exited before the console showed %q", re)
		}
		select {
		case <-more:
		case <-timeout:
			t.Fatalf("the console did not show %q within %s", re, within)
		}
	}
}

// find returns the first console line so far that matches re, or "".
func (c *console) find(re *regexp.Regexp) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range c.lines {
		if re.MatchString(l) {
			return l
		}
	}
	return ""
}

// poll calls ok every half second until it holds, failing the test at the
// deadline.
func poll(t *testing.T, within time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", within, what)
		}
		<-tick.C
	}
}

// get returns the status and body of GET u, with key as the bearer token
// unless it is empty.
func get(u, key string) (int, []byte, error) {
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		return 0, nil, err
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// demoKey is the demo organisation's test-mode secret key, which serve
// --demo writes to demo.json in its data directory.
func demoKey(t *testing.T, data string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(data, "demo.json"))
	if err != nil {
		t.Fatal(err)
	}
	var keys struct {
		SecretTest string `json:"secret_test"`
	}
	if err := json.Unmarshal(b, &keys); err != nil || keys.SecretTest == "" {
		t.Fatalf("demo.json: %v %s", err, b)
	}
	return keys.SecretTest
}
