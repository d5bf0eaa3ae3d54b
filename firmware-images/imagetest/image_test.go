// Package imagetest boots the appliance's arm64 disk image (mkimage.sh
// qemu) under qemu-system-aarch64 with Debian's U-Boot, against a
// svc-cloud started on the host, and checks what an installer and the
// fleet see: the enrolment code on the serial console and on the status
// page, the claim through the API, the edge online with its data
// partition made in the free space of a disk bigger than the image, a
// visit's pass
// admitted at a gate whose reader the cloud configured, an update to a
// second image that commits, one to a broken image that rolls back by
// itself, and svc-edge's log on the data partition, read from the disk
// file afterwards, holding all the boots.
//
// It needs Debian's qemu-system-arm, u-boot-qemu, squashfs-tools,
// dosfstools, mtools, e2fsprogs, fdisk and u-boot-tools; without them the
// test is skipped, or fails when SVC_TEST_REQUIRE_SERVICES=1 (CI). It
// builds its images itself: they must trust the release key it makes.
package imagetest

import (
	"bufio"
	"bytes"
	"encoding/binary"
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

// Deadlines for a software-emulated arm64 on a busy 2-core machine: a
// boot to the enrolment code takes 6–11 s, a download of a 35 MB root
// image under a minute; these leave a wide margin.
const (
	bootDeadline   = 4 * time.Minute
	onlineDeadline = 2 * time.Minute
	updateDeadline = 6 * time.Minute
)

// readerListen is where the gate's TCP reader listens in the guest, as
// the test configures it through the API; qemu forwards a host port to it.
// (Not 9100: the simulated label printer has Brother's raw port.)
const (
	readerPort   = 9200
	readerListen = "0.0.0.0:9200"
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

// gokrazy's Boot, in init, says whether it found a hardware watchdog to
// ping (qemu's i6300esb here, the BCM2835's on a Pi).
var (
	watchdogFound   = regexp.MustCompile(`found hardware watchdog "([^"]*)" with timeout (\S+), pinging`)
	watchdogMissing = regexp.MustCompile(`disabling hardware watchdog`)
)

// cardGrowth is how much bigger than the image the test's disk is, as an
// SD card is: the first boot makes the data partition in that space.
const cardGrowth = 256 << 20

// TestImage_EnrolsAdmitsUpdatesAndRollsBack is the appliance's life under
// qemu: it boots image 1.0.0, shows its code on the serial console and
// its status page, is claimed through the cloud's API, comes online,
// takes its gate's reader from the cloud, and admits a visit's pass read
// on it; then a rollout of 2.0.0 (a rootfs release) reboots it into slot
// b on trial, which commits; then a rollout of a broken image (its init
// does not run: the kernel panics) reboots it into slot a on trial, the
// boot loader falls back to b, and the appliance rolls back by itself,
// reports it, and admits passes on 2.0.0. svc-edge's log on the data
// partition has lines of the first, second and fourth boots.
func TestImage_EnrolsAdmitsUpdatesAndRollsBack(t *testing.T) {
	needQemu(t)
	dir := t.TempDir()
	cloudBin := hostBinary(t, dir, "./cloud/cmd/svc-cloud")
	edgeBin := hostBinary(t, dir, "./edge/cmd/svc-edge") // for svc-edge qr decode

	// The release key, which the images trust (RELEASE_KEYS).
	keyFile := filepath.Join(dir, "release.key")
	m := regexp.MustCompile(`public key: (\S+)`).FindStringSubmatch(run(t, dir, cloudBin, "releases", "keygen", "--out", keyFile))
	if m == nil {
		t.Fatal("releases keygen printed no public key")
	}
	v1 := buildImage(t, filepath.Join(dir, "v1"), "1.0.0", m[1])
	t.Run("RebuildIsIdentical", func(t *testing.T) {
		reproducible(t, v1, filepath.Join(dir, "v1-again"), "1.0.0", m[1])
	})
	v2 := buildImage(t, filepath.Join(dir, "v2"), "2.0.0", m[1])
	broken := brokenRoot(t, v2, filepath.Join(dir, "broken.sqfs"))

	hostIP := hostAddress(t)
	data := filepath.Join(dir, "cloud")
	base := serve(t, cloudBin, cloudArgs(data, hostIP)...)
	c := &cloudAPI{t: t, base: base, key: demoKey(t, data)}

	// The installer's edit: the cloud's URL in svc.txt on the boot FAT
	// (and, for the test, releases asked for every 5 s).
	img := filepath.Join(dir, "disk.img")
	wantPermMiB := newCard(t, v1.image, img, svcTxt(t, base)+"update_every=5s\n")

	page, reader := freePort(t), freePort(t)
	con := boot(t, img, page, reader)
	code := con.wait(t, 0, codeLine, bootDeadline)[1]
	t.Logf("enrolment code %s on the console %.1f s after qemu started", code, time.Since(con.start).Seconds())

	// The status page (the kiosk's enrolment page on 0.0.0.0:8088),
	// which answers 503 while the appliance is not enrolled.
	poll(t, bootDeadline, "the status page shows the code", func() bool {
		_, b, err := get(fmt.Sprintf("http://127.0.0.1:%d/", page), "")
		return err == nil && strings.Contains(string(b), code)
	})

	e := c.claim(t, con, cloudBin, data, code, "Image test", "")
	t.Logf("online %.1f s after qemu started", time.Since(con.start).Seconds())

	// The data partition: made in the disk's free space at this first
	// boot, mounted, its file system grown from the template's size to
	// the partition's (the kernel may leave out a last block group too
	// small for its metadata: within 4 MiB).
	m = con.wait(t, 0, permCreated, time.Second)
	if size := atoi(t, m[2]); size != wantPermMiB {
		t.Errorf("the data partition is %d MiB, want %d (the disk's free space): %s", size, wantPermMiB, m[0])
	}
	con.wait(t, 0, permMounted, time.Second)
	m = con.wait(t, 0, permGrown, time.Second)
	if from, to := atoi(t, m[1]), atoi(t, m[2]); from >= to || to > wantPermMiB || to < wantPermMiB-4 {
		t.Errorf("the file system grew from %d to %d MiB, want to %d MiB: %s", from, to, wantPermMiB, m[0])
	}
	if l, err := con.find(0, permMissing, 0); err == nil {
		t.Errorf("the console says the data partition is missing: %s", l[0])
	}
	// The watchdog that resets a hung appliance (a trial that hangs is
	// rolled back only through it) is found and pinged.
	if l, err := con.find(0, watchdogFound, 0); err != nil {
		t.Errorf("the console does not say the hardware watchdog was found: %v", err)
	} else {
		t.Logf("console: %s", l[0])
	}
	if l, err := con.find(0, watchdogMissing, 0); err == nil {
		t.Errorf("the console says there is no hardware watchdog: %s", l[0])
	}

	c.gateReader(t, con, e)
	c.admit(t, con, edgeBin, e.SiteID, reader, "Vera One")

	// 2.0.0: downloaded into slot b, tried by a reboot, committed.
	mark := con.mark()
	c.release(t, cloudBin, data, keyFile, v2.root, "2.0.0", e.ID)
	con.wait(t, mark, regexp.MustCompile(`A/B: committed a, trial \[b\], booting b \(trial 1\)`), updateDeadline)
	con.wait(t, mark, regexp.MustCompile(`update committed.* version=2\.0\.0`), updateDeadline)
	c.waitUpdate(t, e.ID, "committed", "2.0.0", "svc-edge 2.0.0")
	t.Logf("2.0.0 committed %.1f s after qemu started", time.Since(con.start).Seconds())
	c.admit(t, con, edgeBin, e.SiteID, reader, "Vera Two")

	// The broken image: written into slot a, tried by a reboot whose
	// kernel finds no init and panics; U-Boot, the try spent, boots b,
	// whose supervisor rolls the trial back and reports it.
	mark = con.mark()
	c.release(t, cloudBin, data, keyFile, broken, "2.0.1-broken", e.ID)
	con.wait(t, mark, regexp.MustCompile(`A/B: committed b, trial \[a\], booting a \(trial 1\)`), updateDeadline)
	con.wait(t, mark, regexp.MustCompile(`Kernel panic`), updateDeadline)
	con.wait(t, mark, regexp.MustCompile(`A/B: committed b, trial \[a\], booting b \(trial 0\)`), updateDeadline)
	con.wait(t, mark, regexp.MustCompile(`update rolled back.* version=2\.0\.1-broken`), updateDeadline)
	c.waitUpdate(t, e.ID, "rolled_back", "2.0.1-broken", "svc-edge 2.0.0")
	t.Logf("2.0.1-broken rolled back %.1f s after qemu started", time.Since(con.start).Seconds())
	c.admit(t, con, edgeBin, e.SiteID, reader, "Vera Three")

	// svc-edge's log on the data partition (init's /perm/log) kept all
	// four boots: read from the disk file once qemu has stopped, it holds
	// a line of each boot in their order. Each is said at one boot only:
	// the enrolment code (random, this test's) at the first, before any
	// reboot; the commit of 2.0.0 on its trial boot, the second; the
	// rollback of the broken release by the supervisor at the start of
	// the fourth, after the third (the broken one) panicked. The first
	// two boots ended in the supervisor's sync and reboot; the fourth
	// is flushed by the kernel's emergency sync (SysRq s on the serial
	// console) before qemu is killed, as a power cut would.
	con.sync(t)
	con.poweroff()
	permLog(t, img, regexp.MustCompile(`enrolment code: `+regexp.QuoteMeta(code)),
		regexp.MustCompile(`msg="update committed" slot=b version=2\.0\.0`),
		regexp.MustCompile(`msg="update rolled back" version=2\.0\.1-broken`))
}

// permLog checks that svc-edge's log on the disk file img's data
// partition (p4) holds, in /log/svc-edge.log.1 (the older file, if
// any) and /log/svc-edge.log, a line matching each of want in that
// order. It reads the partition without mounting it: p4's sectors from
// the MBR, copied to a file whose ext4 journal e2fsck replays (qemu was
// killed with the file system mounted) and whose files debugfs reads.
func permLog(t testing.TB, img string, want ...*regexp.Regexp) {
	t.Helper()
	need(t, "debugfs", "e2fsck")
	f, err := os.Open(img)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var mbr [512]byte
	if _, err := io.ReadFull(f, mbr[:]); err != nil {
		t.Fatal(err)
	}
	if mbr[510] != 0x55 || mbr[511] != 0xaa {
		t.Fatalf("%s has no MBR", img)
	}
	p4 := mbr[446+3*16:]
	start, sectors := int64(binary.LittleEndian.Uint32(p4[8:])), int64(binary.LittleEndian.Uint32(p4[12:]))
	if sectors == 0 {
		t.Fatalf("%s has no partition 4", img)
	}
	fs := filepath.Join(t.TempDir(), "p4.ext4")
	out, err := os.Create(fs)
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.Copy(out, io.NewSectionReader(f, start*512, sectors*512))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	// e2fsck's exit status 1 is "file system corrected": the journal replayed.
	if b, err := exec.Command("e2fsck", "-y", "-E", "journal_only", fs).CombinedOutput(); err != nil {
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() > 1 {
			t.Fatalf("e2fsck -E journal_only on p4: %v\n%s", err, b)
		}
	}
	var text string
	for _, name := range []string{"/log/svc-edge.log.1", "/log/svc-edge.log"} {
		// debugfs says on stderr, and exits 0, when there is no such file.
		b, err := exec.Command("debugfs", "-R", "cat "+name, fs).Output()
		if err != nil {
			t.Fatalf("debugfs cat %s: %v", name, err)
		}
		text += string(b)
	}
	t.Logf("the log on the data partition: %d bytes, %d lines", len(text), strings.Count(text, "\n"))
	rest := text
	for _, re := range want {
		loc := re.FindStringIndex(rest)
		if loc == nil {
			// NULs: a power cut can leave the file's new size on disk
			// without the data appended last.
			shown := strings.ReplaceAll(text, "\x00", "")
			if len(shown) > 8<<10 {
				shown = shown[:4<<10] + "\n[...]\n" + shown[len(shown)-4<<10:]
			}
			t.Errorf("the log on the data partition has no line %q (after the previous boot's):\n%s", re, shown)
			return
		}
		rest = rest[loc[1]:]
	}
}

// TestImage_RaspberryPiBuilds builds the Pi image (no Pi boots here): it
// is under 256 MB, and its boot partition holds what the Pi's firmware
// and U-Boot read, with room left for slot b's kernel.
func TestImage_RaspberryPiBuilds(t *testing.T) {
	need(t, "mksquashfs", "mkfs.vfat", "mkfs.ext4", "sfdisk", "mkimage", "mdir", "apt-get", "dpkg-deb")
	out := t.TempDir()
	cmd := exec.CommandContext(t.Context(), "./mkimage.sh", "rpi")
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "BUILD="+out, "VERSION=1.0.0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("mkimage.sh rpi: %v\n%s", err, b)
	}
	img := filepath.Join(out, "svc-rpi.img")
	st, err := os.Stat(img)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() >= 256e6 {
		t.Errorf("the Pi image is %d bytes, want under 256 MB", st.Size())
	}
	listing := run(t, ".", "mdir", "-b", "-i", img+"@@1M", "::/")
	for _, f := range []string{"config.txt", "u-boot.bin", "start4.elf", "bootcode.bin", "boot.scr", "ab.txt", "svc.txt",
		"vmlinuz-a", "bcm2711-rpi-4-b.dtb", "bcm2837-rpi-3-b.dtb"} {
		if !strings.Contains(listing, "::/"+f+"\n") {
			t.Errorf("the boot partition has no %s:\n%s", f, listing)
		}
	}
	// The Pi's firmware starts U-Boot in 64-bit mode, with the header's
	// UART for the console the kernel command line names.
	config := run(t, ".", "mtype", "-i", img+"@@1M", "::/config.txt")
	for _, line := range []string{"arm_64bit=1", "kernel=u-boot.bin", "enable_uart=1", "dtoverlay=disable-bt", "dtparam=watchdog=on"} {
		if !strings.Contains(config, line+"\n") {
			t.Errorf("config.txt has no %s:\n%s", line, config)
		}
	}
	run(t, ".", "mdir", "-b", "-i", img+"@@1M", "::/overlays/disable-bt.dtbo")
	kernel, err := os.Stat(filepath.Join(out, "rpi", "root", "kernel", "vmlinuz"))
	if err != nil {
		t.Fatal(err)
	}
	// mdir groups digits with spaces: "42 567 680 bytes free".
	m := regexp.MustCompile(`([\d ]+) bytes free`).FindStringSubmatch(run(t, ".", "mdir", "-i", img+"@@1M", "::/"))
	if m == nil {
		t.Fatal("mdir printed no free space")
	}
	if free := atoi(t, strings.ReplaceAll(strings.TrimSpace(m[1]), " ", "")); free < 2*kernel.Size() {
		t.Errorf("the boot partition has %d bytes free, want room for slot b's kernel (%d bytes) with a margin", free, kernel.Size())
	}
}

func atoi(t testing.TB, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// hostBinary builds the main module's package pkg for this host into dir
// and returns the binary's path.
func hostBinary(tb testing.TB, dir, pkg string) string {
	tb.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		tb.Fatal(err)
	}
	bin := filepath.Join(dir, filepath.Base(pkg))
	run(tb, root, "go", "build", "-o", bin, pkg)
	return bin
}

// built is one mkimage.sh qemu build.
type built struct {
	image string // the disk image
	root  string // its root file system image, the rootfs release
	tree  string // the directory the root was made of
}

// buildImage runs mkimage.sh qemu into out, for version, trusting the
// release key pub.
func buildImage(t testing.TB, out, version, pub string) built {
	t.Helper()
	start := time.Now()
	cmd := exec.CommandContext(t.Context(), "./mkimage.sh", "qemu")
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "BUILD="+out, "VERSION="+version, "RELEASE_KEYS="+pub)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("mkimage.sh qemu %s: %v\n%s", version, err, b)
	}
	t.Logf("mkimage.sh qemu %s: %.1f s", version, time.Since(start).Seconds())
	b := filepath.Join(out, "qemu")
	return built{image: filepath.Join(out, "svc-qemu.img"), root: filepath.Join(b, "root.sqfs"), tree: filepath.Join(b, "root")}
}

