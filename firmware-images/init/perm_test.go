package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The image's layout, as mkimage.sh's sfdisk makes it, in sectors.
var imageTable = [4]mbrEntry{
	{boot: 0x80, typ: 0x0c, start: 2048, size: 327680},
	{typ: 0x83, start: 329728, size: 131072},
	{typ: 0x83, start: 460800, size: 131072},
}

// sysfsDisk makes a sysfs tree in dir with one disk (its devices path
// under dir/devices) and the partitions parts (numbers), named as the
// kernel names them, and /sys/dev/block links to them.
func sysfsDisk(t *testing.T, sys, devices, disk, partPrefix string, major int, parts ...int) {
	t.Helper()
	diskDir := filepath.Join(sys, "devices", devices, "block", disk)
	write := func(p, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, name string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(sys, "dev", "block"), 0o755); err != nil {
			t.Fatal(err)
		}
		rel, err := filepath.Rel(filepath.Join(sys, "dev", "block"), target)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(rel, filepath.Join(sys, "dev", "block", name)); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(diskDir, "uevent"), "MAJOR=1\nMINOR=0\nDEVNAME="+disk+"\nDEVTYPE=disk\n")
	write(filepath.Join(diskDir, "dev"), "1:0\n")
	write(filepath.Join(diskDir, "queue", "logical_block_size"), "512\n")
	link(diskDir, strconv.Itoa(major)+":0")
	for _, n := range parts {
		name := disk + partPrefix + strconv.Itoa(n)
		p := filepath.Join(diskDir, name)
		write(filepath.Join(p, "uevent"), "DEVNAME="+name+"\nDEVTYPE=partition\nPARTN="+strconv.Itoa(n)+"\n")
		write(filepath.Join(p, "partition"), strconv.Itoa(n)+"\n")
		write(filepath.Join(p, "dev"), strconv.Itoa(major)+":"+strconv.Itoa(n)+"\n")
		link(p, strconv.Itoa(major)+":"+strconv.Itoa(n))
	}
}

func TestBootDisk_FindsTheRootsDiskAndItsPartitionsInSysfs(t *testing.T) {
	sys := t.TempDir()
	sysfsDisk(t, sys, "pci0000:00/0000:00:02.0/virtio1", "vda", "", 254, 1, 2, 3, 4)
	sysfsDisk(t, sys, "platform/emmc2bus/fe340000.mmc/mmc_host/mmc0/mmc0:aaaa", "mmcblk0", "p", 179, 1, 2, 3)

	for _, c := range []struct {
		major, minor uint32
		dev, p3, p4  string
	}{
		{254, 2, "/dev/vda", "/dev/vda3", "/dev/vda4"},
		{179, 2, "/dev/mmcblk0", "/dev/mmcblk0p3", ""},
	} {
		d, err := bootDisk(sys, c.major, c.minor)
		if err != nil {
			t.Fatal(err)
		}
		if d.dev != c.dev || filepath.Base(d.dir) != filepath.Base(c.dev) {
			t.Errorf("bootDisk(%d:%d) = %+v, want %s", c.major, c.minor, d, c.dev)
		}
		if p3, err := partitionDev(d, 3); err != nil || p3 != c.p3 {
			t.Errorf("partition 3 of %s: %q, %v; want %s", d.dev, p3, err, c.p3)
		}
		p4, err := partitionDev(d, 4)
		if c.p4 == "" {
			if err == nil {
				t.Errorf("partition 4 of %s: %q, want none", d.dev, p4)
			}
		} else if err != nil || p4 != c.p4 {
			t.Errorf("partition 4 of %s: %q, %v; want %s", d.dev, p4, err, c.p4)
		}
	}
	if !isPartition(diskDirs{dir: filepath.Join(sys, "devices/pci0000:00/0000:00:02.0/virtio1/block/vda")}, 4, "254:4") {
		t.Error("254:4 is not partition 4 of vda")
	}
	if isPartition(diskDirs{dir: filepath.Join(sys, "devices/pci0000:00/0000:00:02.0/virtio1/block/vda")}, 4, "254:3") {
		t.Error("254:3 is partition 4 of vda")
	}
	// The whole disk as the root (no partition): not a disk to partition.
	if d, err := bootDisk(sys, 254, 0); err == nil {
		t.Errorf("bootDisk of a whole disk: %+v, want an error", d)
	}
	if d, err := bootDisk(sys, 8, 1); err == nil {
		t.Errorf("bootDisk of an unknown device: %+v, want an error", d)
	}
}

