package main

// The data partition (p4, mounted at /perm) is not in the image: the image
// ends after root slot B, and the first boot makes p4 in the card's free
// space, writes an empty ext4 file system into it (a template that
// mkimage.sh made with mkfs.ext4 and put into the root at permTemplate)
// and grows it online to the partition's size. The appliance has no mkfs
// or resize2fs (its root holds only Go programs): a template and the
// kernel's online resize do the work of both.
//
// Every step is safe to interrupt with a power cut, and a later boot
// finishes what one left undone:
//   - a new partition's file system is written into the free space before
//     the partition table names it; the one-sector write of its entry is
//     the step that makes it exist;
//   - a template write into a partition that holds no file system writes
//     the superblock last, so a cut-short write leaves none and is redone;
//   - growing the entry is again one sector, and the kernel's online
//     resize is journaled (the file system is consistent at every point
//     and is grown further at the next boot).
//
// A partition that holds an ext4 file system that does not mount is never
// formatted: it holds the appliance's identity and data. init says so on
// the console and goes on without /perm.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

const (
	permTemplate = "/lib/svc/perm.ext4"
	permDir      = "/perm"
	permNumber   = 4 // the data partition is the MBR's 4th entry
	mib          = 1 << 20
	// permSlack is how far short of its largest size the partition, or its
	// file system short of the partition, may be and count as full size:
	// the disk's last sectors that are not a whole MiB, and the kernel's
	// resize leaving out a last block group too small for its own metadata.
	permSlack = 4 * mib
	// maxDiskBytes caps the partition's end: an MBR entry's sectors are
	// 32-bit numbers (2 TiB in 512-byte sectors), and mkimage.sh reserves
	// the template's group descriptor blocks for growth up to 2 TiB.
	maxDiskBytes = 2 << 40
	// ext4IocResizeFS is EXT4_IOC_RESIZE_FS, _IOW('f', 16, __u64) in the
	// kernel's fs/ext4/ext4.h (golang.org/x/sys/unix does not define it).
	ext4IocResizeFS = 0x40086610
)

// preparePerm makes, mounts and grows the data partition, logging what it
// does on the console. It runs after gokrazy's Boot, which mounts p4 at
// /perm when it holds a file system.
func preparePerm() {
	err := preparePermOn("/sys", "/")
	if err == nil {
		return
	}
	if mountinfo, rerr := os.ReadFile("/proc/self/mountinfo"); rerr == nil {
		if _, mounted := mountAt(string(mountinfo), permDir); mounted {
			log.Printf("data partition: %v; %s is mounted, and the next boot tries again", err, permDir)
			return
		}
	}
	log.Printf("data partition: %v; the appliance runs without %s", err, permDir)
}

