package imagetest

import (
	"context"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// What the benchmark sets up, unless the environment says otherwise (for
// a quicker trial of the benchmark itself).
const (
	benchVisits = 100000 // SVC_BENCH_IMAGE_VISITS
	benchBoots  = 3      // SVC_BENCH_IMAGE_BOOTS: boots of the enrolled appliance timed
	// cacheDeadline is how long the first boot may take to have the
	// visits' snapshot and report it: a software-emulated arm64 stores
	// 100,000 visits.
	cacheDeadline = 15 * time.Minute
	// memoryDeadline is how long after a boot's first decision init's
	// memory line may take: one a minute (init/memory.go).
	memoryDeadline = 3 * time.Minute
)

// The marks of a boot on the console, in the order they come.
var bootMarks = []struct {
	name string
	re   *regexp.Regexp
}{
	{"U-Boot's A/B line", regexp.MustCompile(`^A/B: committed`)},
	{"kernel start", regexp.MustCompile(`Booting Linux on physical CPU`)},
	{"init started", regexp.MustCompile(`Run /gokrazy/init as init process`)},
	{"init's appliance line", regexp.MustCompile(`^init: .* svc appliance `)},
	{"svc-edge started", regexp.MustCompile(`msg="daemon started"`)},
	{"edge running", regexp.MustCompile(`msg="edge running"`)},
	{"reader listening", regexp.MustCompile(`msg="tcp reader listening".*:` + strconv.Itoa(readerPort))},
}

var (
	scanLine      = regexp.MustCompile(`msg=scan .*kind=(\S+).* decision_us=(\d+)`)
	connectedLine = regexp.MustCompile(`msg="connected to the broker" component=mqttsync-edge`)
	runningVisits = regexp.MustCompile(`msg="edge running" .*visits=(\d+)`)
	// init's memory line (init/memory.go).
	memoryLine = regexp.MustCompile(`memory: ([\d.]+) MiB available of ([\d.]+) MiB; ` +
		`svc-edge run \(pid \d+\): ([\d.]+) MiB resident \(([\d.]+) MiB anonymous\), peak ([\d.]+) MiB` +
		`(?:; svc-edge supervise \(pid \d+\): ([\d.]+) MiB resident \(([\d.]+) MiB anonymous\), peak ([\d.]+) MiB)?`)
)

// BenchmarkImage_BootAndMemory measures the appliance image for
// docs/performance.md ("Appliance image (issue 18)"):
//
//   - the disk image's size, raw and as an installer downloads it
//     (xz -T0 -9, gzip -9), and the root slot's (root.sqfs, the rootfs
//     release an update downloads) with what is in it;
//   - boot to the first gate decision: an appliance enrolled at a site of
//     100,000 visits, its cache filled by the normal sync (a snapshot over
//     MQTT), is started again (a new qemu on the same disk) and a visit's
//     pass is read at its gate's TCP reader until it decides; from qemu's
//     start to the decision's line on the console, with the marks before
//     it, each as the host received the line;
//   - memory after each of those boots: init's memory line (MemAvailable
//     of MemTotal, svc-edge's resident memory).
//
// The cloud is svc-cloud serve --demo on the host; the visits are put in
// its SQLite store by cloud/bench/edgesync -scenario visits. It runs
// once, whatever b.N (-benchtime 1x):
//
//	make bench-image   (cd firmware-images && go test -run '^$' -bench Image -benchtime 1x -timeout 60m -v ./imagetest)
func BenchmarkImage_BootAndMemory(b *testing.B) {
	needQemu(b)
	need(b, "xz", "gzip")
	visits, boots := envInt(b, "SVC_BENCH_IMAGE_VISITS", benchVisits), envInt(b, "SVC_BENCH_IMAGE_BOOTS", benchBoots)
	dir := b.TempDir()
	cloudBin := hostBinary(b, dir, "./cloud/cmd/svc-cloud")
	edgeBin := hostBinary(b, dir, "./edge/cmd/svc-edge") // for svc-edge qr decode
	syncBin := hostBinary(b, dir, "./cloud/bench/edgesync")

	// The image as make image builds it (no release key: nothing of its
	// size or boot depends on one).
	img := buildImage(b, filepath.Join(dir, "v1"), "1.0.0", "")
	imageSizes(b, img)

	data := filepath.Join(dir, "cloud")
	base := serve(b, cloudBin, cloudArgs(data, hostAddress(b))...)
	c := &cloudAPI{t: b, base: base, key: demoKey(b, data)}
	var sites struct{ Data []struct{ ID string } }
	if st := c.call(http.MethodGet, "/sites?limit=100", nil, &sites); st != http.StatusOK || len(sites.Data) == 0 {
		b.Fatalf("GET /v1/sites: %d", st)
	}
	site := sites.Data[len(sites.Data)-1].ID // newest first: the oldest, where edges claim puts an appliance
	var people struct{ Data []struct{ ID string } }
	if st := c.call(http.MethodGet, "/people?limit=1", nil, &people); st != http.StatusOK || len(people.Data) == 0 {
		b.Fatalf("GET /v1/people: %d", st)
	}
	start := time.Now()
	out := run(b, dir, syncBin, "-scenario", "visits", "-data", data, "-site", site, "-host", people.Data[0].ID,
		"-n", strconv.Itoa(visits-1))
	b.Logf("%d visits made at the site in %.1f s (edgesync -scenario visits): %s", visits, time.Since(start).Seconds(),
		regexp.MustCompile(`(?m)^RESULT .*`).FindString(out))

	// The first boot: enrolled, its gate's reader configured, and the
	// site's visits taken by a snapshot.
	disk := filepath.Join(dir, "disk.img")
	newCard(b, img.image, disk, svcTxt(b, base))
	page, reader := freePort(b), freePort(b)
	con := boot(b, disk, page, reader)
	code := con.wait(b, 0, codeLine, bootDeadline)[1]
	claimed := time.Now()
	e := c.claim(b, con, cloudBin, data, code, "Image bench", site)
	c.gateReader(b, con, e)
	poll(b, cacheDeadline, fmt.Sprintf("GET /v1/edges/{id} reports %d visits cached", visits), func() bool {
		var got struct{ Cache *struct{ Visits int } }
		return c.call(http.MethodGet, "/edges/"+e.ID, nil, &got) == http.StatusOK && got.Cache != nil && got.Cache.Visits >= visits
	})
	snapshot := time.Since(claimed)
	b.Logf("first boot: claimed %.1f s after qemu started; %d visits cached, as GET /v1/edges/{id} reports, %.1f s after the claim",
		claimed.Sub(con.start).Seconds(), visits, snapshot.Seconds())
	if m, err := con.find(0, regexp.MustCompile(`msg="snapshot applied".*`), 0); err == nil {
		b.Logf("first boot: %s", m[0])
	}
	if _, m, err := con.findLine(con.mark(), memoryLine, memoryDeadline); err == nil {
		b.Logf("first boot, after the snapshot: %s", m[0])
	}

	// A pass for each boot: visits of the site, already in the cache.
	var list struct{ Data []struct{ ID string } }
	if st := c.call(http.MethodGet, fmt.Sprintf("/visits?site_id=%s&limit=%d", site, boots), nil, &list); st != http.StatusOK || len(list.Data) < boots {
		b.Fatalf("GET /v1/visits: %d, %d visits", st, len(list.Data))
	}
	con.poweroff()

	var decisions []float64
	var mem [][]float64 // per boot: available, total; run's resident, anonymous and peak; supervise's
	for i := range boots {
		token := c.passToken(b, edgeBin, list.Data[i].ID)
		con := boot(b, disk, page, reader)
		line, kind := firstDecision(b, con, reader, token)
		if kind != "check_in" {
			b.Errorf("boot %d: the first decision is %s, want check_in: %s", i+1, kind, con.lineAt(line))
		}
		var marks []string
		for _, mk := range bootMarks {
			if j, _, err := con.findLine(0, mk.re, 0); err == nil && j < line {
				marks = append(marks, fmt.Sprintf("%s %.1f s", mk.name, con.at(j).Seconds()))
			}
		}
		m := con.wait(b, 0, runningVisits, 0)
		if n := atoi(b, m[1]); n < int64(visits) {
			b.Errorf("boot %d: svc-edge started with %d visits cached, want %d: %s", i+1, n, visits, m[0])
		}
		d := con.at(line)
		decisions = append(decisions, d.Seconds())
		dm := scanLine.FindStringSubmatch(con.lineAt(line))
		b.Logf("boot %d: first decision (%s, %s µs in svc-edge) %.1f s after qemu started; %s", i+1, kind, dm[2], d.Seconds(),
			strings.Join(marks, ", "))
		if j, _, err := con.findLine(0, connectedLine, onlineDeadline); err == nil {
			b.Logf("boot %d: connected to the broker %.1f s after qemu started", i+1, con.at(j).Seconds())
		} else {
			b.Error(err)
		}
		j, mm := memAfter(b, con, line)
		b.Logf("boot %d, %.0f s after qemu started: %s", i+1, con.at(j).Seconds(), mm[0])
		mem = append(mem, floats(mm[1:]))
		con.poweroff()
	}

	for i, d := range decisions {
		b.ReportMetric(d, fmt.Sprintf("boot%d-decision-s", i+1))
	}
	last := mem[len(mem)-1]
	b.ReportMetric(last[0], "avail-MiB")
	b.ReportMetric(last[1], "total-MiB")
	b.ReportMetric(last[2], "edge-rss-MiB")
	b.ReportMetric(last[3], "edge-anon-MiB")
	b.ReportMetric(last[4], "edge-peak-MiB")
	b.ReportMetric(last[5], "supervisor-rss-MiB")
	b.ReportMetric(snapshot.Seconds(), "snapshot-s")
}

// imageSizes logs and reports the disk image's size, raw and compressed,
// and its root slot's, with what is in the root.
func imageSizes(b *testing.B, img built) {
	b.Helper()
	raw := fileSize(b, img.image)
	xz, xzTime := compressedSize(b, img.image, "xz", "-T0", "-9", "-c")
	gz, gzTime := compressedSize(b, img.image, "gzip", "-9", "-c")
	sqfs := fileSize(b, img.root)
	b.Logf("disk image %s: %d bytes raw; xz -T0 -9: %d bytes (%.1f s); gzip -9: %d bytes (%.1f s)",
		filepath.Base(img.image), raw, xz, xzTime.Seconds(), gz, gzTime.Seconds())
	b.Logf("root slot root.sqfs: %d bytes", sqfs)
	b.ReportMetric(mibf(raw), "image-MiB")
	b.ReportMetric(mibf(xz), "image-xz-MiB")
	b.ReportMetric(mibf(gz), "image-gz-MiB")
	b.ReportMetric(mibf(sqfs), "root-sqfs-MiB")

	// What is in the root: each part's size in the tree and in a
	// squashfs of its own (what it costs in root.sqfs).
	parts := []struct{ name, path string }{
		{"svc-edge", "user/svc-edge"},
		{"init", "gokrazy/init"},
		{"dhcp", "gokrazy/dhcp"},
		{"ntp", "gokrazy/ntp"},
		{"kernel (gzip'd)", "kernel/vmlinuz"},
		{"kernel modules", "lib/modules"},
		{"data partition template", "lib/svc/perm.ext4"},
	}
	var total int64
	for _, p := range parts {
		path := filepath.Join(img.tree, p.path)
		size, alloc := treeSize(b, path)
		one := filepath.Join(b.TempDir(), "part.sqfs")
		run(b, ".", "mksquashfs", path, one, "-noappend", "-all-root", "-quiet", "-no-progress")
		sq := fileSize(b, one)
		total += sq
		b.Logf("  %-24s %11d bytes (%d allocated), %10d bytes in a squashfs of its own", p.name, size, alloc, sq)
	}
	b.Logf("  the parts' own squashfs files add up to %d bytes of root.sqfs's %d", total, sqfs)
}

// firstDecision reads token at the gate's reader (the host's forwarded
// port) until the appliance decides, and returns the decision's console
// line and kind. qemu takes a connection to the port at once whether or
// not the guest listens yet, and may hold it while the guest boots, so a
// new one is made every 250 ms, each kept for a few seconds, until a
// decision shows.
func firstDecision(t testing.TB, con *console, reader int, token string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(bootDeadline)
	for {
		if i, m, err := con.findLine(0, scanLine, 0); err == nil {
			return i, m[1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no gate decision within %s of qemu's start", bootDeadline)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := net.Dialer{Timeout: time.Second}
			conn, err := d.DialContext(ctx, "tcp", fmt.Sprintf("127.0.0.1:%d", reader))
			if err != nil {
				return
			}
			defer conn.Close()
			fmt.Fprintf(conn, "%s\r\n", token)
			_ = conn.SetReadDeadline(time.Now().Add(3 * time.Second))
			stop := context.AfterFunc(ctx, func() { _ = conn.SetReadDeadline(time.Now()) })
			defer stop()
			_, _ = conn.Read(make([]byte, 1)) // EOF when nothing listens in the guest
		}()
		<-tick.C
	}
}

// memAfter waits for init's first memory line after console line from.
func memAfter(t testing.TB, con *console, from int) (int, []string) {
	t.Helper()
	i, m, err := con.findLine(from, memoryLine, memoryDeadline)
	if err != nil {
		t.Fatal(err)
	}
	return i, m
}

// compressedSize is the size of path compressed by name with args (which
// write to stdout), and how long it took.
func compressedSize(t testing.TB, path, name string, args ...string) (int64, time.Duration) {
	t.Helper()
	var n counter
	cmd := exec.CommandContext(t.Context(), name, append(args, path)...)
	var stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &n, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v %s", name, err, stderr.String())
	}
	return n.n, time.Since(start)
}

// counter counts what is written to it.
type counter struct{ n int64 }

func (c *counter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return len(p), nil
}

func fileSize(t testing.TB, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// treeSize is the bytes of the files under path (or of the file), and
// the bytes their blocks take on disk (less for a sparse file).
func treeSize(t testing.TB, path string) (size, alloc int64) {
	t.Helper()
	err := filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		size += info.Size()
		alloc += allocated(info)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return size, alloc
}

func mibf(n int64) float64 { return float64(n) / (1 << 20) }

// floats parses the submatches; an empty one (an optional group that did
// not match) is 0.
func floats(ss []string) []float64 {
	out := make([]float64, len(ss))
	for i, s := range ss {
		out[i], _ = strconv.ParseFloat(s, 64)
	}
	return out
}

// allocated is the bytes a file's blocks take on disk.
func allocated(info fs.FileInfo) int64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return st.Blocks * 512
	}
	return info.Size()
}

// envInt is the environment variable name as a positive number, or def.
func envInt(t testing.TB, name string, def int) int {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive number", name, s)
	}
	return n
}