func TestParseMBR_ReadsEntriesAndRefusesOtherSectors(t *testing.T) {
	sector := make([]byte, 512)
	if _, err := parseMBR(sector); err == nil {
		t.Error("a sector without 55 AA parsed")
	}
	sector[510], sector[511] = 0x55, 0xAA
	for i, e := range imageTable {
		e.put(sector[mbrTableOffset+16*i:])
	}
	got, err := parseMBR(sector)
	if err != nil {
		t.Fatal(err)
	}
	if got != imageTable {
		t.Errorf("parsed %+v, want %+v", got, imageTable)
	}
	if !got[3].empty() || got[2].empty() {
		t.Errorf("empty: entry 4 %v, entry 3 %v", got[3].empty(), got[2].empty())
	}
	(mbrEntry{typ: 0xEE, start: 1, size: 1000}).put(sector[mbrTableOffset:])
	if _, err := parseMBR(sector); err == nil {
		t.Error("a GPT's protective MBR parsed")
	}
}

// TestNewPermEntry_WritesWhatSfdiskWrites makes the image's partition
// table with sfdisk in a (sparse) file as big as a card, adds the data
// partition's entry to sector 0 as init does, and compares the sector
// with the one sfdisk writes when asked for the same partition: on a card
// whose end has a CHS address, and on one past CHS's 8 GiB.
func TestNewPermEntry_WritesWhatSfdiskWrites(t *testing.T) {
	if _, err := exec.LookPath("sfdisk"); err != nil {
		t.Skip("sfdisk not found (apt-get install fdisk)")
	}
	dir := t.TempDir()
	mk := func(name string, cardBytes int64, script string) []byte {
		t.Helper()
		p := filepath.Join(dir, name)
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := f.Truncate(cardBytes); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("sfdisk", "-q", p)
		cmd.Stdin = strings.NewReader(script)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("sfdisk: %v\n%s", err, out)
		}
		b := make([]byte, 512)
		if _, err := f.ReadAt(b, 0); err != nil {
			t.Fatal(err)
		}
		return b
	}
	image := "label: dos\nlabel-id: 0x2e9a5c10\nstart=1MiB, size=160MiB, type=c, bootable\nsize=64MiB, type=83\nsize=64MiB, type=83\n"
	for _, cardBytes := range []int64{545 * mib, 16 << 30} {
		sector := mk("image", cardBytes, image)
		table, err := parseMBR(sector)
		if err != nil {
			t.Fatal(err)
		}
		if table != imageTable {
			t.Fatalf("sfdisk's table %+v, want %+v", table, imageTable)
		}
		e, err := newPermEntry(table, geometry{sectorSize: 512, sectors: uint64(cardBytes) / 512})
		if err != nil {
			t.Fatal(err)
		}
		if e.start != 289*mib/512 || e.end() != uint64(cardBytes)/512 || e.typ != 0x83 {
			t.Errorf("new entry %+v on %d MiB, want 289 MiB to the end, type 83", e, cardBytes/mib)
		}
		e.put(sector[mbrTableOffset+16*3:])
		want := mk("sfdisk", cardBytes, image+"start=289MiB, type=83\n")
		if !bytes.Equal(sector, want) {
			t.Errorf("%d MiB card: entry 4 as init writes it:\n% x\nas sfdisk writes it:\n% x", cardBytes/mib,
				sector[mbrTableOffset+48:mbrTableOffset+64], want[mbrTableOffset+48:mbrTableOffset+64])
		}
	}
}