func preparePermOn(sysfs, root string) error {
	d, err := rootDisk(sysfs, root)
	if err != nil {
		return err
	}
	disk, err := os.OpenFile(d.dev, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer disk.Close()
	ss, err := readUint(filepath.Join(d.dir, "queue", "logical_block_size"))
	if err != nil {
		return err
	}
	if ss < 512 || ss > 4096 || ss&(ss-1) != 0 {
		return fmt.Errorf("%s: logical sector size %d", d.dev, ss)
	}
	size, err := disk.Seek(0, io.SeekEnd)
	if err != nil {
		return fmt.Errorf("%s: size: %v", d.dev, err)
	}
	g := geometry{sectorSize: ss, sectors: uint64(size) / ss}
	sector0 := make([]byte, ss)
	if _, err := disk.ReadAt(sector0, 0); err != nil {
		return fmt.Errorf("%s: reading the partition table: %v", d.dev, err)
	}
	table, err := parseMBR(sector0)
	if err != nil {
		return fmt.Errorf("%s: %v", d.dev, err)
	}
	mountinfo, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	mnt, mounted := mountAt(string(mountinfo), permDir)

	if table[permNumber-1].empty() {
		if mounted {
			return fmt.Errorf("%s is mounted (%s) but %s's partition table has no entry %d: left as it is",
				permDir, mnt.source, d.dev, permNumber)
		}
		e, err := createPerm(disk, d, g, table)
		if err != nil {
			return err
		}
		table[permNumber-1] = e
	} else if !mounted {
		ok, err := formatOrMount(d, g, table[permNumber-1])
		if err != nil || !ok {
			return err
		}
	} else if mnt.fstype != "ext4" {
		return fmt.Errorf("%s is %s on %s, not ext4: not grown", permDir, mnt.fstype, mnt.source)
	} else if !isPartition(d, permNumber, mnt.majmin) {
		return fmt.Errorf("%s is %s (%s), not partition %d of %s: not grown", permDir, mnt.source, mnt.majmin, permNumber, d.dev)
	}
	return growPerm(disk, d, g, table)
}

// createPerm adds p4 from the free space after the other partitions to the
// disk's end, with the template's file system in it, mounts it, and
// returns its entry.
func createPerm(disk *os.File, d diskDirs, g geometry, table [4]mbrEntry) (mbrEntry, error) {
	e, err := newPermEntry(table, g)
	if err != nil {
		return e, fmt.Errorf("%s: %v", d.dev, err)
	}
	if _, ok, err := partitionDir(d.dir, permNumber); err != nil {
		return e, err
	} else if ok {
		return e, fmt.Errorf("%s: the kernel has a partition %d that the partition table does not list: left as it is",
			d.dev, permNumber)
	}
	off := int64(e.start) * int64(g.sectorSize)
	size := int64(e.size) * int64(g.sectorSize)
	// The file system first, through the disk (the partition does not
	// exist yet): until the entry below is written, nothing refers to it.
	// It is flushed before the kernel makes the partition, whose own page
	// cache then reads it from the disk; from here on the partition is
	// only read and written through its own device.
	tsize, err := writeTemplate(disk, off, size)
	if err != nil {
		return e, fmt.Errorf("writing the empty file system into %s at %d MiB: %v", d.dev, off/mib, err)
	}
	if err := writeEntry(disk, g, permNumber, e); err != nil {
		return e, err
	}
	if err := blkpg(disk, unix.BLKPG_ADD_PARTITION, permNumber, off, size); err != nil {
		return e, fmt.Errorf("%s: adding partition %d in the kernel: %v", d.dev, permNumber, err)
	}
	dev, err := partitionDev(d, permNumber)
	if err != nil {
		return e, err
	}
	log.Printf("data partition: created %s: %d MiB at %d MiB (sectors %d+%d) with an empty %d MiB file system",
		dev, size/mib, off/mib, e.start, e.size, tsize/mib)
	return e, mountPerm(dev)
}

// formatOrMount handles an existing p4 that gokrazy's Boot did not mount:
// one without a file system (a template write that a power cut stopped)
// gets the template and is mounted; one with an ext4 superblock is damaged
// and is left alone (ok is false then).
func formatOrMount(d diskDirs, g geometry, e mbrEntry) (ok bool, err error) {
	dev, err := partitionDev(d, permNumber)
	if err != nil {
		return false, err
	}
	// O_EXCL: the kernel refuses it while anything has the partition
	// mounted, so that nothing is written under a mounted file system.
	f, err := os.OpenFile(dev, os.O_RDWR|syscall.O_EXCL, 0)
	if err != nil {
		return false, err
	}
	head := make([]byte, 2048)
	_, err = f.ReadAt(head, 0)
	if err != nil {
		f.Close()
		return false, fmt.Errorf("%s: %v", dev, err)
	}
	if _, _, isExt4 := ext4Size(head); isExt4 {
		f.Close()
		// gokrazy's mount failed; this one is for its error.
		err := syscall.Mount(dev, permDir, "ext4", 0, "")
		if err == nil {
			log.Printf("data partition: mounted %s at %s (at the second try)", dev, permDir)
			return true, permVar()
		}
		log.Printf("data partition: %s holds an ext4 file system that does not mount (%v): it is damaged", dev, err)
		log.Printf("data partition: it is NOT formatted, to keep the appliance's identity and data; " +
			"the appliance runs without them (it cannot enrol or keep its configuration)")
		log.Printf("data partition: to repair it, power off, put the SD card into a Linux computer and run " +
			"fsck.ext4 -f -y on its 4th partition until it reports no errors; to start afresh instead " +
			"(a new identity, enrolled again), erase that partition's first MiB and the next boot makes a new file system")
		return false, nil
	}
	size := int64(e.size) * int64(g.sectorSize)
	tsize, err := writeTemplate(f, 0, size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return false, fmt.Errorf("writing the empty file system to %s: %v", dev, err)
	}
	log.Printf("data partition: %s (%d MiB) held no file system: wrote an empty %d MiB one", dev, size/mib, tsize/mib)
	return true, mountPerm(dev)
}

// mountPerm mounts dev at /perm as gokrazy's Boot would have.
func mountPerm(dev string) error {
	if err := syscall.Mount(dev, permDir, "ext4", 0, ""); err != nil {
		return fmt.Errorf("mounting %s at %s: %v", dev, permDir, err)
	}
	log.Printf("data partition: mounted %s at %s", dev, permDir)
	return permVar()
}

// permVar does what gokrazy's mount does after mounting /perm (its
// mountfs in mount.go): /perm/var, and /perm/var/run pointing to /run.
func permVar() error {
	if err := os.MkdirAll(filepath.Join(permDir, "var"), 0o755); err != nil {
		return err
	}
	if err := os.Symlink("/run", filepath.Join(permDir, "var", "run")); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	return nil
}

// growPerm enlarges p4 to the disk's end: its entry in the partition
// table, the kernel's idea of it, and the mounted file system, each only
// when it is short, so that a boot after an interrupted one finishes.
func growPerm(disk *os.File, d diskDirs, g geometry, table [4]mbrEntry) error {
	dev, err := partitionDev(d, permNumber)
	if err != nil {
		return err
	}
	e := table[permNumber-1]
	if grown, ok := grownPermEntry(table, g); ok {
		if err := writeEntry(disk, g, permNumber, grown); err != nil {
			return err
		}
		log.Printf("data partition: the partition table's entry for %s grew from %d MiB to %d MiB",
			dev, uint64(e.size)*g.sectorSize/mib, uint64(grown.size)*g.sectorSize/mib)
		e = grown
	}
	want := int64(e.size) * int64(g.sectorSize)
	pdir, _, err := partitionDir(d.dir, permNumber)
	if err != nil {
		return err
	}
	kernelSectors, err := readUint(filepath.Join(pdir, "size")) // 512-byte units, whatever the disk's sectors
	if err != nil {
		return err
	}
	if have := int64(kernelSectors) * 512; have < want {
		if err := blkpg(disk, unix.BLKPG_RESIZE_PARTITION, permNumber, int64(e.start)*int64(g.sectorSize), want); err != nil {
			return fmt.Errorf("%s: growing partition %d in the kernel from %d to %d MiB: %v",
				d.dev, permNumber, have/mib, want/mib, err)
		}
		log.Printf("data partition: the kernel's %s grew from %d MiB to %d MiB", dev, have/mib, want/mib)
	}

	var fs unix.Statfs_t
	if err := unix.Statfs(permDir, &fs); err != nil {
		return err
	}
	bs := int64(fs.Bsize)
	before, err := fsBytes(dev, bs)
	if err != nil {
		return err
	}
	if want-before < permSlack {
		log.Printf("data partition: %s is already full size (%d MiB)", dev, want/mib)
		return nil
	}
	dir, err := os.Open(permDir)
	if err != nil {
		return err
	}
	defer dir.Close()
	blocks := uint64(want / bs)
	start := time.Now()
	// The kernel's online resize: journaled, so a power cut leaves the
	// file system consistent at its old size or part-grown.
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, dir.Fd(), ext4IocResizeFS, uintptr(unsafe.Pointer(&blocks))); errno != 0 {
		return fmt.Errorf("growing the file system on %s from %d to %d MiB: %v", dev, before/mib, want/mib, errno)
	}
	after, err := fsBytes(dev, bs)
	if err != nil {
		return err
	}
	log.Printf("data partition: grew the file system on %s from %d MiB to %d MiB in %.1f s",
		dev, before/mib, after/mib, time.Since(start).Seconds())
	return nil
}