// brokenRoot is b's root with an init that is not a program: the kernel
// it carries boots, finds no init to run, and panics.
func brokenRoot(t testing.TB, b built, out string) string {
	t.Helper()
	tree := out + ".d"
	run(t, ".", "cp", "-a", b.tree, tree)
	if err := os.WriteFile(filepath.Join(tree, "gokrazy", "init"), []byte("not a program\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	run(t, ".", "mksquashfs", tree, out, "-noappend", "-all-root", "-quiet", "-no-progress")
	return out
}

// cloudArgs is svc-cloud's command line for the appliance: the guest
// reaches the host's loopback at 10.0.2.2 (qemu's user networking), but
// the broker's URL is given to the edge as the cloud sees it, so the
// broker's TLS port listens on the host's own address, which both reach.
func cloudArgs(data, hostIP string) []string {
	return []string{"serve", "--data", data, "--addr", "127.0.0.1:0", "--mqtt-listen", "127.0.0.1:0",
		"--mqtt-tls-listen", net.JoinHostPort(hostIP, "0"), "--metrics-listen", "127.0.0.1:0", "--drain-delay", "0s", "--demo"}
}

// svcTxt is the installer's svc.txt for the cloud at base (…/v1), as the
// guest reaches it, on a machine without GPIO.
func svcTxt(t testing.TB, base string) string {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("cloud=http://10.0.2.2:%s\nsimulate=1\n", u.Port())
}

// newCard writes the image at from to the disk file to, made cardGrowth
// bigger as an SD card is, with svc (svc.txt's content) on its boot
// partition. It returns the size in MiB the data partition should get at
// the first boot: the image ends with p3, p4 starts at the next MiB.
func newCard(t testing.TB, from, to, svc string) int64 {
	t.Helper()
	copyFile(t, from, to)
	st, err := os.Stat(to)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(to, st.Size()+cardGrowth); err != nil {
		t.Fatal(err)
	}
	txt := to + ".svc.txt"
	if err := os.WriteFile(txt, []byte(svc), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, ".", "mcopy", "-o", "-i", to+"@@1M", txt, "::/svc.txt")
	const mib = 1 << 20
	return (st.Size() + cardGrowth - (st.Size()+mib-1)/mib*mib) / mib
}

// edgeJSON is what the test reads of an Edge.
type edgeJSON struct {
	ID              string  `json:"id"`
	Name            string  `json:"name"`
	SiteID          string  `json:"site_id"`
	State           string  `json:"state"`
	SoftwareVersion *string `json:"software_version"`
	Update          *struct {
		LastResult *struct {
			Outcome string `json:"outcome"`
			Version string `json:"version"`
		} `json:"last_result"`
	} `json:"update"`
}

// cloudAPI calls the cloud's API with the demo's test-mode secret key.
type cloudAPI struct {
	t    testing.TB
	base string
	key  string
	n    int
}

// call sends body (nil for none) as JSON and decodes the answer into out
// (nil to drop it); it returns the status, 0 when the request failed.
func (c *cloudAPI) call(method, path string, body, out any) int {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			c.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if method == http.MethodPost {
		c.n++
		req.Header.Set("Idempotency-Key", fmt.Sprintf("8d0c6b8e-3c1a-4f4e-9d55-%012d", c.n))
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		c.t.Logf("%s %s: %v", method, path, err)
		return 0
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0
	}
	if resp.StatusCode >= 300 {
		c.t.Logf("%s %s: %d %s", method, path, resp.StatusCode, b)
	} else if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			c.t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
	return resp.StatusCode
}

// claim claims the appliance showing code as name, at site (the
// organisation's oldest when empty), and waits for it to say it is
// enrolled and for the fleet API to show it online.
func (c *cloudAPI) claim(t testing.TB, con *console, cloudBin, data, code, name, site string) edgeJSON {
	t.Helper()
	args := []string{"edges", "claim", code, "--api", strings.TrimSuffix(c.base, "/v1"), "--data", data, "--name", name}
	if site != "" {
		args = append(args, "--site", site)
	}
	if out := run(t, ".", cloudBin, args...); !strings.Contains(out, "claimed "+code) {
		t.Fatalf("edges claim: %s", out)
	}
	con.wait(t, 0, regexp.MustCompile(`enrolled as `), onlineDeadline)
	var e edgeJSON
	poll(t, onlineDeadline, "the edge is online in GET /v1/edges", func() bool {
		var page struct{ Data []edgeJSON }
		if c.call(http.MethodGet, "/edges", nil, &page) != http.StatusOK {
			return false
		}
		for _, x := range page.Data {
			if x.Name == name && x.State == "online" {
				e = x
				return true
			}
		}
		return false
	})
	return e
}

// gateReader gives the edge's site's first way in a TCP reader on the
// guest's forwarded port, and a simulated pin as its relay, through the
// cloud, and waits for the appliance to apply it. It returns the gate.
func (c *cloudAPI) gateReader(t testing.TB, con *console, e edgeJSON) string {
	t.Helper()
	var gates struct {
		Data []struct {
			ID        string `json:"id"`
			Direction string `json:"direction"`
		}
	}
	if st := c.call(http.MethodGet, "/gates?site_id="+e.SiteID, nil, &gates); st != http.StatusOK {
		t.Fatalf("GET /v1/gates: %d", st)
	}
	gate := ""
	for _, g := range gates.Data {
		if g.Direction == "entry" || g.Direction == "both" {
			gate = g.ID // a way in: a visitor not yet in is let in
			break
		}
	}
	if gate == "" {
		t.Fatalf("the site has no entrance: %+v", gates.Data)
	}
	mark := con.mark()
	hw := map[string]any{"hardware": map[string]any{"gates": []any{map[string]any{
		"gate_id": gate,
		"readers": []any{map[string]any{"kind": "tcp", "listen": readerListen}},
		"relay":   map[string]any{"pin": "GPIO17"},
	}}}}
	if st := c.call(http.MethodPatch, "/edges/"+e.ID, hw, nil); st != http.StatusOK {
		t.Fatalf("PATCH /v1/edges/%s: %d", e.ID, st)
	}
	con.wait(t, mark, regexp.MustCompile(`"hardware applied" source=cloud gates=1`), onlineDeadline)
	return gate
}

// passToken is the visit's pass as a reader reads it: its QR code from
// GET /v1/visits/{id}/pass.png, decoded with svc-edge qr decode.
func (c *cloudAPI) passToken(t testing.TB, edgeBin, visitID string) string {
	t.Helper()
	png := filepath.Join(t.TempDir(), "pass.png")
	req, err := http.NewRequest(http.MethodGet, c.base+"/visits/"+visitID+"/pass.png", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET pass.png: %d %v", resp.StatusCode, err)
	}
	if err := os.WriteFile(png, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(run(t, ".", edgeBin, "qr", "decode", png))
}

// admit makes a visit at site expected now, reads its QR pass with
// svc-edge qr decode, writes the token to the gate's reader (the guest's
// forwarded port) and waits for the visit to be checked in at the cloud:
// the appliance decided, pulsed the relay, and its record of the
// admission reached the cloud.
func (c *cloudAPI) admit(t testing.TB, con *console, edgeBin, site string, reader int, name string) {
	t.Helper()
	var people struct{ Data []struct{ ID string } }
	if st := c.call(http.MethodGet, "/people?limit=1", nil, &people); st != http.StatusOK || len(people.Data) == 0 {
		t.Fatalf("GET /v1/people: %d", st)
	}
	var types struct {
		Data []struct {
			Key           string `json:"key"`
			Enabled       bool   `json:"enabled"`
			NeedsApproval bool   `json:"needs_approval"`
		}
	}
	if st := c.call(http.MethodGet, "/visit-types", nil, &types); st != http.StatusOK {
		t.Fatalf("GET /v1/visit-types: %d", st)
	}
	typ := ""
	for _, vt := range types.Data {
		if vt.Enabled && !vt.NeedsApproval {
			typ = vt.Key
			break
		}
	}
	if typ == "" {
		t.Fatalf("no visit type without approval: %+v", types)
	}
	var v struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	email := strings.ToLower(strings.ReplaceAll(name, " ", ".")) + "@example.org"
	body := map[string]any{"site_id": site, "host_id": people.Data[0].ID, "type": typ,
		"visitor":     map[string]any{"name": name, "email": email},
		"expected_at": time.Now().UTC().Format(time.RFC3339)}
	if st := c.call(http.MethodPost, "/visits", body, &v); st != http.StatusCreated {
		t.Fatalf("POST /v1/visits: %d", st)
	}
	token := c.passToken(t, edgeBin, v.ID)

	// The visit reaches the appliance through the feed; a scan before it
	// has is refused, so the pass is read again (as a visitor holds it up
	// again) until the relay pulses.
	pulse := regexp.MustCompile(`pin=GPIO17 level=High`)
	deadline := time.Now().Add(onlineDeadline)
	for {
		mark := con.mark()
		if conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", reader), 5*time.Second); err == nil {
			fmt.Fprintf(conn, "%s\r\n", token)
			conn.Close()
		}
		if _, err := con.find(mark, pulse, 10*time.Second); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("%s's pass did not open the gate within %s: %v", name, onlineDeadline, err)
		}
	}
	poll(t, onlineDeadline, name+"'s admission reaches the cloud as a check-in", func() bool {
		var got struct {
			Status string `json:"status"`
		}
		return c.call(http.MethodGet, "/visits/"+v.ID, nil, &got) == http.StatusOK && got.Status == "checked_in"
	})
}

// release adds the root image at path as a signed rootfs release of
// version, rolls it out to the edge, and returns once the rollout is made.
func (c *cloudAPI) release(t testing.TB, cloudBin, data, keyFile, path, version, edgeID string) {
	t.Helper()
	run(t, ".", cloudBin, "releases", "add", path, "--data", data, "--version", version, "--arch", "arm64",
		"--kind", "rootfs", "--sign-with", keyFile)
	body := map[string]any{"version": version, "edge_ids": []string{edgeID},
		"window": map[string]any{"start": "00:00", "minutes": 1440}}
	if st := c.call(http.MethodPost, "/rollouts", body, nil); st != http.StatusCreated {
		t.Fatalf("POST /v1/rollouts %s: %d", version, st)
	}
}

// waitUpdate waits for the fleet API to show the edge's last update
// result and the software it runs.
func (c *cloudAPI) waitUpdate(t testing.TB, edgeID, outcome, version, software string) {
	t.Helper()
	poll(t, updateDeadline, fmt.Sprintf("GET /v1/edges shows %s %s, running %s", outcome, version, software), func() bool {
		var e edgeJSON
		if c.call(http.MethodGet, "/edges/"+edgeID, nil, &e) != http.StatusOK || e.Update == nil || e.Update.LastResult == nil {
			return false
		}
		r := e.Update.LastResult
		return r.Outcome == outcome && r.Version == version && e.SoftwareVersion != nil && *e.SoftwareVersion == software
	})
}

// need skips the test (or fails it in CI) when a program is not on PATH.
func need(t testing.TB, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := exec.LookPath(n); err != nil {
			missing(t, n+" (see firmware-images/README.md for the Debian packages)")
		}
	}
}