func TestNewPermEntry_AlignsCapsAndNeedsRoom(t *testing.T) {
	odd := imageTable
	odd[2].size += 7 // p3 ends off a MiB boundary
	for _, c := range []struct {
		name       string
		table      [4]mbrEntry
		g          geometry
		start, end uint64 // sectors; end 0: an error
	}{
		{"the image on a 1 GiB card", imageTable, geometry{512, 1 << 21}, 591872, 1 << 21},
		{"p3 ending off a MiB", odd, geometry{512, 1 << 21}, 591872 + 2048, 1 << 21},
		{"a 3 TiB disk: capped at 2 TiB", imageTable, geometry{512, 3 << 31}, 591872, 1 << 32},
		{"4 KiB sectors", [4]mbrEntry{{typ: 0x83, start: 256, size: 1000}}, geometry{4096, 1 << 20}, 1280, 1 << 20},
		{"no room after p3", imageTable, geometry{512, 591872}, 0, 0},
		{"less room than the template", imageTable, geometry{512, 591872 + 31*2048}, 0, 0},
	} {
		e, err := newPermEntry(c.table, c.g)
		if c.end == 0 {
			if err == nil {
				t.Errorf("%s: %+v, want an error", c.name, e)
			}
			continue
		}
		if err != nil || uint64(e.start) != c.start || e.end() != c.end || e.typ != 0x83 {
			t.Errorf("%s: %+v (end %d), %v; want sectors %d to %d", c.name, e, e.end(), err, c.start, c.end)
		}
	}
}

func TestGrownPermEntry_GrowsToTheEndOnlyWhenShort(t *testing.T) {
	table := imageTable
	table[3] = mbrEntry{typ: 0x83, start: 591872, size: 256 * mib / 512}
	end := uint64(591872 + 256*mib/512)
	for _, c := range []struct {
		name    string
		table   [4]mbrEntry
		sectors uint64
		grows   bool
		newEnd  uint64
	}{
		{"full size", table, end, false, 0},
		{"less than permSlack short", table, end + permSlack/512 - 1, false, 0},
		{"a card 1 GiB bigger", table, end + 1<<21, true, end + 1<<21},
		{"a 4 TiB card: to 2 TiB", table, 1 << 33, true, 1 << 32},
		{"a partition after p4", func() [4]mbrEntry {
			t := table
			t[0] = mbrEntry{typ: 0x83, start: uint32(end + 1<<20), size: 2048}
			return t
		}(), end + 1<<21, true, end + 1<<20},
	} {
		e, ok := grownPermEntry(c.table, geometry{512, c.sectors})
		if ok != c.grows || (ok && (e.end() != c.newEnd || e.start != table[3].start)) {
			t.Errorf("%s: %+v (end %d), %v; want grown %v to %d", c.name, e, e.end(), ok, c.grows, c.newEnd)
		}
	}
}