// fsBytes is the size of the ext4 file system on dev, from its superblock.
// Read through the partition while it is mounted, that is the mounted
// file system's own superblock buffer (the same page cache).
func fsBytes(dev string, blockSize int64) (int64, error) {
	f, err := os.Open(dev)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	head := make([]byte, 2048)
	if _, err := f.ReadAt(head, 0); err != nil {
		return 0, fmt.Errorf("%s: %v", dev, err)
	}
	blocks, bs, ok := ext4Size(head)
	if !ok {
		return 0, fmt.Errorf("%s: no ext4 superblock", dev)
	}
	if int64(bs) != blockSize {
		return 0, fmt.Errorf("%s: block size %d in the superblock, %d from statfs %s", dev, bs, blockSize, permDir)
	}
	return int64(blocks) * int64(bs), nil
}

// writeEntry writes entry n (1-4) of the partition table: the 16 bytes of
// one sector, which the disk writes whole or not at all, then flushes it.
func writeEntry(disk *os.File, g geometry, n int, e mbrEntry) error {
	var b [16]byte
	e.put(b[:])
	if _, err := disk.WriteAt(b[:], mbrTableOffset+int64(n-1)*16); err != nil {
		return fmt.Errorf("%s: writing the partition table: %v", disk.Name(), err)
	}
	if err := disk.Sync(); err != nil {
		return fmt.Errorf("%s: writing the partition table: %v", disk.Name(), err)
	}
	return nil
}