// needQemu skips (or fails in CI) without what building and booting the
// qemu image takes.
func needQemu(t testing.TB) {
	t.Helper()
	need(t, "qemu-system-aarch64", "mcopy", "mksquashfs", "mkfs.vfat", "mkfs.ext4", "sfdisk", "mkimage")
	if _, err := os.Stat(uboot); err != nil {
		missing(t, uboot+" (apt-get install u-boot-qemu)")
	}
}

func missing(t testing.TB, what string) {
	t.Helper()
	if os.Getenv("SVC_TEST_REQUIRE_SERVICES") == "1" {
		t.Fatalf("not found: %s", what)
	}
	t.Skipf("not found: %s", what)
}

func run(t testing.TB, dir, name string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func copyFile(t testing.TB, from, to string) {
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
func hostAddress(t testing.TB) string {
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

func freePort(t testing.TB) int {
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
func serve(t testing.TB, bin string, args ...string) string {
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

// console is the guest's serial console, line by line, with the time
// each line reached the host.
type console struct {
	start time.Time      // when qemu was started
	cmd   *exec.Cmd      // qemu
	in    io.WriteCloser // qemu's stdin: the serial port's input, and qemu's monitor after Ctrl-A

	mu    sync.Mutex
	lines []string
	times []time.Time
	more  chan struct{} // closed and replaced when a line comes
	done  bool
}

// consoleFiles are the SVC_TEST_CONSOLE files this process has written:
// a later boot appends to the file rather than replacing the earlier
// boots' consoles.
var consoleFiles = struct {
	sync.Mutex
	opened map[string]bool
}{opened: map[string]bool{}}

// boot starts qemu on img with the guest's port 8088 (the status page)
// forwarded to the host's 127.0.0.1:page and the gate reader's to
// 127.0.0.1:reader; qemu is stopped when the test ends, and the console
// is logged if the test failed (and written, as it comes, to the file
// SVC_TEST_CONSOLE names, when set).
func boot(t testing.TB, img string, page, reader int) *console {
	t.Helper()
	cmd := exec.Command("qemu-system-aarch64", "-M", "virt", "-cpu", "cortex-a72", "-smp", "2", "-m", "1024",
		"-nographic", "-bios", uboot, "-drive", "file="+img+",format=raw,if=virtio",
		"-device", "i6300esb", "-watchdog-action", "reset",
		"-netdev", fmt.Sprintf("user,id=n0,hostfwd=tcp:127.0.0.1:%d-:8088,hostfwd=tcp:127.0.0.1:%d-:%d", page, reader, readerPort),
		"-device", "virtio-net-pci,netdev=n0")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	c := &console{cmd: cmd, in: in, start: time.Now(), more: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var tee io.Writer = io.Discard
	if p := os.Getenv("SVC_TEST_CONSOLE"); p != "" {
		consoleFiles.Lock()
		flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
		if consoleFiles.opened[p] {
			flags = os.O_WRONLY | os.O_APPEND
		}
		consoleFiles.opened[p] = true
		consoleFiles.Unlock()
		f, err := os.OpenFile(p, flags, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		tee = f
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			fmt.Fprintln(tee, sc.Text())
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
		c.times = append(c.times, time.Now())
	}
	close(c.more)
	c.more = make(chan struct{})
}

// mark is where the console is: wait(mark, ...) looks at what comes after.
func (c *console) mark() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.lines)
}

// wait returns the submatches of the first console line from line from
// on that matches re, or fails the test at the deadline or when qemu
// exits.
func (c *console) wait(t testing.TB, from int, re *regexp.Regexp, within time.Duration) []string {
	t.Helper()
	m, err := c.find(from, re, within)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// find is wait's search: an error at the deadline or when qemu exits.
func (c *console) find(from int, re *regexp.Regexp, within time.Duration) ([]string, error) {
	_, m, err := c.findLine(from, re, within)
	return m, err
}

// findLine is find that also returns the line's number, for at.
func (c *console) findLine(from int, re *regexp.Regexp, within time.Duration) (int, []string, error) {
	timeout := time.After(within)
	for i := from; ; {
		c.mu.Lock()
		for ; i < len(c.lines); i++ {
			if m := re.FindStringSubmatch(c.lines[i]); m != nil {
				c.mu.Unlock()
				return i, m, nil
			}
		}
		more, done := c.more, c.done
		c.mu.Unlock()
		if done {
			return 0, nil, fmt.Errorf("qemu exited before the console showed %q", re)
		}
		select {
		case <-more:
		case <-timeout:
			return 0, nil, fmt.Errorf("the console did not show %q within %s", re, within)
		}
	}
}

// at is how long after qemu's start line i reached the host.
func (c *console) at(i int) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.times[i].Sub(c.start)
}

// lineAt is console line i.
func (c *console) lineAt(i int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lines[i]
}

// sync has the guest's kernel write what its page cache holds for the
// disk (an ext4 file system commits its journal every 5 s, but writes
// appended data after 30 s): a break on the serial port (qemu's Ctrl-A
// b) and s, the Magic SysRq key's emergency sync, again until the
// console says it is done.
func (c *console) sync(t testing.TB) {
	t.Helper()
	done := regexp.MustCompile(`Emergency Sync complete`)
	deadline := time.Now().Add(time.Minute)
	for {
		mark := c.mark()
		if _, err := io.WriteString(c.in, "\x01b"); err != nil {
			t.Fatalf("qemu's stdin: %v", err)
		}
		if _, err := io.WriteString(c.in, "s"); err != nil {
			t.Fatalf("qemu's stdin: %v", err)
		}
		_, err := c.find(mark, done, 10*time.Second)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the guest's kernel did not sync on SysRq s: %v", err)
		}
	}
}

// poweroff pulls the guest's plug: qemu is killed, as an appliance loses
// its power, and poweroff returns once its console has ended.
func (c *console) poweroff() {
	_ = c.cmd.Process.Kill()
	c.mu.Lock()
	for !c.done {
		more := c.more
		c.mu.Unlock()
		<-more
		c.mu.Lock()
	}
	c.mu.Unlock()
	_ = c.cmd.Wait()
}

// poll calls ok every half second until it holds, failing the test at the
// deadline.
func poll(t testing.TB, within time.Duration, what string, ok func() bool) {
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
func demoKey(t testing.TB, data string) string {
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
