#!/bin/sh
# abqemu.sh IMG LOG: U-Boot (Debian u-boot-qemu) -> boot.scr -> A/B slot, serial to LOG.
# restrict=on: the guest reaches nothing outside qemu but the forwarded port.
exec nice -n 10 qemu-system-aarch64 -M virt -cpu cortex-a72 -smp 2 -m 1024 -nographic \
  -bios /usr/lib/u-boot/qemu_arm64/u-boot.bin \
  -drive file=$1,format=raw,if=virtio \
  -device i6300esb -watchdog-action reset \
  -netdev user,id=n0,restrict=on,hostfwd=tcp:127.0.0.1:${PORT:-18082}-:8080 -device virtio-net-pci,netdev=n0 > $2 2>&1