// blkpg tells the kernel about a partition added or resized in the table
// (BLKPG_ADD_PARTITION, BLKPG_RESIZE_PARTITION), without re-reading the
// whole table, which the kernel refuses while the root partition is in use.
func blkpg(disk *os.File, op int32, n int, start, length int64) error {
	p := unix.BlkpgPartition{Start: start, Length: length, Pno: int32(n)}
	arg := unix.BlkpgIoctlArg{Op: op, Datalen: int32(unsafe.Sizeof(p)), Data: (*byte)(unsafe.Pointer(&p))}
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, disk.Fd(), unix.BLKPG, uintptr(unsafe.Pointer(&arg))); errno != 0 {
		return errno
	}
	return nil
}

// writeTemplate copies the empty file system (permTemplate) to dst at off,
// where room bytes are free, and flushes it; it returns the template's size.
// The first block, which holds the superblock, is written last, after the
// rest is on the disk: a write that a power cut stops leaves no
// superblock behind, and the next boot writes the template again.
func writeTemplate(dst writerAtSyncer, off, room int64) (int64, error) {
	t, err := os.Open(permTemplate)
	if err != nil {
		return 0, err
	}
	defer t.Close()
	st, err := t.Stat()
	if err != nil {
		return 0, err
	}
	if st.Size() > room {
		return 0, fmt.Errorf("%s is %d MiB, more than the %d MiB free", permTemplate, st.Size()/mib, room/mib)
	}
	return st.Size(), copySuperblockLast(dst, off, t, st.Size())
}

type writerAtSyncer interface {
	io.WriterAt
	Sync() error
}

// superblockBlock is the part of an ext4 file system written last: it
// holds the superblock (bytes 1024-2047) at any block size.
const superblockBlock = 4096

// copySuperblockLast copies size bytes of src to dst at off, the first
// superblockBlock bytes last, each part flushed before the next.
func copySuperblockLast(dst writerAtSyncer, off int64, src io.ReaderAt, size int64) error {
	head := make([]byte, superblockBlock)
	if _, err := src.ReadAt(head, 0); err != nil {
		return err
	}
	if _, _, ok := ext4Size(head); !ok || size%superblockBlock != 0 {
		return errors.New("the template is not an ext4 file system of whole 4 KiB blocks")
	}
	buf := make([]byte, mib)
	for pos := int64(superblockBlock); pos < size; {
		n := min(int64(len(buf)), size-pos)
		if _, err := src.ReadAt(buf[:n], pos); err != nil {
			return err
		}
		if _, err := dst.WriteAt(buf[:n], off+pos); err != nil {
			return err
		}
		pos += n
	}
	if err := dst.Sync(); err != nil {
		return err
	}
	if _, err := dst.WriteAt(head, off); err != nil {
		return err
	}
	return dst.Sync()
}

// diskDirs is the boot disk: its sysfs directory and its /dev node.
type diskDirs struct {
	dir string // e.g. /sys/devices/.../block/mmcblk0
	dev string // e.g. /dev/mmcblk0
}

// rootDisk is the disk of the file system mounted at root.
func rootDisk(sysfs, root string) (diskDirs, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(root, &st); err != nil {
		return diskDirs{}, err
	}
	return bootDisk(sysfs, unix.Major(st.Dev), unix.Minor(st.Dev))
}

