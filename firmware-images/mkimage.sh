#!/bin/sh
# mkimage.sh [qemu|rpi]: builds the appliance's disk image (issue 18) without
# gok and without loop devices (mksquashfs, mkfs.vfat + mtools, mkfs.ext4,
# sfdisk, dd into a file), into build/:
#   p1 FAT boot: boot.scr (U-Boot A/B script), ab.txt (slot state), svc.txt
#      (cloud=URL, the installer may edit it), vmlinuz-a (gzip'd; an update
#      copies its root's kernel beside it as vmlinuz-b);
#      rpi: also the Pi firmware (github.com/gokrazy/firmware), Debian's
#      u-boot-rpi u-boot.bin as the "kernel", config.txt, dtbs (kernel.rpi)
#   p2 root A, p3 root B (empty): squashfs with init (gokrazy's Boot) as
#      /gokrazy/init, gokrazy's DHCP client, /user/svc-edge, kernel modules,
#      the kernel (/kernel/vmlinuz); build/$TARGET/root.sqfs is also the
#      release an update installs (svc-cloud releases add --kind rootfs)
#   p4 ext4 data at /perm (svc-edge's data in /perm/svc-edge) is not in the
#      image: init makes it at the first boot in the card's free space from
#      the root's /lib/svc/perm.ext4, an empty ext4 made here, and grows it
#      to the card's end (init/perm.go)
# Environment: CLOUD (the URL written into svc.txt), VERSION (the release's
# version, default from git), SOURCE_DATE_EPOCH (default: the commit's time),
# RELEASE_KEYS (the release public keys svc-edge trusts, comma-separated, as
# svc-cloud releases keygen prints them; none: the image does not update),
# BUILD (the output directory, default build).
# Needs: go, squashfs-tools, dosfstools, mtools, e2fsprogs, fdisk, u-boot-tools;
# rpi also apt-get, which downloads Debian's u-boot-rpi:arm64 into
# $BUILD/apt-arm64 (kept there for the next build).
set -eu
TARGET=${1:-qemu}
case $TARGET in qemu|rpi) ;; *) echo "usage: mkimage.sh [qemu|rpi]" >&2; exit 2;; esac
cd "$(dirname "$0")"
for t in mksquashfs mkfs.vfat mcopy mkfs.ext4 sfdisk mkimage; do
  command -v $t >/dev/null || { echo "mkimage.sh: $t not found: apt-get install squashfs-tools dosfstools mtools e2fsprogs fdisk u-boot-tools" >&2; exit 1; }
done
KMOD=github.com/gokrazy/kernel.arm64; [ "$TARGET" = rpi ] && KMOD=github.com/gokrazy/kernel.rpi
go mod download $KMOD github.com/gokrazy/firmware
KDIR=$(go list -m -f '{{.Dir}}' $KMOD)
FW=$(go list -m -f '{{.Dir}}' github.com/gokrazy/firmware)
VERSION=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 1700000000)}
CLOUD=${CLOUD:-}
BUILD=${BUILD:-build}
B=$BUILD/$TARGET; rm -rf $B; mkdir -p $B/bin
go_arm64() { CGO_ENABLED=0 GOOS=linux GOARCH=arm64 go build -trimpath -buildvcs=false "$@"; }
# Stripped (-s -w): 6 MB less in every root release; a panic's stack trace
# keeps its function names and lines.
go_arm64 -ldflags "-s -w" -o $B/bin/init ./init
go_arm64 -ldflags "-s -w" -o $B/bin/dhcp github.com/gokrazy/gokrazy/cmd/dhcp
go_arm64 -ldflags "-s -w" -o $B/bin/ntp github.com/gokrazy/gokrazy/cmd/ntp
LDFLAGS="-s -w -X main.version=$VERSION -X github.com/svc-vms/svc/shared/release.TrustedKeys=${RELEASE_KEYS:-}"
OUT=$(cd $B/bin && pwd)
( cd .. && go_arm64 -ldflags "$LDFLAGS" -o $OUT/svc-edge ./edge/cmd/svc-edge )

R=$B/root; mkdir -p $R/gokrazy $R/user $R/etc/ssl $R/dev $R/proc $R/sys $R/tmp $R/run $R/perm $R/lib $R/boot $R/kernel
# The data partition's template (init/perm.go writes it into p4 and grows it
# online to the card). 32 MiB: room for the journal (4 MiB), 2 MiB of inodes
# and the reserved descriptor blocks, with ~25 MiB of data even if growing
# failed; written in ~2 s at the first boot, and squashfs keeps its zero
# blocks sparse. 4 KiB blocks, 8192 inodes a 128 MiB group (-i 4096 on one
# group: ext4's usual one per 16 KiB once grown), and resize=2 TiB in blocks
# so that online growth to the MBR's limit needs no meta_bg.
PERMMB=32
E2FSPROGS_FAKE_TIME=$SOURCE_DATE_EPOCH mkfs.ext4 -q -F -L perm -U 6d1e1a7e-0000-4000-8000-000000000004 -b 4096 -i 4096 -I 256 -J size=4 \
  -E root_owner=0:0,hash_seed=6d1e1a7e-0000-4000-8000-000000000005,resize=$((2<<40>>12)) $B/perm.ext4 ${PERMMB}M