// TestExt4Size_ReadsMkfsSuperblocks reads file systems that mkfs.ext4
// made: their size in blocks and the block size, and nothing from a
// partition that holds none.
func TestExt4Size_ReadsMkfsSuperblocks(t *testing.T) {
	if _, err := exec.LookPath("mkfs.ext4"); err != nil {
		t.Skip("mkfs.ext4 not found (apt-get install e2fsprogs)")
	}
	dir := t.TempDir()
	for _, c := range []struct {
		args   []string
		blocks uint64
		bs     uint32
	}{
		{[]string{"-b", "4096", "-O", "64bit"}, 8192, 4096},
		{[]string{"-b", "1024", "-O", "^64bit"}, 32768, 1024},
	} {
		p := filepath.Join(dir, "fs")
		os.Remove(p)
		args := append([]string{"-q", "-F"}, c.args...)
		if out, err := exec.Command("mkfs.ext4", append(args, p, "32M")...).CombinedOutput(); err != nil {
			t.Fatalf("mkfs.ext4: %v\n%s", err, out)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		blocks, bs, ok := ext4Size(b[:2048])
		if !ok || blocks != c.blocks || bs != c.bs {
			t.Errorf("mkfs.ext4 %v: %d blocks of %d, %v; want %d of %d", c.args, blocks, bs, ok, c.blocks, c.bs)
		}
	}
	if _, _, ok := ext4Size(make([]byte, 2048)); ok {
		t.Error("zeroes hold an ext4 superblock")
	}
	// The 64bit feature's high half of the block count.
	head := make([]byte, 2048)
	head[1080], head[1081] = 0x53, 0xEF
	binary.LittleEndian.PutUint32(head[1024+0x18:], 2)
	binary.LittleEndian.PutUint32(head[1024+0x04:], 5)
	binary.LittleEndian.PutUint32(head[1024+0x150:], 1)
	if blocks, _, _ := ext4Size(head); blocks != 5 {
		t.Errorf("without 64bit: %d blocks, want 5 (the high half ignored)", blocks)
	}
	binary.LittleEndian.PutUint32(head[1024+0x60:], 0x80)
	if blocks, bs, _ := ext4Size(head); blocks != 1<<32+5 || bs != 4096 {
		t.Errorf("with 64bit: %d blocks of %d, want %d of 4096", blocks, bs, uint64(1<<32+5))
	}
}

// cutWriter is a partition that loses power after cut writes.
type cutWriter struct {
	b      []byte
	writes int
	cut    int
}

var errPowerCut = errors.New("power cut")

func (w *cutWriter) WriteAt(p []byte, off int64) (int, error) {
	if w.writes == w.cut {
		return 0, errPowerCut
	}
	w.writes++
	return copy(w.b[off:], p), nil
}

func (w *cutWriter) Sync() error { return nil }

// TestCopySuperblockLast_ACutWriteLeavesNoSuperblock copies a template
// into a partition that loses power after each number of writes: the
// partition shows an ext4 superblock only once the copy is whole.
func TestCopySuperblockLast_ACutWriteLeavesNoSuperblock(t *testing.T) {
	const size = 3*mib + 2*superblockBlock
	tmpl := make([]byte, size)
	for i := range tmpl {
		tmpl[i] = byte(i*7 + 1)
	}
	tmpl[1080], tmpl[1081] = 0x53, 0xEF
	binary.LittleEndian.PutUint32(tmpl[1024+0x18:], 2)
	const off = 8192
	for cut := 0; ; cut++ {
		w := &cutWriter{b: make([]byte, off+size+4096), cut: cut}
		err := copySuperblockLast(w, off, bytes.NewReader(tmpl), size)
		_, _, hasSB := ext4Size(w.b[off : off+2048])
		if err == nil {
			if !bytes.Equal(w.b[off:off+size], tmpl) {
				t.Fatal("the whole copy differs from the template")
			}
			if !hasSB {
				t.Fatal("the whole copy has no superblock")
			}
			if cut < 2 {
				t.Fatalf("the copy took %d writes", cut)
			}
			return
		}
		if !errors.Is(err, errPowerCut) {
			t.Fatal(err)
		}
		if hasSB {
			t.Fatalf("cut after %d writes: the partition shows a superblock", cut)
		}
	}
}

func TestCopySuperblockLast_RefusesATemplateThatIsNotExt4(t *testing.T) {
	w := &cutWriter{b: make([]byte, 64*1024), cut: -1}
	if err := copySuperblockLast(w, 0, bytes.NewReader(make([]byte, 32*1024)), 32*1024); err == nil {
		t.Error("zeroes copied as a template")
	}
	if w.writes != 0 {
		t.Errorf("%d writes for a refused template", w.writes)
	}
}

func TestMountAt_FindsTheLastMountOnADirectory(t *testing.T) {
	const info = `20 1 254:2 / / ro,relatime - squashfs /dev/root ro
21 20 0:5 / /dev rw,relatime - devtmpfs devtmpfs rw,size=492000k
30 20 0:26 / /permanent rw - tmpfs tmpfs rw
31 20 254:4 / /perm rw,relatime shared:1 master:2 - ext4 /dev/vda4 rw
32 31 0:27 / /perm rw,relatime - tmpfs none rw
`
	m, ok := mountAt(info, "/perm")
	if !ok || m != (mount{majmin: "0:27", fstype: "tmpfs", source: "none"}) {
		t.Errorf("mountAt /perm = %+v, %v; want the tmpfs on top", m, ok)
	}
	m, ok = mountAt(strings.Join(strings.Split(info, "\n")[:4], "\n"), "/perm")
	if !ok || m != (mount{majmin: "254:4", fstype: "ext4", source: "/dev/vda4"}) {
		t.Errorf("mountAt /perm = %+v, %v; want ext4 on /dev/vda4", m, ok)
	}
	if m, ok := mountAt(strings.Join(strings.Split(info, "\n")[:3], "\n"), "/perm"); ok {
		t.Errorf("mountAt /perm without it: %+v", m)
	}
}