// bootDisk finds the disk that holds the partition major:minor (the root
// file system's) through sysfs, without udev: /sys/dev/block/MAJ:MIN
// resolves to .../block/<disk>/<partition>.
func bootDisk(sysfs string, major, minor uint32) (diskDirs, error) {
	link := filepath.Join(sysfs, "dev", "block", fmt.Sprintf("%d:%d", major, minor))
	part, err := filepath.EvalSymlinks(link)
	if err != nil {
		return diskDirs{}, fmt.Errorf("the root's device %d:%d: %v", major, minor, err)
	}
	if _, err := os.Stat(filepath.Join(part, "partition")); err != nil {
		return diskDirs{}, fmt.Errorf("the root's device %d:%d (%s) is not a partition of a disk", major, minor, part)
	}
	dir := filepath.Dir(part)
	dev, err := devName(dir)
	if err != nil {
		return diskDirs{}, err
	}
	return diskDirs{dir: dir, dev: dev}, nil
}

// partitionDir is the sysfs directory of partition n of the disk at dir:
// the child whose partition file holds n (vda4, mmcblk0p4).
func partitionDir(dir string, n int) (string, bool, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "", false, err
	}
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		got, err := readUint(filepath.Join(p, "partition"))
		if err == nil && got == uint64(n) {
			return p, true, nil
		}
	}
	return "", false, nil
}

// isPartition tells whether the device numbers majmin ("254:4") are
// partition n of the disk.
func isPartition(d diskDirs, n int, majmin string) bool {
	dir, ok, err := partitionDir(d.dir, n)
	if err != nil || !ok {
		return false
	}
	b, err := os.ReadFile(filepath.Join(dir, "dev"))
	return err == nil && strings.TrimSpace(string(b)) == majmin
}

// partitionDev is the /dev node of partition n of the disk, which
// devtmpfs makes as the kernel adds the partition.
func partitionDev(d diskDirs, n int) (string, error) {
	dir, ok, err := partitionDir(d.dir, n)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", fmt.Errorf("the kernel has no partition %d on %s", n, d.dev)
	}
	return devName(dir)
}

// devName is the /dev node of a sysfs block device directory, from the
// DEVNAME= line of its uevent file.
func devName(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "uevent"))
	if err != nil {
		return "", err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "DEVNAME="); ok && v != "" && !strings.Contains(v, "..") {
			return "/dev/" + v, nil
		}
	}
	return "", fmt.Errorf("%s: no DEVNAME", filepath.Join(dir, "uevent"))
}

func readUint(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %v", path, err)
	}
	return n, nil
}

// mount is one line of /proc/self/mountinfo.
type mount struct{ majmin, fstype, source string }

// mountAt finds what is mounted at dir in mountinfo (the last mount wins,
// as it hides the ones below it).
func mountAt(mountinfo, dir string) (mount, bool) {
	var m mount
	found := false
	for _, l := range strings.Split(mountinfo, "\n") {
		// id parent major:minor root mountpoint options [optional...] - fstype source superoptions
		f := strings.Fields(l)
		if len(f) < 5 || f[4] != dir {
			continue
		}
		for i := 5; i+2 < len(f); i++ {
			if f[i] == "-" {
				m, found = mount{majmin: f[2], fstype: f[i+1], source: f[i+2]}, true
				break
			}
		}
	}
	return m, found
}

// geometry is the disk's size in its logical sectors, the MBR's unit.
type geometry struct {
	sectorSize uint64
	sectors    uint64
}

// maxEnd is the sector after the last one an MBR partition may use on
// this disk: its end, capped at maxDiskBytes and at 32-bit sector numbers.
func (g geometry) maxEnd() uint64 {
	return min(g.sectors, maxDiskBytes/g.sectorSize, 1<<32)
}

// The MBR: four 16-byte entries at byte 446 of sector 0, then 0x55 0xAA.
const mbrTableOffset = 446

type mbrEntry struct {
	boot, typ   byte
	start, size uint32 // in sectors
}

func (e mbrEntry) empty() bool { return e.typ == 0 || e.size == 0 }

func (e mbrEntry) end() uint64 { return uint64(e.start) + uint64(e.size) }

