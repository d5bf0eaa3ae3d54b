#!/bin/sh
# mkab.sh [qemu|rpi]: builds the A/B spike disk image without gok and without
# loop devices (mksquashfs, mkfs.vfat + mtools, mkfs.ext4 -d, sfdisk, dd):
#   p1 FAT boot: boot.scr (U-Boot A/B script), ab.txt (slot state), vmlinuz-a/-b
#      rpi: also the Pi firmware (github.com/gokrazy/firmware), Debian's
#      u-boot-rpi u-boot.bin as the "kernel", config.txt, dtbs (kernel.rpi)
#   p2 root A, p3 root B: squashfs with gokrazy's Boot+supervisor as /gokrazy/init,
#      /gokrazy/dhcp, /user/abhello (stands in for svc-edge), kernel modules
#   p4 ext4 data (mounted by gokrazy at /perm)
# Also writes out/root-VERSION.sqfs for 1.0.0, 2.0.0, 3.0.0-bad, 4.0.0-panic.
# Needs: go, squashfs-tools, dosfstools, mtools, e2fsprogs, fdisk, u-boot-tools;
# rpi also: apt-get download u-boot-rpi:arm64 (dpkg --add-architecture arm64).
set -eu
TARGET=${1:-qemu}
cd "$(dirname "$0")"
MOD=$(go env GOMODCACHE)/github.com/gokrazy
go mod download github.com/gokrazy/kernel.arm64 github.com/gokrazy/kernel.rpi github.com/gokrazy/firmware
KDIR=$(go list -m -f '{{.Dir}}' github.com/gokrazy/kernel.arm64)
[ "$TARGET" = rpi ] && KDIR=$(go list -m -f '{{.Dir}}' github.com/gokrazy/kernel.rpi)
FW=$(go list -m -f '{{.Dir}}' github.com/gokrazy/firmware)
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-1700000000}
B=build; rm -rf $B; mkdir -p $B out
go_arm64() { CGO_ENABLED=0 GOOS=linux GOARCH=arm64 go build -trimpath -buildvcs=false "$@"; }
go_arm64 -o out/init ./init
go_arm64 -o out/abhello ./abhello
go_arm64 -o out/dhcp github.com/gokrazy/gokrazy/cmd/dhcp
mkroot() { # version
  R=$B/root-$1; mkdir -p $R/gokrazy $R/user $R/etc/ssl $R/dev $R/proc $R/sys $R/tmp $R/run $R/perm $R/lib
  cp out/init $R/gokrazy/init; cp out/dhcp $R/gokrazy/dhcp; cp out/abhello $R/user/abhello
  ln -s /tmp/resolv.conf $R/etc/resolv.conf; printf '127.0.0.1 localhost\n::1 localhost\n' > $R/etc/hosts
  echo svc-edge > $R/etc/hostname; echo $1 > $R/etc/version
  cp -r $KDIR/lib/modules $R/lib/
  find $R -exec touch -h -d @$SOURCE_DATE_EPOCH {} +
  mksquashfs $R out/root-$1.sqfs -noappend -all-root -reproducible -quiet -no-progress
}
for v in 1.0.0 2.0.0 3.0.0-bad 4.0.0-panic; do mkroot $v; done
mkdir -p $B/boot
mkimage -q -A arm64 -T script -C none -d boot.cmd $B/boot/boot.scr
cp $KDIR/vmlinuz $B/boot/vmlinuz-a; cp $KDIR/vmlinuz $B/boot/vmlinuz-b
printf 'slot=a\ntrial=\ntries=0\n' > $B/boot/ab.txt
if [ "$TARGET" = rpi ]; then
  cp $FW/bootcode.bin $FW/start.elf $FW/fixup.dat $FW/start4.elf $FW/fixup4.dat $B/boot/
  cp $KDIR/*.dtb $B/boot/; cp -r $KDIR/overlays $B/boot/
  DEB=$(ls u-boot-rpi_*_arm64.deb | tail -1); dpkg-deb --fsys-tarfile $DEB | tar -xO ./usr/lib/u-boot/rpi_arm64/u-boot.bin > $B/boot/u-boot.bin
  printf 'arm_64bit=1\nenable_uart=1\nkernel=u-boot.bin\ndtparam=watchdog=on\n' > $B/boot/config.txt
fi
find $B/boot -exec touch -h -d @$SOURCE_DATE_EPOCH {} +
BOOTMB=160; ROOTMB=48; PERMMB=32
mkfs.vfat -C -F 16 -f 1 -n BOOT --invariant $B/boot.img $((BOOTMB*1024)) >/dev/null
( cd $B/boot && mcopy -s -m -i ../boot.img ./* ::/ )
mkdir -p $B/perm
E2FSPROGS_FAKE_TIME=$SOURCE_DATE_EPOCH mkfs.ext4 -q -F -L perm -U 6d1e1a7e-0000-4000-8000-000000000004 \
  -E root_owner=0:0,hash_seed=6d1e1a7e-0000-4000-8000-000000000005 -d $B/perm $B/perm.img ${PERMMB}M
IMG=out/ab-$TARGET.img; rm -f $IMG; truncate -s $((1+BOOTMB+2*ROOTMB+PERMMB))M $IMG
sfdisk -q $IMG <<EOT
label: dos
label-id: 0x2e9a5c10
start=1MiB, size=${BOOTMB}MiB, type=c, bootable
size=${ROOTMB}MiB, type=83
size=${ROOTMB}MiB, type=83
size=${PERMMB}MiB, type=83
EOT
dd if=$B/boot.img of=$IMG bs=1M seek=1 conv=notrunc status=none
dd if=out/root-1.0.0.sqfs of=$IMG bs=1M seek=$((1+BOOTMB)) conv=notrunc status=none
dd if=$B/perm.img of=$IMG bs=1M seek=$((1+BOOTMB+2*ROOTMB)) conv=notrunc status=none
ls -la out/*.sqfs $IMG; sha256sum out/root-*.sqfs
