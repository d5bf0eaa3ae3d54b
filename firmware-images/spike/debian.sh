#!/bin/sh
# debian.sh: the Debian candidate as tried in the spike (see README.md for the
# measurements). Not used by mkab.sh. Run as root; takes about half an hour on
# the 2-core machine, most of it in maintainer scripts and mkinitramfs under
# qemu-user.
set -eux
cd "$(dirname "$0")"; mkdir -p out/debian; cd out/debian
# mmdebstrap runs arm64 maintainer scripts through qemu-user: binfmt_misc is
# not mounted in this sandbox by default, but can be.
mountpoint -q /proc/sys/fs/binfmt_misc || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
apt-get install -y mmdebstrap qemu-user-static binfmt-support squashfs-tools qemu-system-arm e2fsprogs
time nice -n 10 mmdebstrap --architectures=arm64 --variant=minbase \
  --include=systemd-sysv,udev,ca-certificates,linux-image-arm64 bookworm root.tar
mkdir -p root && tar -C root -xf root.tar
# The initramfs (MODULES=most) has no squashfs: a squashfs root fails with
# "mount: No such device" until /etc/initramfs-tools/modules lists squashfs and
# the initramfs is made again. A read-only ext4 root boots as it is:
mkdir -p rootx && tar -C rootx -xf root.tar --exclude=./boot --exclude=./usr/share/doc --exclude=./usr/share/locale --exclude=./usr/share/man
mkfs.ext4 -q -F -L root -d rootx root.ext4 700M
nice -n 10 qemu-system-aarch64 -M virt -cpu cortex-a72 -smp 2 -m 1024 -nographic -no-reboot \
  -kernel root/boot/vmlinuz-*-arm64 -initrd root/boot/initrd.img-*-arm64 \
  -append "console=ttyAMA0 root=/dev/vda ro" -drive file=root.ext4,format=raw,if=virtio \
  -device i6300esb -netdev user,id=n0,restrict=on -device virtio-net-pci,netdev=n0