func parseMBR(sector0 []byte) ([4]mbrEntry, error) {
	var t [4]mbrEntry
	if len(sector0) < 512 || sector0[510] != 0x55 || sector0[511] != 0xAA {
		return t, errors.New("no MBR partition table (no 55 AA signature in sector 0)")
	}
	for i := range t {
		b := sector0[mbrTableOffset+16*i:]
		t[i] = mbrEntry{boot: b[0], typ: b[4], start: binary.LittleEndian.Uint32(b[8:]), size: binary.LittleEndian.Uint32(b[12:])}
	}
	if t[0].typ == 0xEE {
		return t, errors.New("a GPT disk (protective MBR), not an MBR one")
	}
	return t, nil
}

// put encodes e as a 16-byte MBR entry, with the CHS addresses that fdisk
// and sfdisk write (255 heads, 63 sectors a track; 1023/254/63 beyond).
func (e mbrEntry) put(b []byte) {
	b[0], b[4] = e.boot, e.typ
	chs(b[1:4], uint64(e.start))
	chs(b[5:8], e.end()-1)
	binary.LittleEndian.PutUint32(b[8:], e.start)
	binary.LittleEndian.PutUint32(b[12:], e.size)
}

func chs(b []byte, lba uint64) {
	c, h, s := lba/(255*63), (lba/63)%255, lba%63+1
	if c > 1023 {
		c, h, s = 1023, 254, 63
	}
	b[0], b[1], b[2] = byte(h), byte(s)|byte(c>>2)&0xC0, byte(c)
}

// newPermEntry is the data partition for a table without a 4th entry:
// from the first MiB boundary after the other partitions to the disk's
// end (capped), Linux type 0x83. It needs room for the template.
func newPermEntry(table [4]mbrEntry, g geometry) (mbrEntry, error) {
	var used uint64
	for _, e := range table[:permNumber-1] {
		if !e.empty() {
			used = max(used, e.end())
		}
	}
	align := mib / g.sectorSize
	start := (used + align - 1) / align * align
	end := g.maxEnd()
	if start >= end || (end-start)*g.sectorSize < permMinBytes {
		return mbrEntry{}, fmt.Errorf("no room for the data partition: the disk is %d MiB and its partitions end at %d MiB",
			g.sectors*g.sectorSize/mib, used*g.sectorSize/mib)
	}
	return mbrEntry{typ: 0x83, start: uint32(start), size: uint32(end - start)}, nil
}

// permMinBytes is the smallest data partition made: the template's size
// (mkimage.sh's PERMMB), which writeTemplate checks again.
const permMinBytes = 32 * mib

// grownPermEntry is the data partition's entry reaching to the disk's end
// (capped, and before any partition that starts after it), when it ends
// more than permSlack short of that.
func grownPermEntry(table [4]mbrEntry, g geometry) (mbrEntry, bool) {
	e := table[permNumber-1]
	end := g.maxEnd()
	for i, o := range table {
		if i != permNumber-1 && !o.empty() && uint64(o.start) >= uint64(e.start) {
			end = min(end, uint64(o.start))
		}
	}
	if end <= e.end() || (end-e.end())*g.sectorSize < permSlack {
		return e, false
	}
	e.size = uint32(end - uint64(e.start))
	return e, true
}

// ext4Size reads an ext4 superblock from the first 2048 bytes of a
// partition: ok when the magic 0xEF53 is at byte 1080, with the file
// system's size in blocks and its block size.
func ext4Size(head []byte) (blocks uint64, blockSize uint32, ok bool) {
	if len(head) < 2048 || !bytes.Equal(head[1080:1082], []byte{0x53, 0xEF}) {
		return 0, 0, false
	}
	sb := head[1024:2048]
	logBS := binary.LittleEndian.Uint32(sb[0x18:])
	if logBS > 6 { // 1 KiB << 6 = 64 KiB, ext4's largest block
		return 0, 0, false
	}
	blocks = uint64(binary.LittleEndian.Uint32(sb[0x04:]))
	const incompat64bit = 0x80
	if binary.LittleEndian.Uint32(sb[0x60:])&incompat64bit != 0 {
		blocks |= uint64(binary.LittleEndian.Uint32(sb[0x150:])) << 32
	}
	return blocks, 1024 << logBS, true
}