mkdir -p $R/lib/svc && cp $B/perm.ext4 $R/lib/svc/perm.ext4
cp $B/bin/init $B/bin/dhcp $B/bin/ntp $R/gokrazy/; cp $B/bin/svc-edge $R/user/
ln -s /tmp/resolv.conf $R/etc/resolv.conf; printf '127.0.0.1 localhost\n::1 localhost\n' > $R/etc/hosts
echo svc-edge > $R/etc/hostname; echo "$VERSION" > $R/etc/version
cp -r $KDIR/lib/modules $R/lib/
# The kernel, gzip'd (U-Boot's booti inflates it): a third of its size on
# the boot partition, which holds two.
gzip -9 -n -c $KDIR/vmlinuz > $R/kernel/vmlinuz
find $R -exec touch -h -d @$SOURCE_DATE_EPOCH {} +
mksquashfs $R $B/root.sqfs -noappend -all-root -reproducible -quiet -no-progress

mkdir -p $B/boot
mkimage -q -A arm64 -T script -C none -d boot.cmd $B/boot/boot.scr
cp $R/kernel/vmlinuz $B/boot/vmlinuz-a
printf 'slot=a\ntrial=\ntries=0\n' > $B/boot/ab.txt
SIMULATE=0; [ "$TARGET" = qemu ] && SIMULATE=1 # qemu's virt machine has no GPIO
printf 'cloud=%s\nsimulate=%s\n' "$CLOUD" $SIMULATE > $B/boot/svc.txt
BOOTMB=64 # two kernels of 19 MB, and the Pi's firmware and device trees
if [ "$TARGET" = rpi ]; then
  cp $FW/bootcode.bin $FW/start.elf $FW/fixup.dat $FW/start4.elf $FW/fixup4.dat $B/boot/
  cp $KDIR/*.dtb $B/boot/; cp -r $KDIR/overlays $B/boot/
  # Debian's U-Boot for the Pi (arm64), fetched with apt into a state of
  # its own (no dpkg --add-architecture, nothing installed on this machine).
  DEB=$(ls $BUILD/apt-arm64/u-boot-rpi_*_arm64.deb 2>/dev/null | tail -1)
  if [ -z "$DEB" ]; then
    A=$(mkdir -p $BUILD/apt-arm64 && cd $BUILD/apt-arm64 && pwd)
    mkdir -p $A/lists/partial $A/cache/archives/partial
    APTARM="-q -o Dir::State::Lists=$A/lists -o Dir::Cache=$A/cache -o APT::Architecture=arm64 -o APT::Architectures=arm64"
    # shellcheck disable=SC2086
    apt-get $APTARM update >/dev/null && ( cd $A && apt-get $APTARM download u-boot-rpi:arm64 >/dev/null 2>&1 ) ||
      { echo "mkimage.sh rpi: apt-get could not download Debian's u-boot-rpi:arm64" >&2; exit 1; }
    DEB=$(ls $A/u-boot-rpi_*_arm64.deb | tail -1)
  fi
  echo "U-Boot for the Pi: $(basename $DEB)"
  dpkg-deb --fsys-tarfile $DEB | tar -xO ./usr/lib/u-boot/rpi_arm64/u-boot.bin > $B/boot/u-boot.bin
  # disable-bt gives the header's UART (GPIO 14/15) the PL011, ttyAMA0, on
  # a Pi 3/4 (Bluetooth, which the appliance does not use, had it): the
  # console= of boot.cmd, and a steady clock for U-Boot's serial.
  printf 'arm_64bit=1\nenable_uart=1\ndtoverlay=disable-bt\nkernel=u-boot.bin\ndtparam=watchdog=on\n' > $B/boot/config.txt
fi
find $B/boot -exec touch -h -d @$SOURCE_DATE_EPOCH {} +
ROOTMB=64
mkfs.vfat -C -F 16 -f 1 -n BOOT --invariant $B/boot.img $((BOOTMB*1024)) >/dev/null
( cd $B/boot && mcopy -s -m -i ../boot.img ./* ::/ )
IMG=$BUILD/svc-$TARGET.img; rm -f $IMG; truncate -s $((1+BOOTMB+2*ROOTMB))M $IMG
sfdisk -q $IMG <<EOT
label: dos
label-id: 0x2e9a5c10
start=1MiB, size=${BOOTMB}MiB, type=c, bootable
size=${ROOTMB}MiB, type=83
size=${ROOTMB}MiB, type=83
EOT
dd if=$B/boot.img of=$IMG bs=1M seek=1 conv=notrunc status=none
dd if=$B/root.sqfs of=$IMG bs=1M seek=$((1+BOOTMB)) conv=notrunc status=none
echo "$IMG: version $VERSION, cloud ${CLOUD:-(none: set cloud= in svc.txt)}"
ls -l $B/root.sqfs $IMG
sha256sum $B/root.sqfs
